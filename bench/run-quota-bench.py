#!/usr/bin/python3
"""Client quota benchmark (issue 31), librdkafka (confluent-kafka) as the client:
1. accuracy (MODE=accuracy): a producer with client.id `slow` under producer_byte_rate=1 MiB/s and
   a producer `fast` beside it without a quota, both sending 16 KiB records as fast as they may for
   DURATION_S seconds; prints each one's acked MiB/s over the whole run and over its second half,
   and the throttle times librdkafka reported. Kafka's rate lets a new client send about
   (quota.window.num - 1) x quota.window.size.seconds = 10 s worth at once, and again when that
   sample expires 11 s later: the bound holds over the window, in bursts, so a second half may
   hold one burst or none.
2. cost (MODE=cost): the accounting on the produce path. bench/latency_client.cc (librdkafka,
   client.id `bench`) offers COST_RATE 1 KiB records/s (acks=1) for COST_SECONDS, ROUNDS rounds,
   each round running three modes in a rotated order: no quota set, a quota set only for another
   client (every request looks its client up in the quota index), a quota on `bench` far above what
   it sends (every request is also recorded in its sensor). Prints the broker's CPU time (user +
   system, /proc) per acked record: median, min..max, and each round's ratio to that round's
   no-quota run.
3. storm (MODE=storm): the same client at STORM_RATE records/s (acks=all) for STORM_SECONDS, quiet
   and beside a storm of STORM_CONNECTS TCP connects from STORM_SOURCE (127.0.0.2; the producer is
   on 127.0.0.1) STORM_AFTER_S into the run, STORM_REPEATS pairs alternating in one broker run
   (default limits: max.connections.per.ip=1000, max.connection.creation.rate=1000/s). Prints each
   run's ack p99 and the storm / quiet ratio of the medians.
Quotas are set with AlterClientQuotas, a raw request encoded from the schema files
(tests/integration/kafka_schema.py: neither confluent-kafka 1.7 nor kafka-python 2.0 has it).

Usage: bench/run-quota-bench.py [BUILD_DIR]   (env: MODE=accuracy|cost|storm|all (all), DURATION_S=20,
BATCH_BYTES=librdkafka's batch.size in part 1 (unset = its default, 1 MB), ROUNDS=5, COST_SECONDS=8,
COST_RATE=20000, STORM_CONNECTS=2000, STORM_CONCURRENCY=500, STORM_RATE=2000, STORM_SECONDS=10,
STORM_AFTER_S=3, STORM_REPEATS=4; the latency client is compiled to BUILD_DIR/bench/latency_client)
Runs its own broker (HTTP 127.0.0.1:9790, Kafka 127.0.0.1:9792) on a temporary log.dirs. Not a
test: no figure is asserted.
"""
import asyncio, json, os, shutil, socket, statistics, subprocess, sys, tempfile, threading, time

