"""Issue 31, the Kafka door: client quotas set with AlterClientQuotas (49) and read with
DescribeClientQuotas (48) (neither confluent-kafka 1.7 nor kafka-python 2.0 has these admin calls:
they go as raw requests encoded from the schema files, kafka_schema.py), kept in the metadata log
(they survive a restart and reach every node), and enforced as KIP-219 says: a producer over
producer_byte_rate and a consumer over consumer_byte_rate are slowed and librdkafka reports the
throttle time (throttle_cb), while a client beside them is not; CreateTopics v6+ over
controller_mutation_rate is refused with THROTTLING_QUOTA_EXCEEDED (89); connections from an ip past
its connection_creation_rate are held and closed unanswered (KIP-612). The byte-rate checks are
functional with wide bounds (a loaded 2-core box); bench/client_quota_bench.py measures the figure.
Every wait polls with a deadline."""
import socket
import struct
import threading
import time

import pytest
import requests
from confluent_kafka import Consumer, KafkaException, Producer

import kafka_schema
from conftest import Broker, wait_until
from ports import free_port
from test_cluster import FAILOVER_DEADLINE_S, Cluster

MiB = 1024 * 1024
INVALID_REQUEST = 42
THROTTLING_QUOTA_EXCEEDED = 89
# kafka_schema's requests say client.id "ringlog-test".
RAW_CLIENT_ID = "ringlog-test"


@pytest.fixture
def kafka_broker(ringlog_bin, tmp_path):
    b = Broker(tmp_path / "ringlog-data", kafka_port=free_port()).start()
    yield b
    if b.proc is not None:
        assert b.stop() == 0


def entity(**parts):
    """{"user": "alice", "client_id": None} -> Kafka's entity list (None = <default>)."""
    return [{"EntityType": k.replace("_", "-"), "EntityName": v} for k, v in parts.items()]


def alter(bootstrap, entries, validate_only=False, version=1):
    """AlterClientQuotas; entries: [(entity, {key: value or None to remove})]. The answer's entries."""
    body = {"Entries": [{"Entity": e, "Ops": [{"Key": k, "Value": float(v or 0), "Remove": v is None}
                                              for k, v in ops.items()]} for e, ops in entries],
            "ValidateOnly": validate_only}
    with socket.create_connection(tuple_of(bootstrap), timeout=30) as s:
        return kafka_schema.exchange(s, "AlterClientQuotas", version, 1, body)["Entries"]


def describe(bootstrap, components=(), strict=False, version=1):
    """DescribeClientQuotas; components: [(entity_type, match_type, match)]. The whole answer."""
    body = {"Components": [{"EntityType": t, "MatchType": m, "Match": name} for t, m, name in components],
            "Strict": strict}
    with socket.create_connection(tuple_of(bootstrap), timeout=30) as s:
        return kafka_schema.exchange(s, "DescribeClientQuotas", version, 1, body)


def tuple_of(bootstrap):
    host, port = bootstrap.rsplit(":", 1)
    return host, int(port)


def quotas_of(answer):
    """{(("client-id", "slow"),): {"producer_byte_rate": 1048576.0}} from a Describe answer."""
    assert answer["ErrorCode"] == 0, answer
    return {tuple((e["EntityType"], e["EntityName"]) for e in entry["Entity"]):
            {v["Key"]: v["Value"] for v in entry["Values"]} for entry in answer["Entries"]}


def set_quota(bootstrap, ent, ops):
    [answer] = alter(bootstrap, [(ent, ops)])
    assert answer["ErrorCode"] == 0, answer


