"""The cluster listener's own bounds (the breaker's fd_exhaust.py of session 28: 19,800 idle TCP
connections to a node's plaintext cluster:// port took every descriptor, and the HTTP and Kafka
listeners stopped accepting, because the cluster listener was outside max.connections and closed
no connection that never sent a byte):
  - connection.authentication.timeout.ms: no complete first request by then closes a connection;
  - listener.name.cluster.max.connections: at the bound a newcomer takes a silent connection's place;
  - connections.max.idle.ms: a quiet connection closes; real inter-broker traffic is never cut.
"""
import re
import socket
import time

import requests

from conftest import free_port, wait_until
from test_cluster import FAILOVER_DEADLINE_S, Cluster, Node, created_once_led, kill_nodes, start_nodes
from test_connection_limits import peer_closed, refused
from test_replication import leader_of, produce


def api_versions_frame(correlation_id, client_id):
    """An ApiVersions v0 request (key 18, no body), framed, with `client_id`."""
    cid = client_id.encode()
    body = (18).to_bytes(2, "big") + (0).to_bytes(2, "big") + correlation_id.to_bytes(4, "big") + \
        len(cid).to_bytes(2, "big") + cid
    return len(body).to_bytes(4, "big") + body


def open_idle(port, count):
    """`count` connections to 127.0.0.1:`port` that send nothing, from 127.0.0.2, .3, ... (100 per address)."""
    socks = []
    for k in range(count):
        s = socket.socket()
        s.bind((f"127.0.0.{2 + k // 100}", 0))
        s.settimeout(5)
        s.connect(("127.0.0.1", port))
        socks.append(s)
    return socks


def test_silent_cluster_connections_are_bounded_and_closed_while_http_accepts(ringlog_bin, tmp_path):
    cluster_port = 0
    node = None
    socks = []
    try:
        cluster_port = free_port()
        node = Node(tmp_path / "n1" / "data", 1, cluster_port, f"1@127.0.0.1:{cluster_port}",
                    ["connection.authentication.timeout.ms=2000", "listener.name.cluster.max.connections=50",
                     "connections.max.idle.ms=3000"])
        node.data_dir.parent.mkdir(parents=True, exist_ok=True)
        start_nodes([node])
        # A peer-like connection: its first request (a node's client id) arrives at once, so the
        # first-request deadline does not apply to it; it is closed only once idle.
        peer = socket.create_connection(("127.0.0.1", cluster_port))
        peer.settimeout(5)
        peer.sendall(api_versions_frame(1, "ringlog-node-7"))
        size = int.from_bytes(peer.recv(4, socket.MSG_WAITALL), "big")
        assert size > 0 and len(peer.recv(size, socket.MSG_WAITALL)) == size
        opened_at = time.monotonic()
        socks = open_idle(cluster_port, 300)
        # At most 50 stay open (the newest ones took the older silent ones' places); HTTP accepts.
        assert requests.get(node.url + "/v1/health", timeout=5).status_code == 200
        wait_until(lambda: sum(not peer_closed(s) for s in socks) <= 49, 10, "at most 50 cluster connections")
        assert not peer_closed(socks[-1]), "the newest connection took a silent one's place"
        # The first-request deadline closes every silent one (none sent a byte).
        wait_until(lambda: all(peer_closed(s) for s in socks), 15, "every silent connection closed")
        assert time.monotonic() - opened_at >= 1.5, "closed before connection.authentication.timeout.ms"
        assert requests.get(node.url + "/v1/health", timeout=5).status_code == 200
        # The peer-like connection outlived the deadline (it sent its request), then is closed idle.
        wait_until(lambda: peer_closed(peer), 15, "the quiet peer connection closed by connections.max.idle.ms")
        log = node.log_path.read_text()
        assert log.count('msg="cluster listener at its connection bound"') == 1, log[-3000:]
        assert "listener.name.cluster.max.connections=50" in log
        assert "no complete first request within connection.authentication.timeout.ms=2000" in log
        assert "idle for connections.max.idle.ms=3000" in log
        assert refused(node, "CLUSTER", "max.connections") >= 250
        assert refused(node, "CLUSTER", "connection.authentication.timeout.ms") >= 1
        peer.close()
    finally:
        for s in socks:
            s.close()
        if node is not None:
            kill_nodes([node])


def test_the_default_cap_keeps_http_and_kafka_accepting(ringlog_bin, tmp_path):
    """fd_exhaust.py in small: 1,200 silent connects over 12 addresses (max.connections.per.ip is
    1000) with the default cap (1000 at most): the node keeps accepting HTTP."""
    cluster_port = free_port()
    node = Node(tmp_path / "n1" / "data", 1, cluster_port, f"1@127.0.0.1:{cluster_port}")
    node.data_dir.parent.mkdir(parents=True, exist_ok=True)
    socks = []
    try:
        start_nodes([node])
        socks = open_idle(cluster_port, 1200)
        assert requests.get(node.url + "/v1/health", timeout=5).status_code == 200
        wait_until(lambda: sum(not peer_closed(s) for s in socks) <= 1000, 10, "at most 1000 cluster connections")
    finally:
        for s in socks:
            s.close()
        kill_nodes([node])


def test_idle_deadline_does_not_cut_inter_broker_traffic(ringlog_bin, tmp_path):
    """connections.max.idle.ms=1500 on three nodes: Raft, heartbeats and replica fetches keep their
    connections busy (no fencing, no new controller), and a forwarded produce after a quiet spell
    reconnects cleanly."""
    c = Cluster(tmp_path, extra_sets=["connections.max.idle.ms=1500"]).start()
    try:
        controller = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        wait_until(lambda: created_once_led(c.node(controller), "quiet", partitions=1, replication_factor=3), 30,
                   "topic created")
        leader = wait_until(lambda: leader_of(c.node(1), "quiet", 0), 30, "a leader for quiet-0")
        other = next(n for n in c.nodes if n.node_id != leader)
        wait_until(lambda: produce(other, "quiet", 0, ["a"]).status_code == 200, 30, "a forwarded produce")
        for rounds in range(3):
            time.sleep(3)   # twice the idle time: any quiet connection is closed meanwhile
            r = produce(other, "quiet", 0, [f"b{rounds}"])
            assert r.status_code == 200, r.text
        assert c.controller() == controller
        for n in c.nodes:
            log = n.log_path.read_text()
            assert "fencing broker" not in log, log[-3000:]
            # Connections that do go quiet (forwarding) may close; Raft's and heartbeats' do not
            # time out their calls.
            assert not re.search(r"no response from .* within", log), log[-3000:]
    finally:
        c.stop()
