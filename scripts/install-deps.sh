#!/bin/sh
# Installs what is missing, from Debian 12's registry only. Safe to rerun. Works as root, or as a
# user with sudo (only apt-get runs through sudo).
#
#   scripts/install-deps.sh                       what the broker needs to build and run (run.sh)
#   RINGLOG_TEST_DEPS=1 scripts/install-deps.sh   also what the tests need (test.sh, .ci/run)
#   RINGLOG_BENCH_DEPS=1 scripts/install-deps.sh  the tests' packages and the benchmarks' tools
#
# The console's test tooling, playwright-core, comes from npm's registry in scripts/test.sh.
set -eu

# Building and running the broker. doctest-dev is a header-only package that `meson setup`
# needs while the `tests` option is on (the default); python3 runs the build's code generators;
# curl is the client of the README's session and of its wait for /v1/health.
PACKAGES="g++ meson ninja-build pkg-config python3 liburing-dev libboost1.81-dev libsimdjson-dev \
nlohmann-json3-dev libssl-dev liblz4-dev zlib1g-dev libsnappy-dev libzstd-dev libspdlog-dev libfmt-dev doctest-dev \
curl"
if [ "${RINGLOG_TEST_DEPS:-0}" = 1 ] || [ "${RINGLOG_BENCH_DEPS:-0}" = 1 ]; then
  # The Python checks and the pytest integration suite (kcat, kafka-python and librdkafka are
  # their Kafka clients), and the console's browser tests (Debian's chromium).
  PACKAGES="$PACKAGES python3-pytest python3-requests python3-kafka python3-lz4 python3-snappy \
python3-zstandard python3-confluent-kafka kcat python3-websockets python3-yaml python3-jsonschema \
procps ca-certificates openssl python3-cryptography chromium iproute2 nftables"
  # The browser tests need node and npm; Debian's only when no node is on PATH already (a newer
  # one installed otherwise is used as it is).
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    PACKAGES="$PACKAGES nodejs npm"
  fi
fi
if [ "${RINGLOG_BENCH_DEPS:-0}" = 1 ]; then
  # nats-server: the JetStream row of bench/run-replication-bench.py (its own processes on free
  # ports; the package also enables a system service on port 4222 where systemd runs).
  # librdkafka-dev: the headers bench/latency_client.cc is compiled with (latency, capacity).
  PACKAGES="$PACKAGES libbenchmark-dev fio nginx-light wrk redis-server nats-server librdkafka-dev"
fi

missing=""
for p in $PACKAGES; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
echo "ringlog: installing:$missing" >&2
$SUDO apt-get update -qq
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
