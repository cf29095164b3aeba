"""Kafka Fetch's zero-copy path (issue 15: "Fetch sends segment bytes to the socket without
copying them through user space"): record sets go from the segment files to the socket with
sendfile. Two brokers serve the module: one with the default kafka.fetch.zero.copy=true, one with
it false (the copying path). Both must give kcat, confluent-kafka (librdkafka) and kafka-python
the same records, and a raw Fetch's record set must be the segment file's bytes, byte for byte.
The /metrics counters ringlog_kafka_fetch_bytes_zero_copy_total and
ringlog_kafka_fetch_bytes_copied_total say which path each broker took.
"""
import re
import struct
import subprocess
import threading
import time

import pytest
import requests
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, TopicPartition as KTopicPartition

import kafka_wire as kw
from conftest import Broker, free_port, wait_until

DEADLINE_S = 30
RECORDS = 2000


@pytest.fixture(scope="module")
def zbroker(ringlog_bin, tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("zdata") / "ringlog-data", kafka_port=free_port()).start()
    yield b
    assert b.stop() == 0


@pytest.fixture(scope="module")
def cbroker(ringlog_bin, tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("cdata") / "ringlog-data", kafka_port=free_port(),
               extra_sets=["kafka.fetch.zero.copy=false"]).start()
    yield b
    assert b.stop() == 0


def metric(b, name):
    text = requests.get(b.url + "/metrics", timeout=5).text
    m = re.search(r"^" + re.escape(name) + r" (\d+)$", text, re.M)
    assert m, f"{name} missing from /metrics"
    return int(m.group(1))


def counters(b):
    return (metric(b, "ringlog_kafka_fetch_bytes_zero_copy_total"),
            metric(b, "ringlog_kafka_fetch_bytes_copied_total"))


def create(b, name, config=None):
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=config or {})])[name].result(10)


def produce(b, topic, count, compression="none"):
    """count records with keys, values of varied sizes and a header; returns them in order."""
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "compression.type": compression,
                  "linger.ms": 5})
    sent = []
    for i in range(count):
        key, value = b"k%d" % (i % 7), (b"v%06d-" % i) * (1 + i % 40)
        p.produce(topic, key=key, value=value, headers=[("h", b"%d" % i)], partition=0)
        sent.append((key, value))
    assert p.flush(DEADLINE_S) == 0
    return sent


def segment_bytes(b, topic):
    """The partition's first segment file, whole (these topics stay in one segment)."""
    return (b.data_dir / f"{topic}-0" / "00000000000000000000.log").read_bytes()


def raw_fetch_records(b, topic, offset=0, max_bytes=64 << 20, partition_max_bytes=64 << 20):
    """(topic, partition, error, high watermark, records) of a raw Fetch v4."""
    with kw.connect(b.bootstrap) as s:
        _, body = kw.exchange(s, kw.API_FETCH, 4, 1,
                              kw.fetch_v4(topic, 0, offset, max_bytes=max_bytes, partition_max_bytes=partition_max_bytes))
    return kw.parse_fetch_v4(body)[0]


def confluent_values(b, topic, count, isolation="read_uncommitted"):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "unused", "enable.auto.commit": False,
                  "isolation.level": isolation, "fetch.max.bytes": 1 << 20})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    end = time.monotonic() + DEADLINE_S
    try:
        while len(got) < count and time.monotonic() < end:
            m = c.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got.append((m.key(), m.value(), m.headers()))
    finally:
        c.close()
    return got


def kafka_python_values(b, topic, count):
    """kafka-python 2.0 reads read_uncommitted only (it has no isolation_level)."""
    c = KafkaConsumer(bootstrap_servers=b.bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000, fetch_max_bytes=1 << 20, max_partition_fetch_bytes=256 << 10)
    c.assign([KTopicPartition(topic, 0)])
    c.seek(KTopicPartition(topic, 0), 0)
    got = []
    end = time.monotonic() + DEADLINE_S
    try:
        while len(got) < count and time.monotonic() < end:
            for records in c.poll(timeout_ms=500).values():
                got.extend((r.key, r.value, r.headers) for r in records)
    finally:
        c.close()
    return got


def kcat_values(b, topic, count, isolation="read_uncommitted"):
    out = subprocess.run(["kcat", "-b", b.bootstrap, "-X", f"isolation.level={isolation}", "-C", "-t", topic, "-p", "0",
                          "-o", "beginning", "-c", str(count), "-e", "-f", "%k\t%s\n"], capture_output=True,
                         timeout=DEADLINE_S)
    assert out.returncode == 0, out.stderr.decode()
    return [tuple(line.split(b"\t", 1)) for line in out.stdout.split(b"\n") if line]


