"""Kafka clients' consumer groups (issue 15, "Groups"): the classic group protocol (JoinGroup,
SyncGroup, Heartbeat, LeaveGroup, OffsetCommit with generations, OffsetDelete) against real
kafka-python and confluent-kafka (librdkafka) consumers, on the same coordinators and
__consumer_offsets as the REST consumers: groups of three that rebalance when one leaves, commit,
and carry on through a broker restart with nothing lost or skipped; the HTTP group and lag
routes see them; classic and ringlog-managed members never share a group.
"""
import struct
import threading
import time

import pytest
import requests
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer

import kafka_wire as kw
from conftest import Broker, free_port, wait_until

V2 = "application/vnd.kafka.v2+json"
# Short enough to keep the tests quick, long enough that members starting together join the
# first generation together (Kafka's default is 3000 ms).
INITIAL_DELAY = "group.initial.rebalance.delay.ms=500"


@pytest.fixture(scope="module")
def gbroker(ringlog_bin, tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("kgroups") / "ringlog-data", kafka_port=free_port(),
               extra_sets=[INITIAL_DELAY]).start()
    yield b
    assert b.stop() == 0


def create(bootstrap, name, partitions=1):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)


def produce(bootstrap, topic, partitions, values):
    """Produces each value to partition value % partitions; returns {(partition, value)}."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    sent = set()
    for v in values:
        part = v % partitions
        p.produce(topic, value=b"%d" % v, partition=part)
        sent.add((part, b"%d" % v))
    assert p.flush(15) == 0
    return sent


class Member(threading.Thread):
    """One consumer of a group in its own thread: polls, records what it got, commits after each
    batch (synchronously), and publishes its current assignment."""

    def __init__(self, library, bootstrap, group, topic, name):
        super().__init__(daemon=True)
        self.library, self.name = library, name
        self.records = []          # (partition, offset, value)
        self.assignment = frozenset()
        self.commit_failures = 0
        self.errors = []
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        if library == "kafka-python":
            self.consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, client_id=name,
                                          auto_offset_reset="earliest", enable_auto_commit=False,
                                          session_timeout_ms=10_000, heartbeat_interval_ms=500,
                                          max_poll_interval_ms=30_000)
        else:
            self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                                      "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                      "session.timeout.ms": 10_000, "heartbeat.interval.ms": 500,
                                      "max.poll.interval.ms": 30_000,
                                      "partition.assignment.strategy": "roundrobin"})
            self.consumer.subscribe([topic])

    def batch(self):
        if self.library == "kafka-python":
            polled = self.consumer.poll(timeout_ms=200)
            got = [(tp.partition, r.offset, r.value) for tp, recs in polled.items() for r in recs]
            assigned = frozenset(tp.partition for tp in self.consumer.assignment())
            return got, assigned
        msgs = self.consumer.consume(num_messages=100, timeout=0.2)
        got = []
        for m in msgs:
            if m.error() is None:
                got.append((m.partition(), m.offset(), m.value()))
            elif not m.error().retriable() and m.error().code() != -191:   # -191: partition EOF
                self.errors.append(str(m.error()))
        return got, frozenset(tp.partition for tp in self.consumer.assignment())

    def commit(self):
        try:
            if self.library == "kafka-python":
                self.consumer.commit()
            else:
                self.consumer.commit(asynchronous=False)
        except Exception as e:    # a commit refused during a rebalance: the records come again
            self.commit_failures += 1
            self.errors.append(f"commit: {e!r}")

    def run(self):
        try:
            while not self.stop_event.is_set():
                got, assigned = self.batch()
                if got:
                    self.commit()
                with self.lock:
                    self.records.extend(got)
                    self.assignment = assigned
        except Exception as e:
            self.errors.append(repr(e))
        finally:
            self.consumer.close()   # LeaveGroup

    def stop(self):
        self.stop_event.set()
        self.join(30)
        assert not self.is_alive(), f"{self.name} did not stop"


def covering(members, partitions):
    """True when the members' assignments are disjoint, each non-empty, and cover all partitions."""
    sets = [m.assignment for m in members]
    if any(not s for s in sets):
        return False
    union = frozenset().union(*sets)
    return union == frozenset(range(partitions)) and sum(len(s) for s in sets) == partitions


