#!/usr/bin/python3
"""Idempotence and transactions throughput (issue 16), with librdkafka (confluent-kafka) as the
client: one producer writes RECORDS records of 1 KiB (acks=all, linger.ms=5, fsync before the ack,
the default flush policy) over PARTITIONS partitions, in four modes on the same broker, each run
ROUNDS times in turn (a, b, c, d, a, b, ...) so that a change of machine load hits every mode alike:

  plain        enable.idempotence=false
  idempotent   enable.idempotence=true
  txn-1000     transactional.id, one transaction per 1,000 records (begin, produce, commit)
  txn-100      transactional.id, one transaction per 100 records

and a read_committed consumer reads each transactional topic back (the count must match: the
run stops otherwise). Prints a markdown table of the median and the range of records/s per mode.

Usage: bench/run-txn-bench.py [BUILD_DIR]   (env: RECORDS=50000, PARTITIONS=6, ROUNDS=3,
MODES=plain,idempotent,txn-1000,txn-100)
Runs its own broker (HTTP 127.0.0.1:9790, Kafka 127.0.0.1:9792) with a temporary log.dirs. Not a
test: no figure is asserted.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import requests
from confluent_kafka import Consumer, Producer, TopicPartition

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
RINGLOG = os.path.join(BUILD, "src/app/ringlog")
RECORDS = int(os.environ.get("RECORDS", "50000"))
PARTITIONS = int(os.environ.get("PARTITIONS", "6"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
RECORD_BYTES = 1024
HTTP = "http://127.0.0.1:9790"
KAFKA = "127.0.0.1:9792"
ALL_MODES = ["plain", "idempotent", "txn-1000", "txn-100"]
# MODES=plain,idempotent runs only those (e.g. many rounds of the idempotence comparison).
MODES = [m for m in os.environ.get("MODES", ",".join(ALL_MODES)).split(",") if m]
if not MODES or any(m not in ALL_MODES for m in MODES):
    sys.exit(f"MODES must name some of {','.join(ALL_MODES)}, got {os.environ.get('MODES')!r}")


def wait_healthy(proc, seconds=20):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit("ringlog exited early")
        try:
            if requests.get(HTTP + "/v1/health", timeout=1).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.05)
    raise SystemExit("ringlog did not become healthy")


def produce(topic, mode):
    """Records/s of one run of `mode` into `topic` (created here)."""
    r = requests.post(f"{HTTP}/v3/clusters/ringlog-cluster/topics",
                      json={"topic_name": topic, "partitions_count": PARTITIONS})
    assert r.status_code == 201, r.text
    conf = {"bootstrap.servers": KAFKA, "acks": "all", "linger.ms": 5, "queue.buffering.max.messages": 1_000_000,
            "enable.idempotence": mode != "plain"}
    per_txn = {"txn-1000": 1000, "txn-100": 100}.get(mode)
    if per_txn:
        conf["transactional.id"] = "bench-" + topic
    p = Producer(conf)
    if per_txn:
        p.init_transactions(30)
    value = os.urandom(RECORD_BYTES // 2).hex().encode()
    failed = []
    start = time.monotonic()
    for i in range(RECORDS):
        if per_txn and i % per_txn == 0:
            p.begin_transaction()
        while True:
            try:
                p.produce(topic, value=value, partition=i % PARTITIONS,
                          on_delivery=lambda err, _m: failed.append(err) if err else None)
                break
            except BufferError:
                p.poll(0.01)
        if per_txn and (i + 1) % per_txn == 0:
            p.commit_transaction(60)   # flushes the transaction's records first
    p.flush(120)
    seconds = time.monotonic() - start
    if failed:
        raise SystemExit(f"{mode}: {len(failed)} deliveries failed: {failed[0]}")
    return RECORDS / seconds


def read_committed_count(topic):
    c = Consumer({"bootstrap.servers": KAFKA, "group.id": "bench-" + uuid.uuid4().hex, "enable.auto.commit": False,
                  "isolation.level": "read_committed", "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got, eof = 0, set()
    end = time.monotonic() + 120
    while len(eof) < PARTITIONS and time.monotonic() < end:
        for m in c.consume(10000, 1):
            if m.error() is None:
                got += 1
            elif m.error().code() == -191:
                eof.add(m.partition())
    c.close()
    return got


def main():
    data = tempfile.mkdtemp(prefix="ringlog-txn-bench-")
    proc = subprocess.Popen([RINGLOG, "serve", "--set", f"listeners={HTTP},kafka://{KAFKA}", "--set",
                             f"log.dirs={data}/d"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    results = {m: [] for m in MODES}
    try:
        wait_healthy(proc)
        for rnd in range(ROUNDS):
            for mode in MODES:
                topic = f"txn-bench-{mode}-{rnd}"
                rps = produce(topic, mode)
                if mode.startswith("txn"):
                    n = read_committed_count(topic)
                    if n != RECORDS:
                        raise SystemExit(f"{mode}: read_committed saw {n} of {RECORDS} records")
                results[mode].append(rps)
                print(f"round {rnd} {mode}: {rps:,.0f} records/s", file=sys.stderr, flush=True)
        print(f"{RECORDS} records of {RECORD_BYTES} bytes over {PARTITIONS} partitions per run, {ROUNDS} rounds, "
              f"load average before the last round {os.getloadavg()[0]:.1f}\n")
        print("| mode | median records/s | MB/s | runs (records/s) | vs plain |\n|---|---:|---:|---|---:|")
        base = statistics.median(results["plain"])
        for mode in MODES:
            med = statistics.median(results[mode])
            runs = ", ".join(f"{x:,.0f}" for x in results[mode])
            print(f"| {mode} | {med:,.0f} | {med * RECORD_BYTES / 1e6:,.1f} | {runs} | {100 * (med / base - 1):+.1f}% |")
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
