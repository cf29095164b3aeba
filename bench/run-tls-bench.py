#!/usr/bin/python3
"""TLS vs plaintext on one broker (issue 29): Kafka produce and fetch throughput (confluent-kafka,
librdkafka) on PLAINTEXT:// and SSL://, HTTP produce throughput on http:// and https:// (python
requests, one keep-alive connection), and TLS handshakes per second (openssl s_time, full
handshakes, no resumption). Certificates are made on the fly (tests/integration/tls_certs.py).

  bench/run-tls-bench.py [--binary build/src/app/ringlog] [--records 200000] [--size 1000]

Prints one line per figure; docs/benchmarks.md carries the figures and this command.
"""
import argparse
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
sys.path.insert(0, str(ROOT / "tests"))

import requests  # noqa: E402
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from ports import free_port  # noqa: E402
from tls_certs import Material  # noqa: E402


def kafka_figures(bootstrap, extra, topic, records, size):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1 << 20, **extra})
    value = b"x" * size
    start = time.monotonic()
    for _ in range(records):
        while True:
            try:
                p.produce(topic, value=value, partition=0)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(120)
    produce_s = time.monotonic() - start
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "fetch.max.bytes": 64 << 20,
                  "max.partition.fetch.bytes": 16 << 20, **extra})
    c.assign([TopicPartition(topic, 0, 0)])
    n = 0
    start = time.monotonic()
    while n < records:
        batch = c.consume(10000, 5)
        n += len([m for m in batch if m.error() is None])
    fetch_s = time.monotonic() - start
    c.close()
    mb = records * size / 1e6
    return mb / produce_s, mb / fetch_s


def http_figure(url, verify, topic, requests_n, per_request, size):
    s = requests.Session()
    body = {"records": [{"value": "x" * size} for _ in range(per_request)]}
    start = time.monotonic()
    for _ in range(requests_n):
        r = s.post(f"{url}/topics/{topic}", json=body, verify=verify,
                   headers={"Content-Type": "application/vnd.kafka.json.v2+json"})
        assert r.status_code == 200, r.text
    return requests_n * per_request * size / 1e6 / (time.monotonic() - start)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=str(ROOT / "build" / "src" / "app" / "ringlog"))
    ap.add_argument("--records", type=int, default=200000)
    ap.add_argument("--size", type=int, default=1000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        certs = Material(pathlib.Path(tmp) / "certs")
        http, https, plain, ssl_port = free_port(), free_port(), free_port(), free_port()
        log = open(pathlib.Path(tmp) / "broker.log", "wb")
        proc = subprocess.Popen([args.binary, "serve", "--set", f"log.dirs={tmp}/data",
                                 "--set", f"listeners=http://127.0.0.1:{http},https://127.0.0.1:{https},"
                                          f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{ssl_port}",
                                 "--set", f"ssl.keystore.location={certs.broker_pem}"], stdout=log, stderr=log)
        try:
            for _ in range(200):
                try:
                    if requests.get(f"http://127.0.0.1:{http}/v1/health", timeout=1).ok:
                        break
                except requests.ConnectionError:
                    time.sleep(0.1)
            ssl_conf = {"security.protocol": "SSL", "ssl.ca.location": certs.ca_file}
            for name, bootstrap, extra in (("PLAINTEXT", f"127.0.0.1:{plain}", {}),
                                           ("SSL", f"127.0.0.1:{ssl_port}", ssl_conf)):
                produce, fetch = kafka_figures(bootstrap, extra, f"bench-{name.lower()}", args.records, args.size)
                print(f"kafka {name:9s} produce {produce:8.1f} MB/s   fetch {fetch:8.1f} MB/s "
                      f"({args.records} records of {args.size} B, one partition)")
            for name, url, verify in (("http", f"http://127.0.0.1:{http}", True),
                                      ("https", f"https://localhost:{https}", certs.ca_file)):
                mbs = http_figure(url, verify, f"bench-http-{name}", 200, 500, args.size)
                print(f"http  {name:9s} produce {mbs:8.1f} MB/s (200 requests of 500 records of {args.size} B)")
            for name, port in (("kafka SSL", ssl_port), ("https", https)):
                out = subprocess.run(["openssl", "s_time", "-connect", f"127.0.0.1:{port}", "-new", "-time", "5",
                                      "-CAfile", certs.ca_file], capture_output=True, text=True).stdout
                line = [x for x in out.splitlines() if "connections/user sec" in x or "connections in" in x]
                print(f"handshakes {name}: {line[0].strip() if line else out[-200:]}")
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