def test_alter_and_describe_round_trip_and_refuse_bad_entries_with_a_message(kafka_broker):
    b = kafka_broker.bootstrap
    answers = alter(b, [
        (entity(client_id="slow"), {"producer_byte_rate": MiB}),
        (entity(user="alice", client_id=None), {"consumer_byte_rate": 2 * MiB, "request_percentage": 50}),
        (entity(client_id="x"), {"no_such_key": 1}),
        (entity(ip="10.0.0.1", user="alice"), {"connection_creation_rate": 5}),
        (entity(client_id="neg"), {"producer_byte_rate": -1}),
        (entity(group="g"), {"producer_byte_rate": 1}),
    ])
    assert [a["ErrorCode"] for a in answers] == [0, 0] + [INVALID_REQUEST] * 4, answers
    for a, named in zip(answers[2:], ["no_such_key", "ip", "-1", "group"]):
        assert named in a["ErrorMessage"], a
    # validate_only changes nothing.
    [dry] = alter(b, [(entity(client_id="dry"), {"producer_byte_rate": 10})], validate_only=True)
    assert dry["ErrorCode"] == 0

    everything = quotas_of(describe(b))
    assert everything == {
        (("client-id", "slow"),): {"producer_byte_rate": MiB},
        (("user", "alice"), ("client-id", None)): {"consumer_byte_rate": 2 * MiB, "request_percentage": 50.0},
    }, everything
    # Kafka's filter: exact client-id "slow", strict; and default client-id with any user (v0 too).
    assert quotas_of(describe(b, [("client-id", 0, "slow")], strict=True)) == {
        (("client-id", "slow"),): {"producer_byte_rate": MiB}}
    assert list(quotas_of(describe(b, [("client-id", 1, None)], version=0))) == [(("user", "alice"), ("client-id", None))]
    bad = describe(b, [("client-id", 9, None)])
    assert bad["ErrorCode"] == INVALID_REQUEST and "match_type" in bad["ErrorMessage"], bad

    # A removal, then the entity is gone.
    set_quota(b, entity(client_id="slow"), {"producer_byte_rate": None})
    assert (("client-id", "slow"),) not in quotas_of(describe(b))


def test_quotas_survive_a_restart(kafka_broker):
    set_quota(kafka_broker.bootstrap, entity(user=None), {"consumer_byte_rate": 4096})
    assert kafka_broker.stop() == 0
    kafka_broker.start()
    assert quotas_of(describe(kafka_broker.bootstrap)) == {(("user", None),): {"consumer_byte_rate": 4096.0}}


def produce_for(bootstrap, topic, client_id, seconds, acked, throttles, stop):
    """Produces 16 KiB records as fast as the client may for `seconds`; adds the bytes acked in
    that span to acked[client_id] and each throttle event to throttles."""
    value = b"x" * 16384
    started = time.monotonic()

    def delivered(err, msg):
        if err is None and time.monotonic() - started <= seconds:
            acked[client_id] += len(msg.value())

    # 128 KiB batches (librdkafka's default is 1 MB per partition): a client gets one request past
    # its quota before the broker stops reading (Kafka's rule too), and with 1 MB batches that
    # one request is a large share of 10 s at 1 MiB/s (bench/run-quota-bench.py uses the default).
    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5, "batch.size": 131072,
                  "queue.buffering.max.kbytes": 8192, "throttle_cb": throttles.append})
    while time.monotonic() - started < seconds and not stop.is_set():
        try:
            p.produce(topic, value, callback=delivered)
        except BufferError:
            p.poll(0.05)
        p.poll(0)
    p.purge()
    p.flush(10)


def test_a_producer_under_producer_byte_rate_gets_about_it_while_one_beside_it_is_not_slowed(kafka_broker, topic_name):
    kafka_broker.create_topic(topic_name, partitions=2)
    set_quota(kafka_broker.bootstrap, entity(client_id="slow"), {"producer_byte_rate": MiB})
    seconds = 10.0
    acked = {"slow": 0, "fast": 0}
    throttles = []
    stop = threading.Event()
    threads = [threading.Thread(target=produce_for, args=(kafka_broker.bootstrap, topic_name, c, seconds, acked,
                                                          throttles if c == "slow" else [], stop))
               for c in ("slow", "fast")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 60)
    slow, fast = acked["slow"] / seconds / MiB, acked["fast"] / seconds / MiB
    print(f"over {seconds:.0f} s: slow {slow:.2f} MiB/s (producer_byte_rate 1 MiB/s), fast {fast:.2f} MiB/s; "
          f"{len(throttles)} throttle events, longest {max((e.throttle_time for e in throttles), default=0):.3f} s")
    assert 0.5 <= slow <= 1.5, (slow, fast)
    assert fast > 2 * slow, (slow, fast)
    # librdkafka saw the throttle time in the answers (its throttle_cb, seconds).
    assert throttles and max(e.throttle_time for e in throttles) > 0


