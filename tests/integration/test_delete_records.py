"""DeleteRecords (Kafka API 21, KIP-107) on the Kafka listener, by hand (the message schemas of
src/protocol/schemas) and with KafkaJS's admin.deleteTopicRecords: -1 is the high watermark, an
offset above it is OFFSET_OUT_OF_RANGE, one below the log start changes nothing, DELETE on the
topic is asked, the new log start survives a kill -9, and in a three-broker cluster every replica
drops the records (each one's log-start-offset-checkpoint, and ListOffsets earliest on a new leader
after the old one is killed), and a stopped follower makes the call wait out its timeout_ms. See
docs/kafka.md "DeleteRecords".
"""
import signal
import time

import requests
from kafka.admin import ACLOperation, ResourceType

import kafka_schema
import kafka_wire
from conftest import wait_until
from test_acls_kafka import ADMIN, BOB, CAROL, AclBroker, allow, create_acls
from test_acls_kafka import create_topic as create_topic_as_admin
from test_cluster import FAILOVER_DEADLINE_S, Cluster
from test_idempotence import ibroker  # noqa: F401  (a restartable broker with a Kafka listener)
from test_kafka_groups import run_kafkajs
from test_replication import isr_of, leader_of
from test_sasl import scram_login

NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT = 0, 1, 3, 6, 7
INVALID_TOPIC_EXCEPTION, TOPIC_AUTHORIZATION_FAILED, POLICY_VIOLATION = 17, 29, 44
# Small segments, so a deletion has whole segments below the new log start to remove.
SEGMENT_BYTES = "1024"


def exchange(bootstrap, name, version, values, login=None):
    with kafka_wire.connect(bootstrap, timeout=30) as s:
        if login:
            scram_login(s, "SCRAM-SHA-512", login)
        return kafka_schema.exchange(s, name, version, 7, values)


def delete_records(bootstrap, topic, offsets, version=2, timeout_ms=10_000, login=None):
    """DeleteRecords of `offsets` ({partition: offset}); {partition: (error code, low watermark)}."""
    answer = exchange(bootstrap, "DeleteRecords", version, {
        "Topics": [{"Name": topic, "Partitions": [{"PartitionIndex": p, "Offset": o} for p, o in offsets.items()]}],
        "TimeoutMs": timeout_ms}, login)
    assert [t["Name"] for t in answer["Topics"]] == [topic], answer
    return {p["PartitionIndex"]: (p["ErrorCode"], p["LowWatermark"]) for p in answer["Topics"][0]["Partitions"]}


def earliest(bootstrap, topic, partition=0):
    """ListOffsets earliest (-2) on `bootstrap`: (error code, offset)."""
    answer = exchange(bootstrap, "ListOffsets", 1, {
        "ReplicaId": -1, "Topics": [{"Name": topic, "Partitions": [{"PartitionIndex": partition, "Timestamp": -2}]}]})
    p = answer["Topics"][0]["Partitions"][0]
    return p["ErrorCode"], p["Offset"]


def served_earliest(bootstrap, topic, partition=0):
    """ListOffsets earliest once the partition's leader serves it (after a restart or a failover)."""
    answer = wait_until(lambda: (lambda e: e if e[0] == NONE else None)(earliest(bootstrap, topic, partition)),
                        FAILOVER_DEADLINE_S, f"ListOffsets earliest of {topic}-{partition}")
    return answer[1]


def fetch_error(bootstrap, topic, offset, partition=0):
    with kafka_wire.connect(bootstrap) as s:
        _, body = kafka_wire.exchange(s, kafka_wire.API_FETCH, 4, 3, kafka_wire.fetch_v4(topic, partition, offset))
    return kafka_wire.parse_fetch_v4(body)[0][2]


def produce(bootstrap, topic, count, partition=0):
    """`count` records, one batch each (so a log start can fall between any two)."""
    with kafka_wire.connect(bootstrap) as s:
        for i in range(count):
            records = kafka_wire.batch([(None, b"v%03d" % i + b"x" * 100, None, 1700000000000 + i)])
            _, body = kafka_wire.exchange(s, kafka_wire.API_PRODUCE, 3, 100 + i,
                                          kafka_wire.produce_v3(topic, partition, records))
            assert kafka_wire.parse_produce_v3(body)[0][2] == NONE


