#!/usr/bin/python3
"""Kafka Fetch's min_bytes (issue 27, item 1): what fetch.min.bytes buys a consumer while a
producer trickles records, against the latency it costs.

Steps: a broker (HTTP 127.0.0.1:9794, Kafka 127.0.0.1:9796, a fresh log.dirs) gets one topic of
one partition per setting. For SECONDS a librdkafka producer (linger.ms 0) sends RATE records a
second (about 100 bytes each, in groups of 20 with a pause between); one librdkafka consumer,
assigned the partition from offset 0 with fetch.wait.max.ms 500 and the fetch.min.bytes of the
round, reads them. Reported per setting: records produced and consumed, the Fetch requests the
consumer sent (librdkafka's statistics, brokers[].req.Fetch) and the end-to-end latency of the
records (consumer's receive time minus the time written into each record, one machine's clock).

Usage: bench/run-fetch-min-bytes-bench.py [BUILD_DIR] [RINGLOG_BINARY]
       (env: SECONDS=5, RATE=2000, MIN_BYTES="1 65536")
Prints a markdown table. Not a test: no figure is asserted.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import requests
from confluent_kafka import Consumer, Producer, TopicPartition

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
RINGLOG = sys.argv[2] if len(sys.argv) > 2 else os.path.join(BUILD, "src/app/ringlog")
SECONDS = int(os.environ.get("SECONDS", "5"))
RATE = int(os.environ.get("RATE", "2000"))
MIN_BYTES = [int(x) for x in os.environ.get("MIN_BYTES", "1 65536").split()]
HTTP, KAFKA = "127.0.0.1:9794", "127.0.0.1:9796"
GROUP_SIZE = 20   # records sent together, then a pause of GROUP_SIZE / RATE seconds


def produce(topic, out):
    p = Producer({"bootstrap.servers": KAFKA, "linger.ms": 0})
    end, sent = time.monotonic() + SECONDS, 0
    while time.monotonic() < end:
        for _ in range(GROUP_SIZE):
            p.produce(topic, value=b"%d:%f:" % (sent, time.time()) + b"x" * 80, partition=0)
            sent += 1
        p.poll(0)
        time.sleep(GROUP_SIZE / RATE)
    p.flush(10)
    out.append(sent)


def one_round(topic, min_bytes):
    fetches = [0]

    def on_stats(text):
        brokers = json.loads(text)["brokers"].values()
        fetches[0] = max(fetches[0], sum(b.get("req", {}).get("Fetch", 0) for b in brokers))

    c = Consumer({"bootstrap.servers": KAFKA, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.min.bytes": min_bytes, "fetch.wait.max.ms": 500, "statistics.interval.ms": 100,
                  "stats_cb": on_stats})
    c.assign([TopicPartition(topic, 0, 0)])
    produced, latencies = [], []
    t = threading.Thread(target=produce, args=(topic, produced))
    t.start()
    end = time.monotonic() + SECONDS + 2
    while time.monotonic() < end:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            latencies.append(time.time() - float(m.value().split(b":")[1]))
    t.join()
    c.poll(0.3)   # a last statistics callback
    c.close()
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(len(latencies) * q))] * 1000
    return produced[0], len(latencies), fetches[0], pick(0.5), pick(0.99)


def main():
    data = tempfile.mkdtemp(prefix="ringlog-minbytes-")
    broker = subprocess.Popen([RINGLOG, "serve", "--set", f"log.dirs={data}",
                               "--set", f"listeners=http://{HTTP},kafka://{KAFKA}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 30
        while True:
            try:
                if requests.get(f"http://{HTTP}/v3/clusters", timeout=1).ok:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > end:
                sys.exit("the broker did not start")
            time.sleep(0.1)
        print(f"{RATE} records/s for {SECONDS} s, fetch.wait.max.ms 500, binary {RINGLOG}\n")
        print("| fetch.min.bytes | produced | consumed | Fetch requests | latency p50 ms | p99 ms |")
        print("|---:|---:|---:|---:|---:|---:|")
        for i, n in enumerate(MIN_BYTES):
            topic = f"minbytes-{i}-{n}"
            r = requests.post(f"http://{HTTP}/v3/clusters/ringlog-cluster/topics",
                              json={"topic_name": topic, "partitions_count": 1})
            assert r.ok, r.text
            produced, consumed, fetches, p50, p99 = one_round(topic, n)
            print(f"| {n} | {produced} | {consumed} | {fetches} | {p50:.0f} | {p99:.0f} |")
    finally:
        broker.terminate()
        broker.wait(30)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
