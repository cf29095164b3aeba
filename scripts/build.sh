#!/bin/sh
# Configures (once) and builds ringlog into ./build. Extra arguments go to `meson setup`.
set -eu
cd "$(dirname "$0")/.."
"$(dirname "$0")/install-deps.sh"
if [ ! -f build/build.ninja ]; then
  meson setup build "$@" >/dev/null
fi
# Two jobs: the machine this is made for has 2 cores and Beast translation units are large.
ninja -C build -j "${RINGLOG_BUILD_JOBS:-2}"
