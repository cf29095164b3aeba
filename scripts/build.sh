#!/bin/sh
# Installs what the build needs, configures ./build (once) and builds every target, or only the
# targets given as arguments (run.sh passes src/app/ringlog, the broker's binary).
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
if [ ! -f build/build.ninja ]; then
  meson setup build >/dev/null
fi
# Two jobs: the machine this is made for has 2 cores and Beast translation units are large.
ninja -C build -j "${RINGLOG_BUILD_JOBS:-2}" "$@"