def consumed(members):
    out = []
    for m in members:
        with m.lock:
            out.extend(m.records)
    return out


def wait_for_members(members, predicate, deadline_s, what):
    """wait_until, with every member's assignment, record count and errors in the failure."""
    try:
        wait_until(predicate, deadline_s, what)
    except AssertionError as e:
        state = [(m.name, sorted(m.assignment), len(m.records), m.errors[-3:]) for m in members]
        raise AssertionError(f"{e}; members: {state}") from None


def lags(broker, group):
    r = requests.get(broker.v3(f"/consumer-groups/{group}/lags"))
    if r.status_code != 200:
        return {}
    return {l["partition_id"]: (l["current_offset"], l["lag"]) for l in r.json()["data"]}


@pytest.mark.parametrize("library", ["kafka-python", "confluent-kafka"])
def test_group_of_three_rebalances_commits_and_resumes_after_restart(ringlog_bin, tmp_path, topic_name, library):
    b = Broker(tmp_path / "ringlog-data", kafka_port=free_port(), extra_sets=[INITIAL_DELAY]).start()
    members = []
    try:
        group = f"{library}-{topic_name}"
        parts = 6
        create(b.bootstrap, topic_name, partitions=parts)
        sent = produce(b.bootstrap, topic_name, parts, range(0, 30))
        members = [Member(library, b.bootstrap, group, topic_name, f"{library}-{i}") for i in range(3)]
        for m in members:
            m.start()
        wait_for_members(members, lambda: covering(members, parts), 60, "three members sharing six partitions")
        wait_for_members(members, lambda: len(consumed(members)) >= 30, 30, "the first 30 records")
        wait_for_members(members, lambda: lags(b, group) == {p: (5, 0) for p in range(parts)}, 30,
                         "commits of 5 per partition")

        # The HTTP routes show the classic group, its three members and their partitions.
        g = requests.get(b.v3(f"/consumer-groups/{group}")).json()
        assert g["group_type"] == "classic" and g["state"] == "STABLE", g
        assert g["partition_assignor"] == ("range" if library == "kafka-python" else "roundrobin"), g
        cs = requests.get(b.v3(f"/consumer-groups/{group}/consumers")).json()["data"]
        assert sorted(c["client_id"] for c in cs) == sorted(m.name for m in members)
        owned = sorted(p["partition_id"] for c in cs for p in c["assigned_partitions"])
        assert owned == list(range(parts))

        # One member leaves: the other two take its partitions.
        members[2].stop()
        wait_for_members(members, lambda: covering(members[:2], parts), 60, "two members sharing six partitions")
        sent |= produce(b.bootstrap, topic_name, parts, range(30, 60))
        wait_for_members(members, lambda: lags(b, group) == {p: (10, 0) for p in range(parts)}, 30,
                         "commits of 10 per partition")

        # The broker restarts under the running members: they carry on (the group and its
        # offsets come back from __consumer_offsets) and nothing is lost or read twice.
        assert b.stop() == 0
        b.start()
        sent |= produce(b.bootstrap, topic_name, parts, range(60, 90))
        wait_for_members(members, lambda: lags(b, group) == {p: (15, 0) for p in range(parts)}, 60,
                         "commits of 15 per partition after the restart")
        for m in members[:2]:
            m.stop()
        records = consumed(members)
        assert {(p, v) for p, _, v in records} == sent                       # nothing lost
        for p in range(parts):                                                # nothing skipped
            assert sorted({o for q, o, _ in records if q == p}) == list(range(15)), p
        if not any(m.commit_failures for m in members):
            assert len(records) == 90, "a record was read twice without a failed commit"
        desc = requests.get(b.v3(f"/consumer-groups/{group}")).json()
        assert desc["state"] == "EMPTY", desc
    finally:
        for m in members:
            m.stop_event.set()
        if b.proc is not None:
            b.stop()


