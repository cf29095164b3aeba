#!/usr/bin/python3
"""Log cleaner benchmark (issue 17), one script, this machine (docs/benchmarks.md shows results).

    /usr/bin/python3 bench/run-cleaner-bench.py [BUILD_DIR]   (BUILD_DIR configured with -Dbenchmarks=true)

Measures, one at a time:
  (a) the disk: fio sequential read and write (1 MiB blocks, O_DIRECT) in BENCH_DIR;
  (b) cleaner_bench: one log_cleaner pass over a changelog of KEYS keys x VERSIONS versions
      (100-byte values), page cache warm and cold (--cold), and with lz4 batches: MiB/s of log
      cleaned (bytes of segments read / wall time) beside (a), and the offset map's bytes per key;
  (c) produce latency over HTTP to a compacted partition while its log is being cleaned, against
      the same run with log.cleaner.enable=false: `ringlog serve` with one shard, a partition
      pre-filled with PREFILL_KEYS x PREFILL_VERSIONS records, then PRODUCE_SECONDS of one-record
      POSTs (sequential, one client), p50/p99/max; beside them, from /metrics, how long each
      cleaner step held the shard's loop (ringlog_log_cleaner_step_duration_seconds: the stall
      the cleaner itself causes) and the fdatasync latency histogram (the disk's own noise).
      With BASELINE_RINGLOG set (another build's binary, e.g. one that cleaned in whole passes),
      (c) also runs with the cleaner on under that binary, in the same script run.
Environment: BENCH_DIR [BUILD_DIR/bench-data], KEYS [100000], VERSIONS [20], PREFILL_KEYS [50000],
PREFILL_VERSIONS [10], PRODUCE_SECONDS [20], PARTS [all] (or "produce": (c) only, no fio and no
cleaner_bench, which needs -Dbenchmarks=true), BASELINE_RINGLOG [unset]. Prints a markdown report
to stdout.
"""
import base64
import json
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import time

import requests

BUILD = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build").resolve()
BENCH_DIR = pathlib.Path(os.environ.get("BENCH_DIR", BUILD / "bench-data")).resolve()
KEYS = int(os.environ.get("KEYS", 100000))
VERSIONS = int(os.environ.get("VERSIONS", 20))
PREFILL_KEYS = int(os.environ.get("PREFILL_KEYS", 50000))
PREFILL_VERSIONS = int(os.environ.get("PREFILL_VERSIONS", 10))
PRODUCE_SECONDS = float(os.environ.get("PRODUCE_SECONDS", 20))
PARTS = os.environ.get("PARTS", "all")
BASELINE_RINGLOG = os.environ.get("BASELINE_RINGLOG")
CLEANER_BENCH = BUILD / "bench" / "cleaner_bench"
RINGLOG = BUILD / "src" / "app" / "ringlog"
BINARY = "application/vnd.kafka.binary.v2+json"


def log(*a):
    print(f"[{time.strftime('%T')}]", *a, file=sys.stderr, flush=True)


def kv(line):
    return dict(p.split("=", 1) for p in line.split())


def fio(rw):
    out = subprocess.run(["fio", "--name=seq", f"--directory={BENCH_DIR}", f"--rw={rw}", "--bs=1M", "--size=512M",
                          "--direct=1", "--ioengine=psync", "--unlink=1", "--output-format=json"],
                         capture_output=True, check=True, text=True).stdout
    job = json.loads(out)["jobs"][0]
    return job["read" if rw == "read" else "write"]["bw_bytes"] / 2**20


def cleaner(*extra):
    out = subprocess.run([str(CLEANER_BENCH), str(BENCH_DIR), "--keys", str(KEYS), "--versions", str(VERSIONS), *extra],
                         capture_output=True, check=True, text=True).stdout
    return kv(out.strip())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def histogram(metrics, name):
    """{upper bound in ms (inf last): cumulative count} of a Prometheus histogram, or None if absent."""
    out = {}
    for line in metrics.splitlines():
        if line.startswith(name + "_bucket{le="):
            bound = line.split('"')[1]
            out[float("inf") if bound == "+Inf" else float(bound) * 1000] = int(float(line.rsplit(" ", 1)[1]))
    return out or None