def partition_dir(data_dir, topic, partition=0):
    found = list(data_dir.rglob(f"{topic}-{partition}"))
    assert len(found) == 1, found
    return found[0]


def checkpointed_log_start(data_dir, topic, partition=0):
    """The offset of log-start-offset-checkpoint ("0\\n1\\n<topic> <partition> <offset>\\n"), or None."""
    path = partition_dir(data_dir, topic, partition) / "log-start-offset-checkpoint"
    if not path.exists():
        return None
    lines = path.read_text().split("\n")
    return int(lines[2].split(" ")[2]) if len(lines) > 2 and lines[2] else None


def segment_bases(data_dir, topic, partition=0):
    return sorted(int(p.stem) for p in partition_dir(data_dir, topic, partition).glob("*.log"))


def test_delete_records_moves_the_log_start_and_a_kill_keeps_it(ibroker, topic_name):
    b = ibroker
    b.create_topic(topic_name, partitions=2, configs={"segment.bytes": SEGMENT_BYTES})
    produce(b.bootstrap, topic_name, 30)
    produce(b.bootstrap, topic_name, 5, partition=1)
    assert earliest(b.bootstrap, topic_name) == (NONE, 0)

    # v0: up to offset 12; records 0..11 go, whole segments below 12 are deleted.
    assert delete_records(b.bootstrap, topic_name, {0: 12}, version=0) == {0: (NONE, 12)}
    assert earliest(b.bootstrap, topic_name) == (NONE, 12)
    assert fetch_error(b.bootstrap, topic_name, 11) == OFFSET_OUT_OF_RANGE
    assert fetch_error(b.bootstrap, topic_name, 12) == NONE
    assert 0 < segment_bases(b.data_dir, topic_name)[0] <= 12, segment_bases(b.data_dir, topic_name)
    assert checkpointed_log_start(b.data_dir, topic_name) == 12

    # Below the log start: nothing changes, the answer is the current low watermark.
    assert delete_records(b.bootstrap, topic_name, {0: 3}, version=1) == {0: (NONE, 12)}
    assert earliest(b.bootstrap, topic_name) == (NONE, 12)
    # Above the high watermark (30), or a negative offset other than -1: OFFSET_OUT_OF_RANGE,
    # nothing changes. Partitions of one request are answered each on its own.
    assert delete_records(b.bootstrap, topic_name, {0: 31, 1: 2}) == {0: (OFFSET_OUT_OF_RANGE, -1), 1: (NONE, 2)}
    assert delete_records(b.bootstrap, topic_name, {0: -2}) == {0: (OFFSET_OUT_OF_RANGE, -1)}
    assert earliest(b.bootstrap, topic_name) == (NONE, 12)
    assert earliest(b.bootstrap, topic_name, partition=1) == (NONE, 2)
    # Exactly the high watermark is allowed, as is -1, which means it.
    assert delete_records(b.bootstrap, topic_name, {0: 20}) == {0: (NONE, 20)}
    assert delete_records(b.bootstrap, topic_name, {0: -1}) == {0: (NONE, 30)}
    assert earliest(b.bootstrap, topic_name) == (NONE, 30)
    assert fetch_error(b.bootstrap, topic_name, 29) == OFFSET_OUT_OF_RANGE

    # kill -9: the new log start offset was checkpointed before the answer.
    b.kill()
    b.start()
    assert served_earliest(b.bootstrap, topic_name) == 30
    assert earliest(b.bootstrap, topic_name, partition=1) == (NONE, 2)
    assert fetch_error(b.bootstrap, topic_name, 0) == OFFSET_OUT_OF_RANGE
    produce(b.bootstrap, topic_name, 1)
    assert fetch_error(b.bootstrap, topic_name, 30) == NONE


