"""Requests on the cluster listener that cannot be served. The breaker of session 34 sent a
BeginQuorumEpoch whose body does not decode, as client id ringlog-node-7: no answer, no close, no
log line (the handlers returned without answering, so the connection also kept a request slot
for good). Kafka's SocketServer closes a connection whose request it cannot parse
(InvalidRequestException); the cluster listener now does too, for every api it serves, with one
warning naming the peer, the api key and version and the decode error.
"""
import socket
import struct

from conftest import Broker, free_port, wait_until
from kafka_wire import FlexReader, compact_string, exchange_flexible, string, uvarint

PEER = "ringlog-node-7"

# (api key, a flexible version the listener serves): the request header is v2 for each.
SERVED = {
    "Produce": (0, 9),
    "Fetch": (1, 12),
    "ListOffsets": (2, 6),
    "WriteTxnMarkers": (27, 1),
    "AddPartitionsToTxn": (24, 4),
    "Vote": (52, 0),
    "BeginQuorumEpoch": (53, 0),
    "EndQuorumEpoch": (54, 0),
    "DescribeQuorum": (55, 0),
    "AlterPartition": (56, 0),
    "Envelope": (58, 0),
    "BrokerHeartbeat": (63, 0),
    "AllocateProducerIds": (67, 0),
}
# Too short for every one of them (an int32 or a string's bytes are missing).
UNDECODABLE = b"\x01\x02\x03"


def one_node(tmp_path):
    cluster_port = free_port()
    b = Broker(tmp_path / "data", extra_sets=["node.id=1", f"controller.quorum.voters=1@127.0.0.1:{cluster_port}"])
    b.extra_sets.append(f"listeners=http://127.0.0.1:{b.port},cluster://127.0.0.1:{cluster_port}")
    return b, cluster_port


def closed_unanswered(cluster_port, api_key, version, body, client_id=PEER):
    """Sends one request with header v2; True when the listener closes the connection without an
    answer, False when it answers, None when it does neither within 5 s."""
    payload = struct.pack(">hhi", api_key, version, 11) + string(client_id) + b"\x00" + body
    with socket.create_connection(("127.0.0.1", cluster_port), timeout=5) as s:
        s.sendall(struct.pack(">i", len(payload)) + payload)
        try:
            return s.recv(4) == b""
        except socket.timeout:
            return None
        except ConnectionResetError:
            return True


def test_an_undecodable_request_closes_the_connection_with_a_warning(ringlog_bin, tmp_path):
    b, cluster_port = one_node(tmp_path)
    b.start()
    try:
        outcome = {name: closed_unanswered(cluster_port, key, version, UNDECODABLE)
                   for name, (key, version) in SERVED.items()}
        assert outcome == {name: True for name in SERVED}, outcome   # before: None (no answer, no close)

        def warned():
            log = b.log_path.read_text(errors="replace")
            lines = [l for l in log.splitlines() if "a request it cannot serve" in l]
            return all(any(f"api_key={key} " in l for l in lines) for key, _ in SERVED.values()) and lines
        lines = wait_until(warned, 10.0, "one warning per api naming it")
        begin = next(l for l in lines if "api_key=53 " in l)
        assert f'client_id="{PEER}"' in begin and "api_version=0" in begin and "peer=127.0.0.1:" in begin, begin
        assert "BeginQuorumEpochRequest v0" in begin and "truncated" in begin, begin   # the decode error
        fetch = next(l for l in lines if "api_key=1 " in l)
        assert "FetchRequest v12: does not decode" in fetch, fetch
        # Rate-limited: the same api again within the interval adds no line.
        assert closed_unanswered(cluster_port, 53, 0, UNDECODABLE) is True
        log = b.log_path.read_text(errors="replace")
        assert sum("a request it cannot serve" in l and "api_key=53 " in l for l in log.splitlines()) == 1
        # The node still serves: a good request on a new connection is answered.
        assert closed_unanswered(cluster_port, 18, 0, b"") is False
    finally:
        b.stop()


