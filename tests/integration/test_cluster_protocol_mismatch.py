"""A node whose cluster listener uses another security protocol than its peers' (it dials
plaintext while the voters' cluster listeners are TLS, or the reverse) says so itself, once per
peer and cause: before, it logged only "waiting for the metadata quorum" while only the voters
logged the TLS failure.
"""
import time

from conftest import free_port, wait_until
from test_cluster import FAILOVER_DEADLINE_S, Node, kill_nodes, start_nodes
from tls_certs import Material

MSG = 'msg="cluster connection failed"'


def nodes(tmp_path, tls_ids):
    """Three voters; those in `tls_ids` have CLUSTER:SSL, the others PLAINTEXT."""
    certs = Material(tmp_path / "certs")
    ports = [free_port() for _ in range(3)]
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports))
    tls = ["listener.security.protocol.map=CLUSTER:SSL", f"ssl.keystore.location={certs.broker_pem}",
           f"ssl.truststore.location={certs.ca_file}"]
    out = []
    for i, p in enumerate(ports):
        n = Node(tmp_path / f"node{i + 1}" / "data", i + 1, p, voters, tls if i + 1 in tls_ids else [])
        n.data_dir.parent.mkdir(parents=True, exist_ok=True)
        out.append(n)
    return out


def mismatch_lines(node):
    return [line for line in node.log_path.read_text().splitlines() if MSG in line]


def check_the_odd_node_says_why(odd, hint, peers_ids):
    # It logs one line per peer (each of its two connections to a peer may log it once) naming
    # the peer and the key, and no more while it keeps failing.
    lines = wait_until(lambda: (lambda ls: ls if {i for i in peers_ids if any(f"node {i} at" in l for l in ls)} ==
                                set(peers_ids) else None)(mismatch_lines(odd)), 30, "a mismatch line per peer")
    for line in lines:
        assert "listener.security.protocol.map" in line and hint in line, line
    time.sleep(3)   # it keeps retrying meanwhile (backoff up to 250 ms)
    assert len(mismatch_lines(odd)) == len(lines), mismatch_lines(odd)
    assert len(lines) <= 2 * len(peers_ids), lines


def test_a_plaintext_node_among_tls_voters_names_the_protocol(ringlog_bin, tmp_path):
    n1, n2, n3 = nodes(tmp_path, tls_ids={1, 2})
    try:
        start_nodes([n1, n2])
        wait_until(lambda: n1.quorum().get("leader_id") in (1, 2), FAILOVER_DEADLINE_S, "a leader among 1 and 2")
        n3.spawn()
        check_the_odd_node_says_why(n3, "does its cluster listener expect TLS?", [1, 2])
        # A voter that dials node 3 (the leader does) says the reverse, about node 3 only.
        for line in mismatch_lines(n1) + mismatch_lines(n2):
            assert 'peer="node 3 at' in line and "does its cluster listener expect PLAINTEXT?" in line, line
    finally:
        kill_nodes([n1, n2, n3])


def test_a_tls_node_among_plaintext_voters_names_the_protocol(ringlog_bin, tmp_path):
    n1, n2, n3 = nodes(tmp_path, tls_ids={3})
    try:
        start_nodes([n1, n2])
        wait_until(lambda: n1.quorum().get("leader_id") in (1, 2), FAILOVER_DEADLINE_S, "a leader among 1 and 2")
        n3.spawn()
        check_the_odd_node_says_why(n3, "does its cluster listener expect PLAINTEXT?", [1, 2])
    finally:
        kill_nodes([n1, n2, n3])


def test_a_peer_refusing_at_its_connection_bound_is_named_as_a_cause(ringlog_bin, tmp_path):
    """A peer at its connection bound (here max.connections.per.ip.overrides=127.0.0.1:0, so it
    refuses every connection from this machine's address) closes each new cluster connection as it
    accepts it. On the dialling node that looks like a protocol mismatch, and its warning named
    only "does its cluster listener expect TLS?", which sent the operator to the wrong config:
    the bound must be named too, with where to see it."""
    ports = [free_port() for _ in range(2)]
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports))
    n1 = Node(tmp_path / "node1" / "data", 1, ports[0], voters)
    n2 = Node(tmp_path / "node2" / "data", 2, ports[1], voters, ["max.connections.per.ip.overrides=127.0.0.1:0"])
    for n in (n1, n2):
        n.data_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        n2.spawn()   # its HTTP listener refuses this machine too: no health check
        n1.spawn()
        lines = wait_until(lambda: [line for line in mismatch_lines(n1) if 'peer="node 2 at' in line], 30,
                           "node 1's warning about node 2")
        for line in lines:
            assert "connection bound" in line and "max.connections.per.ip" in line, line
            assert "ringlog_connections_refused_total" in line, line
    finally:
        kill_nodes([n1, n2])


def test_a_node_whose_certificate_the_voters_do_not_trust_says_so(ringlog_bin, tmp_path):
    """Node 3's cluster certificate comes from another CA: it trusts the voters, they refuse it. Under
    TLS 1.3 node 3's handshake completes before the voters check its certificate, so their alert
    arrives as its first read's error; it logged only "waiting for the metadata quorum" (session
    41's new user), while the voters logged the refusal."""
    n1, n2, n3 = nodes(tmp_path, tls_ids={1, 2, 3})
    certs = Material(tmp_path / "certs3")
    stranger_keystore, _ = certs.keystore("stranger-broker.pem", ca=certs.stranger_ca)
    n3.extra_sets = [*n3.extra_sets, f"ssl.keystore.location={stranger_keystore}"]   # the last --set wins
    try:
        start_nodes([n1, n2])
        wait_until(lambda: n1.quorum().get("leader_id") in (1, 2), FAILOVER_DEADLINE_S, "a leader among 1 and 2")
        n3.spawn()
        lines = wait_until(lambda: [line for line in mismatch_lines(n3) if "TLS handshake with node" in line] or None, 30,
                           "node 3's warning that the voters refused its certificate")
        for line in lines:
            assert "ssl.keystore.location" in line and "ssl.truststore.location" in line, line
    finally:
        kill_nodes([n1, n2, n3])
