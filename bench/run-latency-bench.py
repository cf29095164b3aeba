#!/usr/bin/python3
"""Tail latency under load (issue 32): produce-to-consume and ack latency at fixed rates, with the
broker's own breakdown of where the time went.

1. The maximum: bench/latency_client.cc (librdkafka, compiled here with -lrdkafka) produces as fast
   as acks allow (acks=all, linger.ms=1) for MAX_SECONDS, MAX_REPEATS times, each on a fresh topic;
   the maximum is the median of the runs' acked records/s (records acked while sending, over the
   sending time; the client keeps up to 1,000,000 records queued, so the broker is never idle). (Short runs of 200,000 records gave 183k-514k/s on this VM: a run of 20 s or more
   with the median of several is what stays put within ~10%.)
2. Fixed rates: 10,000/s, half and three quarters of that maximum, RUN_SECONDS each (REPEATS
   times), 1 KiB incompressible values round-robin over PARTITIONS partitions, acks=all,
   linger.ms=1, one consumer assigned to every partition. Prints p50/p99/p99.9/max of the ack
   (scheduled send -> delivery report) and produce-to-consume (scheduled send -> consumer poll)
   latencies, the client's own figures, and librdkafka's statistics (where a record waited inside
   the client: its partition queue, the output buffer, the request's round trip); then the broker's breakdown from /metrics
   (ringlog_produce_latency_seconds by stage, the fetch wake-up and ringlog_log_fsync_duration_seconds)
   as a delta over the run: mean and p99 (the upper bound of the bucket holding the 99th sample).
3. The same rates through ringlog's own Kafka load generator (`ringlog bench --transport kafka`,
   4 producer connections with up to 5 Produce requests in flight each, 2 consumers; each batch
   holds about a millisecond of its producer's records, rate / 4 / 1000, at least 1: the batching
   linger.ms=1 asks of librdkafka, without librdkafka's own queueing), then
   `ringlog bench --transport http` (batches of BATCH records) and `--transport ws
   --ws-produce-batch` (partition 0), each with its own client's figures. SKIP_NATIVE=1 skips the
   first. LINGER_MS sets librdkafka's linger.ms (default 1, the issue's setting).
4. fio: buffered 4 KiB writes with an fdatasync after each (the sync latency percentiles of the
   disk this run wrote to) and 64 KiB writes with an fdatasync every 1 MiB (bandwidth); then, for
   each fixed rate librdkafka ran, the broker's own write pattern without the broker: PARTITIONS
   files (PARTITIONS x REPLICATION_FACTOR with NODES > 1: every replica's file is on this one
   disk) appended at rate / PARTITIONS KiB/s each, in writes of the run's records per batch
   (librdkafka's median), each followed by an fdatasync, for RUN_SECONDS: the disk's fdatasync
   tail at that load (p99, p99.9, p99.99, max), beside the broker's (the breakdown's "over 10 ms"
   and "over 100 ms" columns count the samples past those bounds).

Usage: bench/run-latency-bench.py [BUILD_DIR]
  env: MAX_SECONDS=20 MAX_REPEATS=3 RUN_SECONDS=20 REPEATS=1 PARTITIONS=6 RATES=10000,0.5,0.75
       (a figure <= 1 is a fraction of the maximum), MAX_RATE=N (skip step 1), SKIP_HTTP=1,
       SKIP_FIO=1, BROKER_CPUS / CLIENT_CPUS (taskset lists, e.g. 0 and 1; default: unpinned),
       EXTRA_SETS="key=value ..." (more --set for the broker).
       NODES=3 (a cluster of that many `ringlog serve` processes on this machine, each num.shards=1,
       topics with replication factor REPLICATION_FACTOR, default NODES; librdkafka bootstraps from
       every node and the breakdown sums every node's /metrics; HTTP/WebSocket runs go to node 1).
       BASE_PORT=9890: node i (0-based) listens on HTTP BASE_PORT+10i, Kafka BASE_PORT+2+10i and
       (NODES > 1) cluster BASE_PORT+4+10i; each must be free (checked before anything starts).
Runs its own broker (HTTP 127.0.0.1:9890, Kafka 127.0.0.1:9892 by default) with a temporary
log.dirs under TMPDIR (the disk the broker and fio write to); each node's log is kept in
$TMPDIR/ringlog-latency-bench-PORT-nodeN.log (PORT the node's HTTP port). Prints `uptime` before
and after: figures taken at a load above ~1 are not quiet. Not a test: no figure is asserted.
"""
import json, os, re, resource, shutil, socket, statistics, subprocess, sys, tempfile, time

