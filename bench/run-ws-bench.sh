#!/usr/bin/env bash
# WebSocket benchmark (issue 5) with the native load generator `ringlog bench --transport ws`:
# producers send one `produce` message per 1 KiB record to partition 0 on a fixed schedule, and
# 1 or 100 subscribers of that partition read every record under credit. Latency is scheduled
# send -> read by a subscriber, over every subscriber's every record (no coordinated omission).
# Runs once with the default flush policy (fdatasync before a record is visible) and once with
# log.flush.policy=replication (visible once written to the page cache). Load generator and
# server share this machine's cores. Prints a markdown report.
# Usage: bench/run-ws-bench.sh [BUILD_DIR]   (env: SECONDS_PER_RUN=5)
set -euo pipefail
BUILD_DIR=${1:-build}
RINGLOG=$BUILD_DIR/src/app/ringlog
RUN_SECONDS=${SECONDS_PER_RUN:-5}
WORK=$(realpath "$BUILD_DIR")/ws-bench
PORT=9590
[[ -x $RINGLOG ]] || { echo "build ringlog first ($RINGLOG missing)" >&2; exit 1; }
rm -rf "$WORK" && mkdir -p "$WORK"
server=
cleanup() { [[ -n $server ]] && kill "$server" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK/data"; }
trap cleanup EXIT

start() {   # start FLUSH_POLICY
  rm -rf "$WORK/data"
  "$RINGLOG" serve --set listeners=http://127.0.0.1:$PORT --set log.dirs="$WORK/data" --set log.flush.policy="$1" \
    >"$WORK/ringlog-$1.log" 2>&1 &
  server=$!
  for _ in $(seq 100); do curl -sf http://127.0.0.1:$PORT/v1/health >/dev/null && return 0; sleep 0.1; done
  echo "ringlog did not start" >&2; exit 1
}
stop() { kill "$server"; wait "$server" || true; server=; }

run=0
scenario() {   # scenario POLICY SUBSCRIBERS RATE ["--ws-batch --ws-produce-batch"]
  run=$((run + 1))
  local topic="ws-bench-$run"
  "$RINGLOG" topics create "$topic" --partitions 1 --bootstrap-server http://127.0.0.1:$PORT >/dev/null
  sync   # the run before left dirty pages: write them back before this one measures fdatasync
  local out
  out=$("$RINGLOG" bench --transport ws --bootstrap-server http://127.0.0.1:$PORT --topic "$topic" --partitions 1 \
        --producers 1 --subscribers "$2" --record-bytes 1024 --rate "$3" --duration-ms $((RUN_SECONDS * 1000)) --json ${4:-}) || true
  /usr/bin/python3 - "$1" "$out" <<'PY'
import json, sys
policy, r = sys.argv[1], json.loads(sys.argv[2])
d, p = r["end_to_end_ms"] or {}, r["produce_ms"]
rate = r["rate"] or "max"
linger = f", linger {r['ws_linger_us']} us" if r.get('ws_linger_us') else ""
print(f"| {policy} | {r['subscribers']} | {'yes' if r['ws_batch'] else 'no'} | {'yes' if r.get('ws_produce_batch') else 'no'}{linger} | {rate} | {r['records_per_s']:.0f} | {r['records_consumed']} | {r['delivered_per_s']:.0f} | "
      f"{d.get('p50', float('nan')):.2f} / {d.get('p99', float('nan')):.2f} / {d.get('p99.9', float('nan')):.2f} | "
      f"{p['p99']:.2f} | {r['errors']} errors, {r['out_of_order']} out of order |")
PY
}

echo "# WebSocket benchmark, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "machine: $(lscpu | sed -n 's/^Model name: *//p') x $(nproc), load before start: $(cut -d' ' -f1-3 /proc/loadavg); ${RUN_SECONDS} s per run, 1 KiB values, acks=all"
echo
echo "| log.flush.policy | subscribers | batch | produce batch | scheduled records/s | produced records/s | records delivered (all subscribers) | delivered records/s | produce-to-deliver ms p50 / p99 / p99.9 | produce ack p99 ms | check |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for policy in fsync replication; do
  start "$policy"
  scenario "$policy" 1 50000 "--ws-batch --ws-produce-batch --ws-linger-us 300"
  scenario "$policy" 1 10000
  scenario "$policy" 1 20000
  scenario "$policy" 1 50000
  scenario "$policy" 1 50000 --ws-batch
  scenario "$policy" 1 0 --ws-batch
  scenario "$policy" 1 20000 "--ws-batch --ws-produce-batch"
  scenario "$policy" 1 50000 "--ws-batch --ws-produce-batch"
  scenario "$policy" 1 0 "--ws-batch --ws-produce-batch"
  scenario "$policy" 100 500
  scenario "$policy" 100 500 --ws-batch
  scenario "$policy" 100 1000 --ws-batch
  scenario "$policy" 100 2000 --ws-batch
  scenario "$policy" 100 5000 "--ws-batch --ws-produce-batch --ws-linger-us 300"
  stop
done
# What 100 subscribers at 50,000 records/s would need: 100 x 50,000 x 1 KiB = 5.1 GB/s of values
# leaving one process (about 7 GB/s as base64 in JSON). The loopback ceiling of this machine with
# 100 TCP streams and nothing else running, when iperf3 is installed:
if command -v iperf3 >/dev/null; then
  iperf3 -s -1 -p 9591 >/dev/null 2>&1 &
  sleep 0.5
  echo
  echo "loopback ceiling (iperf3, 100 streams, 4 s): $(iperf3 -c 127.0.0.1 -p 9591 -t 4 -P 100 -l 16K 2>/dev/null | sed -n 's/.*SUM.* \([0-9.]* [GM]bits\/sec\).*receiver/\1/p')"
  wait
fi
