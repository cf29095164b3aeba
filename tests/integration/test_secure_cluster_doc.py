"""Runs docs/security.md's "A secure three-node cluster on one machine" as written: openssl makes
the CA and the certificate, three `ringlog serve` nodes start from their properties files with TLS
on the https, SASL_SSL and cluster listeners and SCRAM users, kcat produces and consumes, curl
reads over https. Rewritten: the `RINGLOG=` line (the binary under test) and the three port
prefixes (1844, 1944, 1954 with the node number appended) to prefixes whose ports are free. The
lines the block shows as `# output` must come out, in order. The block must give the cluster
listener its own CA, as the doc advises two paragraphs before it (session 34's new user found one
CA for clients and nodes, without an authorizer: any client certificate would have been a node),
keep its keys and data directories to their owner and /metrics behind credentials (session 39's)."""
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


def properties(block):
    """The key=value lines of the block's properties heredoc, as a dict."""
    heredoc = block.split("<<EOF\n", 1)[1].split("\nEOF", 1)[0]
    return dict(line.split("=", 1) for line in heredoc.splitlines() if "=" in line)


def test_the_cluster_listener_has_its_own_ca():
    """Without an authorizer every certificate the cluster listener's CA signed is admitted as a
    node: that CA must not be the one client certificates come from."""
    props = properties(doc_block())
    assert "authorizer.class.name" not in props or "super.users" in props, props
    cluster_ca = props.get("listener.name.cluster.ssl.truststore.location")
    assert cluster_ca and cluster_ca != props["ssl.truststore.location"], props
    assert props.get("listener.name.cluster.ssl.keystore.location") not in (None, props["ssl.keystore.location"]), props


def test_a_deployment_others_reach_keeps_metrics_behind_credentials():
    """security.md asks for http.metrics.authentication=true wherever others can reach the
    broker: the recipe for that deployment must set it (session 39's new user found it open)."""
    assert properties(doc_block()).get("http.metrics.authentication") == "true"


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
    # The keys and the data directories (SCRAM keys, the forwarding secret) are the owner's only.
    private = [*tmp_path.glob("*.key"), *tmp_path.glob("*.pem"), tmp_path / "first-users",
               *(tmp_path / "data").glob("node*")]
    assert len(private) >= 10, private
    assert [p.name for p in private if p.stat().st_mode & 0o077] == []
