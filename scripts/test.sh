#!/bin/sh
# Installs what is missing (the broker's build packages and the test tools), builds every
# target, and runs every test: the doctest suites and the Python checks registered with meson,
# the pytest integration suite against the real binary (tests/integration/test_readme.py runs the
# README's commands), a short fault run of a 3-broker cluster (tests/cluster/run.py --smoke),
# then the console's tests in a real browser (web-console/tests, node + Debian's chromium).
# Ends with one line: "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
RINGLOG_TEST_DEPS=1 ./scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }
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
# A short Jepsen-style fault run: 3 brokers (each in its own network namespace when this machine
# allows), acks=all producers, readers, a seeded nemesis, and the checker's verdict. It prints
# its seed; replay with tests/cluster/run.py --seed S --seconds 40. Counted as one test.
cluster_ok=0
cluster_bad=0
rm -f build/test-results/cluster-smoke.status
(/usr/bin/python3 tests/cluster/run.py --smoke --bin "$PWD/build/src/app/ringlog" \
   --run-dir build/test-results/cluster-smoke; echo $? > build/test-results/cluster-smoke.status) 2>&1 \
  | tee build/test-results/cluster-smoke.log
if [ "$(cat build/test-results/cluster-smoke.status 2>/dev/null)" = 0 ]; then
  cluster_ok=1
else
  cluster_bad=1
fi
# The console in a real browser (web-console/tests): playwright-core from the committed lock
# file drives Debian's chromium against the real binary. Counted from node's TAP summary.
console_tap=build/test-results/console.tap
rm -f "$console_tap"
# Debian's node trusts only its built-in roots: let npm also trust the system's store, which is
# where a machine that reaches the registry through a TLS-inspecting proxy keeps that proxy's CA.
if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -r /etc/ssl/certs/ca-certificates.crt ]; then
  export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
fi
if (cd web-console && npm ci --no-audit --no-fund --loglevel=error); then
  (cd web-console && RINGLOG_BIN="$PWD/../build/src/app/ringlog" \
    RINGLOG_SCREENSHOT_DIR="$PWD/../build/test-results/console-screenshots" \
    node --test --test-reporter=spec --test-reporter-destination=stdout \
      --test-reporter=tap --test-reporter-destination="../$console_tap" tests/)
fi
console_ok=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$console_tap" 2>/dev/null | tail -1)
console_bad=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$console_tap" 2>/dev/null | tail -1)
console_cancelled=$(sed -n 's/^# cancelled \([0-9]*\)$/\1/p' "$console_tap" 2>/dev/null | tail -1)
[ -n "$console_bad" ] && console_bad=$((console_bad + ${console_cancelled:-0}))
if [ -z "$console_ok" ] || [ -z "$console_bad" ]; then
  echo "console tests did not run (npm ci or node failed): counted as 1 failure" >&2
  console_ok=0
  console_bad=1
fi

passed=$((meson_ok + py_ok + cluster_ok + console_ok))
failed=$((meson_bad + py_bad + cluster_bad + console_bad))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
