#!/usr/bin/python3
"""Delayed delivery and retries benchmark (issue 18's figures), against its own broker.

1. Lateness: RATE delayed records/s for SECONDS, each due DELAY_MS after it is produced; a
   long-polling reader reads the target partition. Lateness = the delivered record's timestamp
   (the broker's time when the scheduler appended it) - ringlog-deliver-at; and, as seen by the
   reader (its clock, same machine), arrival - ringlog-deliver-at, which adds the reader's own lag
   (a Python reader falls behind past a few thousand records/s). p50 / p99 / max.
2. Memory with many pending: PENDING records due in an hour are produced; the broker's RSS
   (/proc/PID/status VmRSS) before and after, and after a restart (the scheduler reads its
   window of at most 20,000 records back, not all of them).
3. A retry round trip: a consumer nacks a record with retry.backoff.ms=0 and polls it back from
   the retry topic; the time from the nack call to the record in hand, p50 / max over ROUNDS.

Usage: bench/run-delay-bench.py [BUILD_DIR]
  env: RATE=10000 SECONDS=10 DELAY_MS=2000 PENDING=200000 ROUNDS=50
Prints a markdown table. Runs its broker on 127.0.0.1:9591 with a temporary log.dirs.
"""
import base64, os, shutil, subprocess, sys, tempfile, threading, time

import requests

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
RINGLOG = os.environ.get("RINGLOG_BIN", os.path.join(BUILD, "src/app/ringlog"))
RATE = int(os.environ.get("RATE", "10000"))
SECONDS = int(os.environ.get("SECONDS", "10"))
DELAY_MS = int(os.environ.get("DELAY_MS", "2000"))
PENDING = int(os.environ.get("PENDING", "200000"))
ROUNDS = int(os.environ.get("ROUNDS", "50"))
URL = "http://127.0.0.1:9591"
V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
BATCH = 500   # records per produce request


def now_ms():
    return time.time() * 1000.0


def wait_until(check, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.005)
    raise SystemExit(f"timed out waiting for {what}")


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * p))] if s else float("nan")