def test_a_consumer_under_consumer_byte_rate_is_slowed_and_librdkafka_reports_the_throttle(kafka_broker, topic_name):
    kafka_broker.create_topic(topic_name, partitions=1)
    total = 8 * MiB
    p = Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 5})
    for _ in range(total // 16384):
        while True:
            try:
                p.produce(topic_name, b"y" * 16384)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0
    # 256 KiB/s: about 2.5 MiB in the first 11 x 1 s window, far below the 8 MiB waiting.
    set_quota(kafka_broker.bootstrap, entity(client_id="reader"), {"consumer_byte_rate": 262144})
    throttles = []
    c = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": topic_name, "client.id": "reader",
                  "auto.offset.reset": "earliest", "max.partition.fetch.bytes": 262144,
                  "throttle_cb": throttles.append})
    c.subscribe([topic_name])
    seconds = 6.0
    read = 0
    started = time.monotonic()
    try:
        while time.monotonic() - started < seconds:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                read += len(m.value())
    finally:
        c.close()
    print(f"read {read / MiB:.2f} MiB of {total / MiB:.0f} MiB in {seconds:.0f} s under consumer_byte_rate 256 KiB/s; "
          f"{len(throttles)} throttle events")
    assert 0 < read <= 5 * MiB, read
    assert throttles and max(e.throttle_time for e in throttles) > 0


def create_topics_v(bootstrap, version, name, partitions):
    with socket.create_connection(tuple_of(bootstrap), timeout=30) as s:
        return kafka_schema.exchange(s, "CreateTopics", version, 1, {
            "Topics": [{"Name": name, "NumPartitions": partitions, "ReplicationFactor": -1}], "TimeoutMs": 30000})


def test_create_topics_v6_over_controller_mutation_rate_is_throttling_quota_exceeded(kafka_broker, topic_name):
    # 1 partition per second: a burst of 11 (KIP-599's bucket over 11 samples of 1 s).
    set_quota(kafka_broker.bootstrap, entity(client_id=RAW_CLIENT_ID), {"controller_mutation_rate": 1})
    first = create_topics_v(kafka_broker.bootstrap, 6, topic_name + "-a", 12)
    assert first["Topics"][0]["ErrorCode"] == 0, first
    refused = create_topics_v(kafka_broker.bootstrap, 7, topic_name + "-b", 1)
    assert refused["Topics"][0]["ErrorCode"] == THROTTLING_QUOTA_EXCEEDED, refused
    assert "controller_mutation_rate" in refused["Topics"][0]["ErrorMessage"]
    assert refused["ThrottleTimeMs"] > 0
    # CreateTopics v5 predates KIP-599's refusal: admitted, and told to wait.
    lenient = create_topics_v(kafka_broker.bootstrap, 5, topic_name + "-c", 1)
    assert lenient["Topics"][0]["ErrorCode"] == 0 and lenient["ThrottleTimeMs"] > 0, lenient


def test_a_tiny_controller_mutation_rate_asks_the_longest_throttle_the_field_holds(kafka_broker, topic_name):
    """The breaker of session 38 (repro/mutation_quota_overflow.py): at controller_mutation_rate
    1e-9 one partition asked 3999999988951 ms, which wrapped to 1385435029 in the int32 field; at
    1e-12 and 1e-20 the wrap (or an int64 overflow) answered no throttle at all. Clamped now to
    2^31-1 ms, as byte-rate throttles are."""
    int32_max = 2**31 - 1
    for k, rate in enumerate([1e-9, 1e-12, 1e-20]):
        client = f"{RAW_CLIENT_ID}-{k}"
        set_quota(kafka_broker.bootstrap, entity(client_id=client), {"controller_mutation_rate": rate})
        # kafka_schema names its client "ringlog-test": this one goes under the quota's own id.
        with socket.create_connection(tuple_of(kafka_broker.bootstrap), timeout=30) as s:
            lenient = kafka_schema.exchange(s, "CreateTopics", 5, 1, {
                "Topics": [{"Name": f"{topic_name}-{k}", "NumPartitions": 1, "ReplicationFactor": -1}],
                "TimeoutMs": 30000}, client_id=client)
        assert lenient["Topics"][0]["ErrorCode"] == 0, lenient
        assert lenient["ThrottleTimeMs"] == int32_max, (rate, lenient)
        with socket.create_connection(tuple_of(kafka_broker.bootstrap), timeout=30) as s:
            refused = kafka_schema.exchange(s, "CreateTopics", 7, 1, {
                "Topics": [{"Name": f"{topic_name}-{k}-b", "NumPartitions": 250, "ReplicationFactor": -1}],
                "TimeoutMs": 30000}, client_id=client)
        assert refused["Topics"][0]["ErrorCode"] == THROTTLING_QUOTA_EXCEEDED, refused
        assert refused["ThrottleTimeMs"] == int32_max, (rate, refused)


