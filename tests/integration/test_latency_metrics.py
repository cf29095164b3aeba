"""The produce and fetch latency breakdown in /metrics (issue 32, docs/metrics.md): after Kafka
produces with acks=all (fsync before the ack, the default flush policy) read back by a long-polling
consumer, every stage of ringlog_produce_latency_seconds and ringlog_fetch_wakeup_latency_seconds
has samples, and each is a well-formed Prometheus histogram (cumulative buckets ending at +Inf
== _count). No timing is asserted: figures belong to bench/run-latency-bench.py.
"""
import re
import threading
import time

import requests
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import Broker, free_port, wait_until

import pytest

DEADLINE_S = 30
RECORDS = 200
PRODUCE_STAGES = ["queue", "append", "fsync_wait", "fsync", "replication_wait", "total", "order_wait", "sent"]


@pytest.fixture(scope="module")
def kbroker(ringlog_bin, tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("ldata") / "ringlog-data", kafka_port=free_port()).start()
    yield b
    assert b.stop() == 0


def histogram(text, name, stage):
    """(cumulative bucket counts in order, +Inf bucket, _count) of one stage of a histogram."""
    buckets = [int(v) for v in re.findall(r"^" + re.escape(name) + r'_bucket\{stage="' + stage +
                                          r'",le="[0-9.e-]+"\} (\d+)$', text, re.M)]
    inf = re.search(r"^" + re.escape(name) + r'_bucket\{stage="' + stage + r'",le="\+Inf"\} (\d+)$', text, re.M)
    count = re.search(r"^" + re.escape(name) + r'_count\{stage="' + stage + r'"\} (\d+)$', text, re.M)
    assert buckets and inf and count, f"{name}{{stage={stage}}} missing from /metrics"
    return buckets, int(inf.group(1)), int(count.group(1))


def test_every_stage_of_a_kafka_produce_and_its_wake_up_is_counted(kbroker, topic_name):
    admin = AdminClient({"bootstrap.servers": kbroker.bootstrap})
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(10)
    c = Consumer({"bootstrap.servers": kbroker.bootstrap, "group.id": "unused", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 5000})
    c.assign([TopicPartition(topic_name, 0, 0)])
    got = []

    def consume():
        end = time.monotonic() + DEADLINE_S
        while len(got) < RECORDS and time.monotonic() < end:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())

    reader = threading.Thread(target=consume)
    reader.start()
    # The consumer has caught up between the producer's flushes, so its fetches park and the next
    # request's records wake them.
    p = Producer({"bootstrap.servers": kbroker.bootstrap, "acks": "all", "linger.ms": 1})
    for i in range(RECORDS):
        p.produce(topic_name, value=b"v%d" % i, partition=0)
        if i % 20 == 0:
            p.flush(DEADLINE_S)   # several requests, each acked after its fsync
    assert p.flush(DEADLINE_S) == 0
    reader.join(DEADLINE_S)
    c.close()
    assert len(got) == RECORDS

    def counted():
        text = requests.get(kbroker.url + "/metrics", timeout=5).text
        return all(histogram(text, "ringlog_produce_latency_seconds", s)[2] > 0 for s in PRODUCE_STAGES) and \
            histogram(text, "ringlog_fetch_wakeup_latency_seconds", "wakeup")[2] > 0 and text

    text = wait_until(counted, DEADLINE_S, "every stage counted")
    for name, stages in [("ringlog_produce_latency_seconds", PRODUCE_STAGES),
                         ("ringlog_fetch_wakeup_latency_seconds", ["wakeup"])]:
        for stage in stages:
            buckets, inf, count = histogram(text, name, stage)
            assert buckets == sorted(buckets), f"{name}{{stage={stage}}} buckets are not cumulative"
            assert buckets[-1] <= inf == count
    # One append per request at least: the totals count every acked Produce partition.
    assert histogram(text, "ringlog_produce_latency_seconds", "total")[2] >= RECORDS // 20


def count_of(text, name, stage):
    return histogram(text, name, stage)[2]


