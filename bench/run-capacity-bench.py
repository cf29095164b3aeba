#!/usr/bin/python3
"""CPU per GB and throughput with 1, 2, 3 and 4 brokers (issue 33, docs/capacity.md).

For each setup (BROKERS:REPLICATION_FACTOR[:PARTITIONS] in SETUPS, default 1:1, 2:1, 3:1, 3:3, 4:1, 4:3 and
3:3:96, the same load over 8x the partitions) a fresh
cluster of real `ringlog serve` processes (tests/cluster/harness.py: each broker in its own
network namespace, a veth pair into a bridge; loopback when namespaces are refused), every
broker num.shards=SHARDS, log.dirs on the disk of TMPDIR, the default flush policy (fdatasync
before an ack). One topic of PARTITIONS partitions per run. The load is bench/latency_client.cc
(librdkafka, compiled here): one producer, acks=all, linger.ms=1, 1 KiB incompressible values
round-robin over the partitions, and one consumer reading every partition back from the end.

Two runs per setup:
- fixed: RATE records/s for RUN_SECONDS: the same load on every setup, so the CPU seconds per GB
  compare;
- max: as fast as acks allow for MAX_SECONDS (MAX_SECONDS=0 skips it): the throughput of the
  setup on this machine.

Per run, from each broker's /metrics (delta over the run, summed over brokers):
ringlog_cpu_seconds_total and ringlog_activity_bytes_total by activity -> CPU seconds per GB
produced, replicated (leader side, follower side) and fetched; the same brokers' whole process
CPU (/proc/PID/stat utime+stime) per GB produced (what capacity planning needs: every thread,
heartbeats and metadata included) and the share of it the scopes attributed; the client's CPU;
the bytes the disk wrote (/proc/diskstats of TMPDIR's device) per GB produced; and an estimate of
the accounting's own cost (ringlog_cpu_scopes_total x 2 x the measured cost of a
CLOCK_THREAD_CPUTIME_ID read, bench/thread_clock_cost.cc).

Usage: bench/run-capacity-bench.py [BUILD_DIR]
  env: SETUPS=1:1,2:1,3:1,3:3,4:1,4:3,3:3:96 RATE=20000 RUN_SECONDS=10 MAX_SECONDS=8 PARTITIONS=12 SHARDS=1
       NETWORK=auto|netns|loopback LINK_MBIT=10000 (a tbf rate on both ends of each broker's veth,
       standing in for a host's NIC; 0 = none; there is no netem on this kernel, so no delay)
       LONG=1 (RUN_SECONDS=30 MAX_SECONDS=20). Default run: about 4 minutes.
       SKIP_LIMITS=1, LIMIT_SIZES=100,400,1000, LIMIT_TOPICS=30: the per-partition costs measured last
       on one broker (time to create and lead, metadata log bytes, open files, resident memory).
Root is needed for namespaces (the script creates and removes them; names rlj<pid>...). Prints
`uptime` before and after: figures taken at a load above ~1 are not quiet. Not a test: no figure
is asserted. The machine's 2 cores run every broker and the client at once: see docs/capacity.md.
"""
import json
import os
import pathlib
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "cluster"))
import harness  # noqa: E402  (tests/cluster/harness.py: the cluster, the namespaces)

BUILD = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build").resolve()
RINGLOG = BUILD / "src/app/ringlog"
LONG = os.environ.get("LONG") == "1"
PARTITIONS = int(os.environ.get("PARTITIONS", "12"))
# BROKERS:REPLICATION_FACTOR[:PARTITIONS]; 3:3:96 is the same load over 8x the partitions.
SETUPS = [tuple(int(x) for x in (s + f":{PARTITIONS}").split(":")[:3])
          for s in os.environ.get("SETUPS", "1:1,2:1,3:1,3:3,4:1,4:3,3:3:96").split(",")]
RATE = int(os.environ.get("RATE", "20000"))
RUN_SECONDS = float(os.environ.get("RUN_SECONDS", "30" if LONG else "10"))
MAX_SECONDS = float(os.environ.get("MAX_SECONDS", "20" if LONG else "8"))
SHARDS = int(os.environ.get("SHARDS", "1"))
NETWORK = os.environ.get("NETWORK", "auto")
LINK_MBIT = int(os.environ.get("LINK_MBIT", "10000"))
ACTIVITIES = ["produce", "replicate_leader", "replicate_follower", "fetch"]
FAMILIES = ["ringlog_cpu_seconds_total", "ringlog_activity_bytes_total", "ringlog_cpu_scopes_total"]
GB = 1e9


