"""The cluster listener's TLS form (issue 29): three nodes with listener.security.protocol.map=
CLUSTER:SSL replicate over mutual TLS (votes, registrations, replica fetches), and a stranger,
a process without a certificate the cluster's CA signed, cannot reach a handler: no
certificate, a stranger CA's certificate, plaintext frames. Certificates come from tls_certs.py.
"""
import signal
import socket
import ssl

import pytest
import requests

import kafka_wire
from conftest import read_kafka_answer, read_to_close_notify, send_until_closed, strict_tls_connections, wait_until
from test_cluster import FAILOVER_DEADLINE_S, Cluster
from test_replication import isr_of, leader_of, produce, read_all
from tls_certs import Material


@pytest.fixture
def tls_cluster(ringlog_bin, tmp_path):
    certs = Material(tmp_path / "certs")
    c = Cluster(tmp_path, extra_sets=["listener.security.protocol.map=CLUSTER:SSL",
                                      f"ssl.keystore.location={certs.broker_pem}",
                                      f"ssl.truststore.location={certs.ca_file}"])
    c.certs = certs
    c.start()
    yield c
    c.stop()


def test_three_nodes_replicate_over_mutual_tls(tls_cluster):
    c = tls_cluster
    wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    n1 = c.node(1)
    r = requests.post(n1.v3("/topics"), json={"topic_name": "tls-replicated", "partitions_count": 1,
                                              "replication_factor": 3,
                                              "configs": [{"name": "min.insync.replicas", "value": "2"}]},
                      timeout=40)
    assert r.status_code == 201, r.text
    leader = wait_until(lambda: leader_of(n1, "tls-replicated", 0), 10.0, "a leader")
    wait_until(lambda: isr_of(n1, "tls-replicated", 0) == [1, 2, 3], 20.0, "ISR of three")
    for i in range(10):
        r = produce(c.node(leader), "tls-replicated", 0, [f"v{i}-{k}" for k in range(5)])
        assert r.status_code == 200, r.text
    # The leader's death: an in-sync follower (fed over TLS) leads with every acknowledged record.
    c.node(leader).kill()
    survivor = c.node(1 if leader != 1 else 2)
    new_leader = wait_until(lambda: (lambda l: l if l not in (None, leader) else None)(
        leader_of(survivor, "tls-replicated", 0)), FAILOVER_DEADLINE_S, "a new leader")
    got = wait_until(lambda: (lambda g: g if len(g) == 50 else None)(
        read_all(c.node(new_leader), "tls-replicated", 0, 50)), FAILOVER_DEADLINE_S, "50 records on the new leader")
    assert [x["value"] for x in got] == [f"v{i}-{k}" for i in range(10) for k in range(5)]


def test_a_stranger_cannot_use_the_cluster_listener(tls_cluster):
    c = tls_cluster
    wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    node = c.node(1)
    certs = c.certs
    attempts = {
        "no certificate": None,
        "a stranger CA's certificate": (certs.stranger_crt, certs.stranger_key),
    }
    for what, chain in attempts.items():
        ctx = ssl.create_default_context(cafile=certs.ca_file)
        ctx.check_hostname = False
        if chain:
            ctx.load_cert_chain(*chain)
        with socket.create_connection(("127.0.0.1", node.cluster_port), timeout=5) as raw:
            try:
                with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                    # TLS 1.3: the server's verdict on the client certificate arrives after the
                    # client's handshake finished; the first read sees it.
                    s.sendall(b"\x00\x00\x00\x04\x00\x00\x00\x00")
                    assert s.recv(100) == b"", what
            except (ssl.SSLError, ConnectionError):
                pass
    # Plaintext Kafka bytes (an ApiVersions request) on the TLS cluster listener.
    send_until_closed(("127.0.0.1", node.cluster_port), bytes.fromhex("0000000d00120000000000010003616263"))
    log = node.log_path.read_text(errors="replace")
    wait_until(lambda: node.log_path.read_text(errors="replace").count(
        "TLS handshake failed on the cluster listener") >= 3, 10, "three refusals logged")
    assert "rdkafka" not in log
    # The cluster still serves: a topic is created and replicated.
    r = requests.post(node.v3("/topics"), json={"topic_name": "after-strangers", "partitions_count": 1,
                                                "replication_factor": 3}, timeout=40)
    assert r.status_code == 201, r.text
    wait_until(lambda: isr_of(node, "after-strangers", 0) == [1, 2, 3], 20.0, "ISR of three")