def test_classic_and_ringlog_managed_members_never_share_a_group(gbroker, topic_name):
    b = gbroker
    create(b.bootstrap, topic_name, partitions=2)
    # A group with a REST member: a Kafka client's JoinGroup is refused.
    rest_group = "rest-" + topic_name
    r = requests.post(f"{b.url}/consumers/{rest_group}", json={"name": "rest-1"}, headers={"Content-Type": V2})
    assert r.status_code == 200, r.text
    base = r.json()["base_uri"]
    r = requests.post(base + "/subscription", json={"topics": [topic_name]}, headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    with kw.connect(b.bootstrap) as s:
        _, body = kw.exchange(s, kw.API_JOIN_GROUP, 5, 1, kw.join_group_v5(rest_group))
    assert kw.parse_join_group_v5(body)[0] == 23   # INCONSISTENT_GROUP_PROTOCOL
    c = KafkaConsumer(topic_name, bootstrap_servers=b.bootstrap, group_id=rest_group, enable_auto_commit=False)
    with pytest.raises(Exception) as e:
        c.poll(timeout_ms=5_000)
    c.close()
    assert "InconsistentGroupProtocol" in repr(e.value), repr(e.value)
    # The client got code 23 without a reason; the coordinator says why, once for the group
    # (session 34's new user found nothing in the log), not once per retry.
    line = f"group '{rest_group}' is held by HTTP consumers"
    wait_until(lambda: line in b.log_path.read_text() or None, 5, "the coordinator's line")
    assert b.log_path.read_text().count(line) == 1, b.log_path.read_text()[-3000:]
    requests.delete(base, headers={"Content-Type": V2})

    # A group of Kafka clients: a REST consumer is refused with a message naming the group's kind.
    kafka_group = "kc-" + topic_name
    m = Member("confluent-kafka", b.bootstrap, kafka_group, topic_name, "kc-1")
    m.start()
    try:
        wait_until(lambda: m.assignment == frozenset({0, 1}), 30, "the Kafka member's assignment")
        r = requests.post(f"{b.url}/consumers/{kafka_group}", json={"name": "rest-2"}, headers={"Content-Type": V2})
        assert r.status_code == 422, r.text
        assert "classic group of Kafka clients" in r.json()["message"], r.text
        # ListGroups and DescribeGroups (kafka-python's admin) show the classic member.
        from kafka import KafkaAdminClient
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        (desc,) = admin.describe_consumer_groups([kafka_group])
        assert desc.state == "Stable" and desc.protocol_type == "consumer" and desc.protocol == "roundrobin"
        assert [mm.client_id for mm in desc.members] == ["kc-1"]
        assert desc.members[0].client_host == "/127.0.0.1"
        assert (kafka_group, "consumer") in admin.list_consumer_groups()
        admin.close()
    finally:
        m.stop()
    assert not m.errors, m.errors


def test_offset_delete_keeps_offsets_of_consumed_topics(gbroker, topic_name):
    b = gbroker
    other = topic_name + "-other"
    create(b.bootstrap, topic_name)
    create(b.bootstrap, other)
    produce(b.bootstrap, topic_name, 1, range(3))
    group = "od-" + topic_name
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "session.timeout.ms": 10_000})
    c.subscribe([topic_name])
    try:
        wait_until(lambda: c.poll(0.2) is not None and c.assignment(), 30, "an assignment")
        # A member commits for its own topic and for one it does not consume.
        c.commit(offsets=[TopicPartition(topic_name, 0, 2), TopicPartition(other, 0, 5)], asynchronous=False)
        with kw.connect(b.bootstrap) as s:
            _, body = kw.exchange(s, kw.API_OFFSET_DELETE, 0, 1,
                                  kw.offset_delete_v0(group, {topic_name: [0], other: [0]}))
        error, per_partition = kw.parse_offset_delete_v0(body)
        assert error == 0
        assert per_partition == {(topic_name, 0): 86, (other, 0): 0}   # GROUP_SUBSCRIBED_TO_TOPIC
        committed = c.committed([TopicPartition(topic_name, 0), TopicPartition(other, 0)], timeout=10)
        assert [(tp.topic, tp.offset) for tp in committed] == [(topic_name, 2), (other, -1001)]
        # A commit naming a stale generation is refused (ILLEGAL_GENERATION) by a raw OffsetCommit.
    finally:
        c.close()
    with kw.connect(b.bootstrap) as s:
        _, body = kw.exchange(s, kw.API_OFFSET_DELETE, 0, 2, kw.offset_delete_v0("no-such-" + group, {other: [0]}))
    assert kw.parse_offset_delete_v0(body)[0] == 69   # GROUP_ID_NOT_FOUND


