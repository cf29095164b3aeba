"""Runs docs/security.md's "A secure three-node cluster on one machine" as written: openssl makes
the CA and the certificate, three `ringlog serve` nodes start from their properties files with TLS
on the https, SASL_SSL and cluster listeners and SCRAM users, kcat produces and consumes, curl
reads over https. Rewritten: the `RINGLOG=` line (the binary under test) and the three port
prefixes (1844, 1944, 1954 with the node number appended) to prefixes whose ports are free. The
lines the block shows as `# output` must come out, in order."""
import os
import pathlib
import random
import signal
import socket
import subprocess

from conftest import ROOT, binary_path

DOC = ROOT / "docs" / "security.md"
TITLE = "## A secure three-node cluster on one machine"
PREFIXES = ("1844", "1944", "1954")
DEADLINE_S = 120


def doc_block():
    text = DOC.read_text()
    section = text[text.index(TITLE):]
    return section.split("```sh\n", 1)[1].split("\n```", 1)[0]


def port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_prefixes():
    """Three 4-digit prefixes P whose ports P1, P2 and P3 are all free now."""
    chosen = []
    while len(chosen) < 3:
        prefix = str(random.randint(2000, 6000))
        if prefix not in chosen and all(port_free(int(prefix + n)) for n in "123"):
            chosen.append(prefix)
    return chosen


def shown_output(lines):
    """The `# ` lines right after a command or another output line (a comment follows a blank line)."""
    out = []
    previous = ""
    for line in lines:
        if line.startswith("# ") and previous.strip() and (not previous.startswith("#") or out and previous[2:] == out[-1]):
            out.append(line[2:])
        previous = line
    return out


def test_the_secure_three_node_example_runs_as_written(ringlog_bin, tmp_path):
    block = doc_block()
    lines = block.splitlines()
    assert lines[0].startswith("RINGLOG="), lines[0]
    script = "\n".join([f"RINGLOG={binary_path()}", *lines[1:]])
    for old, new in zip(PREFIXES, free_prefixes()):
        assert old in script, old
        script = script.replace(old, new)
    expected = shown_output(lines)
    assert len(expected) >= 5, expected   # the topic, two records, their values over https, the 401
    try:
        r = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                           timeout=DEADLINE_S)
    finally:
        pids = tmp_path / "pids"
        for pid in (pids.read_text().split() if pids.exists() else []):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
    logs = "".join((tmp_path / f"node{n}.log").read_text()[-1500:] for n in (1, 2, 3)
                   if (tmp_path / f"node{n}.log").exists())
    assert r.returncode == 0, r.stdout + r.stderr[-3000:] + logs
    out = [line.strip() for line in r.stdout.splitlines() if line.strip()]
    assert out == expected, (out, expected, r.stderr[-2000:])
