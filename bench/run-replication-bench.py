#!/usr/bin/python3
"""Cluster II benchmarks on this machine: partition failover and replicated produce throughput.

  bench/run-replication-bench.py [--kills N] [--settle S] [--seconds S] [--clients N] [--batch N]
                                 [--set key=value ...] [--skip-failover] [--skip-throughput]
                                 [--skip-nats] [--keep] [--bin build/src/app/ringlog]

1. Partition failover (`--kills`, default 20): three real `ringlog serve` processes on
   127.0.0.1 (tests/integration/test_cluster.py's Cluster), a topic of 1 partition with
   replication factor 3 and min.insync.replicas=2. One producer thread POSTs one record at a time
   with acks=all to a broker that does NOT lead the partition (the broker forwards to the
   leader). The script kill -9s the leader and measures, from the kill:
     - fenced:  until a survivor's /brokers shows the killed broker fenced (session timeout),
     - leader:  until a survivor's describe names another leader,
     - acked:   until the first produce SENT after the kill is acknowledged (HTTP 200, no error);
   then restarts the killed node and waits until the ISR has all three again (rejoin), and with
   `--settle S` until it stayed so for S seconds. Just before each kill the ISR is checked to be
   full (else the script waits for it and says so in the report). At the end
   every acknowledged (offset, value) is read back: "lost" counts acknowledged records missing or
   different at their offset (must be 0).
2. Throughput (`--seconds` per run, default 10): 1 KiB values, acks=all, `--clients` processes
   (default 6) each keeping one POST of `--batch` records (default 200) in flight to its own
   partition (6 partitions), v2 binary API:
     (a) replication factor 3 on 3 brokers, each client posting to its partition's leader,
     (a') the same, every client posting to one broker (forwarding for 2/3 of the partitions),
     (b) replication factor 1 on a one-node cluster, same clients,
     (c) NATS JetStream, 3 nats-server processes, one stream with num_replicas 3 and file storage
         per client (a stream is JetStream's unit of replication, as a partition is ours), our
         own Python client over the NATS text protocol keeping `--batch` publishes in flight and
         counting JetStream's publish acks.
   Beside them, `ringlog bench` (the project's C++ load generator) with as many producers and
   the same batch, every producer through node 1, on rf 3 (3 brokers) and rf 1 (one broker).
   Client and server CPU (of the 200% two cores give) are printed beside each figure so a
   client-bound run shows as one.

Failed produce attempts are listed by the last event before each (kill, first ack, restart, ISR
full) with their answers. `--keep` keeps the data dirs and logs (`ringlog metadata dump --log-dirs
DIR/failover/node1/data` shows the fence/unfence and ISR records).
`--set key=value` passes ringlog settings to every node (e.g. --set broker.session.timeout.ms=1000
--set broker.heartbeat.interval.ms=200). Prints a Markdown report (paste into docs/benchmarks.md).
Uses only loopback and temp dirs under --dir (default: the system temp dir; not tmpfs here).
"""
import argparse
import base64
import contextlib
import json
import multiprocessing
import os
import pathlib
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from conftest import free_port, wait_until  # noqa: E402
from test_cluster import Cluster, create_topic, describe  # noqa: E402

BINARY = "application/vnd.kafka.binary.v2+json"
JSONV2 = "application/vnd.kafka.json.v2+json"
# Throughput: partitions of the topic (and JetStream streams), one client process each by default.
PARTITIONS = 6
# Failover: how many acknowledged produces through the entry broker before each kill, so the
# producer is known to be working through that broker when the leader dies.
ACKS_BEFORE_KILL = 20
# One produce's own deadline; a forwarded produce to a dead leader must not hang the producer
# longer than this (the broker's own request timeout is 30 s by default).
PRODUCE_TIMEOUT_S = 10.0
# Backoff between failed produces: the producer must retry fast enough to measure failover in
# milliseconds without spinning the two cores the brokers need.
RETRY_BACKOFF_S = 0.005


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def pressure():
    """Linux PSI: the share of the last 60 s some task waited for CPU / for I/O (other load shows here)."""
    out = []
    for what in ("cpu", "io"):
        try:
            line = open(f"/proc/pressure/{what}").readline().split()
            out.append(f"{what} some avg60={line[2].split('=')[1]}%")
        except (OSError, IndexError):
            pass
    return ", ".join(out) or "no /proc/pressure"