def test_confluent_static_member_and_session_expiry(gbroker, topic_name):
    """group.instance.id (KIP-345): a restarted static member gets its partitions back without a
    rebalance; a member that stops heartbeating is removed after session.timeout.ms."""
    b = gbroker
    create(b.bootstrap, topic_name, partitions=2)
    group = "static-" + topic_name

    def static_consumer():
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "group.instance.id": "box-1",
                      "session.timeout.ms": 6_000, "heartbeat.interval.ms": 500, "enable.auto.commit": False})
        c.subscribe([topic_name])
        wait_until(lambda: c.poll(0.2) is None and len(c.assignment()) == 2, 30, "the static member's assignment")
        return c

    c = static_consumer()
    generation = requests.get(b.v3(f"/consumer-groups/{group}")).json()["generation"]
    c.close()   # a static member does not send LeaveGroup on close
    cs = requests.get(b.v3(f"/consumer-groups/{group}/consumers")).json()["data"]
    assert [x["instance_id"] for x in cs] == ["box-1"]
    c = static_consumer()
    assert requests.get(b.v3(f"/consumer-groups/{group}")).json()["generation"] == generation
    c.close()
    # Nobody heartbeats now: the member expires after its session timeout and the group empties.
    wait_until(lambda: requests.get(b.v3(f"/consumer-groups/{group}")).json()["state"] == "EMPTY", 30,
               "the static member to expire")