@pytest.mark.parametrize("compression", ["none", "lz4"])
def test_every_client_reads_the_same_records_on_both_paths(zbroker, cbroker, topic_name, compression):
    """Batches are sent as stored, compressed ones too: the zero-copy broker sends them from the
    files (its copied counter stays put), the other copies them (its zero-copy counter stays put)."""
    for b in (zbroker, cbroker):
        create(b, topic_name)
        sent = produce(b, topic_name, RECORDS, compression)
        stored = segment_bytes(b, topic_name)
        zero_copy_before, copied_before = counters(b)
        want = [(k, v, [("h", b"%d" % i)]) for i, (k, v) in enumerate(sent)]
        assert confluent_values(b, topic_name, RECORDS) == want
        assert kafka_python_values(b, topic_name, RECORDS) == want
        assert kcat_values(b, topic_name, RECORDS) == sent
        # A raw Fetch v4 returns the file's bytes (tests/kafka compares every version 4-12 with
        # the copying path's encoding).
        _, _, error, hw, records = raw_fetch_records(b, topic_name)
        assert (error, hw) == (0, RECORDS)
        assert records == stored
        zero_copy_after, copied_after = counters(b)
        if b is zbroker:
            # Three clients read the whole log, and a raw fetch: at least four times the file.
            assert zero_copy_after - zero_copy_before >= 4 * len(stored)
            assert copied_after == copied_before
        else:
            assert zero_copy_after == zero_copy_before == 0
            assert copied_after - copied_before >= 4 * len(stored)


def test_limits_hold_on_the_zero_copy_path(zbroker, topic_name):
    """partition_max_bytes and max_bytes cut at batch boundaries (at least one batch, KIP-74), a
    fetch inside a batch starts at that batch, and an offset past the end is OFFSET_OUT_OF_RANGE."""
    create(zbroker, topic_name)
    for _ in range(5):   # each flush ends a batch: at least five
        produce(zbroker, topic_name, 100)
    stored = segment_bytes(zbroker, topic_name)
    starts, pos = [], 0
    while pos < len(stored):
        starts.append(pos)
        pos += 12 + struct.unpack(">i", stored[pos + 8:pos + 12])[0]
    assert len(starts) >= 5
    second = starts[1]
    # One byte of budget: exactly the first batch.
    assert raw_fetch_records(zbroker, topic_name, partition_max_bytes=1)[4] == stored[:second]
    assert raw_fetch_records(zbroker, topic_name, max_bytes=1)[4] == stored[:second]
    # Room for two and a half batches: two.
    budget = starts[2] + (starts[3] - starts[2]) // 2
    assert raw_fetch_records(zbroker, topic_name, partition_max_bytes=budget)[4] == stored[:starts[2]]
    # The second batch's last offset (inside it when it holds several records): the answer starts
    # at that batch.
    second_last = struct.unpack(">q", stored[second:second + 8])[0] + struct.unpack(">i", stored[second + 23:second + 27])[0]
    assert raw_fetch_records(zbroker, topic_name, offset=second_last)[4] == stored[second:]
    _, _, error, _, records = raw_fetch_records(zbroker, topic_name, offset=10_000)
    assert error == 1 and records in (b"", None)   # OFFSET_OUT_OF_RANGE


def test_a_long_poll_answers_with_records_appended_while_it_waits(zbroker, topic_name):
    create(zbroker, topic_name)
    produce(zbroker, topic_name, 10)
    answer = {}

    def wait_for_more():
        with kw.connect(zbroker.bootstrap, timeout=DEADLINE_S) as s:
            answer["body"] = kw.exchange(s, kw.API_FETCH, 4, 9, kw.fetch_v4(topic_name, 0, 10, max_wait_ms=20000))[1]

    t = threading.Thread(target=wait_for_more)
    t.start()
    # The fetch parks at offset 10 (or, when it arrives after them, finds the new records at once:
    # the same answer either way).
    produce(zbroker, topic_name, 5)
    t.join(DEADLINE_S)
    assert not t.is_alive()
    _, _, error, hw, records = kw.parse_fetch_v4(answer["body"])[0]
    # The first records to arrive answer it (min_bytes 1): the producer's first batch may be one
    # record; the answer holds the batches from offset 10 up to its high watermark, as stored.
    assert error == 0 and 11 <= hw <= 15
    stored = segment_bytes(zbroker, topic_name)
    pos = 0
    while struct.unpack(">q", stored[pos:pos + 8])[0] < 10:
        pos += 12 + struct.unpack(">i", stored[pos + 8:pos + 12])[0]
    assert records and records == stored[pos:pos + len(records)]


