#!/usr/bin/python3
"""Consumer-group benchmark over HTTP (issue 4): records/s consumed by a group of 3 REST v2
consumers (poll, then commit, at-least-once), and rebalance time when a 4th member joins and when
one leaves: from the membership change until every partition is owned by exactly one member and
the change is reflected (the newcomer owns some; the leaver's partitions are owned by others).

Usage: bench/run-group-bench.py [BUILD_DIR]   (env: RECORDS=60000, PARTITIONS=6)
Prints a markdown table. Runs its own broker on 127.0.0.1:9590 with a temporary log.dirs.
"""
import base64, json, os, shutil, subprocess, sys, tempfile, threading, time

import requests

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
RINGLOG = os.path.join(BUILD, "src/app/ringlog")
RECORDS = int(os.environ.get("RECORDS", "60000"))
PARTITIONS = int(os.environ.get("PARTITIONS", "6"))
URL = "http://127.0.0.1:9590"
V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"


def wait_until(check, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.005)
    raise SystemExit(f"timed out waiting for {what}")


def main():
    data = tempfile.mkdtemp(prefix="ringlog-group-bench-")
    broker = subprocess.Popen([RINGLOG, "serve", "--set", f"listeners={URL}", "--set", f"log.dirs={data}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def healthy():
            if broker.poll() is not None:
                raise SystemExit("ringlog exited before serving")
            try:
                return requests.get(URL + "/v1/health", timeout=1).ok
            except requests.ConnectionError:
                return False
        wait_until(healthy, 20, "health")
        requests.post(URL + "/v3/clusters/ringlog-cluster/topics",
                      json={"topic_name": "g", "partitions_count": PARTITIONS}).raise_for_status()
        value = base64.b64encode(b"x" * 1024).decode()
        for start in range(0, RECORDS, 500):
            body = {"records": [{"value": value, "partition": (start + i) % PARTITIONS} for i in range(500)]}
            requests.post(URL + "/topics/g", json=body, headers={"Content-Type": BINARY}).raise_for_status()
        group, stop, consumed, lock = "bench", threading.Event(), [0], threading.Lock()

        def member(name):
            r = requests.post(f"{URL}/consumers/{group}", headers={"Content-Type": V2},
                              json={"name": name, "format": "binary", "auto.offset.reset": "earliest"})
            r.raise_for_status()
            base = r.json()["base_uri"]
            requests.post(base + "/subscription", json={"topics": ["g"]}, headers={"Content-Type": V2}).raise_for_status()
            return base

        def poll_loop(base, session):
            while not stop.is_set():
                r = session.get(base + "/records", params={"timeout": 100, "max_bytes": 4 << 20}, headers={"Accept": BINARY})
                if r.status_code == 404:
                    return  # deleted
                got = r.json()
                if got:
                    session.post(base + "/offsets", headers={"Content-Type": V2}).raise_for_status()
                    with lock:
                        consumed[0] += len(got)

        def owned(base):
            r = requests.get(base + "/assignments", headers={"Accept": V2})
            return {(p["topic"], p["partition"]) for p in r.json()["partitions"]} if r.ok else set()

        bases = [member(f"m{i}") for i in range(3)]
        threads = [threading.Thread(target=poll_loop, args=(b, requests.Session())) for b in bases]
        started = time.monotonic()
        for t in threads:
            t.start()
        wait_until(lambda: consumed[0] >= RECORDS, 300, "the group to consume everything")
        consume_s = time.monotonic() - started

        def exactly_once(members):
            sets = [owned(b) for b in members]
            every = [p for s in sets for p in s]
            return len(every) == PARTITIONS and len(set(every)) == PARTITIONS, sets

        joined_at = time.monotonic()
        newcomer = member("m3")
        t4 = threading.Thread(target=poll_loop, args=(newcomer, requests.Session()))
        t4.start()
        wait_until(lambda: exactly_once(bases + [newcomer])[0] and owned(newcomer), 60, "the join rebalance")
        join_s = time.monotonic() - joined_at
        left_at = time.monotonic()
        requests.delete(bases[0]).raise_for_status()
        wait_until(lambda: exactly_once(bases[1:] + [newcomer])[0], 60, "the leave rebalance")
        leave_s = time.monotonic() - left_at
        stop.set()
        for t in threads + [t4]:
            t.join()
        print("| measurement | value |")
        print("|---|---|")
        print(f"| records consumed by 3 members ({PARTITIONS} partitions, 1 KiB values, poll + commit) | "
              f"{RECORDS} in {consume_s:.2f} s = {RECORDS / consume_s:.0f} records/s ({RECORDS * 1024 / consume_s / 1e6:.1f} MB/s) |")
        print(f"| rebalance when a 4th member joins (until every partition has one owner, the newcomer some) | {join_s * 1000:.0f} ms |")
        print(f"| rebalance when a member leaves (DELETE, until its partitions have new owners) | {leave_s * 1000:.0f} ms |")
    finally:
        broker.terminate()
        broker.wait(timeout=30)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
