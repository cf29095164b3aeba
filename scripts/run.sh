#!/bin/sh
# Installs what the broker needs (not the test tools), builds only its binary, and starts it in
# the foreground on the embedded default: HTTP on 127.0.0.1:8082, Kafka clients on
# 127.0.0.1:9092, data in ./ringlog-data. Extra arguments go to `ringlog serve`,
# e.g. ./scripts/run.sh --set listeners=http://0.0.0.0:8082
set -eu
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h|--help)
    sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'
    if [ -x build/src/app/ringlog ]; then exec ./build/src/app/ringlog serve --help; fi
    echo "(build first, ./scripts/build.sh src/app/ringlog, for the options of ringlog serve)"
    exit 0 ;;
esac
./scripts/build.sh src/app/ringlog
exec ./build/src/app/ringlog serve "$@"