import requests

if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1].startswith("-")):
    print(__doc__.strip())
    sys.exit(0 if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help") else 2)
BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
RINGLOG = os.path.join(BUILD, "src/app/ringlog")
if not os.access(RINGLOG, os.X_OK):
    sys.exit(f"no ringlog binary at {RINGLOG}: build first (./scripts/build.sh) or name the build directory "
             "(usage: bench/run-latency-bench.py [BUILD_DIR])")
HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_SRC = os.path.join(HERE, "latency_client.cc")
CLIENT = os.path.join(BUILD, "bench", "latency_client")
MAX_SECONDS = float(os.environ.get("MAX_SECONDS", "20"))
MAX_REPEATS = int(os.environ.get("MAX_REPEATS", "3"))
RUN_SECONDS = float(os.environ.get("RUN_SECONDS", "20"))
REPEATS = int(os.environ.get("REPEATS", "1"))
PARTITIONS = int(os.environ.get("PARTITIONS", "6"))
RATES = [float(x) for x in os.environ.get("RATES", "10000,0.5,0.75").split(",")]
BATCH = int(os.environ.get("BATCH", "100"))
LINGER_MS = os.environ.get("LINGER_MS", "1")
NODES = int(os.environ.get("NODES", "1"))
REPLICATION_FACTOR = int(os.environ.get("REPLICATION_FACTOR", str(NODES)))
# Node i (0-based) listens on HTTP BASE_PORT+10i, Kafka BASE_PORT+2+10i and (NODES > 1) cluster
# BASE_PORT+4+10i.
BASE_PORT = int(os.environ.get("BASE_PORT", "9890"))
HTTP_PORTS = [BASE_PORT + 10 * i for i in range(NODES)]
KAFKA_PORTS = [BASE_PORT + 2 + 10 * i for i in range(NODES)]
CLUSTER_PORTS = [BASE_PORT + 4 + 10 * i for i in range(NODES)] if NODES > 1 else []
HTTPS_OF_NODES = [f"http://127.0.0.1:{p}" for p in HTTP_PORTS]
KAFKAS_OF_NODES = [f"127.0.0.1:{p}" for p in KAFKA_PORTS]
HTTP = HTTPS_OF_NODES[0]
KAFKA = ",".join(KAFKAS_OF_NODES)
STAGES = ["queue", "append", "fsync_wait", "fsync", "replication_wait", "total", "order_wait", "sent"]


def taskset(var):
    cpus = os.environ.get(var)
    return ["taskset", "-c", cpus] if cpus else []


BROKER_PIDS = []


def cpu_sample():
    """(machine busy jiffies, machine total jiffies, brokers' CPU s, waited-for children's CPU s)."""
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    idle = fields[3] + fields[4]   # idle + iowait
    hz = os.sysconf("SC_CLK_TCK")
    brokers = 0.0
    for pid in BROKER_PIDS:
        stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        brokers += (int(stat[11]) + int(stat[12])) / hz   # utime + stime
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return sum(fields) - idle, sum(fields), brokers, kids.ru_utime + kids.ru_stime


def cpu_use(before, after, seconds):
    """{machine_busy: fraction of every core, broker_cores / client_cores: cores' worth of CPU} over a run
    (the client: the load generator waited for, so its whole life including start-up and drain)."""
    busy, total = after[0] - before[0], after[1] - before[1]
    return {"machine_busy": busy / total if total else 0.0, "broker_cores": (after[2] - before[2]) / seconds,
            "client_cores": (after[3] - before[3]) / seconds}


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def build_client():
    os.makedirs(os.path.dirname(CLIENT), exist_ok=True)
    if os.path.exists(CLIENT) and os.path.getmtime(CLIENT) >= os.path.getmtime(CLIENT_SRC):
        return
    # Small (a second or two): not worth a turn in the shared build lock's queue.
    subprocess.run(["c++", "-std=c++20", "-O2", "-o", CLIENT, CLIENT_SRC,
                    "-lrdkafka", "-lpthread"], check=True)


def ports_in_use():
    """The ports of HTTP_PORTS, KAFKA_PORTS and CLUSTER_PORTS that another process holds on 127.0.0.1."""
    held = []
    for port in HTTP_PORTS + KAFKA_PORTS + CLUSTER_PORTS:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                held.append(port)
    return held


def wait_healthy(proc, log_path, seconds=30, url=HTTP):
    """Polls `url`/v1/health until 200 from this run's own node `proc` (it must still run after the
    answer: a port another process took would answer for it). Exits naming the node's log."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"ringlog exited early with {proc.returncode}; its log: {log_path}")
        try:
            if requests.get(url + "/v1/health", timeout=1).status_code == 200 and proc.poll() is None:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.05)
    raise SystemExit(f"ringlog did not become healthy at {url} in {seconds} s; its log: {log_path}")


_topics = [0]


def new_topic(partitions=PARTITIONS):
    _topics[0] += 1
    name = f"lat-{_topics[0]}"
    body = {"topic_name": name, "partitions_count": partitions}
    if NODES > 1:
        body["replication_factor"] = REPLICATION_FACTOR
    deadline = time.monotonic() + 30
    r = requests.post(f"{HTTP}/v3/clusters/ringlog-cluster/topics", json=body, timeout=30)
    while r.status_code == 503 and time.monotonic() < deadline:   # no quorum leader yet (a cluster starting)
        time.sleep(0.2)
        r = requests.post(f"{HTTP}/v3/clusters/ringlog-cluster/topics", json=body, timeout=30)
    assert r.status_code == 201, r.text
    # Every partition led and every replica in sync on every node before the run starts.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready = True
        for url in HTTPS_OF_NODES:
            d = requests.get(f"{url}/v3/clusters/ringlog-cluster/topics/{name}/partitions", timeout=10)
            parts = d.json().get("data", []) if d.status_code == 200 else []
            ready = ready and len(parts) == partitions and all(x.get("leader") for x in parts)
        if ready:
            return name
        time.sleep(0.1)
    raise SystemExit(f"topic {name} not led on every node within 30 s")


def scrape():
    """{(metric, stage): (bucket bounds, cumulative counts, sum, count)} of the latency histograms,
    summed over every node."""
    out = {}
    for url in HTTPS_OF_NODES:
        for key, h in scrape_one(url).items():
            mine = out.setdefault(key, {"le": h["le"], "cum": [0] * len(h["cum"]), "sum": 0.0, "count": 0})
            mine["cum"] = [a + b for a, b in zip(mine["cum"], h["cum"])]
            mine["sum"] += h["sum"]
            mine["count"] += h["count"]
    return out


def scrape_one(url):
    text = requests.get(url + "/metrics", timeout=10).text
    out = {}
    pattern = re.compile(r'^(ringlog_(?:produce_latency|fetch_wakeup_latency|log_fsync_duration|kafka_read_paused|shard_loop_lag)_seconds)'
                         r'_bucket\{(?:stage="([a-z_]+)",)?le="([^"]+)"\} (\d+)$', re.M)
    for name, stage, le, value in pattern.findall(text):
        h = out.setdefault((name, stage), {"le": [], "cum": [], "sum": 0.0, "count": 0})
        h["le"].append(float("inf") if le == "+Inf" else float(le))
        h["cum"].append(int(value))
    for (name, stage), h in out.items():
        label = f'{{stage="{stage}"}}' if stage else ""
        s = re.search(r"^" + name + "_sum" + re.escape(label) + r" (\S+)$", text, re.M)
        c = re.search(r"^" + name + "_count" + re.escape(label) + r" (\d+)$", text, re.M)
        h["sum"], h["count"] = float(s.group(1)), int(c.group(1))
    return out


def breakdown(before, after):
    """{label: (count, mean ms, p99 ms upper bound)} of the histograms' delta over a run."""
    rows = {}
    for key, h in after.items():
        b = before.get(key, {"cum": [0] * len(h["cum"]), "sum": 0.0, "count": 0})
        count = h["count"] - b["count"]
        if count <= 0:
            continue
        cum = [x - y for x, y in zip(h["cum"], b["cum"])]
        p50 = next((le for le, c in zip(h["le"], cum) if c >= 0.5 * count), float("inf"))
        p99 = next((le for le, c in zip(h["le"], cum) if c >= 0.99 * count), float("inf"))
        p999 = next((le for le, c in zip(h["le"], cum) if c >= 0.999 * count), float("inf"))
        label = {"ringlog_log_fsync_duration_seconds": "fdatasync (per sync)",
                 "ringlog_fetch_wakeup_latency_seconds": "fetch wake-up -> answer",
                 "ringlog_kafka_read_paused_seconds": "Kafka connection's reading paused (per pause)",
                 "ringlog_shard_loop_lag_seconds": "shard loop lag (per 10 ms probe)"}.get(key[0], key[1])
        over = [count - next((c for le, c in zip(h["le"], cum) if le >= bound), count) for bound in (0.01, 0.1)]
        rows[label] = (count, (h["sum"] - b["sum"]) / count * 1e3, p50 * 1e3, p99 * 1e3, p999 * 1e3, *over)
    return rows


def kafka_run(rate, seconds):
    topic = new_topic()
    before, cpu_before, started = scrape(), cpu_sample(), time.monotonic()
    out = subprocess.run(taskset("CLIENT_CPUS") + [CLIENT, "--bootstrap", KAFKA, "--topic", topic, "--partitions",
                                                   str(PARTITIONS), "--rate", str(int(rate)), "--seconds", str(seconds),
                                                   "--linger-ms", LINGER_MS],
                         capture_output=True, text=True, timeout=seconds + 120)
    if out.returncode != 0:
        raise SystemExit("latency_client failed: " + out.stderr + out.stdout)
    result = json.loads(out.stdout)
    result["cpu"] = cpu_use(cpu_before, cpu_sample(), time.monotonic() - started)
    result["breakdown"] = breakdown(before, scrape())
    return result


def native_batch(rate):
    """Records per batch of the native Kafka generator: about 1 ms of one of its 4 producers' records."""
    return max(1, round(rate / 4 / 1000))


def ringlog_bench(transport, rate, seconds):
    topic = new_topic(1 if transport == "ws" else PARTITIONS)
    batch = native_batch(rate) if transport == "kafka" else BATCH
    args = [RINGLOG, "bench", "--bootstrap-server", HTTP, "--transport", transport, "--topic", topic, "--partitions",
            str(1 if transport == "ws" else PARTITIONS), "--duration-ms", str(int(seconds * 1000)), "--rate",
            str(int(rate)), "--record-bytes", "1024", "--acks", "all", "--batch-records", str(batch), "--json"]
    if transport == "kafka":
        args += ["--kafka-bootstrap", KAFKAS_OF_NODES[0], "--producers", "4", "--consumers", "2"]
    if transport == "ws":
        args.append("--ws-produce-batch")
    before, cpu_before, started = scrape(), cpu_sample(), time.monotonic()
    out = subprocess.run(taskset("CLIENT_CPUS") + args, capture_output=True, text=True, timeout=seconds + 120)
    if out.returncode != 0:
        return {"error": (out.stderr + out.stdout)[-300:]}
    result = json.loads(out.stdout)
    result["cpu"] = cpu_use(cpu_before, cpu_sample(), time.monotonic() - started)
    result["breakdown"] = breakdown(before, scrape())
    return result


def fio(directory):
    if shutil.which("fio") is None or os.environ.get("SKIP_FIO"):
        return None
    runs = {}
    for name, args in [("sync4k", ["--bs=4k", "--size=64m", "--fdatasync=1"]),
                       ("bw64k", ["--bs=64k", "--size=512m", "--fdatasync=16"])]:
        out = subprocess.run(["fio", f"--name={name}", f"--directory={directory}", "--rw=write", "--ioengine=sync",
                              "--output-format=json", "--runtime=20", "--time_based=0"] + args,
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise SystemExit("fio failed: " + out.stderr)
        runs[name] = json.loads(out.stdout)["jobs"][0]
    sync = runs["sync4k"]["sync"]["lat_ns"]
    pct = sync.get("percentile", {})
    return {"fdatasync_p50_ms": pct.get("50.000000", 0) / 1e6, "fdatasync_p99_ms": pct.get("99.000000", 0) / 1e6,
            "fdatasync_p999_ms": pct.get("99.900000", 0) / 1e6, "fdatasync_max_ms": sync["max"] / 1e6,
            "fdatasync_mean_ms": sync["mean"] / 1e6, "bw_64k_fdatasync_1MiB_MBps": runs["bw64k"]["write"]["bw_bytes"] / 1e6}


def fio_at_rate(directory, rate, batch_records):
    """The disk's fdatasync latency under the broker's write pattern at `rate` records/s (ms): one
    file per partition replica (every node of this bench writes to the same disk), each appended
    at rate / PARTITIONS KiB/s in writes of `batch_records` KiB, an fdatasync after each."""
    if shutil.which("fio") is None or os.environ.get("SKIP_FIO"):
        return None
    work = tempfile.mkdtemp(prefix="fio-at-rate-", dir=directory)
    block_kib = max(1, int(batch_records))
    per_file_kib = max(1, int(rate / PARTITIONS))
    try:
        out = subprocess.run(["fio", "--name=appends", f"--directory={work}", "--rw=write", "--ioengine=psync",
                              f"--bs={block_kib}k", "--fdatasync=1", f"--numjobs={PARTITIONS * REPLICATION_FACTOR}",
                              f"--rate={per_file_kib}k",
                              f"--runtime={RUN_SECONDS:g}", "--time_based", "--size=8g", "--file_append=1",
                              "--fallocate=none", "--group_reporting", "--output-format=json",
                              "--percentile_list=99:99.9:99.99"],
                             capture_output=True, text=True, timeout=RUN_SECONDS + 120)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if out.returncode != 0:
        raise SystemExit("fio failed: " + out.stderr)
    sync = json.loads(out.stdout)["jobs"][0]["sync"]["lat_ns"]
    pct = sync.get("percentile", {})
    return {"files": PARTITIONS * REPLICATION_FACTOR, "writes_kib": block_kib, "fdatasyncs": sync["N"],
            "mean_ms": sync["mean"] / 1e6,
            "p99_ms": pct.get("99.000000", 0) / 1e6, "p999_ms": pct.get("99.900000", 0) / 1e6,
            "p9999_ms": pct.get("99.990000", 0) / 1e6, "max_ms": sync["max"] / 1e6}


def fmt_lat(d):
    return f"{d['p50_ms']:.2f} | {d['p99_ms']:.2f} | {d['p999_ms']:.2f} | {d['max_ms']:.1f}"


def print_breakdown(rows):
    print("\n| stage | samples | mean ms | p50 ms | p99 ms | p99.9 ms (bucket bounds) | over 10 ms | over 100 ms |"
          "\n|---|---:|---:|---:|---:|---:|---:|---:|")
    order = STAGES + ["fetch wake-up -> answer", "fdatasync (per sync)", "Kafka connection's reading paused (per pause)",
                      "shard loop lag (per 10 ms probe)"]
    for label in order:
        if label in rows:
            n, mean, p50, p99, p999, over_10, over_100 = rows[label]
            print(f"| {label} | {n} | {mean:.3f} | {p50:g} | {p99:g} | {p999:g} | {over_10} | {over_100} |")


def main():
    held = ports_in_use()
    if held:
        sys.exit(f"ports {', '.join(map(str, held))} on 127.0.0.1 are in use (another broker or bench?): stop it "
                 f"or choose other ports with BASE_PORT (now {BASE_PORT})")
    build_client()
    data = tempfile.mkdtemp(prefix="ringlog-latency-bench-")
    voters = ",".join(f"{i + 1}@127.0.0.1:{CLUSTER_PORTS[i]}" for i in range(NODES)) if NODES > 1 else ""
    procs = []
    logs = []
    print("load before:", uptime())
    try:
        run_bench(data, voters, procs, logs)
    finally:
        for p_ in procs:
            p_.terminate()
        for p_ in procs:
            p_.wait(30)
        shutil.rmtree(data, ignore_errors=True)


def run_bench(data, voters, procs, logs):
    for i in range(NODES):
        listeners = f"{HTTPS_OF_NODES[i]},kafka://{KAFKAS_OF_NODES[i]}"
        sets = ["--set", f"log.dirs={data}/d{i}"]
        if NODES > 1:
            listeners += f",cluster://127.0.0.1:{CLUSTER_PORTS[i]}"
            sets += ["--set", f"node.id={i + 1}", "--set", f"controller.quorum.voters={voters}", "--set", "num.shards=1"]
        sets += ["--set", f"listeners={listeners}"]
        for kv in os.environ.get("EXTRA_SETS", "").split():
            sets += ["--set", kv]
        # Each node's log is kept beside the data directory's parent (removed with it otherwise):
        # a node that stops during a run is then explained.
        logs.append(os.path.join(os.path.dirname(data), f"ringlog-latency-bench-{HTTP_PORTS[i]}-node{i + 1}.log"))
        with open(logs[-1], "w") as log:
            procs.append(subprocess.Popen(taskset("BROKER_CPUS") + [RINGLOG, "serve"] + sets, stdout=log,
                                          stderr=subprocess.STDOUT))
    BROKER_PIDS.extend(p_.pid for p_ in procs)
    for p_, url, log_path in zip(procs, HTTPS_OF_NODES, logs):
        wait_healthy(p_, log_path, url=url)
    if NODES > 1:
        print(f"{NODES} nodes, replication factor {REPLICATION_FACTOR}, num.shards=1 each")
    if os.environ.get("MAX_RATE"):
        maximum = float(os.environ["MAX_RATE"])
        print(f"maximum given: {maximum:,.0f} records/s")
    else:
        max_runs = [kafka_run(0, MAX_SECONDS) for _ in range(MAX_REPEATS)]
        maxima = [r["acked_per_s"] for r in max_runs]
        for r in max_runs:
            c = r["cpu"]
            print(f"  maximum run: {r['acked_per_s']:,.0f}/s, machine busy {c['machine_busy']:.0%}, "
                  f"broker {c['broker_cores']:.2f} cores, client {c['client_cores']:.2f} cores")
        if min(maxima) <= 0:
            raise SystemExit(f"no maximum measured: {maxima}")
        maximum = statistics.median(maxima)
        print(f"maximum (median of {MAX_REPEATS} runs of {MAX_SECONDS:g} s, acks=all, linger.ms={LINGER_MS}): "
              f"{maximum:,.0f} records/s; runs: {', '.join(f'{m:,.0f}' for m in maxima)}")
    rates = [r if r > 1 else r * maximum for r in RATES]
    results = []
    for rate in rates:
        for _ in range(REPEATS):
            results.append(("kafka", rate, kafka_run(rate, RUN_SECONDS)))
            print(f"  kafka {rate:,.0f}/s done: {json.dumps({k: results[-1][2][k] for k in ('acked_per_s', 'ack', 'e2e')})}",
                  flush=True)
    if not os.environ.get("SKIP_NATIVE"):
        for rate in rates:
            results.append(("native kafka", rate, ringlog_bench("kafka", rate, RUN_SECONDS)))
    if not os.environ.get("SKIP_HTTP"):
        for transport in ["http", "ws"]:
            for rate in rates:
                results.append((transport, rate, ringlog_bench(transport, rate, RUN_SECONDS)))
    limit = fio(data)
    at_rates = {}
    for transport, rate, r in results:
        if transport == "kafka" and rate not in at_rates:
            batch = (r.get("rdkafka") or {}).get("batch_records_avg", {}).get("median", 32)
            at_rates[rate] = fio_at_rate(data, rate, batch if batch and batch > 0 else 32)
    print("load after:", uptime())
    print(f"\n{PARTITIONS} partitions, 1 KiB incompressible values, acks=all, librdkafka linger.ms={LINGER_MS}, "
          f"{RUN_SECONDS:g} s per run "
          "(the first second's samples dropped)\n")
    print("| client | rate/s | achieved/s | ack p50 | p99 | p99.9 | max | e2e p50 | p99 | p99.9 | max |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for transport, rate, r in results:
        if transport == "kafka":
            print(f"| librdkafka | {rate:,.0f} | {r['acked_per_s']:,.0f} | {fmt_lat(r['ack'])} | {fmt_lat(r['e2e'])} |")
        elif "error" in r:
            print(f"| ringlog bench {transport} | {rate:,.0f} | failed: {r['error'][:80]} |")
        elif transport == "native kafka":
            p, e = r["produce_ms"], r["end_to_end_ms"]
            print(f"| ringlog bench kafka (batches of {native_batch(rate)}) | {rate:,.0f} | {r['records_per_s']:,.0f} | "
                  f"{p['p50']:.2f} | {p['p99']:.2f} | {p['p99.9']:.2f} | | {e['p50']:.2f} | {e['p99']:.2f} | {e['p99.9']:.2f} | |")
        else:
            p, e = r["produce_ms"], r["end_to_end_ms"]
            print(f"| ringlog bench {transport} | {rate:,.0f} | {r['records_per_s']:,.0f} | {p['p50']:.2f} | {p['p99']:.2f} | "
                  f"{p['p99.9']:.2f} | | {e['p50']:.2f} | {e['p99']:.2f} | {e['p99.9']:.2f} | |")
    print(f"\nCPU over each run ({os.cpu_count()} cores; a core's worth = 1.00; the client's from its start to its exit):\n")
    print("| client | rate/s | machine busy | broker(s) cores | client cores |\n|---|---:|---:|---:|---:|")
    for transport, rate, r in results:
        if "cpu" in r:
            c = r["cpu"]
            print(f"| {transport} | {rate:,.0f} | {c['machine_busy']:.0%} | {c['broker_cores']:.2f} | {c['client_cores']:.2f} |")
    print("\nInside librdkafka (its statistics every second of each run: the worst and the median window's p99, "
          "ms; int = a record's wait in its partition queue before a request takes it, outbuf = a request's wait "
          "to be written, rtt = request written -> answer read, the network and the broker):\n")
    print("| rate/s | int p99 worst | median | outbuf p99 worst | rtt p99 worst | median | rtt p50 median | "
          "records per batch | most requests in flight |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for transport, rate, r in results:
        k = r.get("rdkafka") if transport == "kafka" else None
        if k:
            print(f"| {rate:,.0f} | {k['int_latency_p99_ms']['worst']:.2f} | {k['int_latency_p99_ms']['median']:.2f} | "
                  f"{k['outbuf_latency_p99_ms']['worst']:.2f} | {k['rtt_p99_ms']['worst']:.2f} | "
                  f"{k['rtt_p99_ms']['median']:.2f} | {k['rtt_p50_ms']['median']:.2f} | "
                  f"{k['batch_records_avg']['median']:.1f} | {k['waitresp_max']} |")
    for transport, rate, r in results:
        if "breakdown" in r:
            print(f"\nBroker breakdown, {transport} at {rate:,.0f}/s (delta of /metrics over the run):")
            print_breakdown(r["breakdown"])
    if limit:
        print("\nfio on the same file system:", json.dumps({k: round(v, 3) for k, v in limit.items()}))
    for rate, f in at_rates.items():
        if f:
            print(f"fio with the broker's write pattern at {rate:,.0f}/s ({f['files']} files, {f['writes_kib']} KiB "
                  f"writes, an fdatasync after each): {f['fdatasyncs']} fdatasyncs, mean {f['mean_ms']:.3f} ms, "
                  f"p99 {f['p99_ms']:.2f}, p99.9 {f['p999_ms']:.2f}, p99.99 {f['p9999_ms']:.2f}, max {f['max_ms']:.2f}")


if __name__ == "__main__":
    main()