def test_delete_records_refusals(ibroker, topic_name):
    b = ibroker
    b.create_topic(topic_name, configs={"segment.bytes": SEGMENT_BYTES})
    produce(b.bootstrap, topic_name, 3)
    assert delete_records(b.bootstrap, "no-such-topic", {0: 1}) == {0: (UNKNOWN_TOPIC_OR_PARTITION, -1)}
    assert delete_records(b.bootstrap, topic_name, {5: 1}) == {5: (UNKNOWN_TOPIC_OR_PARTITION, -1)}
    # Kafka refuses its internal topics (INVALID_TOPIC_EXCEPTION) and topics whose cleanup.policy
    # lacks delete (POLICY_VIOLATION).
    assert delete_records(b.bootstrap, "__consumer_offsets", {0: -1}) == {0: (INVALID_TOPIC_EXCEPTION, -1)}
    compacted = topic_name + "-compacted"
    b.create_topic(compacted, configs={"cleanup.policy": "compact"})
    assert delete_records(b.bootstrap, compacted, {0: -1}) == {0: (POLICY_VIOLATION, -1)}
    assert earliest(b.bootstrap, topic_name) == (NONE, 0)
    # ApiVersions lists it, 0-2.
    versions = exchange(b.bootstrap, "ApiVersions", 0, {})
    assert {(a["MinVersion"], a["MaxVersion"]) for a in versions["ApiKeys"] if a["ApiKey"] == 21} == {(0, 2)}


def test_delete_records_needs_delete_on_the_topic(ringlog_bin, tmp_path, topic_name):
    b = AclBroker(tmp_path / "data").start()
    try:
        create_topic_as_admin(b, topic_name)
        with kafka_wire.connect(b.bootstrap) as s:
            scram_login(s, "SCRAM-SHA-512", ADMIN)
            records = kafka_wire.batch([(None, b"v%d" % i, None, 1700000000000) for i in range(5)])
            _, body = kafka_wire.exchange(s, kafka_wire.API_PRODUCE, 3, 1, kafka_wire.produce_v3(topic_name, 0, records))
            assert kafka_wire.parse_produce_v3(body)[0][2] == NONE
        # bob has no ACL: refused, whether or not the topic exists, and nothing changes.
        assert delete_records(b.bootstrap, topic_name, {0: -1}, login=BOB) == {0: (TOPIC_AUTHORIZATION_FAILED, -1)}
        assert delete_records(b.bootstrap, "nope", {0: -1}, login=BOB) == {0: (TOPIC_AUTHORIZATION_FAILED, -1)}
        # carol may READ and WRITE but not DELETE: still refused.
        create_acls(b, *[allow("User:carol", ResourceType.TOPIC, topic_name, op)
                         for op in (ACLOperation.READ, ACLOperation.WRITE, ACLOperation.DESCRIBE)])
        assert delete_records(b.bootstrap, topic_name, {0: 2}, login=CAROL) == {0: (TOPIC_AUTHORIZATION_FAILED, -1)}
        assert earliest_as(b, topic_name, ADMIN) == 0
        # With DELETE on the topic she may.
        create_acls(b, allow("User:carol", ResourceType.TOPIC, topic_name, ACLOperation.DELETE))
        assert delete_records(b.bootstrap, topic_name, {0: 2}, login=CAROL) == {0: (NONE, 2)}
        assert earliest_as(b, topic_name, ADMIN) == 2
        log = b.log_path.read_text()
        assert 'operation="DeleteRecords"' in log, "the admin write's audit line"
    finally:
        b.stop()


def earliest_as(b, topic, user):
    answer = exchange(b.bootstrap, "ListOffsets", 1, {
        "ReplicaId": -1, "Topics": [{"Name": topic, "Partitions": [{"PartitionIndex": 0, "Timestamp": -2}]}]}, user)
    p = answer["Topics"][0]["Partitions"][0]
    assert p["ErrorCode"] == NONE, answer
    return p["Offset"]


def test_kafkajs_delete_topic_records(ibroker, topic_name):
    """KafkaJS's admin.deleteTopicRecords (tests/kafkajs/delete_records.test.mjs)."""
    run_kafkajs("delete_records.test.mjs", ibroker.bootstrap, "kafkajs-dr-" + topic_name)


