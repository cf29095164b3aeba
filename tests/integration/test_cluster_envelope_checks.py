"""The active controller checks a metadata entry a peer forwards in an Envelope (api 58) on the
cluster listener before it commits it (src/broker/membership.cc check_proposed_entry). The breaker
of session 34 sent, as client id ringlog-node-7 on a PLAINTEXT cluster listener: bytes that do not
decode (committed, then skipped by every node), a topic named "../escape" (every node made its
partition directory outside log.dirs), and the removal of __consumer_offsets (committed offsets
lost). Kafka's controller checks every request a broker sends it; each is refused here now, with
an error code, and nothing changes.
"""
import base64
import socket
import struct
import uuid

import requests

from conftest import Broker, free_port, wait_until
from kafka_wire import compact_string, exchange_flexible, uvarint

API_ENVELOPE = 58


def record(record_type, version, body):
    """One metadata record as the metadata log frames it: frame version 1, type, version, body."""
    return uvarint(1) + uvarint(record_type) + uvarint(version) + body


def int32_array(values):
    return uvarint(len(values) + 1) + b"".join(struct.pack(">i", v) for v in values)


def topic_entry(name, topic_id):
    """A TopicRecord (type 2) and its PartitionRecord (type 3) of one replica, node 1."""
    topic = record(2, 0, compact_string(name) + topic_id + uvarint(0))
    partition = record(3, 0, struct.pack(">i", 0) + topic_id + int32_array([1]) + int32_array([1]) + int32_array([]) +
                       int32_array([]) + struct.pack(">iii", 1, 0, 0) + uvarint(0))
    return entry([topic, partition])


def entry(records):
    return uvarint(len(records)) + b"".join(uvarint(len(r)) + r for r in records)


def send_envelope(cluster_port, payload):
    """The Envelope's error code (EnvelopeResponse v0: ResponseData, ErrorCode)."""
    body = uvarint(len(payload) + 1) + payload + uvarint(0) + compact_string("127.0.0.1") + uvarint(0)
    with socket.create_connection(("127.0.0.1", cluster_port), timeout=10) as s:
        s.settimeout(10)
        _, answer = exchange_flexible(s, API_ENVELOPE, 0, 1, body, client_id="ringlog-node-7")
    pos = 1                                   # the response header's tagged fields
    size, shift = 0, 0
    while True:                               # ResponseData: compact nullable bytes
        byte = answer[pos]
        pos += 1
        size |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            break
    pos += max(size - 1, 0)
    return struct.unpack_from(">h", answer, pos)[0]


def test_a_peers_envelope_is_checked_before_it_is_committed(ringlog_bin, tmp_path):
    cluster_port = free_port()
    data = tmp_path / "data"
    b = Broker(data, extra_sets=["node.id=1", f"controller.quorum.voters=1@127.0.0.1:{cluster_port}"])
    port = b.port
    b.extra_sets.append(f"listeners=http://127.0.0.1:{port},cluster://127.0.0.1:{cluster_port}")
    b.start()
    try:
        topics = lambda: {t["topic_name"]: t for t in requests.get(b.v3("/topics"), timeout=10).json()["data"]}
        offsets = wait_until(lambda: topics().get("__consumer_offsets"), 30.0, "__consumer_offsets")
        offsets_id = base64.urlsafe_b64decode(offsets["topic_id"] + "==")

        assert send_envelope(cluster_port, b"\xde\xad\xbe\xef" * 4) != 0, "an entry that does not decode was committed"
        assert send_envelope(cluster_port, topic_entry("../escape", uuid.uuid4().bytes)) != 0
        assert send_envelope(cluster_port, topic_entry("", uuid.uuid4().bytes)) != 0
        assert send_envelope(cluster_port, entry([record(9, 0, offsets_id + uvarint(0))])) != 0   # RemoveTopicRecord
        # A legal one still passes: the check refuses what is wrong, not every envelope.
        assert send_envelope(cluster_port, topic_entry("envelope-ok", uuid.uuid4().bytes)) == 0
        wait_until(lambda: "envelope-ok" in topics(), 30.0, "the legal topic")
        listed = topics()
        assert "../escape" not in listed and "" not in listed, sorted(listed)
        assert listed["__consumer_offsets"]["topic_id"] == offsets["topic_id"], "__consumer_offsets was removed"
        assert not (tmp_path / "escape-0").exists(), "a partition directory outside log.dirs"
    finally:
        b.stop()


def many_partitions_entry(name, topic_id, partitions):
    """A TopicRecord and `partitions` PartitionRecords of one replica each, node 1."""
    topic = record(2, 0, compact_string(name) + topic_id + uvarint(0))
    parts = [record(3, 0, struct.pack(">i", p) + topic_id + int32_array([1]) + int32_array([1]) + int32_array([]) +
                    int32_array([]) + struct.pack(">iii", 1, 0, 0) + uvarint(0)) for p in range(partitions)]
    return entry([topic] + parts)


def test_a_peers_envelope_keeps_to_broker_partitions_max(ringlog_bin, tmp_path):
    """A create forwarded to the active controller counts against broker.partitions.max there
    (session 35: the limit was checked only by the node a client asked, per topic): one that
    would pass it is refused with INVALID_PARTITIONS (37), one that fits is committed."""
    cluster_port = free_port()
    b = Broker(tmp_path / "data", extra_sets=["node.id=1", f"controller.quorum.voters=1@127.0.0.1:{cluster_port}",
                                              "broker.partitions.max=100"])
    b.extra_sets.append(f"listeners=http://127.0.0.1:{b.port},cluster://127.0.0.1:{cluster_port}")
    b.start()
    try:
        topics = lambda: {t["topic_name"]: t for t in requests.get(b.v3("/topics"), timeout=10).json()["data"]}
        wait_until(lambda: topics().get("__consumer_offsets"), 30.0, "__consumer_offsets")
        held = sum(t["partitions_count"] for t in topics().values())
        assert send_envelope(cluster_port, many_partitions_entry("over", uuid.uuid4().bytes, 101 - held)) == 37
        assert send_envelope(cluster_port, many_partitions_entry("fits", uuid.uuid4().bytes, 100 - held)) == 0
        wait_until(lambda: "fits" in topics(), 30.0, "the topic that fits")
        assert "over" not in topics()
    finally:
        b.stop()
