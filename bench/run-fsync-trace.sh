#!/bin/bash
# Issue 32: where a slow fdatasync of the broker goes. Records, machine-wide, ext4's sync_file
# enter/exit, block requests (issue/complete) and the scheduler's switches and wake-ups with
# `perf record` while bench/run-latency-bench.py drives librdkafka at one fixed rate, then
# bench/fsync_trace_analyse.py splits each fdatasync over 10 ms into its own block requests'
# device time, the time blocked until woken (its I/O or another thread's on a shared buffer) and
# the time waiting for a core, and lists the block requests in flight meanwhile.
# Needs root (perf's tracepoints). Tracing costs CPU: the latency figures of a traced run are
# worse than an untraced one's; it is for the breakdown, not the figures.
# Usage: bench/run-fsync-trace.sh [BUILD_DIR]
#   env: MAX_RATE (records/s the fractions in RATES apply to; default 376000), RATES (0.5),
#        RUN_SECONDS (15), EXTRA_SETS (broker --set), OUT (directory for perf.data and the text)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-build}
out=${OUT:-$(mktemp -d /tmp/fsync-trace.XXXXXX)}
mkdir -p "$out"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); output in $out"
perf record -q -e ext4:ext4_sync_file_enter,ext4:ext4_sync_file_exit,block:block_rq_issue,block:block_rq_complete,sched:sched_switch,sched:sched_wakeup \
  -a -o "$out/perf.data" &
perf_pid=$!
sleep 1
MAX_RATE=${MAX_RATE:-376000} RATES=${RATES:-0.5} RUN_SECONDS=${RUN_SECONDS:-15} SKIP_HTTP=1 SKIP_NATIVE=1 SKIP_FIO=1 \
  "$HERE/run-latency-bench.py" "$BUILD" > "$out/bench.txt" 2>&1 || true
kill -INT $perf_pid
wait $perf_pid || true
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
perf script -i "$out/perf.data" -F comm,tid,time,event,trace > "$out/events.txt" 2>/dev/null
/usr/bin/python3 "$HERE/fsync_trace_analyse.py" "$out/events.txt"
grep -E "^\| librdkafka|^\| (order_wait|sent|fdatasync)" "$out/bench.txt" || true