def test_a_connection_paused_at_its_in_flight_bound_and_the_loops_lag_are_counted(kbroker, topic_name):
    """40 long-poll Fetch requests written at once on one connection to an empty partition: the
    broker reads 32 (connection_in_flight_requests_max), each parks for its max_wait_ms, and reading
    stops until their answers go out; that pause is counted in ringlog_kafka_read_paused_seconds.
    Every shard's loop counts its lag probe (ringlog_shard_loop_lag_seconds)."""
    import kafka_wire as kw

    admin = AdminClient({"bootstrap.servers": kbroker.bootstrap})
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(10)
    before = requests.get(kbroker.url + "/metrics", timeout=5).text
    paused_before = count_of(before, "ringlog_kafka_read_paused_seconds", "read_paused")
    lag_before = count_of(before, "ringlog_shard_loop_lag_seconds", "loop_lag")
    requests_n, wait_ms = 40, 300
    frames = b"".join(kw.frame(kw.API_FETCH, 4, i, kw.fetch_v4(topic_name, 0, 0, max_wait_ms=wait_ms))
                      for i in range(requests_n))
    s = kw.connect(kbroker.bootstrap)
    try:
        s.sendall(frames)
        answered = []
        for _ in range(requests_n):
            size = kw.struct.unpack(">i", kw.read_exact(s, 4))[0]
            data = kw.read_exact(s, size)
            answered.append(kw.struct.unpack_from(">i", data)[0])
            assert kw.parse_fetch_v4(data[4:])[0][2] == 0
        assert answered == list(range(requests_n))   # in request order, every one
    finally:
        s.close()

    def counted():
        text = requests.get(kbroker.url + "/metrics", timeout=5).text
        paused = count_of(text, "ringlog_kafka_read_paused_seconds", "read_paused") - paused_before
        lag = count_of(text, "ringlog_shard_loop_lag_seconds", "loop_lag") - lag_before
        return paused >= 1 and lag >= 1 and text

    text = wait_until(counted, DEADLINE_S, "a read pause and the loops' lag counted")
    for name, stage in [("ringlog_kafka_read_paused_seconds", "read_paused"), ("ringlog_shard_loop_lag_seconds", "loop_lag")]:
        buckets, inf, count = histogram(text, name, stage)
        assert buckets == sorted(buckets) and buckets[-1] <= inf == count
    # The pause lasted about one long-poll (300 ms): at least one pause is above the 100 ms bucket
    # (the 13th bound, 0.1 s).
    buckets, _, count = histogram(text, "ringlog_kafka_read_paused_seconds", "read_paused")
    assert count - buckets[12] >= 1


def test_kafka_clients_traffic_is_counted_per_topic(kbroker, topic_name):
    """The new user of session 31: records produced and fetched by Kafka clients never showed in
    ringlog_topic_{records,bytes}_{in,out}_total (and so not in the console's throughput): only the
    HTTP and WebSocket doors counted. Every door counts now (base/topic_traffic.h)."""
    admin = AdminClient({"bootstrap.servers": kbroker.bootstrap})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(10)
    p = Producer({"bootstrap.servers": kbroker.bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(50):
        p.produce(topic_name, value=b"x" * 100, key=b"k%d" % i)
    assert p.flush(DEADLINE_S) == 0
    c = Consumer({"bootstrap.servers": kbroker.bootstrap, "group.id": "unused", "enable.auto.commit": False})
    c.assign([TopicPartition(topic_name, 0, 0), TopicPartition(topic_name, 1, 0)])
    got = 0
    end = time.monotonic() + DEADLINE_S
    while got < 50 and time.monotonic() < end:
        m = c.poll(0.5)
        got += 1 if m is not None and m.error() is None else 0
    c.close()
    assert got == 50

    def counter(text, name):
        m = re.search(r"^" + name + r'\{topic="' + re.escape(topic_name) + r'"\} (\d+)$', text, re.M)
        return int(m.group(1)) if m else 0

    def counted():
        text = requests.get(kbroker.url + "/metrics", timeout=5).text
        return counter(text, "ringlog_topic_records_out_total") >= 50 and text

    text = wait_until(counted, DEADLINE_S, "the Kafka consumer's records counted")
    assert counter(text, "ringlog_topic_records_in_total") == 50
    assert counter(text, "ringlog_topic_bytes_in_total") >= 50 * 100   # record batches: values and more
    assert counter(text, "ringlog_topic_bytes_out_total") >= 50 * 100
