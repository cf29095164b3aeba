#!/bin/bash
# Storage benchmarks against fio on the same disk, in one run (docs/benchmarks.md shows results).
#
#   bench/run-storage-bench.sh [BUILD_DIR]      (BUILD_DIR built with -Dbenchmarks=true)
#
# Measures, one process at a time (never two benchmarks at once):
#   (a) partition_log appends of 1 KiB records in batches of 16 KiB, 64 KiB, 256 KiB, 1 MiB:
#       flush() per batch, flush() every 1 MiB, and no flush (one flush at the end)
#   (b) fio sequential writes at the same block sizes: fdatasync per block, fdatasync every
#       1 MiB, and no fdatasync (end_fsync)
#   (c) fio O_DIRECT at 1 MiB and 4 MiB (the device ceiling; ringlog has no O_DIRECT path)
#   (d) partition_log::open (recovery) of a RECOVERY_BYTES partition after a clean close and after
#       SIGKILL, with a cold page cache (this directory's pages dropped) and a hot one
#   (e) codec_bench (CRC-32C, decode_records, encode_batch), briefly
# Every storage/fio run stops after APPEND_BYTES or RUN_SECONDS, whichever comes first, and is
# repeated REPEATS times, storage and fio interleaved; tables show the median (and min-max).
#
# Environment (defaults in brackets):
#   BENCH_DIR      where the data goes [BUILD_DIR/bench-data]; must be a real disk, not tmpfs
#   APPEND_BYTES   bytes per throughput run [268435456 = 256 MiB]
#   RUN_SECONDS    time cap per throughput run [8]
#   REPEATS        runs per configuration [3]
#   RECOVERY_BYTES partition size for (d) [1073741824 = 1 GiB]; lower it on a slow disk
#   RESULTS        the markdown report [BUILD_DIR/bench-results.md]; raw lines go to RESULTS.raw
set -euo pipefail

BUILD_DIR=$(realpath "${1:-build}")
BENCH_DIR=${BENCH_DIR:-$BUILD_DIR/bench-data}
APPEND_BYTES=${APPEND_BYTES:-268435456}
RUN_SECONDS=${RUN_SECONDS:-8}
REPEATS=${REPEATS:-3}
RECOVERY_BYTES=${RECOVERY_BYTES:-1073741824}
RESULTS=${RESULTS:-$BUILD_DIR/bench-results.md}
RAW=$RESULTS.raw
PY=/usr/bin/python3
STORAGE_BENCH=$BUILD_DIR/bench/storage_bench
CODEC_BENCH=$BUILD_DIR/bench/codec_bench
SIZES=(16384 65536 262144 1048576)
MIB=1048576

for tool in "$STORAGE_BENCH" "$CODEC_BENCH"; do
  # `meson setup` on a directory already configured changes no option (meson 1.0 says so and exits
  # 0), so the hint turns the option on with `meson configure`.
  [[ -x $tool ]] || { echo "missing $tool: meson configure $BUILD_DIR -Dbenchmarks=true && ninja -C $BUILD_DIR" \
    "(no $BUILD_DIR yet: meson setup $BUILD_DIR -Dbenchmarks=true)" >&2; exit 1; }
done
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 1; }
mkdir -p "$BENCH_DIR"
BENCH_DIR=$(realpath "$BENCH_DIR")
fstype=$(stat -f -c %T "$BENCH_DIR")
if [[ $fstype == tmpfs || $fstype == ramfs ]]; then
  echo "$BENCH_DIR is on $fstype: fdatasync would measure memory; set BENCH_DIR to a real disk" >&2
  exit 1