def test_every_replica_drops_the_records_and_a_new_leader_starts_there(ringlog_bin, tmp_path):
    c = Cluster(tmp_path, kafka=True).start()
    try:
        wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        n1, topic = c.node(1), "dr3"
        r = requests.post(n1.v3("/topics"), json={"topic_name": topic, "partitions_count": 1, "replication_factor": 3,
                                                  "configs": [{"name": "segment.bytes", "value": SEGMENT_BYTES}]},
                          timeout=40)
        assert r.status_code == 201, r.text
        wait_until(lambda: isr_of(n1, topic, 0) == [1, 2, 3] or None, 20.0, "an ISR of three")
        leader = c.node(leader_of(n1, topic, 0))
        produce(leader.bootstrap, topic, 40)
        others = [n for n in c.nodes if n is not leader]

        # A broker that does not lead the partition refuses it: clients send it to the leader.
        assert delete_records(others[0].bootstrap, topic, {0: 25}) == {0: (NOT_LEADER_OR_FOLLOWER, -1)}
        # The answer comes once every live replica raised its log start (the low watermark).
        assert delete_records(leader.bootstrap, topic, {0: 25}) == {0: (NONE, 25)}
        for n in c.nodes:
            assert checkpointed_log_start(n.data_dir, topic) == 25, n.node_id
            assert min(segment_bases(n.data_dir, topic)) > 0, (n.node_id, segment_bases(n.data_dir, topic))

        # timeout_ms: a live follower that does not fetch (SIGSTOP, not fenced yet: the session
        # lasts 3 s) holds the low watermark back, so the answer is REQUEST_TIMED_OUT after about
        # timeout_ms, though the leader's log start moved; once it fetches again a retry is answered.
        slow = others[1]
        slow.proc.send_signal(signal.SIGSTOP)
        try:
            started = time.monotonic()
            assert delete_records(leader.bootstrap, topic, {0: 30}, timeout_ms=1000) == {0: (REQUEST_TIMED_OUT, -1)}
            assert 0.9 <= time.monotonic() - started < 2.5
            assert earliest(leader.bootstrap, topic) == (NONE, 30)
        finally:
            slow.proc.send_signal(signal.SIGCONT)
        wait_until(lambda: delete_records(leader.bootstrap, topic, {0: 30}, timeout_ms=5000) == {0: (NONE, 30)},
                   FAILOVER_DEADLINE_S, "the low watermark at 30 once the follower fetches again")
        assert checkpointed_log_start(slow.data_dir, topic) == 30

        # The leader dies: a follower leads from the same log start.
        leader.kill()
        new_leader = wait_until(lambda: (lambda l: l if l not in (None, leader.node_id) else None)(
            leader_of(others[0], topic, 0)), FAILOVER_DEADLINE_S, "a new leader")
        n = c.node(new_leader)
        assert served_earliest(n.bootstrap, topic) == 30
        assert fetch_error(n.bootstrap, topic, 29) == OFFSET_OUT_OF_RANGE
        # -1 on the new leader: its high watermark (40); the surviving follower drops them too,
        # the dead broker (fenced) does not hold the answer back once it is fenced.
        code, low = wait_until(lambda: (lambda a: a if a[0] == NONE else None)(
            delete_records(n.bootstrap, topic, {0: -1}, timeout_ms=5000)[0]), FAILOVER_DEADLINE_S, "DeleteRecords -1")
        assert (code, low) == (NONE, 40)
        for x in c.live():
            assert checkpointed_log_start(x.data_dir, topic) == 40, x.node_id

        # The old leader comes back and follows: its log start catches up with the leader's.
        leader.spawn()
        wait_until(leader.healthy, 60.0, "the old leader back")
        wait_until(lambda: checkpointed_log_start(leader.data_dir, topic) == 40 or None, FAILOVER_DEADLINE_S,
                   "the old leader's log start at 40")
    finally:
        c.stop()