def machine():
    mem_kib = int(next(line for line in open("/proc/meminfo") if line.startswith("MemTotal")).split()[1])
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    df = subprocess.run(["df", "-hT", tempfile.gettempdir()], capture_output=True, text=True).stdout.splitlines()[-1].split()
    load = os.getloadavg()
    return (f"nproc={os.cpu_count()}; cpu={cpu}; memory={mem_kib / 1048576:.0f} GiB; "
            f"disk={df[0]} {df[1]} {df[2]} total, {df[4]} free (temp dir {tempfile.gettempdir()}); "
            f"kernel={platform.release()}; load average at start={load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
            f"pressure at start: {pressure()}")


# ---------------------------------------------------------------------------------------------
# Cluster helpers


def start_cluster(root, size, sets):
    cluster = Cluster(root, size=size)
    for n in cluster.nodes:
        n.extra_sets += list(sets)
    return cluster.start()


def leader_of(node, topic, partition):
    parts = describe(node, topic).json()["data"]
    leader = parts[partition]["leader"]
    return None if leader is None else int(leader["related"].rsplit("/", 1)[1])


def isr_of(node, topic, partition):
    r = requests.get(node.v3(f"/topics/{topic}/partitions/{partition}/replicas"), timeout=5)
    return sorted(x["broker_id"] for x in r.json()["data"] if x["is_in_sync"])


def quiet(fn, default=None):
    """fn() or default when the node does not answer (it may be the one just killed)."""
    try:
        return fn()
    except (requests.RequestException, ValueError, KeyError, IndexError, TypeError):
        return default


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (/proc/PID/stat fields 14 and 15)."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------
# 1. Partition failover


class Producer(threading.Thread):
    """Produces one record at a time, acks=all, to self.target; logs every attempt."""

    def __init__(self, topic):
        super().__init__(daemon=True)
        self.topic = topic
        self.target = None
        self.stop = False
        self.seq = 0
        self.attempts = []   # (sent, answered, ok, offset, value, what, entry node id); times in monotonic s
        self.lock = threading.Lock()
        self.sessions = {}

    def run(self):
        while not self.stop:
            node = self.target
            if node is None:
                time.sleep(RETRY_BACKOFF_S)
                continue
            session = self.sessions.setdefault(node.port, requests.Session())
            value = f"v{self.seq}"
            self.seq += 1
            sent = time.monotonic()
            ok, offset, what = False, None, None
            try:
                r = session.post(f"{node.url}/topics/{self.topic}", params={"acks": "all"},
                                 json={"records": [{"value": value, "partition": 0}]},
                                 headers={"Content-Type": JSONV2}, timeout=PRODUCE_TIMEOUT_S)
                if r.status_code == 200:
                    o = r.json()["offsets"][0]
                    if o.get("error_code") is None and o.get("error") is None:
                        ok, offset = True, o["offset"]
                    else:
                        what = f"200 error_code {o.get('error_code')}: {o.get('error')}"
                else:
                    what = f"{r.status_code} {r.text[:160]}"
            except requests.RequestException as e:
                what = type(e).__name__
                self.sessions.pop(node.port, None)
            answered = time.monotonic()
            with self.lock:
                self.attempts.append((sent, answered, ok, offset, value, what, node.node_id))
            if not ok:
                time.sleep(RETRY_BACKOFF_S)

    def acked_since(self, t):
        with self.lock:
            return sum(1 for a in self.attempts if a[2] and a[0] >= t)

    def first_ack_sent_after(self, t):
        """(sent, answered) of the first acknowledged attempt sent at or after t, or None."""
        with self.lock:
            return next(((a[0], a[1]) for a in self.attempts if a[2] and a[0] >= t), None)


def read_partition(node, topic, partition):
    got = {}
    offset = 0
    while True:
        r = requests.get(f"{node.url}/topics/{topic}/partitions/{partition}/records",
                         params={"offset": offset, "timeout": 500}, headers={"Accept": JSONV2}, timeout=30)
        assert r.status_code == 200, r.text
        batch = r.json()
        if not batch:
            return got
        for x in batch:
            got[x["offset"]] = x["value"]
        offset = batch[-1]["offset"] + 1