def test_read_committed_with_aborted_transactions_stays_correct(zbroker, cbroker, topic_name):
    """Aborted records stay in the log and are sent as stored, with the aborted transactions listed
    for the client to drop (Kafka's rule: the broker never rewrites batches for read_committed), so
    this fetch stays on the zero-copy path; the copying broker gives the same records."""
    for b in (zbroker, cbroker):
        create(b, topic_name)
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": f"zc-{topic_name}"})
        p.init_transactions(20)
        for round_, commit in enumerate([True, False, True, False, True]):
            p.begin_transaction()
            for i in range(50):
                p.produce(topic_name, value=b"r%d-%d" % (round_, i), partition=0)
            assert p.flush(20) == 0   # sent before the end: an abort purges what is still queued
            p.commit_transaction(20) if commit else p.abort_transaction(20)
        want = [b"r%d-%d" % (r, i) for r in (0, 2, 4) for i in range(50)]
        zero_copy_before, copied_before = counters(b)
        assert [v for _, v, _ in confluent_values(b, topic_name, 150, "read_committed")] == want
        assert [v for _, v in kcat_values(b, topic_name, 150, "read_committed")] == want
        # read_uncommitted sees the aborted ones too.
        assert len(confluent_values(b, topic_name, 250)) == 250
        zero_copy_after, copied_after = counters(b)
        if b is zbroker:
            assert zero_copy_after > zero_copy_before and copied_after == copied_before
        else:
            assert zero_copy_after == 0 and copied_after > copied_before


def test_fetch_below_v4_is_refused_not_down_converted(zbroker, topic_name):
    """Message formats v0/v1 are not kept and not converted to: Fetch v3 answers
    UNSUPPORTED_VERSION per partition, on either path."""
    create(zbroker, topic_name)
    produce(zbroker, topic_name, 3)
    with kw.connect(zbroker.bootstrap) as s:
        _, body = kw.exchange(s, kw.API_FETCH, 3, 1, kw.fetch_v4(topic_name, 0, 0, version=3))
    assert kw.parse_fetch_v4(body, version=3)[0][2] == 35


def test_an_ephemeral_kafka_port_is_registered_as_bound(ringlog_bin, tmp_path):
    """kafka://127.0.0.1:0: the broker registers (RegisterBrokerRecord endPoints) and advertises the
    port the kernel chose, and clients reach it there."""
    data = tmp_path / "ringlog-data"
    port = free_port()
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(ringlog_bin), "serve", "--set", f"listeners=http://127.0.0.1:{port},kafka://127.0.0.1:0",
                                 "--set", f"log.dirs={data}", "--set", "num.shards=1"], stdout=log, stderr=subprocess.STDOUT)
    try:
        def bound():
            assert proc.poll() is None, log_path.read_text()[-2000:]
            m = re.search(r'msg="serving kafka" listeners=kafka://127\.0\.0\.1:(\d+) advertised=kafka://127\.0\.0\.1:(\d+)',
                          log_path.read_text())
            return (int(m.group(1)), int(m.group(2))) if m else None
        kafka_port, advertised = wait_until(bound, DEADLINE_S, "the serving kafka log line")
        assert kafka_port != 0 and advertised == kafka_port
        meta = subprocess.run(["kcat", "-b", f"127.0.0.1:{kafka_port}", "-L", "-J"], capture_output=True, timeout=DEADLINE_S)
        assert meta.returncode == 0, meta.stderr.decode()
        assert f'"name":"127.0.0.1:{kafka_port}"' in meta.stdout.decode().replace(" ", "")
    finally:
        proc.terminate()
        assert proc.wait(DEADLINE_S) == 0
    dump = subprocess.run([str(ringlog_bin), "metadata", "dump", "--log-dirs", str(data)], capture_output=True,
                          text=True, timeout=DEADLINE_S)
    assert dump.returncode == 0, dump.stderr
    registrations = [line for line in dump.stdout.splitlines() if "RegisterBrokerRecord" in line]
    assert registrations and all(f"PLAINTEXT://127.0.0.1:{kafka_port}" in line for line in registrations), registrations