import requests
from confluent_kafka import Producer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import kafka_schema  # noqa: E402

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
RINGLOG = os.path.join(BUILD, "src/app/ringlog")
CLIENT_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "latency_client.cc")
CLIENT = os.path.join(BUILD, "bench", "latency_client")
DURATION_S = float(os.environ.get("DURATION_S", "20"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
COST_SECONDS = float(os.environ.get("COST_SECONDS", "8"))
COST_RATE = int(os.environ.get("COST_RATE", "20000"))
STORM_CONNECTS = int(os.environ.get("STORM_CONNECTS", "2000"))
STORM_CONCURRENCY = int(os.environ.get("STORM_CONCURRENCY", "500"))
STORM_SOURCE = os.environ.get("STORM_SOURCE", "127.0.0.2")   # the storm's address; the producer's is 127.0.0.1
STORM_RATE = int(os.environ.get("STORM_RATE", "2000"))
STORM_SECONDS = float(os.environ.get("STORM_SECONDS", "10"))
STORM_AFTER_S = float(os.environ.get("STORM_AFTER_S", "3"))
STORM_REPEATS = int(os.environ.get("STORM_REPEATS", "4"))
MODE = os.environ.get("MODE", "all")   # accuracy | cost | storm | all
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


def build_client():
    """bench/latency_client.cc (librdkafka), compiled beside the build as run-latency-bench.py does."""
    os.makedirs(os.path.dirname(CLIENT), exist_ok=True)
    if os.path.exists(CLIENT) and os.path.getmtime(CLIENT) >= os.path.getmtime(CLIENT_SRC):
        return
    subprocess.run(["c++", "-std=c++20", "-O2", "-o", CLIENT, CLIENT_SRC, "-lrdkafka", "-lpthread"], check=True)


def latency_client(topic, client_id, rate, seconds, acks):
    """One run of bench/latency_client.cc: its JSON (acked_per_s, ack and e2e percentiles)."""
    out = subprocess.run([CLIENT, "--bootstrap", "%s:%d" % KAFKA, "--topic", topic, "--partitions", "2",
                          "--rate", str(rate), "--seconds", str(seconds), "--warmup-seconds", "1",
                          "--record-bytes", "1024", "--acks", acks, "--client-id", client_id],
                         capture_output=True, text=True, timeout=seconds + 120)
    if out.returncode != 0:
        raise SystemExit("latency_client failed: " + out.stderr + out.stdout)
    return json.loads(out.stdout.strip().splitlines()[-1])


def broker_cpu_s(pid):
    """The broker's user + system CPU seconds so far (/proc/PID/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cost(pid):
    """Quotas configured but not binding vs none, in one broker run, rounds rotating the mode order.
    The producer offers a fixed COST_RATE, so the figure is the broker's CPU time per record (user +
    system, /proc): what accounting adds shows there; the wall-clock maximum swung by +-60% between
    rounds on this shared machine."""
    create_topic("quota-cost", 2)
    modes = {"no quota set": None, "a quota on another client": ("other", 1024),
             "a quota on this client, never reached": ("bench", 1 << 40)}
    cpu_us = {m: [] for m in modes}
    order = list(modes.items())
    for r in range(ROUNDS):
        # Each round starts with another mode, so the page cache and the log's growth favour none.
        for mode, quota in order[r % len(order):] + order[:r % len(order)]:
            set_quota("other", "producer_byte_rate", None)
            set_quota("bench", "producer_byte_rate", None)
            if quota:
                set_quota(quota[0], "producer_byte_rate", quota[1])
            before = broker_cpu_s(pid)
            out = latency_client("quota-cost", "bench", COST_RATE, COST_SECONDS, "1")
            cpu_us[mode].append((broker_cpu_s(pid) - before) * 1e6 / max(out["acked"], 1))
    base = cpu_us["no quota set"]
    print(f"\n| broker CPU per record, {COST_RATE:,}/s x 1 KiB, acks=1, {COST_SECONDS:.0f} s x {ROUNDS} rounds "
          f"| median us | min..max | vs no quota (medians) | same-round ratio, median (min..max) |")
    print("|---|---:|---:|---:|---:|")
    for mode, r in cpu_us.items():
        m = statistics.median(r)
        ratios = [100 * (x - b) / b for x, b in zip(r, base)]
        print(f"| {mode} | {m:.2f} | {min(r):.2f}..{max(r):.2f} | {100 * (m - statistics.median(base)) / statistics.median(base):+.1f}% "
              f"| {statistics.median(ratios):+.1f}% ({min(ratios):+.1f}..{max(ratios):+.1f}) |")


async def connect_storm(count, source):
    """`count` TCP connects to the Kafka listener from `source`, STORM_CONCURRENCY at a time; the
    ones that open are held. Returns ((reader, writer) of each opened, refused or timed out, seconds)."""
    held, failed = [], 0
    gate = asyncio.Semaphore(STORM_CONCURRENCY)
    started = time.monotonic()

    async def one():
        nonlocal failed
        async with gate:
            try:
                held.append(await asyncio.wait_for(
                    asyncio.open_connection(KAFKA[0], KAFKA[1], local_addr=(source, 0)), 5))
            except (OSError, asyncio.TimeoutError):
                failed += 1

    await asyncio.gather(*(one() for _ in range(count)))
    return held, failed, time.monotonic() - started


def storm_thread(result, stop):
    async def run():
        await asyncio.sleep(STORM_AFTER_S)
        held, failed, took = await connect_storm(STORM_CONNECTS, STORM_SOURCE)
        # How many the broker still holds a moment later (it closes those over its limits).
        await asyncio.sleep(1)
        alive = sum(1 for r, _ in held if not r.at_eof())
        result.update(opened=len(held), failed=failed, seconds=took, alive=alive)
        while not stop.is_set():
            await asyncio.sleep(0.1)
        for _, w in held:
            w.close()
    asyncio.run(run())


def storm():
    """p99 produce latency of one client beside a storm of STORM_CONNECTS connects from another
    address, and without it, alternating in one broker run."""
    create_topic("quota-storm", 2)
    runs = {"quiet": [], "storm": []}
    storms = []
    for r in range(STORM_REPEATS):
        for mode in ("quiet", "storm") if r % 2 == 0 else ("storm", "quiet"):
            stop, result = threading.Event(), {}
            t = threading.Thread(target=storm_thread, args=(result, stop)) if mode == "storm" else None
            if t:
                t.start()
            runs[mode].append(latency_client("quota-storm", "storm-bench", STORM_RATE, STORM_SECONDS, "all"))
            if t:
                stop.set()
                t.join()
                storms.append(result)
    print(f"\n| {STORM_RATE}/s x 1 KiB, acks=all, {STORM_SECONDS:.0f} s x {STORM_REPEATS} | ack p50 ms | ack p99 ms "
          f"(each run) | median p99 | acked/s |")
    print("|---|---:|---:|---:|---:|")
    for mode, rs in runs.items():
        p99 = [x["ack"]["p99_ms"] for x in rs]
        print(f"| {mode} | {statistics.median(x['ack']['p50_ms'] for x in rs):.2f} | "
              f"{', '.join(f'{v:.2f}' for v in p99)} | {statistics.median(p99):.2f} | "
              f"{statistics.median(x['acked_per_s'] for x in rs):,.0f} |")
    quiet, loud = (statistics.median(x["ack"]["p99_ms"] for x in runs[m]) for m in ("quiet", "storm"))
    print(f"storm / quiet p99: {loud / quiet:.2f}x; storms (connects opened, refused, seconds, still open 1 s later): "
          + ", ".join(f"({s.get('opened')}, {s.get('failed')}, {s.get('seconds', 0):.2f}, {s.get('alive')})" for s in storms))


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
        build_client()
        if MODE in ("all", "accuracy"):
            accuracy()
        if MODE in ("all", "cost"):
            cost(proc.pid)
        if MODE in ("all", "storm"):
            storm()
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
