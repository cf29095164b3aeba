"""CPU per byte in /metrics (issue 33, docs/metrics.md): ringlog_cpu_seconds_total and
ringlog_activity_bytes_total by activity rise when clients produce and fetch, and the bytes
counted are the bytes moved: produce == the batches on disk (exactly), fetch == what the
consumer read plus the answers' framing, each follower's replicated append == the leader's
produce (exactly). The CPU counted is more than nothing and no more than the process's own CPU
time. No cost per GB is asserted: figures belong to bench/run-capacity-bench.py.
"""
import os
import re

import requests
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import Broker, free_port, wait_until
from test_cluster import Cluster

DEADLINE_S = 30
RECORDS = 4000
VALUE_BYTES = 1024
ACTIVITIES = ["produce", "replicate_leader", "replicate_follower", "fetch"]


def counters(url):
    """{(metric, activity): value} of the two CPU accounting families."""
    text = requests.get(url + "/metrics", timeout=10).text
    out = {}
    for name in ["ringlog_cpu_seconds_total", "ringlog_activity_bytes_total"]:
        for activity in ACTIVITIES:
            m = re.search(r"^" + name + r'\{activity="' + activity + r'"\} (\S+)$', text, re.M)
            assert m, f"{name}{{activity={activity}}} missing from /metrics"
            out[(name, activity)] = float(m.group(1))
    return out


def size_bytes(url, topic):
    text = requests.get(url + "/metrics", timeout=10).text
    return sum(int(v) for v in re.findall(r'^ringlog_partition_size_bytes\{topic="' + re.escape(topic) +
                                          r'",partition="\d+"\} (\d+)$', text, re.M))


def holds(url, topic):
    """Whether the node holds a replica of partition 0 of `topic` (its size gauge is shown)."""
    text = requests.get(url + "/metrics", timeout=10).text
    return re.search(r'^ringlog_partition_size_bytes\{topic="' + re.escape(topic) + r'",partition="0"\}', text,
                     re.M) is not None


def process_cpu_s(pid):
    """utime + stime of the whole process, seconds (/proc/PID/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def delta(after, before, name, activity):
    return after[(name, activity)] - before[(name, activity)]


def produce(bootstrap, topic, partitions):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "compression.type": "none",
                  "enable.idempotence": False})
    for i in range(RECORDS):
        p.produce(topic, value=os.urandom(VALUE_BYTES), partition=i % partitions)
        if i % 500 == 0:
            p.poll(0)
    assert p.flush(DEADLINE_S) == 0


def consume_all(bootstrap, topic, partitions):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    value_bytes = 0

    def done():
        nonlocal got, value_bytes
        for m in c.consume(500, 0.5):
            if m.error() is None:
                got += 1
                value_bytes += len(m.value())
        return got >= RECORDS or None

    wait_until(done, DEADLINE_S, f"{RECORDS} records consumed")
    c.close()
    assert got == RECORDS
    return value_bytes


def test_produce_and_fetch_bytes_and_cpu_are_counted(ringlog_bin, tmp_path):
    b = Broker(tmp_path / "data", kafka_port=free_port()).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("cpu", 2, 1)])["cpu"].result(10)
        before, cpu_before = counters(b.url), process_cpu_s(b.proc.pid)
        produce(b.bootstrap, "cpu", 2)
        read = consume_all(b.bootstrap, "cpu", 2)
        after, cpu_after = counters(b.url), process_cpu_s(b.proc.pid)
        payload = RECORDS * VALUE_BYTES
        assert read == payload
        produced = delta(after, before, "ringlog_activity_bytes_total", "produce")
        # Every byte appended is a byte of the log on disk, and no more than the batches' framing
        # (61 bytes a batch, under 20 a record) over the values.
        assert produced == size_bytes(b.url, "cpu")
        assert payload < produced < payload * 1.05, produced
        fetched = delta(after, before, "ringlog_activity_bytes_total", "fetch")
        # Answers carry the same batches once each, plus their headers (and empty long-poll answers).
        assert produced <= fetched < produced * 1.10 + 65536, (produced, fetched)
        for activity in ["replicate_leader", "replicate_follower"]:   # one broker: nothing replicated
            assert delta(after, before, "ringlog_activity_bytes_total", activity) == 0
            assert delta(after, before, "ringlog_cpu_seconds_total", activity) == 0
        counted = 0.0
        for activity in ["produce", "fetch"]:
            cpu = delta(after, before, "ringlog_cpu_seconds_total", activity)
            assert cpu > 0, activity
            counted += cpu
        # Thread CPU inside scopes cannot exceed the process's (whose clock ticks are 10 ms).
        assert counted <= (cpu_after - cpu_before) + 0.02, (counted, cpu_after - cpu_before)
    finally:
        assert b.stop() == 0


def test_replication_bytes_match_the_leaders_appends(ringlog_bin, tmp_path):
    c = Cluster(tmp_path, kafka=True).start()
    try:
        wait_until(c.controller, DEADLINE_S, "one quorum leader")
        bootstrap = c.node(1).bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        wait_until(lambda: len(admin.list_topics(timeout=10).brokers) == 3 or None, DEADLINE_S, "three brokers")
        admin.create_topics([NewTopic("rcpu", 1, 3)])["rcpu"].result(30)
        wait_until(lambda: all(holds(n.url, "rcpu") for n in c.nodes) or None, DEADLINE_S, "every replica open")
        before = [counters(n.url) for n in c.nodes]
        produce(bootstrap, "rcpu", 1)
        # acks=all: the followers have every batch; their sizes equal the leader's.
        leader_size = max(size_bytes(n.url, "rcpu") for n in c.nodes)
        wait_until(lambda: all(size_bytes(n.url, "rcpu") == leader_size for n in c.nodes) or None, DEADLINE_S,
                   "followers caught up")
        after = [counters(n.url) for n in c.nodes]

        def total(activity, metric="ringlog_activity_bytes_total"):
            return sum(delta(a, b_, metric, activity) for a, b_ in zip(after, before))

        produced = total("produce")
        assert produced == leader_size and produced > RECORDS * VALUE_BYTES
        # Each of the two followers appended every batch once; the leader sent each at least once.
        assert total("replicate_follower") == 2 * produced
        assert 2 * produced <= total("replicate_leader") < 2 * produced * 1.05 + 65536
        for activity in ["produce", "replicate_leader", "replicate_follower"]:
            assert total(activity, "ringlog_cpu_seconds_total") > 0, activity
    finally:
        c.stop()