def test_commits_of_negative_offsets_are_stored_and_mean_no_offset(gbroker, topic_name):
    """Kafka does not range-check a committed offset: kafka-python's commit of -1 and -2 is stored
    and OffsetFetch reads it back as given. Readers treat it as no offset: a Kafka member and a
    REST v2 instance of the group start where auto.offset.reset says, and the lag routes report
    no lag from it (never a negative one)."""
    from kafka import KafkaAdminClient, TopicPartition as KTopicPartition
    from kafka.structs import OffsetAndMetadata
    b = gbroker
    create(b.bootstrap, topic_name, partitions=2)
    sent = produce(b.bootstrap, topic_name, 2, range(6))
    group = "negative-" + topic_name
    tps = [KTopicPartition(topic_name, 0), KTopicPartition(topic_name, 1)]
    c = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=group, enable_auto_commit=False)
    c.assign(tps)
    c.commit({tps[0]: OffsetAndMetadata(-1, ""), tps[1]: OffsetAndMetadata(-2, "")})
    c.close()
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
    try:
        stored = admin.list_consumer_group_offsets(group)
    finally:
        admin.close()
    assert {tp.partition: om.offset for tp, om in stored.items()} == {0: -1, 1: -2}
    assert requests.get(b.v3(f"/consumer-groups/{group}/lags")).status_code == 404, "no lag from a negative offset"

    # A member of the group reads everything (auto.offset.reset earliest), commits nothing.
    member = KafkaConsumer(topic_name, bootstrap_servers=b.bootstrap, group_id=group, auto_offset_reset="earliest",
                           enable_auto_commit=False, consumer_timeout_ms=1000)
    got = set()
    end = time.monotonic() + 30
    while len(got) < len(sent) and time.monotonic() < end:
        got |= {(m.partition, m.value) for m in member}
    member.close()
    assert got == sent

    # A REST v2 instance of the group too; its GET offsets shows nothing committed (as the Java
    # consumer's committed() that Confluent's proxy answers with returns null for them).
    r = requests.post(f"{b.url}/consumers/{group}", json={"name": "rest", "auto.offset.reset": "earliest"},
                      headers={"Content-Type": V2})
    assert r.status_code == 200, r.text
    base = r.json()["base_uri"]
    try:
        assert requests.post(base + "/subscription", json={"topics": [topic_name]},
                             headers={"Content-Type": V2}).status_code == 204
        r = requests.get(base + "/offsets", json={"partitions": [{"topic": topic_name, "partition": 0},
                                                                  {"topic": topic_name, "partition": 1}]},
                         headers={"Content-Type": V2})
        assert r.status_code == 200 and r.json()["offsets"] == [], r.text
        records = []

        def read():
            r = requests.get(base + "/records", params={"timeout": 500},
                             headers={"Accept": "application/vnd.kafka.binary.v2+json"})
            assert r.status_code == 200, r.text
            records.extend(r.json())
            return len(records) >= len(sent)
        wait_until(read, 30, "every record through the REST instance")
        assert sorted((x["partition"], x["offset"]) for x in records) == \
            sorted([(0, o) for o in range(3)] + [(1, o) for o in range(3)])
    finally:
        requests.delete(base, headers={"Content-Type": V2})


KAFKAJS_DIR = __import__("pathlib").Path(__file__).resolve().parents[1] / "kafkajs"