fi
rm -rf "${BENCH_DIR:?}"/*
: > "$RAW"

log() { echo "[$(date +%T)] $*" >&2; }

# fio prints JSON; keep one key=value line like storage_bench's.
fio_run() {  # fio_run TAG fio-args...
  local tag=$1; shift
  fio --name=seq --directory="$BENCH_DIR" --rw=write --ioengine=psync --fallocate=none --unlink=1 \
      --size="$APPEND_BYTES" --runtime="$RUN_SECONDS" --output-format=json "$@" |
    $PY -c '
import json, sys
job = json.load(sys.stdin)["jobs"][0]
w = job["write"]
print("tag=%s bytes=%d seconds=%.3f mib_per_s=%.1f" % (sys.argv[1], w["io_bytes"], w["runtime"] / 1000.0,
      w["bw_bytes"] / 1048576.0))' "$tag" | tee -a "$RAW" >&2
}

storage_append() {  # storage_append TAG batch_bytes flush_bytes [--direct]
  local tag=$1 dir=$BENCH_DIR/append-0
  rm -rf "$dir"
  echo "tag=$tag $("$STORAGE_BENCH" append "$dir" --batch-bytes "$2" --flush-bytes "$3" \
      --total-bytes "$APPEND_BYTES" --seconds "$RUN_SECONDS" ${4:-})" | tee -a "$RAW" >&2
  rm -rf "$dir"
}

log "machine"
{
  echo "date=$(date -u +%Y-%m-%dT%H:%MZ)"
  echo "cpu=$(lscpu | sed -n 's/^Model name: *//p') x $(nproc)"
  echo "memory=$(free -h | awk '/^Mem:/ {print $2}')"
  echo "disk=$(df -h "$BENCH_DIR" | awk 'NR==2 {print $1, $2 " total,", $4 " free"}') fs=$(findmnt -n -o FSTYPE,OPTIONS --target "$BENCH_DIR" | tr -s ' ')"
  echo "kernel=$(uname -r) fio=$(fio --version)"
} | sed 's/^/machine: /' | tee -a "$RAW" >&2

log "(a)+(b) appends vs fio, ${REPEATS}x, interleaved"
for ((r = 1; r <= REPEATS; r++)); do
  for bs in "${SIZES[@]}"; do
    storage_append "storage-flush-each bs=$bs" "$bs" "$bs"
    storage_append "storage-direct-flush-each bs=$bs" "$bs" "$bs" --direct
    fio_run "fio-fdatasync-each bs=$bs" --bs="$bs" --fdatasync=1
    storage_append "storage-flush-1mib bs=$bs" "$bs" "$MIB"
    storage_append "storage-direct-flush-1mib bs=$bs" "$bs" "$MIB" --direct
    fio_run "fio-fdatasync-1mib bs=$bs" --bs="$bs" --fdatasync=$((MIB / bs))
    storage_append "storage-no-flush bs=$bs" "$bs" 0
    fio_run "fio-no-fdatasync bs=$bs" --bs="$bs" --end_fsync=1
  done
done

log "(c) fio O_DIRECT ceiling"
for ((r = 1; r <= REPEATS; r++)); do
  fio_run "fio-direct bs=1048576" --bs=1m --direct=1
  fio_run "fio-direct bs=4194304" --bs=4m --direct=1
  fio_run "fio-direct-fdatasync-each bs=1048576" --bs=1m --direct=1 --fdatasync=1
  fio_run "fio-direct-libaio-qd4 bs=1048576" --bs=1m --direct=1 --ioengine=libaio --iodepth=4
done

log "(d) recovery of $RECOVERY_BYTES bytes"
rec=$BENCH_DIR/recovery-0
open_run() {  # open_run TAG storage_bench-open-args...
  local tag=$1; shift
  echo "tag=$tag $("$STORAGE_BENCH" open "$rec" "$@")" | tee -a "$RAW" >&2
}
evict() { "$STORAGE_BENCH" evict "$rec" > /dev/null; }
rm -rf "$rec"
set +e
fill=$("$STORAGE_BENCH" fill "$rec" --bytes "$RECOVERY_BYTES" --unclean)
status=$?
set -e
[[ $status -eq 137 ]] || { echo "fill --unclean should die by SIGKILL (137), got $status" >&2; exit 1; }
echo "tag=fill-unclean $fill" | tee -a "$RAW" >&2
evict
open_run "open unclean cold full-scan"
open_run "open unclean hot full-scan" --drop-recovery-checkpoint
open_run "open unclean hot with-recovery-checkpoint"
open_run "open make-clean" --close
for ((r = 1; r <= REPEATS; r++)); do
  evict
  open_run "open clean cold" --close
  open_run "open clean hot" --close
done
rm -rf "$rec"

log "(e) codec_bench"
# JSON, not CSV: benchmark 1.7's CSV reporter aborts when benchmarks have different counters.
"$CODEC_BENCH" --benchmark_min_time=0.2 --benchmark_format=json 2>/dev/null |
  $PY -c '
import json, sys
for b in json.load(sys.stdin)["benchmarks"]:
    extra = " ".join("%s=%g" % (k, v) for k, v in b.items() if k in ("batch_bytes", "records"))
    print("tag=codec name=%s bytes_per_second=%g %s" % (b["name"], b.get("bytes_per_second", 0), extra))' |
  tee -a "$RAW" >&2

$PY "$(dirname "$0")/summarize-storage-bench.py" "$RAW" "$APPEND_BYTES" "$RUN_SECONDS" "$RECOVERY_BYTES" > "$RESULTS"
log "report: $RESULTS (raw: $RAW)"