def vote_v0(cluster_id, candidate_id, candidate_epoch):
    """A Vote v0 body (KIP-595) for __cluster_metadata-0: a log as long as anyone's."""
    partition = struct.pack(">iiiiq", 0, candidate_epoch, candidate_id, 0, 0) + uvarint(0)
    topic = compact_string("__cluster_metadata") + uvarint(2) + partition + uvarint(0)
    return compact_string(cluster_id) + uvarint(2) + topic + uvarint(0)


def test_a_vote_naming_the_node_itself_as_candidate_is_answered_not_granted(ringlog_bin, tmp_path):
    """KafkaRaftClient answers every Vote; a candidate never grants itself one by request. Session
    34's breaker sent node 1 a Vote with candidate id 1: no answer."""
    b, cluster_port = one_node(tmp_path)
    b.start()
    try:
        props = (tmp_path / "data" / "meta.properties").read_text()
        cluster_id = next(l.split("=", 1)[1].strip() for l in props.splitlines() if l.startswith("cluster.id="))
        with socket.create_connection(("127.0.0.1", cluster_port), timeout=10) as s:
            _, answer = exchange_flexible(s, 52, 0, 5, vote_v0(cluster_id, 1, 1 << 20), client_id="ringlog-node-1")
        r = FlexReader(answer[1:])   # after the response header's tagged fields
        top_error = r.take(">h")
        assert r.uvarint() == 2 and r.compact_string() == "__cluster_metadata" and r.uvarint() == 2
        index, error, leader, epoch, granted = r.take(">i"), r.take(">h"), r.take(">i"), r.take(">i"), r.take(">b")
        assert (top_error, index, error, granted) == (0, 0, 0, 0), (top_error, index, error, granted)
        assert epoch < 1 << 20, "the request moved the node's epoch"
    finally:
        b.stop()


def begin_quorum_epoch_v0(cluster_id, leader_id, leader_epoch):
    """A BeginQuorumEpoch v0 body (KIP-595, not flexible) for __cluster_metadata-0."""
    partition = struct.pack(">iii", 0, leader_id, leader_epoch)
    topic = string("__cluster_metadata") + struct.pack(">i", 1) + partition
    return string(cluster_id) + struct.pack(">i", 1) + topic


def test_a_begin_quorum_epoch_naming_the_node_itself_as_leader_closes_the_connection_with_a_warning(ringlog_bin, tmp_path):
    """Only a misconfigured peer (two processes with one node.id) names the receiver as the sender
    of a BeginQuorumEpoch, EndQuorumEpoch or Fetch; raft ignores it. Session 35 found it dropped
    without an answer, a close or a log line; now the connection closes with a warning that says
    what to look for."""
    b, cluster_port = one_node(tmp_path)
    b.start()
    try:
        props = (tmp_path / "data" / "meta.properties").read_text()
        cluster_id = next(l.split("=", 1)[1].strip() for l in props.splitlines() if l.startswith("cluster.id="))
        body = begin_quorum_epoch_v0(cluster_id, 1, 1 << 20)
        payload = struct.pack(">hhi", 53, 0, 12) + string("ringlog-node-1") + body   # header v1
        with socket.create_connection(("127.0.0.1", cluster_port), timeout=5) as s:
            s.sendall(struct.pack(">i", len(payload)) + payload)
            try:
                closed = s.recv(4) == b""
            except socket.timeout:
                closed = None
            except ConnectionResetError:
                closed = True
        assert closed is True, closed   # before: None (no answer, no close)

        def warned():
            log = b.log_path.read_text(errors="replace")
            return [l for l in log.splitlines() if "a request it cannot serve" in l and "api_key=53 " in l]
        line = wait_until(warned, 10.0, "a warning naming the request")[0]
        assert "same node.id" in line and "node.id 1" in line, line
        # A well-formed request from another node id is still served on a new connection.
        assert closed_unanswered(cluster_port, 18, 0, b"") is False
    finally:
        b.stop()