def run_kafkajs(test_file, bootstrap, topic):
    """Runs one node:test file of tests/kafkajs against `bootstrap`, with KafkaJS from npm (pinned
    by its package-lock.json) installed with `npm ci` when missing."""
    import os
    import subprocess
    env = dict(os.environ)
    if not env.get("NODE_EXTRA_CA_CERTS") and os.access("/etc/ssl/certs/ca-certificates.crt", os.R_OK):
        env["NODE_EXTRA_CA_CERTS"] = "/etc/ssl/certs/ca-certificates.crt"
    if not (KAFKAJS_DIR / "node_modules" / "kafkajs").is_dir():
        installed = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=KAFKAJS_DIR,
                                   env=env, capture_output=True, text=True, timeout=300)
        assert installed.returncode == 0, installed.stdout + installed.stderr
    env["KAFKA_BOOTSTRAP"] = bootstrap
    env["KAFKA_TOPIC"] = topic
    r = subprocess.run(["node", "--test", "--test-reporter=spec", test_file], cwd=KAFKAJS_DIR, env=env,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr


def test_kafkajs_admin_produce_and_consume_in_a_group(gbroker, topic_name):
    """KafkaJS's admin, producer and a consumer group of two (tests/kafkajs/kafkajs.test.mjs)."""
    run_kafkajs("kafkajs.test.mjs", gbroker.bootstrap, "kafkajs-" + topic_name)


def test_kafkajs_group_recovers_from_a_seek_past_the_end(gbroker, topic_name):
    """KafkaJS resets a partition after OFFSET_OUT_OF_RANGE by committing -2 (earliest): the commit
    is stored as given, as Kafka does, and the consumer goes on instead of crashing
    (tests/kafkajs/seek_past_end.test.mjs)."""
    run_kafkajs("seek_past_end.test.mjs", gbroker.bootstrap, "kafkajs-seek-" + topic_name)


def offset_commit_v2(group, offsets):
    """An OffsetCommit v2 body outside membership (generation -1): offsets {(topic, partition): offset}."""
    body = kw.string(group) + struct.pack(">i", -1) + kw.string("") + struct.pack(">q", -1)
    topics = {}
    for (t, p), o in offsets.items():
        topics.setdefault(t, []).append((p, o))
    body += struct.pack(">i", len(topics))
    for t, parts in topics.items():
        body += kw.string(t) + struct.pack(">i", len(parts))
        for p, o in parts:
            body += struct.pack(">iq", p, o) + kw.string("")
    return body


def parse_offset_commit_v2(body):
    """{(topic, partition): error code}."""
    r = kw.Reader(body)
    out = {}
    for _ in range(r.take(">i")):
        t = r.string()
        for _ in range(r.take(">i")):
            p, code = r.take(">i"), r.take(">h")
            out[(t, p)] = code
    return out


UNKNOWN_TOPIC_OR_PARTITION = 3


def test_offset_commit_of_an_unknown_topic_or_partition_is_refused_per_partition(gbroker, topic_name):
    """Kafka's KafkaApis answers UNKNOWN_TOPIC_OR_PARTITION for a partition the metadata does not
    hold and stores the others (breaker finding: partition 99 of a 1-partition topic was stored)."""
    from kafka import KafkaAdminClient
    b = gbroker
    create(b.bootstrap, topic_name, partitions=1)
    group = "unknown-" + topic_name
    wait_until(lambda: requests.get(b.v3(f"/topics/{topic_name}")).status_code == 200 or None, 20, "the topic")
    asked = {(topic_name, 0): 5, (topic_name, 99): 7, ("no-such-topic-" + topic_name, 0): 9}
    with kw.connect(b.bootstrap) as sock:
        answer = wait_until(lambda: (lambda a: a if a[(topic_name, 0)] == 0 else None)(
            parse_offset_commit_v2(kw.exchange(sock, 8, 2, 41, offset_commit_v2(group, asked))[1])),
            20, "the group's coordinator")
    assert answer == {(topic_name, 0): 0, (topic_name, 99): UNKNOWN_TOPIC_OR_PARTITION,
                      ("no-such-topic-" + topic_name, 0): UNKNOWN_TOPIC_OR_PARTITION}
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
    try:
        stored = admin.list_consumer_group_offsets(group)
    finally:
        admin.close()
    assert {(tp.topic, tp.partition): om.offset for tp, om in stored.items()} == {(topic_name, 0): 5}
    # Only unknown partitions: nothing stored, no group made.
    only_unknown = "only-unknown-" + topic_name
    with kw.connect(b.bootstrap) as sock:
        answer = parse_offset_commit_v2(kw.exchange(sock, 8, 2, 42, offset_commit_v2(only_unknown, {(topic_name, 3): 1}))[1])
    assert answer == {(topic_name, 3): UNKNOWN_TOPIC_OR_PARTITION}


def test_shift_over_a_negative_committed_offset_is_refused_as_kafka_does(gbroker, topic_name):
    """kafka-consumer-groups --shift-by shifts the committed offset and refuses a partition without
    one; a negative commit (-1) is none (the admin client reads it as null). ringlog shifted it
    from 0 (breaker finding). The HTTP route and the CLI refuse it, naming the partition."""
    import subprocess
    from kafka import TopicPartition as KTopicPartition
    from kafka.structs import OffsetAndMetadata
    from conftest import binary_path
    b = gbroker
    create(b.bootstrap, topic_name, partitions=2)
    produce(b.bootstrap, topic_name, 2, range(10))
    group = "shift-" + topic_name
    c = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=group, enable_auto_commit=False)
    tps = [KTopicPartition(topic_name, 0), KTopicPartition(topic_name, 1)]
    c.assign(tps)
    c.commit({tps[0]: OffsetAndMetadata(-1, ""), tps[1]: OffsetAndMetadata(3, "")})
    c.close()
    reset = b.v3(f"/consumer-groups/{group}/offsets:reset")
    r = requests.post(reset, json={"to": "shift", "value": 1, "topics": [topic_name]})
    assert r.status_code == 422, r.text
    assert f"{topic_name}-0" in r.json()["message"] and "committed -1" in r.json()["message"], r.text
    cli = subprocess.run([str(binary_path()), "groups", "reset", group, "--to", "shift", "--value", "1",
                          "--bootstrap-server", b.url], capture_output=True, text=True, timeout=60)
    assert cli.returncode != 0 and f"{topic_name}-0" in cli.stderr, (cli.stdout, cli.stderr)
    # Once partition 0 has a real committed offset the shift moves both from their commits.
    assert requests.post(reset, json={"to": "offset", "value": 2, "topics": [topic_name],
                                      "dry_run": False}).status_code == 200
    r = requests.post(reset, json={"to": "shift", "value": 1, "topics": [topic_name]})
    assert r.status_code == 200, r.text
    assert {o["partition_id"]: o["offset"] for o in r.json()["offsets"]} == {0: 3, 1: 3}