def bucket_summary(h, over_ms):
    """'count, n over over_ms, all <= X ms' from histogram(), or '-' when the binary has none."""
    if not h:
        return "-"
    count = h[float("inf")]
    bounds = sorted(h)
    under = max((c for b, c in h.items() if b <= over_ms), default=0)
    top = next(b for b in bounds if h[b] == count)
    top_text = "> 1000" if top == float("inf") else f"<= {top:g}"
    return f"{count}, {count - under} over {over_ms:g} ms, all {top_text} ms"


def produce_latency(enable, binary=RINGLOG):
    data = BENCH_DIR / "serve"
    shutil.rmtree(data, ignore_errors=True)
    port = free_port()
    proc = subprocess.Popen([str(binary), "serve", "--set", f"listeners=http://127.0.0.1:{port}", "--set",
                             f"log.dirs={data}", "--set", "num.shards=1", "--set", f"log.cleaner.enable={str(enable).lower()}",
                             "--set", "log.cleaner.backoff.ms=1000", "--set", "log.retention.check.interval.ms=1000"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        end = time.monotonic() + 20
        while True:
            try:
                if requests.get(url + "/v1/health", timeout=1).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < end, "ringlog did not start"
            time.sleep(0.05)
        cluster = requests.get(url + "/v3/clusters").json()["data"][0]["cluster_id"]
        r = requests.post(f"{url}/v3/clusters/{cluster}/topics", json={"topic_name": "table", "partitions_count": 1, "configs": [
            {"name": "cleanup.policy", "value": "compact"}, {"name": "segment.bytes", "value": str(8 << 20)},
            {"name": "min.cleanable.dirty.ratio", "value": "0.01"}]})
        assert r.status_code == 201, r.text
        s = requests.Session()
        value = base64.b64encode(b"v" * 100).decode()
        for v in range(PREFILL_VERSIONS):
            for k in range(0, PREFILL_KEYS, 1000):
                records = [{"key": base64.b64encode(f"key-{j}".encode()).decode(), "value": value}
                           for j in range(k, min(PREFILL_KEYS, k + 1000))]
                r = s.post(f"{url}/topics/table/partitions/0", json={"records": records}, headers={"Content-Type": BINARY})
                assert r.status_code == 200, r.text
        latencies = []
        stop = time.monotonic() + PRODUCE_SECONDS
        i = 0
        while time.monotonic() < stop:
            body = {"records": [{"key": base64.b64encode(f"key-{i % PREFILL_KEYS}".encode()).decode(), "value": value}]}
            t = time.perf_counter()
            r = s.post(f"{url}/topics/table/partitions/0", json=body, headers={"Content-Type": BINARY})
            latencies.append((time.perf_counter() - t) * 1000)
            assert r.status_code == 200, r.text
            i += 1
        metrics = s.get(url + "/metrics").text
        passes = sum(float(l.rsplit(" ", 1)[1]) for l in metrics.splitlines() if l.startswith("ringlog_log_cleaner_passes_total{"))
        cleaned = sum(float(l.rsplit(" ", 1)[1]) for l in metrics.splitlines() if l.startswith("ringlog_log_cleaner_bytes_read_total{"))
        secs = sum(float(l.rsplit(" ", 1)[1]) for l in metrics.splitlines() if l.startswith("ringlog_log_cleaner_seconds_total{"))
        latencies.sort()
        steps = histogram(metrics, "ringlog_log_cleaner_step_duration_seconds")
        fsyncs = histogram(metrics, "ringlog_log_fsync_duration_seconds")
        return {"requests": len(latencies), "p50": latencies[len(latencies) // 2], "p99": latencies[int(len(latencies) * 0.99)],
                "p999": latencies[int(len(latencies) * 0.999)], "max": latencies[-1], "passes": passes, "cleaned_mib": cleaned / 2**20,
                "cleaner_s": secs, "steps": steps, "fsyncs": fsyncs}
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(data, ignore_errors=True)


def produce_report(off, on, baseline):
    print(f"\nProduce to a compacted partition ({PREFILL_KEYS} keys x {PREFILL_VERSIONS} versions pre-filled, one shard, "
          f"one client, {PRODUCE_SECONDS:.0f} s of one-record POSTs):\n")
    print("| cleaner | requests | p50 ms | p99 ms | p99.9 ms | max ms | passes | MiB cleaned | cleaner seconds | "
          "cleaner steps (time each held the shard) | fdatasyncs (disk) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = [("off", off), ("on", on)]
    if baseline:
        rows.append((f"on, {BASELINE_RINGLOG}", baseline))
    for label, r in rows:
        print(f"| {label} | {r['requests']} | {r['p50']:.2f} | {r['p99']:.2f} | {r['p999']:.2f} | {r['max']:.1f} | "
              f"{r['passes']:.0f} | {r['cleaned_mib']:.1f} | {r['cleaner_s']:.2f} | {bucket_summary(r['steps'], 10)} | "
              f"{bucket_summary(r['fsyncs'], 25)} |")


def produce_part():
    log("produce, cleaner off")
    off = produce_latency(False)
    log("produce, cleaner on")
    on = produce_latency(True)
    baseline = None
    if BASELINE_RINGLOG:
        log("produce, cleaner on,", BASELINE_RINGLOG)
        baseline = produce_latency(True, pathlib.Path(BASELINE_RINGLOG))
    return off, on, baseline


def main():
    if PARTS == "produce":
        if not RINGLOG.exists():
            sys.exit(f"missing {RINGLOG}")
        BENCH_DIR.mkdir(parents=True, exist_ok=True)
        produce_report(*produce_part())
        return
    for tool in (CLEANER_BENCH, RINGLOG):
        if not tool.exists():
            sys.exit(f"missing {tool}: meson setup {BUILD} -Dbenchmarks=true && ninja -C {BUILD}")
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    log("fio")
    disk_read, disk_write = fio("read"), fio("write")
    runs = []
    for label, extra in [("warm", []), ("cold (page cache dropped)", ["--cold"]), ("lz4 batches, warm", ["--compression", "lz4"])]:
        log("cleaner_bench", label)
        runs.append((label, cleaner(*extra)))
    off, on, baseline = produce_part()
    print(f"Disk (fio, 1 MiB O_DIRECT): sequential read {disk_read:.0f} MiB/s, write {disk_write:.0f} MiB/s\n")
    print(f"Changelog: {KEYS} keys x {VERSIONS} versions, 100-byte values, batches of 100 records, segments of 64 MiB\n")
    print("The offset map costs 24 bytes a slot and is filled to 3/4 (offset_map.h): 32 bytes per key when full. A pass\n"
          "sizes it for the offsets of its dirty range (at most one key each), so with V versions per key it uses\n"
          "about 32 x V bytes per distinct key of that pass, within log.cleaner.dedupe.buffer.size.\n")
    print("| case | log before | log after | passes | seconds | MiB/s cleaned | keys in map | map MiB | map bytes/key (this pass) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, r in runs:
        print(f"| {label} | {float(r['log_mib_before']):.0f} MiB | {float(r['log_mib_after']):.1f} MiB | {r['passes']} | "
              f"{float(r['seconds']):.2f} | {float(r['mib_per_s']):.0f} | {r['keys_in_map']} | {float(r['map_mib']):.1f} | "
              f"{float(r['map_bytes_per_key']):.1f} |")
    produce_report(off, on, baseline)


if __name__ == "__main__":
    main()