def failover(cluster, kills, log, settle_s=0.0):
    topic = "failover"
    n1 = cluster.nodes[0]
    wait_until(cluster.controller, 30, "one controller")
    r = create_topic(n1, topic, partitions=1, replication_factor=3,
                     configs=[{"name": "min.insync.replicas", "value": "2"}])
    assert r.status_code == 201, r.text
    wait_until(lambda: quiet(lambda: isr_of(n1, topic, 0)) == [1, 2, 3], 30, "ISR of three")
    producer = Producer(topic)
    producer.start()
    rows = []
    isr_not_full = []   # (kill, ISR seen) where the ISR was no longer full before the kill
    settle_drops = []   # kills after whose restart the ISR left full while settling
    events = [(time.monotonic(), "start")]   # (monotonic s, what): failed attempts are told by phase
    try:
        for k in range(kills):
            observer = cluster.nodes[k % 3]
            leader = wait_until(lambda: quiet(lambda: leader_of(observer, topic, 0)), 30, "a leader")
            controller = wait_until(cluster.controller, 30, "one controller")
            entry = next(n for n in cluster.nodes[k % 3:] + cluster.nodes[:k % 3] if n.node_id != leader)
            switched = time.monotonic()
            producer.target = entry
            wait_until(lambda: producer.acked_since(switched) >= ACKS_BEFORE_KILL, 60,
                       f"{ACKS_BEFORE_KILL} acks through broker {entry.node_id}")
            # The ISR was full after the last restart; check again just before the kill: a
            # broker that left the ISR meanwhile would make this kill measure something else.
            isr = quiet(lambda: isr_of(observer, topic, 0))
            while isr != [1, 2, 3]:
                isr_not_full.append((k, isr))
                log(f"kill {k}: ISR is {isr} (not all three) after {ACKS_BEFORE_KILL} acks; waiting for it to be full")
                wait_until(lambda: quiet(lambda: isr_of(observer, topic, 0)) == [1, 2, 3], 60, "the ISR of three")
                isr = quiet(lambda: isr_of(observer, topic, 0))
            survivors = [n for n in cluster.nodes if n.node_id != leader]
            watcher = survivors[0] if survivors[0].node_id != entry.node_id else survivors[1]
            killed = time.monotonic()
            cluster.node(leader).kill()
            events.append((killed, "kill -9 of the leader"))
            fenced = new_leader_at = acked = None
            new_leader = None
            deadline = killed + 60
            while (fenced is None or new_leader_at is None or acked is None) and time.monotonic() < deadline:
                now = time.monotonic()
                if fenced is None and quiet(lambda: watcher.brokers()[leader]["state"]) == "fenced":
                    fenced = now
                if new_leader_at is None:
                    nl = quiet(lambda: leader_of(watcher, topic, 0))
                    if nl is not None and nl != leader:
                        new_leader_at, new_leader = now, nl
                if acked is None:
                    first = producer.first_ack_sent_after(killed)
                    if first is not None:
                        ack_sent, acked = first
                time.sleep(0.01)
            assert acked is not None, f"kill {k}: no acknowledged produce within 60 s of killing broker {leader}"
            events.append((acked, "first ack after the kill"))
            events.append((time.monotonic(), "restart of the killed node"))
            cluster.node(leader).spawn()
            wait_until(cluster.node(leader).healthy, 60, "the restarted node")
            events.append((time.monotonic(), "restarted node healthy"))
            wait_until(lambda: quiet(lambda: isr_of(watcher, topic, 0)) == [1, 2, 3], 60, "the ISR of three again")
            rejoined = time.monotonic()
            events.append((rejoined, "ISR full again"))
            if settle_s > 0:
                # Not before the ISR stayed full for settle_s: a restarted broker may leave it again
                # soon after rejoining (see docs/benchmarks.md, Cluster II), and the next kill would
                # then measure an ISR of one.
                full_since = time.monotonic()
                deadline = full_since + 60
                while time.monotonic() - full_since < settle_s:
                    assert time.monotonic() < deadline, "the ISR did not stay full for --settle seconds within 60 s"
                    if quiet(lambda: isr_of(watcher, topic, 0)) != [1, 2, 3]:
                        settle_drops.append(k)
                        wait_until(lambda: quiet(lambda: isr_of(watcher, topic, 0)) == [1, 2, 3], 60, "the ISR of three")
                        full_since = time.monotonic()
                    time.sleep(0.05)
                events.append((time.monotonic(), "ISR full for --settle seconds"))
            with producer.lock:
                after = [a for a in producer.attempts if killed <= a[0] <= acked and not a[2]]
            kinds = {}
            for a in after:
                key = a[5][:100]
                first, last, n = kinds.get(key, (a[0], a[0], 0))
                kinds[key] = (first, a[0], n + 1)
            row = {"kill": k, "leader": leader, "controller": controller, "entry": entry.node_id,
                   "new_leader": new_leader, "acked_s": acked - killed, "ack_sent_s": ack_sent - killed,
                   "leader_s": None if new_leader_at is None else new_leader_at - killed,
                   "fenced_s": None if fenced is None else fenced - killed, "rejoin_s": rejoined - killed,
                   "errors": {k: (f - killed, l - killed, n) for k, (f, l, n) in kinds.items()}}
            rows.append(row)
            log(f"kill {k}: leader {leader} (controller {controller}) killed, entry {entry.node_id}: "
                f"acked after {row['acked_s'] * 1000:.0f} ms (that request sent at {row['ack_sent_s'] * 1000:.0f} ms), new leader {new_leader} seen after "
                f"{(row['leader_s'] or 0) * 1000:.0f} ms, fenced after {(row['fenced_s'] or 0) * 1000:.0f} ms, "
                f"ISR full again after {row['rejoin_s']:.1f} s; failed attempts sent after the kill: "
                + ("; ".join(f"{n} x [{f * 1000:.0f}..{l * 1000:.0f} ms] {k}" for k, (f, l, n) in row["errors"].items())
                   or "none"))
    finally:
        producer.stop = True
        producer.join(PRODUCE_TIMEOUT_S + 5)
    # Every acknowledged record is readable at its offset (read through every node: each
    # forwards to the leader; reading through all checks the forwarding too).
    acked = [(a[3], a[4]) for a in producer.attempts if a[2]]
    errors = {}
    for a in producer.attempts:
        if not a[2]:
            since, phase = max((e for e in events if e[0] <= a[0]), default=events[0])
            key = (phase, f"via node {a[6]}: {a[5][:120]}")
            n, lo, hi = errors.get(key, (0, None, None))
            d = a[0] - since
            errors[key] = (n + 1, d if lo is None else min(lo, d), d if hi is None else max(hi, d))
    check = {}
    for n in cluster.nodes:
        got = read_partition(n, topic, 0)
        lost = [(o, v) for o, v in acked if got.get(o) != json.dumps(v) and got.get(o) != v]
        values = list(got.values())
        check[n.node_id] = {"records": len(got), "lost": len(lost), "lost_sample": lost[:5],
                            "duplicates": len(values) - len(set(values))}
    return rows, len(acked), len(producer.attempts), errors, check, isr_not_full, settle_drops