def compile_tool(name):
    """bench/NAME.cc -> BUILD/bench/NAME (small: not worth a turn in the shared build lock)."""
    src, out = HERE / f"{name}.cc", BUILD / "bench" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        subprocess.run(["c++", "-std=c++20", "-O2", "-o", str(out), str(src), "-lrdkafka", "-lpthread"], check=True)
    return str(out)


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def scrape(node):
    import requests
    text = requests.get(node.url + "/metrics", timeout=10).text
    out = {}
    for name in FAMILIES:
        for activity in ACTIVITIES:
            m = re.search(r"^" + name + r'\{activity="' + activity + r'"\} (\S+)$', text, re.M)
            out[(name, activity)] = float(m.group(1)) if m else 0.0
    return out


def process_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def disk_device(path):
    """The /proc/diskstats name of the whole disk holding `path` (e.g. vda), or None."""
    source = subprocess.run(["df", "--output=source", str(path)], capture_output=True, text=True).stdout.split()[-1]
    name = os.path.basename(os.path.realpath(source))
    if os.path.exists(f"/sys/class/block/{name}/partition"):
        name = os.path.basename(os.path.dirname(os.path.realpath(f"/sys/class/block/{name}")))
    return name if os.path.exists(f"/sys/class/block/{name}") else None


def disk_written_bytes(device):
    if device is None:
        return 0
    for line in open("/proc/diskstats"):
        parts = line.split()
        if parts[2] == device:
            return int(parts[9]) * 512   # sectors written
    return 0


