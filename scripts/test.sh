#!/bin/sh
# Installs what is missing, builds, and runs every test: the doctest suites and the Python
# checks registered with meson, then the pytest integration suite against the real binary.
# Ends with one line: "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
./scripts/build.sh || { echo "0 passed, 1 failed"; exit 1; }

meson test -C build --no-rebuild --print-errorlogs
meson_json=build/meson-logs/testlog.json
meson_ok=$(grep -c '"result": "OK"' "$meson_json" || true)
meson_bad=$(grep -c -E '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$meson_json" || true)

mkdir -p build/test-results
RINGLOG_BIN="$PWD/build/src/app/ringlog" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  --junitxml=build/test-results/integration.xml tests/integration
py_ok=0
py_bad=0
if [ -f build/test-results/integration.xml ]; then
  counts=$(/usr/bin/python3 - <<'PY'
import xml.etree.ElementTree as ET
root = ET.parse("build/test-results/integration.xml").getroot()
suites = [root] if root.tag == "testsuite" else list(root)
tests = sum(int(s.get("tests", 0)) for s in suites)
bad = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
skipped = sum(int(s.get("skipped", 0)) for s in suites)
print(tests - bad - skipped, bad)
PY
)
  py_ok=${counts% *}
  py_bad=${counts#* }
else
  py_bad=1
fi
passed=$((meson_ok + py_ok))
failed=$((meson_bad + py_bad))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