def report_failover(title, rows, acked, attempts, errors, check, isr_not_full, settle_drops):
    ms = lambda s: "-" if s is None else f"{s * 1000:.0f} ms"  # noqa: E731
    out = [f"#### {title}", "", "| measure (from the kill -9) | n | p50 | p99 | max |", "|---|---|---|---|---|"]

    def line(name, key, subset=None):
        vals = [r[key] for r in (subset if subset is not None else rows) if r[key] is not None]
        if vals:
            out.append(f"| {name} | {len(vals)} | {ms(statistics.median(vals))} | {ms(percentile(vals, 99))} | {ms(max(vals))} |")

    line("first acknowledged produce sent after the kill (through a non-leader)", "acked_s")
    line("the first acknowledged produce was sent", "ack_sent_s")
    line("a survivor's describe names the new leader", "leader_s")
    line("a survivor's /brokers shows the killed broker fenced", "fenced_s")
    ctrl = [r for r in rows if r["leader"] == r["controller"]]
    plain = [r for r in rows if r["leader"] != r["controller"]]
    line("acknowledged produce, leader was not the active controller", "acked_s", plain)
    line("acknowledged produce, leader was also the active controller", "acked_s", ctrl)
    line("ISR of three again after restarting the killed node", "rejoin_s")
    out.append("")
    out.append(f"Produce attempts: {attempts}, acknowledged: {acked}. Read back through every node: "
               + "; ".join(f"node {i}: {c['records']} records, lost acknowledged {c['lost']}, duplicate values {c['duplicates']}"
                           for i, c in check.items()))
    if any(c["lost"] for c in check.values()):
        out.append(f"LOST ACKNOWLEDGED WRITES, e.g. {next(c['lost_sample'] for c in check.values() if c['lost'])}")
    if errors:
        out.append("")
        out.append("Failed produce attempts, by the last event before each was sent (count, sent that many ms after "
                   "the event, answer):")
        out.append("")
        for (phase, what), (n, lo, hi) in sorted(errors.items(), key=lambda kv: (kv[0][0], -kv[1][0])):
            out.append(f"- after {phase}: {n} x [{lo * 1000:.0f}..{hi * 1000:.0f} ms] `{what}`")
    if isr_not_full:
        out.append("")
        out.append(f"The ISR was not full any more just before {len(isr_not_full)} of the kills although it had been "
                   f"full after the previous restart (kill, ISR seen): {isr_not_full}; those kills waited for it again.")
    if settle_drops:
        out.append("")
        out.append(f"While settling (--settle), the ISR left full again after the restart that followed kills {settle_drops}.")
    out.append("")
    out.append("Per kill (ms): " + ", ".join(
        f"{r['acked_s'] * 1000:.0f}{'c' if r['leader'] == r['controller'] else ''}" for r in rows)
        + " (c = the killed leader was also the active controller)")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# 2. Throughput