def test_a_certificate_of_the_cluster_ca_without_cluster_action_is_refused(ringlog_bin, tmp_path):
    """With an authorizer, the CA's signature is not enough (issue 30): only super.users or
    principals with CLUSTER_ACTION on the cluster use the cluster listener. alice holds a
    certificate of the cluster's CA and a node's client id; the nodes (super.users) replicate."""
    certs = Material(tmp_path / "certs")
    c = Cluster(tmp_path, extra_sets=["listener.security.protocol.map=CLUSTER:SSL",
                                      f"ssl.keystore.location={certs.broker_pem}",
                                      f"ssl.truststore.location={certs.ca_file}",
                                      "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                      # the subject as Java's X500Principal.getName() prints it
                                      # and the test's own HTTP calls (no HTTP authentication:
                                      # User:ANONYMOUS, which the HTTP routes authorize too)
                                      "super.users=User:" + certs.broker_cert.subject.rfc4514_string() +
                                      ";User:ANONYMOUS"])
    c.start()
    try:
        wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        node = c.node(1)
        ctx = ssl.create_default_context(cafile=certs.ca_file)
        ctx.check_hostname = False
        ctx.load_cert_chain(certs.alice_crt, certs.alice_key)
        answered = None
        with socket.create_connection(("127.0.0.1", node.cluster_port), timeout=10) as raw:
            try:
                with ctx.wrap_socket(raw) as s:
                    # ApiVersions v0 under a node's client id: answered on today's main.
                    s.sendall(kafka_wire.frame(18, 0, 7, b"", client_id="ringlog-node-2"))
                    answered = s.recv(100)
            except (ssl.SSLError, ConnectionError):
                answered = b""
        assert answered == b"", answered
        wait_until(lambda: "CLUSTER_AUTHORIZATION_FAILED" in node.log_path.read_text(errors="replace"), 10,
                   "the refusal's log line")
        line = next(l for l in node.log_path.read_text(errors="replace").splitlines()
                    if "CLUSTER_AUTHORIZATION_FAILED" in l)
        assert "CN=alice" in line, line
        # The nodes themselves (super.users) still replicate.
        r = requests.post(node.v3("/topics"), json={"topic_name": "acl-cluster", "partitions_count": 1,
                                                    "replication_factor": 3}, timeout=40)
        assert r.status_code == 201, r.text
        wait_until(lambda: isr_of(node, "acl-cluster", 0) == [1, 2, 3], 20.0, "ISR of three")
    finally:
        c.stop()


def test_a_joining_node_refused_for_lack_of_cluster_action_says_so(ringlog_bin, tmp_path):
    """The new user's find: a node joining a secured cluster whose certificate's principal lacks
    CLUSTER_ACTION was refused by the voters (their log: "cluster connection refused ... may not
    CLUSTER_ACTION"), but its own log said only "waiting for the metadata quorum", for ever."""
    from test_add_broker import voters_of
    from test_cluster import Node
    from conftest import free_port
    certs = Material(tmp_path / "certs")
    secured = ["listener.security.protocol.map=CLUSTER:SSL", f"ssl.truststore.location={certs.ca_file}",
               "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
               "super.users=User:" + certs.broker_cert.subject.rfc4514_string() + ";User:ANONYMOUS"]
    c = Cluster(tmp_path, extra_sets=[*secured, f"ssl.keystore.location={certs.broker_pem}"])
    c.start()
    newcomer = None
    try:
        wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        keystore, _ = certs.keystore("node4.pem", cn="node4")
        newcomer = Node(tmp_path / "node4" / "data", 4, free_port(), voters_of(c),
                        [*secured, f"ssl.keystore.location={keystore}", "process.roles=broker"])
        newcomer.data_dir.parent.mkdir(parents=True, exist_ok=True)
        newcomer.spawn()

        def refusal_line():
            return next((l for l in newcomer.log_path.read_text(errors="replace").splitlines()
                         if "refused" in l and "CLUSTER_ACTION" in l and "level=warn" in l), None)

        line = wait_until(refusal_line, 30, "the newcomer's line saying the voters refuse it")
        assert "CN=node4" in line or "node4" in line, line
    finally:
        if newcomer is not None and newcomer.proc is not None:
            newcomer.stop()
        c.stop()


def test_a_controlled_shutdown_ends_tls_cluster_connections_with_close_notify(ringlog_bin, tmp_path):
    """As the Kafka listeners do since session 39: on SIGTERM a connection of the TLS cluster
    listener was cut without TLS's close_notify, so its peer saw "unexpected eof while reading"
    instead of an orderly end."""
    certs = Material(tmp_path / "certs")
    c = Cluster(tmp_path, size=1, extra_sets=["listener.security.protocol.map=CLUSTER:SSL",
                                              f"ssl.keystore.location={certs.broker_pem}",
                                              f"ssl.truststore.location={certs.ca_file}"])
    c.start()
    node = c.node(1)
    ctx = ssl.create_default_context(cafile=certs.ca_file)
    ctx.check_hostname = False
    ctx.load_cert_chain(certs.alice_crt, certs.alice_key)   # signed by the cluster's CA; no authorizer
    peers = []
    try:
        peers = strict_tls_connections(ctx, node.cluster_port, 3, server_hostname="127.0.0.1")
        for correlation_id, tls in enumerate(peers):
            # ApiVersions v0 under a node's client id, answered: the connection is served.
            tls.sendall(kafka_wire.frame(18, 0, correlation_id, b"", client_id="ringlog-node-2"))
            read_kafka_answer(tls)
        node.proc.send_signal(signal.SIGTERM)
        read_to_close_notify(peers)
        assert node.proc.wait(30) == 0
    finally:
        for tls in peers:
            tls.close()
        c.stop()
