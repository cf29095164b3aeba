#!/usr/bin/python3
"""Client quota benchmark (issue 31), librdkafka (confluent-kafka) as the client:
1. accuracy: a producer with client.id `slow` under producer_byte_rate=1 MiB/s and a producer `fast`
   beside it without a quota, both sending 16 KiB records as fast as they may for DURATION_S
   seconds; prints each one's acked MiB/s over the whole run and over its second half (Kafka's rate
   lets a client reach its bound over the first window, quota.window.num x
   quota.window.size.seconds = 11 s, so the second half is the steady state), and the throttle
   times librdkafka reported.
2. cost of the accounting on the produce path: ROUNDS paired rounds of RECORDS 1 KiB records
   (acks=1, one producer `bench`) with no quota set, with a quota set only for another client
   (every request looks its client up in the quota index) and with a quota on `bench` far above
   what it sends (every request is also recorded in its sensor); prints the median records/s.
Quotas are set with AlterClientQuotas, a raw request encoded from the schema files
(tests/integration/kafka_schema.py: neither confluent-kafka 1.7 nor kafka-python 2.0 has it).

Usage: bench/run-quota-bench.py [BUILD_DIR]   (env: DURATION_S=20, RECORDS=100000, ROUNDS=3,
BATCH_BYTES=librdkafka's batch.size in part 1, unset = its default)
Runs its own broker (HTTP 127.0.0.1:9790, Kafka 127.0.0.1:9792) on a temporary log.dirs. Not a
test: no figure is asserted.
"""
import os, shutil, socket, statistics, subprocess, sys, tempfile, threading, time

import requests
from confluent_kafka import Producer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import kafka_schema  # noqa: E402

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
RINGLOG = os.path.join(BUILD, "src/app/ringlog")
DURATION_S = float(os.environ.get("DURATION_S", "20"))
RECORDS = int(os.environ.get("RECORDS", "100000"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
BATCH_BYTES = os.environ.get("BATCH_BYTES")   # librdkafka's batch.size for part 1; unset = its default (1 MB)
HTTP = "http://127.0.0.1:9790"
KAFKA = ("127.0.0.1", 9792)
MiB = 1024 * 1024


def set_quota(client_id, key, value):
    body = {"Entries": [{"Entity": [{"EntityType": "client-id", "EntityName": client_id}],
                         "Ops": [{"Key": key, "Value": float(value or 0), "Remove": value is None}]}]}
    with socket.create_connection(KAFKA, timeout=30) as s:
        [answer] = kafka_schema.exchange(s, "AlterClientQuotas", 1, 1, body)["Entries"]
    assert answer["ErrorCode"] == 0, answer


def create_topic(name, partitions):
    cluster = requests.get(HTTP + "/v3/clusters").json()["data"][0]["cluster_id"]
    r = requests.post(f"{HTTP}/v3/clusters/{cluster}/topics", json={"topic_name": name, "partitions_count": partitions})
    assert r.status_code == 201, r.text


def producer_run(topic, client_id, seconds, acked, throttles):
    value = b"x" * 16384
    started = time.monotonic()

    def delivered(err, msg):
        if err is None:
            acked.append((time.monotonic() - started, len(msg.value())))

    config = {"bootstrap.servers": "%s:%d" % KAFKA, "client.id": client_id, "linger.ms": 5,
              "queue.buffering.max.kbytes": 8192, "throttle_cb": throttles.append}
    if BATCH_BYTES:
        config["batch.size"] = int(BATCH_BYTES)
    p = Producer(config)
    while time.monotonic() - started < seconds:
        try:
            p.produce(topic, value, callback=delivered)
        except BufferError:
            p.poll(0.05)
        p.poll(0)
    p.purge()
    p.flush(10)


def accuracy():
    create_topic("quota-accuracy", 2)
    set_quota("slow", "producer_byte_rate", MiB)
    runs = {c: ([], []) for c in ("slow", "fast")}
    threads = [threading.Thread(target=producer_run, args=("quota-accuracy", c, DURATION_S, *runs[c])) for c in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"| client | MiB/s over {DURATION_S:.0f} s | MiB/s over the second half | throttle events | longest throttle |")
    print("|---|---|---|---|---|")
    for c, (acked, throttles) in runs.items():
        whole = sum(n for t, n in acked if t <= DURATION_S) / DURATION_S / MiB
        half = sum(n for t, n in acked if DURATION_S / 2 < t <= DURATION_S) / (DURATION_S / 2) / MiB
        longest = max((e.throttle_time for e in throttles), default=0)
        print(f"| {c} | {whole:.3f} | {half:.3f} | {len(throttles)} | {longest:.3f} s |")


def produce_count(topic):
    p = Producer({"bootstrap.servers": "%s:%d" % KAFKA, "client.id": "bench", "acks": 1, "linger.ms": 5,
                  "queue.buffering.max.messages": 1_000_000})
    value = os.urandom(512).hex().encode()
    started = time.monotonic()
    for i in range(RECORDS):
        while True:
            try:
                p.produce(topic, value, partition=i % 2)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(120)
    return RECORDS / (time.monotonic() - started)


def cost():
    create_topic("quota-cost", 2)
    modes = {"no quota set": None, "a quota on another client": ("other", 1024),
             "a quota on this client, never reached": ("bench", 1 << 40)}
    rates = {m: [] for m in modes}
    order = list(modes.items())
    for r in range(ROUNDS):
        # Each round starts with another mode, so the page cache and the log's growth favour none.
        for mode, quota in order[r % len(order):] + order[:r % len(order)]:
            set_quota("other", "producer_byte_rate", None)
            set_quota("bench", "producer_byte_rate", None)
            if quota:
                set_quota(quota[0], "producer_byte_rate", quota[1])
            rates[mode].append(produce_count("quota-cost"))
    base = statistics.median(rates["no quota set"])
    print(f"\n| produce path, {RECORDS} x 1 KiB, acks=1, {ROUNDS} rounds | median records/s | vs no quota |")
    print("|---|---|---|")
    for mode, r in rates.items():
        m = statistics.median(r)
        print(f"| {mode} | {m:,.0f} | {100 * (m - base) / base:+.1f}% |")


def main():
    data = tempfile.mkdtemp(prefix="ringlog-quota-bench-")
    proc = subprocess.Popen([RINGLOG, "serve", "--set", f"listeners=http://127.0.0.1:9790,kafka://127.0.0.1:9792",
                             "--set", f"log.dirs={data}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 20
        while True:
            try:
                if requests.get(HTTP + "/v1/health", timeout=1).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > end or proc.poll() is not None:
                raise SystemExit("ringlog did not become healthy")
            time.sleep(0.05)
        accuracy()
        cost()
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