def http_worker(url, topic, partition, batch, record_bytes, start, end, warmup, out):
    """One process: one POST of `batch` records in flight; counts records acked in the window."""
    import requests as rq  # fresh in the child
    value = base64.b64encode(os.urandom(record_bytes)).decode()
    body = json.dumps({"records": [{"value": value, "partition": partition} for _ in range(batch)]}).encode()
    s = rq.Session()
    while time.time() < start:
        time.sleep(0.001)
    acked = errors = 0
    measured_from = start + warmup
    while True:
        now = time.time()
        if now >= end:
            break
        r = s.post(f"{url}/topics/{topic}", params={"acks": "all"}, data=body,
                   headers={"Content-Type": BINARY}, timeout=60)
        done = time.time()
        ok = r.status_code == 200 and all(o.get("error_code") is None for o in r.json()["offsets"])
        if not ok:
            errors += 1
        elif measured_from <= done <= end:
            acked += batch
    t = os.times()
    out.put({"acked": acked, "errors": errors, "cpu": t.user + t.system})


def nats_worker(port, subject, window, record_bytes, start, end, warmup, out):
    """One process, one NATS connection: keeps `window` JetStream publishes in flight (PUB with a
    reply inbox), counts the publish acks ({"stream":..,"seq":..}) received in the window."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    f = sock.makefile("rb")
    assert f.readline().startswith(b"INFO")
    inbox = f"_INBOX.{os.getpid()}"
    sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"echo":false,"headers":false}\r\n'
                 + f"SUB {inbox} 1\r\nPING\r\n".encode())
    while True:
        line = f.readline()
        if line.startswith(b"PONG"):
            break
        assert not line.startswith(b"-ERR"), line
    pub = f"PUB {subject} {inbox} {record_bytes}\r\n".encode() + os.urandom(record_bytes) + b"\r\n"
    while time.time() < start:
        time.sleep(0.001)
    measured_from = start + warmup
    in_flight = acked = errors = 0
    sending = True
    while sending or in_flight:
        if sending and time.time() >= end:
            sending = False
        if sending and in_flight < window:
            sock.sendall(pub * (window - in_flight))
            in_flight = window
        line = f.readline()
        if line.startswith(b"MSG"):
            size = int(line.split()[-1])
            payload = f.read(size + 2)
            in_flight -= 1
            if b'"seq"' in payload and b'"error"' not in payload:
                now = time.time()
                if measured_from <= now <= end:
                    acked += 1
            else:
                errors += 1
        elif line.startswith(b"PING"):
            sock.sendall(b"PONG\r\n")
        elif line.startswith(b"-ERR") or not line:
            raise RuntimeError(f"nats: {line!r}")
    t = os.times()
    out.put({"acked": acked, "errors": errors, "cpu": t.user + t.system})


def run_clients(target, argsets, seconds, warmup, server_pids):
    """Starts one process per argset running target(*argset, start, end, warmup, queue)."""
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    start = time.time() + 1.0
    end = start + warmup + seconds
    procs = [ctx.Process(target=target, args=(*a, start, end, warmup, q)) for a in argsets]
    for p in procs:
        p.start()
    while time.time() < start + warmup:
        time.sleep(0.01)
    cpu0 = sum(cpu_seconds(pid) for pid in server_pids)
    while time.time() < end:
        time.sleep(0.01)
    cpu1 = sum(cpu_seconds(pid) for pid in server_pids)
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
    acked = sum(r["acked"] for r in results)
    print(f"  {acked / seconds:,.0f} records/s, client CPU {100 * sum(r['cpu'] for r in results) / (seconds + warmup):.0f}%, "
          f"server CPU {100 * (cpu1 - cpu0) / seconds:.0f}%", file=sys.stderr, flush=True)
    return {"records_s": acked / seconds, "errors": sum(r["errors"] for r in results),
            "client_cpu_pct": 100 * sum(r["cpu"] for r in results) / (seconds + warmup),
            "server_cpu_pct": 100 * (cpu1 - cpu0) / seconds}


def create_everywhere(cluster, topic, rf):
    """Creates the topic through node 1 and waits until every node describes it with a leader for
    every partition: the create answers once node 1 applied it, and a forward to a leader that has
    not applied it yet is answered "unknown topic" (docs/benchmarks.md, Cluster II)."""
    r = create_topic(cluster.nodes[0], topic, partitions=PARTITIONS, replication_factor=rf)
    assert r.status_code == 201, r.text
    for n in cluster.nodes:
        for p in range(PARTITIONS):
            wait_until(lambda: quiet(lambda: leader_of(n, topic, p)), 30, f"a leader of {topic}-{p} on node {n.node_id}")


def ringlog_throughput(cluster, topic, rf, clients, batch, record_bytes, seconds, warmup, via_one):
    n1 = cluster.nodes[0]
    create_everywhere(cluster, topic, rf)
    full = list(range(1, rf + 1)) if rf == len(cluster.nodes) else None
    leaders = {}
    for p in range(PARTITIONS):
        leaders[p] = wait_until(lambda: quiet(lambda: leader_of(n1, topic, p)), 30, "a leader")
        if full:
            wait_until(lambda: quiet(lambda: isr_of(n1, topic, p)) == full, 30, "a full ISR")
    argsets = []
    for c in range(clients):
        p = c % PARTITIONS
        node = n1 if via_one else cluster.node(leaders[p])
        argsets.append((node.url, topic, p, batch, record_bytes))
    return run_clients(http_worker, argsets, seconds, warmup, [n.proc.pid for n in cluster.nodes])


def ringlog_bench_tool(binary, cluster, topic, rf, clients, batch, record_bytes, seconds):
    """The project's own C++ load generator, all producers through node 1 (it forwards)."""
    n1 = cluster.nodes[0]
    create_everywhere(cluster, topic, rf)
    pids = [n.proc.pid for n in cluster.nodes]
    cpu0 = sum(cpu_seconds(pid) for pid in pids)
    children0 = os.times()
    t0 = time.monotonic()
    done = subprocess.run([binary, "bench", "--bootstrap-server", n1.url, "--topic", topic,
                           "--producers", str(clients), "--consumers", "0", "--batch-records", str(batch),
                           "--record-bytes", str(record_bytes), "--duration-ms", str(int(seconds * 1000)),
                           "--acks", "all", "--json"], capture_output=True, text=True, timeout=seconds + 120)
    wall = time.monotonic() - t0
    cpu1 = sum(cpu_seconds(pid) for pid in pids)
    children1 = os.times()
    client_cpu = (children1.children_user + children1.children_system) - (children0.children_user + children0.children_system)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"raw": result, "server_cpu_pct": 100 * (cpu1 - cpu0) / wall, "client_cpu_pct": 100 * client_cpu / wall}