def start(data):
    proc = subprocess.Popen([RINGLOG, "serve", "--set", f"listeners={URL}", "--set", f"log.dirs={data}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def healthy():
        if proc.poll() is not None:
            raise SystemExit("ringlog exited before serving")
        try:
            return requests.get(URL + "/v1/health", timeout=1).ok
        except requests.ConnectionError:
            return False
    wait_until(healthy, 60, "health")
    return proc


def produce_delayed(topic, count, due_in_ms, session):
    value = base64.b64encode(b"x" * 100).decode()
    body = {"records": [{"value": value, "partition": 0, "delay_ms": due_in_ms} for _ in range(count)]}
    session.post(f"{URL}/topics/{topic}", json=body, headers={"Content-Type": BINARY}).raise_for_status()


def lateness(session):
    requests.post(URL + "/v3/clusters/ringlog-cluster/topics", json={"topic_name": "late", "partitions_count": 1}).raise_for_status()
    late, late_broker, stop = [], [], threading.Event()

    def reader():
        offset, s = 0, requests.Session()
        while not stop.is_set():
            r = s.get(f"{URL}/topics/late/partitions/0/records", params={"offset": offset, "timeout": 500},
                      headers={"Accept": BINARY})
            got = now_ms()
            for rec in r.json():
                due = next(int(base64.b64decode(h["value"])) for h in rec["headers"] if h["key"] == "ringlog-deliver-at")
                late.append(got - due)
                late_broker.append(rec["timestamp"] - due)
                offset = rec["offset"] + 1
    t = threading.Thread(target=reader)
    t.start()
    total = RATE * SECONDS
    t0 = time.monotonic()
    sent = 0
    while sent < total:
        # Paced: BATCH records every BATCH / RATE seconds.
        target = t0 + sent / RATE
        if time.monotonic() < target:
            time.sleep(target - time.monotonic())
        produce_delayed("late", BATCH, DELAY_MS, session)
        sent += BATCH
    achieved = sent / (time.monotonic() - t0)
    wait_until(lambda: len(late) >= total, 120, "every delayed record")
    stop.set()
    t.join()
    return achieved, late, late_broker


def retry_round_trips():
    requests.post(URL + "/v3/clusters/ringlog-cluster/topics", json={"topic_name": "rt", "partitions_count": 1}).raise_for_status()
    r = requests.post(f"{URL}/consumers/rtg", headers={"Content-Type": V2},
                      json={"format": "binary", "auto.offset.reset": "earliest", "retry.backoff.ms": 0,
                            "retry.backoff.max.ms": 0, "max.delivery.attempts": 100})
    base = r.json()["base_uri"]
    requests.post(base + "/subscription", json={"topics": ["rt"]}, headers={"Content-Type": V2}).raise_for_status()
    requests.post(URL + "/topics/rt", json={"records": [{"value": "eA=="}]}, headers={"Content-Type": BINARY}).raise_for_status()
    times, rec = [], None
    while rec is None:
        got = requests.get(base + "/records", params={"timeout": 500}, headers={"Accept": BINARY}).json()
        rec = got[0] if got else None
    for _ in range(ROUNDS):
        t0 = now_ms()
        requests.post(base + "/nacks", headers={"Content-Type": V2},
                      json={"offsets": [{"topic": rec["topic"], "partition": rec["partition"], "offset": rec["offset"],
                                         "reason": "bench"}]}).raise_for_status()
        rec = None
        while rec is None:
            got = requests.get(base + "/records", params={"timeout": 500}, headers={"Accept": BINARY}).json()
            rec = got[0] if got else None
        times.append(now_ms() - t0)
    return times


def main():
    data = tempfile.mkdtemp(prefix="ringlog-delay-bench-")
    proc = start(data)
    try:
        session = requests.Session()
        achieved, late, late_broker = lateness(session)
        rss_before = rss_mib(proc.pid)
        requests.post(URL + "/v3/clusters/ringlog-cluster/topics", json={"topic_name": "pend", "partitions_count": 1}).raise_for_status()
        t0 = time.monotonic()
        for _ in range(0, PENDING, BATCH):
            produce_delayed("pend", BATCH, 3_600_000, session)
        pending_rate = PENDING / (time.monotonic() - t0)
        time.sleep(2)   # the scheduler has read what it will read (a benchmark, not a test)
        rss_pending = rss_mib(proc.pid)
        trips = retry_round_trips()
        proc.send_signal(15)
        proc.wait(timeout=60)
        proc = start(data)
        time.sleep(2)
        rss_restarted = rss_mib(proc.pid)
        print(f"| figure | value |\n|---|---|")
        print(f"| delayed records produced | {RATE * SECONDS:,} at {achieved:,.0f}/s, each due {DELAY_MS} ms later |")
        print(f"| lateness at the broker (append time - due) p50 / p99 / max | {pct(late_broker, 0.5):.0f} / "
              f"{pct(late_broker, 0.99):.0f} / {max(late_broker):.0f} ms |")
        print(f"| lateness seen by the reader p50 / p99 / max | {pct(late, 0.5):.1f} / {pct(late, 0.99):.1f} / {max(late):.1f} ms |")
        print(f"| early (appended before due) | {sum(1 for x in late_broker if x < 0)} |")
        print(f"| RSS after the lateness run | {rss_before:.0f} MiB |")
        print(f"| {PENDING:,} records pending (due in 1 h), produced at {pending_rate:,.0f}/s | RSS {rss_pending:.0f} MiB |")
        print(f"| the same after a restart | RSS {rss_restarted:.0f} MiB |")
        print(f"| retry round trip (nack with retry.backoff.ms=0 -> polled back), {ROUNDS} rounds | "
              f"p50 {pct(trips, 0.5):.1f} ms, max {max(trips):.1f} ms |")
    finally:
        proc.send_signal(15)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
