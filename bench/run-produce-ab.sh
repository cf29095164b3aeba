#!/bin/sh
# Produce throughput of two ringlog binaries side by side (issue 28: each stage of the broker's
# restructuring must not lower it): `ringlog bench` over HTTP (4 producers, batches of 100 x 1 KiB,
# acks=all, 6 partitions, 2 consumers) and over the Kafka listener (the native load generator,
# one v2 batch of 100 per Produce), each run on a fresh broker with its own temporary log.dirs,
# the two binaries alternating so that the machine's drift falls on both.
#
# Usage: bench/run-produce-ab.sh BASE_BIN NEW_BIN   (env: ROUNDS=3, MS=8000 per run,
#        TRANSPORTS="http kafka", PORT=9790 (HTTP; Kafka on PORT+2), BENCH_DIR=/var/tmp,
#        CLIENT_BIN=the binary whose `ringlog bench` loads both brokers; default: each binary its own,
#        so give one when the two binaries' load generators differ)
# Prints one line per run: which binary, transport, load average, records/s, produce p50/p99 ms,
# records/s consumed (2 consumers reading while the producers write) and end-to-end p99 ms.
# Not a test: no figure is asserted.
set -eu
BASE=$1
NEW=$2
ROUNDS=${ROUNDS:-3}
MS=${MS:-8000}
PORT=${PORT:-9790}
KPORT=$((PORT + 2))
run() {
  bin=$1 name=$2 transport=$3
  dir=$(mktemp -d "${BENCH_DIR:-/var/tmp}/ringlog-ab.XXXXXX")
  "$bin" serve --set "listeners=http://127.0.0.1:$PORT,kafka://127.0.0.1:$KPORT" --set "log.dirs=$dir/d" \
    >"$dir/serve.log" 2>&1 &
  pid=$!
  i=0
  until curl -sf "http://127.0.0.1:$PORT/v1/health" >/dev/null; do
    i=$((i + 1))
    if [ $i -gt 200 ] || ! kill -0 $pid 2>/dev/null; then
      echo "$name: the broker did not start:" && cat "$dir/serve.log" && exit 1
    fi
    sleep 0.05
  done
  out=$("${CLIENT_BIN:-$bin}" bench --bootstrap-server "http://127.0.0.1:$PORT" --kafka-bootstrap "127.0.0.1:$KPORT" \
    --transport "$transport" --topic ab --partitions 6 --duration-ms "$MS" --record-bytes 1024 --acks all --json)
  kill $pid
  wait $pid || true
  rm -rf "$dir"
  echo "$out" | /usr/bin/python3 -c '
import json, sys
h = json.loads(sys.stdin.read())
e2e = h.get("end_to_end_ms") or {}
print(sys.argv[1], sys.argv[2], "load", sys.argv[3], round(h["records_per_s"]), "records/s, produce p50",
      h["produce_ms"]["p50"], "ms, p99", h["produce_ms"]["p99"], "ms; consumed",
      round(h["records_consumed"] / h["seconds"]), "records/s, end-to-end p99", e2e.get("p99", "-"),
      "ms, errors", h["errors"])' \
    "$name" "$transport" "$(cut -d' ' -f1 /proc/loadavg)"
}
r=0
while [ $r -lt "$ROUNDS" ]; do
  r=$((r + 1))
  for transport in ${TRANSPORTS:-http kafka}; do
    run "$BASE" base "$transport"
    run "$NEW" new "$transport"
  done
done