def limit_links(network):
    """A tbf rate on both ends of every broker's veth (egress of each end = one direction)."""
    if network.kind != "netns" or LINK_MBIT <= 0:
        return "no link limit"
    burst = max(LINK_MBIT * 1_000_000 // 8 // 100, 1 << 20)   # 10 ms at the rate, at least 1 MiB
    for i in range(1, network.size + 1):
        tbf = ["root", "tbf", "rate", f"{LINK_MBIT}mbit", "burst", str(burst), "latency", "20ms"]
        harness._run(["tc", "qdisc", "add", "dev", f"{network.tag}v{i}", *tbf])
        harness._run(["tc", "-n", network.namespace(i), "qdisc", "add", "dev", "eth0", *tbf])
    return f"tbf {LINK_MBIT} Mbit/s each way on every broker's veth (no delay: this kernel has no netem)"


def wait_in_sync(cluster, topic, rf, partitions):
    def in_sync():
        node = cluster.node(1)
        for p in range(partitions):
            replicas = cluster.replicas(node, topic, p)
            if replicas is None or len(replicas) != rf or not all(r.get("is_in_sync") for r in replicas):
                return False
        return True
    harness.wait_until(in_sync, 60.0, f"every replica of {topic} in sync")


def run_load(cluster, client, topic, partitions, rate, seconds, device):
    nodes = list(cluster.nodes.values())
    bootstrap = ",".join(n.bootstrap for n in nodes)
    before = [scrape(n) for n in nodes]
    cpu_before = [process_cpu_s(n.proc.pid) for n in nodes]
    disk_before = disk_written_bytes(device)
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    out = subprocess.run([client, "--bootstrap", bootstrap, "--topic", topic, "--partitions", str(partitions),
                          "--rate", str(rate), "--seconds", str(seconds)],
                         capture_output=True, text=True, timeout=seconds + 180)
    wall = time.monotonic() - started
    if out.returncode != 0:
        raise SystemExit("latency_client failed: " + out.stderr[-2000:] + out.stdout[-2000:])
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = json.loads(out.stdout)
    after = [scrape(n) for n in nodes]
    cpu_after = [process_cpu_s(n.proc.pid) for n in nodes]
    totals = {k: sum(a[k] - b[k] for a, b in zip(after, before)) for k in after[0]}
    result.update({
        "wall_s": wall,
        "totals": totals,
        "process_cpu_s": sum(a - b for a, b in zip(cpu_after, cpu_before)),
        "per_broker_cpu_s": [a - b for a, b in zip(cpu_after, cpu_before)],
        "client_cpu_s": (children_after.ru_utime - children_before.ru_utime) +
                        (children_after.ru_stime - children_before.ru_stime),
        "disk_written_bytes": disk_written_bytes(device) - disk_before,
    })
    return result


def run_setup(brokers, rf, partitions, client, device, root):
    network, note = harness.make_network(NETWORK, brokers)
    cluster = None
    try:
        link = limit_links(network)
        cluster = harness.Cluster(RINGLOG, brokers, root / f"b{brokers}rf{rf}p{partitions}", network,
                                  extra_sets=[f"num.shards={SHARDS}"]).start()
        runs = {}
        for kind, rate, seconds in [("fixed", RATE, RUN_SECONDS), ("max", 0, MAX_SECONDS)]:
            if seconds <= 0:
                continue
            topic = f"cap-{kind}"
            cluster.create_topic(topic, partitions, rf, {})
            wait_in_sync(cluster, topic, rf, partitions)
            runs[kind] = run_load(cluster, client, topic, partitions, rate, seconds, device)
            print(f"  {brokers} brokers rf {rf} {partitions} partitions {kind}: {summary_line(runs[kind])}", flush=True)
        return {"network": network.describe() + (f" ({note})" if note else ""), "link": link, "runs": runs}
    finally:
        if cluster is not None:
            cluster.teardown()
        else:
            network.teardown()


def dir_bytes(path):
    return sum(f.stat().st_size for f in pathlib.Path(path).rglob("*") if f.is_file())


def process_status(pid):
    """(open files, resident KiB) of a process."""
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    rss = next(int(line.split()[1]) for line in open(f"/proc/{pid}/status") if line.startswith("VmRSS:"))
    return fds, rss


def create_and_lead(cluster, node, name, partitions):
    """One create (a long answer timeout: a large topic's files are made before the 201), then
    every partition led."""
    import requests
    body = {"topic_name": name, "partitions_count": partitions, "replication_factor": 1}
    r = requests.post(cluster.v3(node, "/topics"), json=body, timeout=900)
    if r.status_code != 201:
        raise RuntimeError(f"creating {name}: {r.status_code} {r.text[:300]}")
    harness.wait_until(lambda: (lambda p: p is not None and len(p) == partitions and
                                all(x["leader"] is not None for x in p.values()))(cluster.partitions(node, name, 30.0)),
                       900.0, f"every partition of {name} led")


def measure_limits(root):
    """One broker: what a partition costs outside the data path (docs/capacity.md). Topics of
    LIMIT_SIZES partitions (replication factor 1) created one after another: the time to create
    and lead them, the metadata log's bytes (the records an image is rebuilt from), the open files
    and resident memory per partition; then LIMIT_TOPICS one-partition topics in a row (the
    controller's commit rate as a client sees it: one create at a time)."""
    sizes = [int(x) for x in os.environ.get("LIMIT_SIZES", "100,400,1000").split(",") if x]
    network, _ = harness.make_network(NETWORK, 1)
    cluster = None
    rows = []
    try:
        cluster = harness.Cluster(RINGLOG, 1, root / "limits", network, extra_sets=[f"num.shards={SHARDS}"]).start()
        node = cluster.node(1)
        metadata_dir = node.data_dir / "__cluster_metadata-0"
        for n in sizes:
            meta0, (fd0, rss0) = dir_bytes(metadata_dir), process_status(node.proc.pid)
            started = time.monotonic()
            create_and_lead(cluster, node, f"lim-{n}", n)
            seconds = time.monotonic() - started
            time.sleep(1.0)   # the partitions' files open as they are reconciled; let the last ones land
            meta1, (fd1, rss1) = dir_bytes(metadata_dir), process_status(node.proc.pid)
            rows.append((n, seconds, (meta1 - meta0) / n, (fd1 - fd0) / n, (rss1 - rss0) / n))
        topics = int(os.environ.get("LIMIT_TOPICS", "30"))
        started = time.monotonic()
        for i in range(topics):
            cluster.create_topic(f"one-{i}", 1, 1, {})
        creates_per_s = topics / (time.monotonic() - started)
        total_partitions = sum(sizes) + topics
        fds, rss = process_status(node.proc.pid)
        return {"rows": rows, "creates_per_s": creates_per_s, "topics": topics, "partitions": total_partitions,
                "fds": fds, "rss_kib": rss, "metadata_bytes": dir_bytes(metadata_dir)}
    finally:
        if cluster is not None:
            cluster.teardown()
        else:
            network.teardown()


def report_limits(lim):
    print("\nPer partition, one broker, replication factor 1 (topics created one after another):\n")
    print("| topic of N partitions | create -> every partition led (s) | ms per partition | metadata log bytes per "
          "partition | open files per partition | resident KiB per partition |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, seconds, meta, fds, rss in lim["rows"]:
        print(f"| {n} | {seconds:.2f} | {seconds / n * 1000:.1f} | {meta:.0f} | {fds:.2f} | {rss:.1f} |")
    print(f"\n{lim['topics']} one-partition topics in a row: {lim['creates_per_s']:.1f} creates/s. At the end "
          f"{lim['partitions']} partitions: {lim['fds']} open files, {lim['rss_kib'] / 1024:.0f} MiB resident, metadata "
          f"log {lim['metadata_bytes'] / 1024:.0f} KiB.")


def per_gb(cpu_s, nbytes):
    return cpu_s / (nbytes / GB) if nbytes > 0 else float("nan")


def summary_line(r):
    produced = r["totals"][("ringlog_activity_bytes_total", "produce")]
    return (f"acked {r['acked']:,} ({r['acked_per_s']:,.0f}/s), consumed {r['consumed']:,}, errors {r['errors']}, "
            f"{produced / 1e6:,.1f} MB appended, brokers {r['process_cpu_s']:.1f} CPU s, client {r['client_cpu_s']:.1f} "
            f"CPU s in {r['wall_s']:.1f} s")


def report(results, clock):
    print("\nCPU seconds per GB, counted by the brokers (ringlog_cpu_seconds_total / ringlog_activity_bytes_total, "
          "summed over brokers, delta over the run)\n")
    print("| brokers | rf | partitions | run | acked MB/s | acked rec/s | produce s/GB | repl. leader s/GB | repl. follower s/GB "
          "| fetch s/GB | all broker CPU s per GB produced | attributed | client CPU % | broker CPU % | disk writes per "
          "byte produced | accounting cost |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (brokers, rf, partitions), setup in results:
        for kind, r in setup["runs"].items():
            t = r["totals"]
            b = {a: t[("ringlog_activity_bytes_total", a)] for a in ACTIVITIES}
            c = {a: t[("ringlog_cpu_seconds_total", a)] for a in ACTIVITIES}
            scopes = sum(t[("ringlog_cpu_scopes_total", a)] for a in ACTIVITIES)
            attributed = sum(c.values())
            seconds = r["wall_s"]
            overhead_s = scopes * 2 * clock["thread_cputime_ns"] / 1e9
            print(f"| {brokers} | {rf} | {partitions} | {kind} | {r['acked_per_s'] * 1024 / 1e6:,.1f} | {r['acked_per_s']:,.0f} | "
                  f"{per_gb(c['produce'], b['produce']):.2f} | {per_gb(c['replicate_leader'], b['replicate_leader']):.2f} | "
                  f"{per_gb(c['replicate_follower'], b['replicate_follower']):.2f} | {per_gb(c['fetch'], b['fetch']):.2f} | "
                  f"{per_gb(r['process_cpu_s'], b['produce']):.2f} | {attributed / r['process_cpu_s'] * 100:.0f}% | "
                  f"{r['client_cpu_s'] / seconds * 100:.0f} | {r['process_cpu_s'] / seconds * 100:.0f} | "
                  f"{r['disk_written_bytes'] / b['produce'] if b['produce'] else float('nan'):.2f} | "
                  f"{overhead_s / r['process_cpu_s'] * 100:.1f}% |")
    print("\nBytes moved (MB, summed over brokers) and what the client saw:\n")
    print("| brokers | rf | partitions | run | produce | repl. leader | repl. follower | fetch | disk written | acked | consumed | "
          "errors | per-broker CPU s |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for (brokers, rf, partitions), setup in results:
        for kind, r in setup["runs"].items():
            t = r["totals"]
            mb = [t[("ringlog_activity_bytes_total", a)] / 1e6 for a in ACTIVITIES]
            print(f"| {brokers} | {rf} | {partitions} | {kind} | {mb[0]:,.1f} | {mb[1]:,.1f} | {mb[2]:,.1f} | {mb[3]:,.1f} | "
                  f"{r['disk_written_bytes'] / 1e6:,.1f} | {r['acked']:,} | {r['consumed']:,} | {r['errors']} | "
                  f"{', '.join(f'{x:.1f}' for x in r['per_broker_cpu_s'])} |")
    for (brokers, rf, partitions), setup in results:
        print(f"\n{brokers} brokers, rf {rf}, {partitions} partitions: {setup['network']}; {setup['link']}")


def main():
    if not RINGLOG.exists():
        raise SystemExit(f"{RINGLOG} not built")
    client = compile_tool("latency_client")
    clock = json.loads(subprocess.run([compile_tool("thread_clock_cost")], capture_output=True, text=True,
                                      check=True).stdout)
    root = pathlib.Path(tempfile.mkdtemp(prefix="ringlog-capacity-bench-"))
    device = disk_device(root)
    print("load before:", uptime())
    print(f"nproc {os.cpu_count()}; log.dirs under {root} (disk {device}); num.shards={SHARDS}; "
          f"fixed run {RATE:,} records/s x 1 KiB for {RUN_SECONDS:g} s; max run {MAX_SECONDS:g} s; acks=all, linger.ms=1")
    print(f"clock_gettime cost: CLOCK_THREAD_CPUTIME_ID {clock['thread_cputime_ns']:.0f} ns, "
          f"CLOCK_MONOTONIC {clock['monotonic_ns']:.0f} ns per call")
    results = []
    limits = None
    try:
        for brokers, rf, partitions in SETUPS:
            results.append(((brokers, rf, partitions), run_setup(brokers, rf, partitions, client, device, root)))
        if os.environ.get("SKIP_LIMITS") != "1":
            limits = measure_limits(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("load after:", uptime())
    report(results, clock)
    if limits:
        report_limits(limits)


if __name__ == "__main__":
    main()