class NatsCluster:
    """Three nats-server processes with JetStream (file storage) in a temp dir, one route mesh."""

    def __init__(self, root, size=3):
        self.root = root
        self.ports = [free_port() for _ in range(size)]
        self.cports = [free_port() for _ in range(size)]
        self.procs = []

    def start(self, exe):
        routes = ", ".join(f"nats-route://127.0.0.1:{p}" for p in self.cports)
        for i, (port, cport) in enumerate(zip(self.ports, self.cports)):
            d = self.root / f"nats{i + 1}"
            (d / "js").mkdir(parents=True)
            conf = d / "server.conf"
            conf.write_text(f"""server_name: n{i + 1}
listen: 127.0.0.1:{port}
jetstream {{
  store_dir: "{d / 'js'}"
  max_memory_store: 268435456
  max_file_store: 21474836480
}}
cluster {{
  name: bench
  listen: 127.0.0.1:{cport}
  routes: [{routes}]
}}
""")
            log = open(d / "server.log", "ab")
            self.procs.append(subprocess.Popen([exe, "-c", str(conf)], stdout=log, stderr=subprocess.STDOUT))
        return self

    def request(self, port, subject, body, timeout=5.0):
        """One request/reply over a fresh connection; the reply's payload (bytes)."""
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            f = sock.makefile("rb")
            assert f.readline().startswith(b"INFO")
            data = json.dumps(body).encode()
            sock.sendall(b'CONNECT {"verbose":false,"headers":false}\r\nSUB _INBOX.req 1\r\n'
                         + f"PUB {subject} _INBOX.req {len(data)}\r\n".encode() + data + b"\r\n")
            while True:
                line = f.readline()
                if line.startswith(b"MSG"):
                    return f.read(int(line.split()[-1]) + 2)[:-2]
                if line.startswith(b"PING"):
                    sock.sendall(b"PONG\r\n")
                if line.startswith(b"-ERR") or not line:
                    raise RuntimeError(line)

    def create_stream(self, name):
        cfg = {"name": name, "subjects": [name], "num_replicas": 3, "storage": "file", "retention": "limits"}

        def created():
            try:
                reply = json.loads(self.request(self.ports[0], f"$JS.API.STREAM.CREATE.{name}", cfg))
            except (OSError, RuntimeError, ValueError):
                return False
            return reply if "error" not in reply else False

        return wait_until(created, 60, f"JetStream stream {name} created with 3 replicas")

    def stop(self):
        for p in self.procs:
            p.kill()
            p.wait()