def test_groups_reset_of_chosen_partitions_as_kafka_topic_colon_partitions(gbroker, topic_name):
    """kafka-consumer-groups --reset-offsets --topic orders:0,2 resets only partitions 0 and 2 of
    orders. `ringlog groups reset --topic T:0,2` did not know the form (it looked for a topic named
    "T:0,2"); now the CLI and the HTTP route take it, and refuse a partition the topic lacks or a
    list that is not partition numbers, naming it."""
    import subprocess
    from kafka import TopicPartition as KTopicPartition
    from kafka.structs import OffsetAndMetadata
    from conftest import binary_path
    b = gbroker
    create(b.bootstrap, topic_name, partitions=3)
    produce(b.bootstrap, topic_name, 3, range(30))
    group = "parts-" + topic_name
    c = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=group, enable_auto_commit=False)
    tps = [KTopicPartition(topic_name, p) for p in range(3)]
    c.assign(tps)
    c.commit({tp: OffsetAndMetadata(5, "") for tp in tps})
    c.close()

    def cli(*args):
        return subprocess.run([str(binary_path()), "groups", "reset", group, *args, "--bootstrap-server", b.url],
                              capture_output=True, text=True, timeout=60)

    done = cli("--to", "earliest", "--topic", f"{topic_name}:0,2", "--execute")
    assert done.returncode == 0, (done.stdout, done.stderr)
    rows = [line.split("\t") for line in done.stdout.splitlines()[1:]]
    assert rows == [[topic_name, "0", "0"], [topic_name, "2", "0"]], done.stdout
    committed = requests.get(f"{b.v3()}/consumer-groups/{group}/lags").json()["data"]
    assert {l["partition_id"]: l["current_offset"] for l in committed} == {0: 0, 1: 5, 2: 0}, committed
    # A whole topic beside one of its partitions: the whole topic (a dry run over HTTP).
    r = requests.post(b.v3(f"/consumer-groups/{group}/offsets:reset"),
                      json={"to": "latest", "topics": [f"{topic_name}:1", topic_name]})
    assert r.status_code == 200 and sorted(o["partition_id"] for o in r.json()["offsets"]) == [0, 1, 2], r.text
    # A partition the topic does not have, and lists that are not partitions: refused, nothing moved.
    missing = cli("--to", "earliest", "--topic", f"{topic_name}:1,7", "--execute")
    assert missing.returncode != 0 and "no partition 7" in missing.stderr, (missing.stdout, missing.stderr)
    for bad in (f"{topic_name}:", f"{topic_name}:1,,2", f"{topic_name}:x", f"{topic_name}:-1"):
        refused = cli("--to", "earliest", "--topic", bad, "--execute")
        assert refused.returncode != 0 and bad in refused.stderr, (bad, refused.stdout, refused.stderr)
    committed = requests.get(f"{b.v3()}/consumer-groups/{group}/lags").json()["data"]
    assert {l["partition_id"]: l["current_offset"] for l in committed} == {0: 0, 1: 5, 2: 0}, committed
