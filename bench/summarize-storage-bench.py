#!/usr/bin/python3
"""Turns the raw lines of bench/run-storage-bench.sh into markdown tables (median, min-max).

Usage: summarize-storage-bench.py RAW APPEND_BYTES RUN_SECONDS RECOVERY_BYTES
"""

import re
import statistics
import sys
from collections import defaultdict

MIB = 1048576
SIZES = [16384, 65536, 262144, 1048576]


def parse(path):
    machine, rows = [], []
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("machine: "):
            machine.append(line[len("machine: "):])
            continue
        m = re.match(r"tag=(.*?) ((?:mode|bytes|name)=.*)$", line)
        if not m:
            continue
        row = dict(re.findall(r"(\w+)=(\S+)", m.group(2)))
        row["tag"] = m.group(1)
        rows.append(row)
    return machine, rows


def values(rows, tag, key):
    return [float(r[key]) for r in rows if r["tag"] == tag and key in r]


def cell(xs, digits=1):
    if not xs:
        return "-"
    med = statistics.median(xs)
    if len(xs) == 1:
        return f"{med:.{digits}f}"
    return f"{med:.{digits}f} ({min(xs):.{digits}f}-{max(xs):.{digits}f})"


def ratio(a, b):
    if not a or not b:
        return "-"
    return f"{100.0 * statistics.median(a) / statistics.median(b):.0f}%"


def size_name(bs):
    return f"{bs // MIB} MiB" if bs >= MIB else f"{bs // 1024} KiB"


def main():
    raw, append_bytes, run_seconds, recovery_bytes = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    machine, rows = parse(raw)
    out = []
    out.append("Machine: " + "; ".join(machine))
    out.append("")
    out.append(f"Each throughput run: up to {append_bytes // MIB} MiB or {run_seconds} s. MiB/s: median "
               "(min-max) over the repeats.")
    out.append("")
    out.append("### Appends with an fdatasync per batch vs fio --fdatasync=1")
    out.append("")
    out.append("| batch | partition_log flush() per batch MiB/s | same, O_DIRECT path (log.direct.io) MiB/s | fio fdatasync per block MiB/s | ringlog/fio | O_DIRECT/fio |")
    out.append("|---|---|---|---|---|---|")
    for bs in SIZES:
        s = values(rows, f"storage-flush-each bs={bs}", "mib_per_s")
        d = values(rows, f"storage-direct-flush-each bs={bs}", "mib_per_s")
        f = values(rows, f"fio-fdatasync-each bs={bs}", "mib_per_s")
        out.append(f"| {size_name(bs)} | {cell(s)} | {cell(d)} | {cell(f)} | {ratio(s, f)} | {ratio(d, f)} |")
    out.append("")
    out.append("### Appends with an fdatasync every 1 MiB vs fio --fdatasync=1MiB/bs")
    out.append("")
    out.append("| batch | partition_log flush() every 1 MiB MiB/s | same, O_DIRECT path MiB/s | fio fdatasync every 1 MiB MiB/s | ringlog/fio | O_DIRECT/fio |")
    out.append("|---|---|---|---|---|---|")
    for bs in SIZES:
        s = values(rows, f"storage-flush-1mib bs={bs}", "mib_per_s")
        d = values(rows, f"storage-direct-flush-1mib bs={bs}", "mib_per_s")
        f = values(rows, f"fio-fdatasync-1mib bs={bs}", "mib_per_s")
        out.append(f"| {size_name(bs)} | {cell(s)} | {cell(d)} | {cell(f)} | {ratio(s, f)} | {ratio(d, f)} |")
    out.append("")
    out.append("### Appends without fdatasync (page cache) vs fio --end_fsync=1")
    out.append("")
    out.append("| batch | partition_log no flush MiB/s | same incl. final flush() MiB/s | fio end_fsync MiB/s |")
    out.append("|---|---|---|---|")
    for bs in SIZES:
        s = values(rows, f"storage-no-flush bs={bs}", "mib_per_s")
        sf = values(rows, f"storage-no-flush bs={bs}", "mib_per_s_with_final_flush")
        f = values(rows, f"fio-no-fdatasync bs={bs}", "mib_per_s")
        out.append(f"| {size_name(bs)} | {cell(s)} | {cell(sf)} | {cell(f)} |")
    out.append("")
    out.append("### fio O_DIRECT (the ceiling the O_DIRECT path can approach)")
    out.append("")
    out.append("| fio job | MiB/s |")
    out.append("|---|---|")
    for tag, name in [("fio-direct bs=1048576", "--direct=1 --bs=1m (psync, QD1)"),
                      ("fio-direct bs=4194304", "--direct=1 --bs=4m (psync, QD1)"),
                      ("fio-direct-fdatasync-each bs=1048576", "--direct=1 --bs=1m --fdatasync=1"),
                      ("fio-direct-libaio-qd4 bs=1048576", "--direct=1 --bs=1m --ioengine=libaio --iodepth=4")]:
        out.append(f"| `{name}` | {cell(values(rows, tag, 'mib_per_s'))} |")
    out.append("")
    out.append(f"### Recovery: partition_log::open of {recovery_bytes / MIB:.0f} MiB")
    out.append("")
    fill = [r for r in rows if r["tag"] == "fill-unclean"]
    if fill:
        f = fill[0]
        out.append(f"Filled with 1 MiB batches, flush() per batch: {int(f['bytes']) / MIB:.0f} MiB, "
                   f"{f['segments']} segment(s), {f['log_end_offset']} records, {float(f['seconds']):.1f} s, "
                   "then SIGKILL.")
        out.append("")
    out.append("| case | open() seconds | segments scanned | batches scanned | bytes truncated |")
    out.append("|---|---|---|---|---|")
    for tag, name in [("open unclean cold full-scan", "after SIGKILL, cold cache (full scan)"),
                      ("open unclean hot full-scan", "after SIGKILL, hot cache, recovery checkpoint removed (full scan)"),
                      ("open unclean hot with-recovery-checkpoint", "unclean again, hot cache, recovery checkpoint from the previous open"),
                      ("open clean cold", "after close(), cold cache"),
                      ("open clean hot", "after close(), hot cache")]:
        rs = [r for r in rows if r["tag"] == tag]
        if not rs:
            continue
        secs = [float(r["seconds"]) for r in rs]
        out.append(f"| {name} | {cell(secs, 3)} | {rs[0]['segments_scanned']} | {rs[0]['batches_scanned']} | "
                   f"{rs[0]['bytes_truncated']} |")
    out.append("")
    out.append("### codec_bench (--benchmark_min_time=0.2)")
    out.append("")
    out.append("| benchmark | MiB/s |")
    out.append("|---|---|")
    for r in rows:
        if r["tag"] == "codec":
            out.append(f"| {r['name']} | {float(r['bytes_per_second']) / MIB:.0f} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