def nats_throughput(root, exe, clients, window, record_bytes, seconds, warmup):
    nats = NatsCluster(root).start(exe)
    try:
        streams = [f"bench{p}" for p in range(PARTITIONS)]
        for s in streams:
            nats.create_stream(s)
        argsets = [(nats.ports[c % 3], streams[c % PARTITIONS], window, record_bytes) for c in range(clients)]
        result = run_clients(nats_worker, argsets, seconds, warmup, [p.pid for p in nats.procs])
        version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
        result["version"] = version
        return result
    finally:
        nats.stop()


# ---------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--clients", type=int, default=PARTITIONS)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--set", action="append", default=[], dest="sets", help="key=value for every ringlog node")
    parser.add_argument("--settle", type=float, default=0.0,
                        help="failover: after a restart, the ISR must stay full this many seconds before the next kill")
    parser.add_argument("--skip-failover", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-nats", action="store_true")
    parser.add_argument("--nats-server", default=shutil.which("nats-server") or "/usr/sbin/nats-server")
    parser.add_argument("--dir", default=None, help="parent of the temp dirs (default: the system temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the data dirs and logs (printed at the end)")
    parser.add_argument("--bin", default=str(ROOT / "build" / "src" / "app" / "ringlog"))
    args = parser.parse_args()
    binary = str(pathlib.Path(args.bin).resolve())
    os.environ["RINGLOG_BIN"] = binary

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    report = [f"Machine: {machine()}", f"Binary: {binary}",
              f"Settings: {' '.join(args.sets) or 'ringlog defaults'}", ""]
    with contextlib.ExitStack() as stack:
        if args.keep:
            tmp = pathlib.Path(tempfile.mkdtemp(prefix="ringlog-replication-bench-", dir=args.dir))
            report.append(f"Data dirs and logs kept in {tmp}")
        else:
            tmp = pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ringlog-replication-bench-", dir=args.dir)))
        if not args.skip_failover and args.kills > 0:
            cluster = start_cluster(tmp / "failover", 3, args.sets)
            try:
                result = failover(cluster, args.kills, log, args.settle)
            finally:
                cluster.stop()
            report.append(report_failover(f"Partition failover, {args.kills} kills"
                                          + (f", ISR full for {args.settle:g} s before each" if args.settle else ""), *result))
            report.append("")
            if any(c["lost"] for c in result[4].values()):
                print("\n".join(report))
                sys.exit(1)
        if not args.skip_throughput:
            common = (args.clients, args.batch, args.record_bytes, args.seconds, args.warmup)
            rows = []
            cluster = start_cluster(tmp / "rf3", 3, args.sets)
            try:
                wait_until(cluster.controller, 30, "one controller")
                wait_until(lambda: all(b["state"] == "unfenced" for b in cluster.nodes[0].brokers().values())
                           and len(cluster.nodes[0].brokers()) == 3, 30, "3 brokers unfenced")
                log("throughput (a) rf 3, clients to leaders")
                a = ringlog_throughput(cluster, "tp-rf3", 3, *common[:2], *common[2:], via_one=False)
                rows.append(("(a) ringlog, replication factor 3, 3 brokers, each client to its partition's leader", a))
                log("throughput (a') rf 3, clients to broker 1")
                a1 = ringlog_throughput(cluster, "tp-rf3-one", 3, *common, via_one=True)
                rows.append(("(a') ringlog, replication factor 3, 3 brokers, every client to broker 1 (forwarding)", a1))
                log("throughput: ringlog bench, rf 3")
                tool3 = ringlog_bench_tool(binary, cluster, "tp-rf3-tool", 3, args.clients, args.batch,
                                           args.record_bytes, args.seconds)
            finally:
                cluster.stop()
            cluster = start_cluster(tmp / "rf1", 1, args.sets)
            try:
                wait_until(cluster.controller, 30, "one controller")
                log("throughput (b) rf 1, one broker")
                b = ringlog_throughput(cluster, "tp-rf1", 1, *common, via_one=False)
                rows.append(("(b) ringlog, replication factor 1, one broker", b))
                log("throughput: ringlog bench, rf 1")
                tool1 = ringlog_bench_tool(binary, cluster, "tp-rf1-tool", 1, args.clients, args.batch,
                                           args.record_bytes, args.seconds)
            finally:
                cluster.stop()
            c = None
            if not args.skip_nats:
                if not os.path.exists(args.nats_server):
                    report.append(f"NATS: {args.nats_server} not found (Debian: apt-get install nats-server); skipped")
                else:
                    log("throughput (c) NATS JetStream, 3 replicas")
                    c = nats_throughput(tmp / "nats", args.nats_server, args.clients, args.batch,
                                        args.record_bytes, args.seconds, args.warmup)
                    rows.append((f"(c) NATS JetStream {c['version']}, 3 servers, num_replicas 3, file storage", c))
            mb = lambda rps: rps * args.record_bytes / 1e6  # noqa: E731
            report.append(f"#### Throughput: {args.record_bytes}-byte records, acks=all, {args.clients} client "
                          f"processes, {args.batch} records per request in flight each (JetStream: {args.batch} "
                          f"publishes in flight each), {PARTITIONS} partitions / streams, {args.seconds:.0f} s "
                          f"measured after {args.warmup:.0f} s warm-up")
            report.append("")
            report.append("| run | records/s | MB/s | errors | client CPU % | server CPU % (of 200) |")
            report.append("|---|---:|---:|---:|---:|---:|")
            for name, x in rows:
                report.append(f"| {name} | {x['records_s']:,.0f} | {mb(x['records_s']):.1f} | {x['errors']} | "
                              f"{x['client_cpu_pct']:.0f} | {x['server_cpu_pct']:.0f} |")
            for name, t in (("ringlog bench (C++), rf 3, 3 brokers, all producers to broker 1", tool3),
                            ("ringlog bench (C++), rf 1, one broker", tool1)):
                raw = t["raw"]
                rps = raw.get("produced_records_per_s") or raw.get("records_per_s") or raw.get("produce_records_per_s")
                report.append(f"| {name} | {rps if rps is None else f'{rps:,.0f}'} | "
                              f"{'-' if rps is None else f'{mb(rps):.1f}'} | {raw.get('errors', '-')} | {t['client_cpu_pct']:.0f} | "
                              f"{t['server_cpu_pct']:.0f} |")
            report.append("")
            report.append(f"ringlog bench raw: rf 3: `{json.dumps(tool3['raw'])}`; rf 1: `{json.dumps(tool1['raw'])}`")
            report.append("")
            report.append(f"Ratio (a)/(b): {a['records_s'] / b['records_s']:.2f}; (a')/(b): {a1['records_s'] / b['records_s']:.2f}"
                          + (f"; (a)/(c): {a['records_s'] / c['records_s']:.2f}" if c else ""))
    load = os.getloadavg()
    report.append("")
    report.append(f"At the end: load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; pressure: {pressure()}")
    print("\n".join(report))


if __name__ == "__main__":
    main()
