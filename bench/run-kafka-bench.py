#!/usr/bin/python3
"""Kafka listener benchmark (issue 15), with librdkafka (confluent-kafka) as the client:
produce of 1 KiB records with acks=all (fsync before the ack, the default flush policy) from one
producer, then one consumer reading them all back from the page cache; beside it, in the same run
and on the same broker, `ringlog bench --transport kafka` (the native load generator on the
broker's own codec) and `ringlog bench --transport http` with the same record size and acks, so
the protocols are compared on one machine state; and fio's buffered sequential write with
fdatasync every 1 MiB into the same file system, the machine's limit for what an fsync-before-ack
broker can write.

Usage: bench/run-kafka-bench.py [BUILD_DIR]   (env: RECORDS=200000, PARTITIONS=6, HTTP_MS=10000;
SETS="key=value ..." adds --set options to the broker, e.g. SETS="socket.send.buffer.bytes=-1";
FIO=0 leaves fio out)
Prints a markdown table. Runs its own broker (HTTP 127.0.0.1:9690, Kafka 127.0.0.1:9692) with a
temporary log.dirs. Not a test: no figure is asserted.
"""
import json, os, shutil, subprocess, sys, tempfile, time

import requests
from confluent_kafka import Consumer, Producer, TopicPartition

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
RINGLOG = os.path.join(BUILD, "src/app/ringlog")
RECORDS = int(os.environ.get("RECORDS", "200000"))
PARTITIONS = int(os.environ.get("PARTITIONS", "6"))
HTTP_MS = int(os.environ.get("HTTP_MS", "10000"))
SETS = os.environ.get("SETS", "").split()
FIO = os.environ.get("FIO", "1") != "0"
RECORD_BYTES = 1024
HTTP = "http://127.0.0.1:9690"
KAFKA = "127.0.0.1:9692"


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


def produce(topic, codec):
    p = Producer({"bootstrap.servers": KAFKA, "acks": "all", "linger.ms": 5, "compression.type": codec,
                  "queue.buffering.max.messages": 1_000_000, "enable.idempotence": False})
    value = os.urandom(RECORD_BYTES // 2).hex().encode()   # incompressible-ish 1 KiB
    failed = []
    start = time.monotonic()
    for i in range(RECORDS):
        while True:
            try:
                p.produce(topic, value=value, partition=i % PARTITIONS,
                          on_delivery=lambda err, _m: failed.append(err) if err else None)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(120)
    seconds = time.monotonic() - start
    if failed:
        raise SystemExit(f"{len(failed)} deliveries failed: {failed[0]}")
    return RECORDS / seconds, RECORDS * RECORD_BYTES / seconds / 1e6


def consume(topic):
    c = Consumer({"bootstrap.servers": KAFKA, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 4194304})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = 0
    start = time.monotonic()
    while got < RECORDS:
        batch = c.consume(10000, 5)
        if not batch:
            raise SystemExit(f"consumer stalled at {got} of {RECORDS}")
        got += sum(1 for m in batch if m.error() is None)
    seconds = time.monotonic() - start
    c.close()
    return got / seconds, got * RECORD_BYTES / seconds / 1e6


def ringlog_bench(transport):
    out = subprocess.run([RINGLOG, "bench", "--bootstrap-server", HTTP, "--kafka-bootstrap", KAFKA, "--transport",
                          transport, "--topic", f"{transport}-bench", "--partitions", str(PARTITIONS),
                          "--duration-ms", str(HTTP_MS), "--record-bytes", str(RECORD_BYTES), "--acks", "all",
                          "--json"], capture_output=True, text=True, timeout=HTTP_MS / 1000 + 120)
    if out.returncode != 0:
        raise SystemExit(f"ringlog bench --transport {transport} failed: " + out.stderr + out.stdout)
    return json.loads(out.stdout)


def fio(directory):
    """fio's buffered sequential write, 64 KiB blocks with fdatasync every 16 (1 MiB), 512 MiB."""
    if shutil.which("fio") is None:
        return None
    out = subprocess.run(["fio", "--name=seqwrite", f"--directory={directory}", "--rw=write", "--bs=64k",
                          "--size=512m", "--fdatasync=16", "--ioengine=sync", "--output-format=json"],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit("fio failed: " + out.stderr)
    job = json.loads(out.stdout)["jobs"][0]["write"]
    return job["bw_bytes"] / 1e6


def main():
    data = tempfile.mkdtemp(prefix="ringlog-kafka-bench-")
    proc = subprocess.Popen([RINGLOG, "serve", "--set", f"listeners={HTTP},kafka://{KAFKA}", "--set",
                             f"log.dirs={data}/d", *[a for kv in SETS for a in ("--set", kv)]],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        wait_healthy(proc)
        rows = []
        for codec in ["none", "lz4"]:
            topic = f"kafka-bench-{codec}"
            r = requests.post(f"{HTTP}/v3/clusters/ringlog-cluster/topics",
                              json={"topic_name": topic, "partitions_count": PARTITIONS})
            assert r.status_code == 201, r.text
            rps, mbs = produce(topic, codec)
            rows.append((f"Kafka produce, librdkafka, acks=all, {codec}", rps, mbs))
            rps, mbs = consume(topic)
            rows.append((f"Kafka fetch (page cache), librdkafka, {codec}", rps, mbs))
        benches = {}
        for transport, name in [("kafka", "Kafka produce, ringlog bench (native), acks=all, batches of 100"),
                                ("http", "HTTP produce, ringlog bench, acks=all, batches of 100")]:
            h = benches[transport] = ringlog_bench(transport)
            rows.append((name, h.get("produced_records_per_s", h.get("records_per_s", 0)),
                         h.get("produced_mb_per_s", h.get("mb_per_s", 0))))
        limit = fio(data) if FIO else None
        print(f"{RECORDS} records of {RECORD_BYTES} bytes over {PARTITIONS} partitions\n")
        print("| what | records/s | MB/s |\n|---|---:|---:|")
        for name, rps, mbs in rows:
            print(f"| {name} | {rps:,.0f} | {mbs:,.1f} |")
        if limit is not None:
            print(f"| fio: buffered sequential write, fdatasync every 1 MiB (same file system) | | {limit:,.1f} |")
        for transport, h in benches.items():
            print(f"\nringlog bench --transport {transport} --json:", json.dumps(h))
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
