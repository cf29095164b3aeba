#!/usr/bin/python3
"""The authorizer's cost on the Kafka produce path (issue 30): produce throughput (confluent-kafka,
librdkafka) to one broker without an authorizer, and to one with the StandardAuthorizer holding
1,000 ACLs (LITERAL and PREFIXED, over many principals and topics; the producer, User:ANONYMOUS on
PLAINTEXT://, holds WRITE on its topic through one of them). Rounds alternate between the two
brokers, which run side by side (each round in the other order), so a noisy neighbour hits both
alike; the per-round ratio is the figure to read.

  bench/run-acl-bench.py [--binary build/src/app/ringlog] [--records 100000] [--size 1000] [--rounds 5]
                         [--linger-ms 5]

Prints one line per round (throughput, and the broker's CPU time per MB) and the medians;
docs/benchmarks.md carries the figures and this command.
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import requests  # noqa: E402
from confluent_kafka import Producer  # noqa: E402

from ports import free_port  # noqa: E402

AUTHORIZER = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ACLS = 1000


def start(binary, tmp, name, sets):
    http, kafka = free_port(), free_port()
    log = open(pathlib.Path(tmp) / f"{name}.log", "wb")
    args = [binary, "serve", "--set", f"log.dirs={tmp}/{name}",
            "--set", f"listeners=http://127.0.0.1:{http},PLAINTEXT://127.0.0.1:{kafka}"]
    for s in sets:
        args += ["--set", s]
    proc = subprocess.Popen(args, stdout=log, stderr=log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{http}/v1/health", timeout=1).ok:
                return proc, f"http://127.0.0.1:{http}", f"127.0.0.1:{kafka}"
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{name} did not start")


def create_topic(url, topic):
    cluster = requests.get(f"{url}/v3/clusters").json()["data"][0]["cluster_id"]
    r = requests.post(f"{url}/v3/clusters/{cluster}/topics", json={"topic_name": topic, "partitions_count": 1})
    assert r.status_code == 201, r.text


def add_acls(url, topic):
    """ACLS ACLs in one batch: the producer's WRITE on `topic`, and 999 others that the index holds
    (other principals, other topics, prefixes of every length up to 8, a few DENYs)."""
    cluster = requests.get(f"{url}/v3/clusters").json()["data"][0]["cluster_id"]
    acls = [{"resource_type": "TOPIC", "resource_name": topic, "pattern_type": "LITERAL", "principal": "User:ANONYMOUS",
             "host": "*", "operation": "WRITE", "permission": "ALLOW"}]
    for i in range(ACLS - 1):
        prefixed = i % 3 == 0
        acls.append({"resource_type": "TOPIC" if i % 5 else "GROUP",
                     "resource_name": (f"team{i}-"[:1 + i % 8] + str(i)) if prefixed else f"topic-{i}",
                     "pattern_type": "PREFIXED" if prefixed else "LITERAL",
                     "principal": f"User:user{i % 97}", "host": "*" if i % 7 else "10.0.0.1",
                     "operation": ["READ", "WRITE", "DESCRIBE", "ALL"][i % 4],
                     "permission": "DENY" if i % 50 == 0 else "ALLOW"})
    r = requests.post(f"{url}/v3/clusters/{cluster}/acls:batch", json={"data": acls})
    assert r.status_code == 201, r.text
    assert len(requests.get(f"{url}/v3/clusters/{cluster}/acls").json()["data"]) == ACLS


def cpu_seconds(proc):
    """The broker's user + system CPU time so far (/proc/PID/stat fields 14 and 15), seconds: on a
    shared machine it moves far less with the neighbours' load than wall-clock throughput does."""
    fields = pathlib.Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce_mbs(bootstrap, topic, records, size, linger_ms):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": linger_ms, "batch.size": 1 << 20})
    errors = []
    value = b"x" * size
    start_s = time.monotonic()
    for _ in range(records):
        while True:
            try:
                p.produce(topic, value=value, partition=0, on_delivery=lambda e, m: e and errors.append(e))
                break
            except BufferError:
                p.poll(0.01)
    p.flush(120)
    elapsed = time.monotonic() - start_s
    assert not errors, errors[:3]
    return records * size / 1e6 / elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=str(ROOT / "build" / "src" / "app" / "ringlog"))
    ap.add_argument("--records", type=int, default=100000)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--linger-ms", type=int, default=5)
    args = ap.parse_args()
    topic = "bench-acl"
    with tempfile.TemporaryDirectory() as tmp:
        plain = start(args.binary, tmp, "no-authorizer", [])
        acl = start(args.binary, tmp, "acls", [AUTHORIZER])
        try:
            for _, url, _ in (plain, acl):
                create_topic(url, topic)   # as the HTTP door's caller (no HTTP authentication here)
            add_acls(acl[1], topic)
            results = {"no authorizer": [], f"{ACLS} ACLs": []}
            cpu = {"no authorizer": [], f"{ACLS} ACLs": []}
            for n in range(args.rounds):
                pair = [("no authorizer", plain), (f"{ACLS} ACLs", acl)]
                for name, (proc, _, bootstrap) in pair if n % 2 == 0 else reversed(pair):   # neither always first
                    cpu_before = cpu_seconds(proc)
                    mbs = produce_mbs(bootstrap, topic, args.records, args.size, args.linger_ms)
                    cpu_ms_per_mb = (cpu_seconds(proc) - cpu_before) * 1000 / (args.records * args.size / 1e6)
                    results[name].append(mbs)
                    cpu[name].append(cpu_ms_per_mb)
                    print(f"round {n + 1} {name:14s} produce {mbs:8.1f} MB/s, broker CPU {cpu_ms_per_mb:6.2f} ms/MB "
                          f"({args.records} records of {args.size} B, linger.ms={args.linger_ms})", flush=True)
            for name, figures in results.items():
                print(f"median {name:14s} {statistics.median(figures):8.1f} MB/s over {args.rounds} rounds "
                      f"(min {min(figures):.1f}, max {max(figures):.1f}); broker CPU "
                      f"{statistics.median(cpu[name]):.2f} ms/MB (min {min(cpu[name]):.2f}, max {max(cpu[name]):.2f})")
            ratios = [a / p for p, a in zip(results["no authorizer"], results[f"{ACLS} ACLs"])]
            print(f"median per-round ratio ACLs / no authorizer: throughput {statistics.median(ratios):.3f}, "
                  f"broker CPU per MB {statistics.median(a / p for p, a in zip(cpu['no authorizer'], cpu[f'{ACLS} ACLs'])):.3f}")
        finally:
            for proc, _, _ in (plain, acl):
                proc.terminate()
                proc.wait(30)


if __name__ == "__main__":
    main()