def test_a_quota_set_through_one_node_is_enforced_by_the_others(ringlog_bin, tmp_path, topic_name):
    cluster = Cluster(tmp_path, kafka=True).start()
    try:
        wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        entry = cluster.nodes[0]

        def altered():
            [a] = alter(entry.bootstrap, [(entity(client_id="tiny"), {"producer_byte_rate": 10240})])
            return a["ErrorCode"] == 0
        wait_until(altered, FAILOVER_DEADLINE_S, "an AlterClientQuotas")
        for n in cluster.nodes:
            wait_until(lambda: quotas_of(describe(n.bootstrap)).get((("client-id", "tiny"),)) ==
                       {"producer_byte_rate": 10240.0}, 20.0, f"the quota on node {n.node_id}")
        r = entry.create_topic(topic_name, partitions=3)
        assert r
        throttled_by = set()

        def note(event):
            if event.throttle_time > 0:
                throttled_by.add(event.broker_id)
        p = Producer({"bootstrap.servers": ",".join(n.bootstrap for n in cluster.nodes), "client.id": "tiny",
                      "throttle_cb": note, "linger.ms": 5})
        value = b"z" * 8192
        sent = 0
        deadline = time.monotonic() + 60
        # 10 KiB/s lets about 100 KiB through per broker before throttling; keep sending to every
        # partition until a broker other than the one that stored the quota reports a throttle.
        while not (throttled_by - {entry.node_id}) and time.monotonic() < deadline:
            try:
                p.produce(topic_name, value, partition=sent % 3)
                sent += 1
            except (BufferError, KafkaException):
                pass
            p.poll(0.01)
        p.purge()
        p.flush(10)
        print(f"throttled by brokers {sorted(throttled_by)} after {sent} records; the quota was set through "
              f"node {entry.node_id}")
        assert throttled_by - {entry.node_id}, throttled_by
    finally:
        cluster.stop()


def api_versions_answered(bootstrap):
    """Whether a new connection gets its ApiVersions answered (False: held, then closed)."""
    try:
        with socket.create_connection(tuple_of(bootstrap), timeout=5) as s:
            return kafka_schema.exchange(s, "ApiVersions", 0, 1, {})["ErrorCode"] == 0
    except (OSError, struct.error, AssertionError, IndexError):
        return False


def test_connection_creation_rate_of_an_ip_entity_holds_and_closes_the_connections_past_it(kafka_broker):
    b = kafka_broker.bootstrap
    set_quota(b, entity(ip="127.0.0.1"), {"connection_creation_rate": 2})
    answered = [api_versions_answered(b) for _ in range(8)]
    print(f"8 connections in a row from 127.0.0.1 under connection_creation_rate=2: answered {answered}")
    assert answered.count(False) >= 2, answered   # 2 per second: each refusal holds until a token is back


    def metrics_text():
        # The HTTP listener is under the same ip quota (every listener but the cluster one): its
        # connection may be held and closed too, until a token is back.
        try:
            return requests.get(kafka_broker.url + "/metrics", timeout=5).text
        except requests.RequestException:
            return None
    metrics = wait_until(metrics_text, 20.0, "/metrics answered under the ip's connection_creation_rate")
    refused = [int(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
               if line.startswith("ringlog_connections_refused_total") and 'reason="connection_creation_rate"' in line]
    assert refused and sum(refused) >= answered.count(False), refused

    def removed():
        try:
            return alter(b, [(entity(ip="127.0.0.1"), {"connection_creation_rate": None})])[0]["ErrorCode"] == 0
        except (OSError, struct.error, AssertionError, IndexError):
            return False   # this connection was over the rate too: once a token is back
    wait_until(removed, 20.0, "the ip quota removed")
    assert all(api_versions_answered(b) for _ in range(8))
