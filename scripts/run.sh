#!/bin/sh
# Installs what is missing, builds, and starts a broker on the embedded default:
# HTTP on 127.0.0.1:8082, data in ./ringlog-data. Extra arguments go to `ringlog serve`,
# e.g. ./scripts/run.sh --set listeners=http://0.0.0.0:8082
set -eu
cd "$(dirname "$0")/.."
./scripts/build.sh
exec ./build/src/app/ringlog serve "$@"
