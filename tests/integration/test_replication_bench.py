"""A smoke run of bench/run-replication-bench.py with tiny numbers, so the script does not rot.

One kill of the partition leader (short session timeout so it takes ~1-2 s) and one-second
throughput runs without NATS; the figures themselves are docs/benchmarks.md's, not asserted here.
What is asserted: the script finishes, every node reads back every acknowledged record (lost 0),
and each ringlog throughput row acknowledged something without errors.
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT_DEADLINE_S = 120


def test_replication_bench_smoke(ringlog_bin):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "run-replication-bench.py"), "--bin", str(ringlog_bin),
                           "--kills", "1", "--seconds", "1", "--warmup", "0.5", "--clients", "2", "--batch", "10",
                           "--skip-nats", "--set", "broker.session.timeout.ms=1000",
                           "--set", "broker.heartbeat.interval.ms=200"],
                          capture_output=True, text=True, timeout=SCRIPT_DEADLINE_S)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-3000:]
    read_back = re.findall(r"node (\d): (\d+) records, lost acknowledged (\d+)", out)
    assert sorted(n for n, _, _ in read_back) == ["1", "2", "3"], out
    assert all(int(records) > 0 and lost == "0" for _, records, lost in read_back), out
    rows = re.findall(r"^\| \((a|a'|b)\) ringlog[^|]*\| ([\d,]+) \| [\d.]+ \| (\d+) \|", out, re.M)
    assert sorted(r[0] for r in rows) == ["a", "a'", "b"], out
    assert all(int(acked.replace(",", "")) > 0 and errors == "0" for _, acked, errors in rows), out
