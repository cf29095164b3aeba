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
PRODUCE_STAGES = ["queue", "append", "fsync_wait", "fsync", "replication_wait", "total", "sent"]


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
