"""Transactions (issue 16; KIP-98, KIP-447, KIP-890) against the real binary: the transaction
coordinator over the Kafka protocol (confluent-kafka's transactional producer, a read_committed
consumer, send_offsets_to_transaction) and over HTTP (begin, add partitions and group offsets,
commit, abort, list, describe), fencing of zombies, the timeout abort, the epoch bump per
transaction end with a delayed old commit, and the coordinator's state across restarts.
"""
import time
import uuid

import pytest
import urllib.parse

import requests
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

import kafka_wire as kw
from conftest import Broker, free_port, wait_until

PRODUCER_FENCED_HTTP = 40906
CONCURRENT_TRANSACTIONS_HTTP = 40907


@pytest.fixture
def tbroker(ringlog_bin, tmp_path):
    """A broker of this test's own with a Kafka listener; timed-out transactions are looked for
    every 100 ms (the timeout test)."""
    b = Broker(tmp_path / "ringlog-data", kafka_port=free_port(),
               extra_sets=["transaction.abort.timed.out.transaction.cleanup.interval.ms=100",
                           "transaction.state.log.num.partitions=4"]).start()
    yield b
    if b.proc is not None:
        b.stop()


def txn_url(b, path=""):
    return b.v3("/transactions" + path)


def begin(b, tid, timeout_ms=None):
    body = {"transactional_id": tid}
    if timeout_ms is not None:
        body["transaction_timeout_ms"] = timeout_ms
    r = requests.post(txn_url(b), json=body)
    assert r.status_code == 200, r.text
    return r.json()["producer_id"], r.json()["producer_epoch"]


def describe(b, tid):
    r = requests.get(txn_url(b, "/" + tid))
    assert r.status_code == 200, r.text
    return r.json()


def add_partitions(b, tid, pid, epoch, topic, partitions=(0,)):
    return requests.post(txn_url(b, f"/{tid}/partitions"),
                         json={"producer_id": pid, "producer_epoch": epoch,
                               "partitions": [{"topic": topic, "partition": p} for p in partitions]})


def transactional_producer(b, tid, **extra):
    conf = {"bootstrap.servers": b.bootstrap, "transactional.id": tid, "transaction.timeout.ms": 20000,
            "message.timeout.ms": 20000}
    conf.update(extra)
    return Producer(conf)


def read_committed_values(b, topic, partitions=(0,), deadline_s=20, require_end=True):
    """Every value a read_committed consumer sees in `topic`, in offset order per partition,
    once it has read up to each partition's end (the last stable offset). `require_end=False`:
    what it read by the deadline, when a partition never reports its end (librdkafka reports
    the end at the high watermark, which a read_committed reader does not reach while some
    transaction is open there - as in a pipeline still running)."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "rc-" + uuid.uuid4().hex,
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in partitions])
    out = []
    eof = set()
    end = time.monotonic() + deadline_s
    try:
        while time.monotonic() < end and len(eof) < len(partitions):
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:   # _PARTITION_EOF
                    eof.add(m.partition())
                    continue
                raise AssertionError(m.error())
            out.append(m.value())
    finally:
        c.close()
    assert len(eof) == len(partitions) or not require_end, "the read_committed consumer did not reach the end"
    return out


# ---------------------------------------------------------------- the coordinator over HTTP

def test_http_begin_fences_the_older_producer(tbroker, topic_name):
    tbroker.create_topic(topic_name, partitions=2)
    tid = "fence-" + topic_name
    pid, epoch = begin(tbroker, tid)
    pid2, epoch2 = begin(tbroker, tid)
    assert (pid2, epoch2) == (pid, epoch + 1)
    # The old producer's calls are refused; the new one's go through.
    old = add_partitions(tbroker, tid, pid, epoch, topic_name)
    assert old.status_code == 409 and old.json()["error_code"] == PRODUCER_FENCED_HTTP, old.text
    new = add_partitions(tbroker, tid, pid2, epoch2, topic_name, (0, 1))
    assert new.status_code == 204, new.text
    d = describe(tbroker, tid)
    assert d["state"] == "Ongoing"
    assert d["producer_epoch"] == epoch2
    assert sorted(p["partition"] for p in d["partitions"]) == [0, 1]
    listed = requests.get(txn_url(tbroker), params={"state": "Ongoing"}).json()["data"]
    assert tid in [t["transactional_id"] for t in listed]


def test_http_refuses_bad_input_naming_the_field(tbroker, topic_name):
    tbroker.create_topic(topic_name)
    r = requests.post(txn_url(tbroker), json={"transactional_id": ""})
    assert r.status_code == 422 and "transactional_id" in r.json()["message"]
    r = requests.post(txn_url(tbroker), json={"transactional_id": "x", "transaction_timeout_ms": 900001})
    assert r.status_code == 422 and "transaction.max.timeout.ms" in r.json()["message"], r.text
    tid = "bad-" + topic_name
    pid, epoch = begin(tbroker, tid)
    r = add_partitions(tbroker, tid, pid, epoch, "no-such-topic-" + topic_name)
    assert r.status_code == 404, r.text
    r = requests.get(txn_url(tbroker, "/never-began-" + topic_name))
    assert r.status_code == 404 and r.json()["error_code"] == 40406, r.text


def test_coordinator_state_survives_a_restart(tbroker, topic_name):
    tbroker.create_topic(topic_name)
    tid = "restart-" + topic_name
    pid, epoch = begin(tbroker, tid, timeout_ms=600000)
    assert add_partitions(tbroker, tid, pid, epoch, topic_name).status_code == 204
    tbroker.kill()
    tbroker.start()
    d = wait_until(lambda: (lambda r: r.status_code == 200 and r.json())(requests.get(txn_url(tbroker, "/" + tid))),
                   20, "the transactional id after the restart")
    assert (d["state"], d["producer_id"], d["producer_epoch"]) == ("Ongoing", pid, epoch)
    assert d["partitions"] == [{"topic": topic_name, "partition": 0}]


# ---------------------------------------------------------------- ending transactions (needs the markers)

def test_http_commit_bumps_the_epoch_and_refuses_a_delayed_old_commit(tbroker, topic_name):
    """KIP-890 part 2 over HTTP: the commit answers the next epoch; a delayed commit of the
    ended transaction (its old epoch) arriving while the next one is open is refused and does
    not end it (KAFKA-17754)."""
    tbroker.create_topic(topic_name)
    tid = "bump-" + topic_name
    pid, epoch = begin(tbroker, tid)
    assert add_partitions(tbroker, tid, pid, epoch, topic_name).status_code == 204
    c = requests.post(txn_url(tbroker, f"/{tid}/commit"), json={"producer_id": pid, "producer_epoch": epoch})
    assert c.status_code == 200, c.text
    next_epoch = c.json()["producer_epoch"]
    assert next_epoch == epoch + 1
    wait_until(lambda: describe(tbroker, tid)["state"] == "CompleteCommit", 20, "the commit markers")
    # The next transaction.
    assert add_partitions(tbroker, tid, pid, next_epoch, topic_name).status_code == 204
    # The delayed duplicate of the first commit.
    late = requests.post(txn_url(tbroker, f"/{tid}/commit"), json={"producer_id": pid, "producer_epoch": epoch})
    assert late.status_code == 409 and late.json()["error_code"] == PRODUCER_FENCED_HTTP, late.text
    assert describe(tbroker, tid)["state"] == "Ongoing"


def test_hung_transaction_is_aborted_after_its_timeout(tbroker, topic_name):
    tbroker.create_topic(topic_name)
    tid = "hung-" + topic_name
    pid, epoch = begin(tbroker, tid, timeout_ms=1000)
    assert add_partitions(tbroker, tid, pid, epoch, topic_name).status_code == 204
    d = wait_until(lambda: (lambda d: d["state"] == "CompleteAbort" and d)(describe(tbroker, tid)), 20,
                   "the coordinator's abort of the hung transaction")
    assert d["producer_epoch"] == epoch + 1   # the hung producer is fenced
    late = requests.post(txn_url(tbroker, f"/{tid}/commit"), json={"producer_id": pid, "producer_epoch": epoch})
    assert late.status_code == 409 and late.json()["error_code"] == PRODUCER_FENCED_HTTP, late.text


def test_kafka_committed_visible_aborted_never(tbroker, topic_name):
    tbroker.create_topic(topic_name)
    p = transactional_producer(tbroker, "ka-" + topic_name)
    p.init_transactions(20)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic_name, value=b"committed-%d" % i, partition=0)
    p.commit_transaction(20)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic_name, value=b"aborted-%d" % i, partition=0)
    p.flush(20)
    p.abort_transaction(20)
    p.begin_transaction()
    p.produce(topic_name, value=b"last", partition=0)
    p.commit_transaction(20)
    values = read_committed_values(tbroker, topic_name)
    assert values == [b"committed-%d" % i for i in range(5)] + [b"last"]


def test_kafka_zombie_producer_is_fenced(tbroker, topic_name):
    tbroker.create_topic(topic_name)
    tid = "zombie-" + topic_name
    zombie = transactional_producer(tbroker, tid)
    zombie.init_transactions(20)
    zombie.begin_transaction()
    zombie.produce(topic_name, value=b"zombie", partition=0)
    zombie.flush(20)
    fresh = transactional_producer(tbroker, tid)
    fresh.init_transactions(30)   # aborts the zombie's open transaction, bumps the epoch
    fresh.begin_transaction()
    fresh.produce(topic_name, value=b"fresh", partition=0)
    fresh.commit_transaction(20)
    with pytest.raises(KafkaException) as refused:
        zombie.commit_transaction(20)
    assert refused.value.args[0].fatal() or "fenced" in str(refused.value).lower()
    assert read_committed_values(tbroker, topic_name) == [b"fresh"]


def test_kafka_send_offsets_to_transaction_commits_offsets_with_the_transaction(tbroker, topic_name):
    tbroker.create_topic(topic_name)
    group = "g-" + topic_name
    p = transactional_producer(tbroker, "offs-" + topic_name)
    p.init_transactions(20)
    c = Consumer({"bootstrap.servers": tbroker.bootstrap, "group.id": group, "enable.auto.commit": False})

    def committed():
        got = c.committed([TopicPartition(topic_name, 0)], timeout=10)
        return got[0].offset

    metadata = c.consumer_group_metadata()
    # Aborted: the offsets are dropped.
    p.begin_transaction()
    p.produce(topic_name, value=b"x", partition=0)
    p.send_offsets_to_transaction([TopicPartition(topic_name, 0, 7)], metadata, 20)
    p.abort_transaction(20)
    assert committed() < 0   # nothing committed
    # Committed: the offsets become the group's.
    p.begin_transaction()
    p.produce(topic_name, value=b"y", partition=0)
    p.send_offsets_to_transaction([TopicPartition(topic_name, 0, 11)], metadata, 20)
    p.commit_transaction(20)
    wait_until(lambda: committed() == 11, 20, "the transaction's offsets to be committed")
    c.close()


UNSTABLE_OFFSET_COMMIT = 88


def test_offset_fetch_require_stable_answers_unstable_while_the_transactions_offsets_are_pending(tbroker, topic_name):
    """KIP-447 (GroupMetadataManager.getOffsets): while a transaction's offsets are pending
    (TxnOffsetCommit written, the transaction not ended), OffsetFetch v7+ with require_stable
    answers UNSTABLE_OFFSET_COMMIT on that partition (offset -1; v7's top-level error and v8's
    group error stay NONE); without require_stable, and in v6, the last committed offset. Once
    the transaction ends, the stable answer is the offset it committed (or, aborted, the older)."""
    tbroker.create_topic(topic_name, partitions=2)
    group = "stable-" + topic_name
    c = Consumer({"bootstrap.servers": tbroker.bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic_name, 0, 5), TopicPartition(topic_name, 1, 6)], asynchronous=False)
    asked = [(topic_name, [0, 1])]

    def fetch(version, stable):
        return kw.offset_fetch(tbroker.bootstrap, version, group, asked, require_stable=stable)

    p = transactional_producer(tbroker, "stable-" + topic_name)
    p.init_transactions(20)
    for end, expected in (("abort", 5), ("commit", 11)):
        p.begin_transaction()
        p.produce(topic_name, value=b"x", partition=0)
        p.send_offsets_to_transaction([TopicPartition(topic_name, 0, 11)], c.consumer_group_metadata(), 20)
        pending = {(topic_name, 0): (-1, UNSTABLE_OFFSET_COMMIT), (topic_name, 1): (6, 0)}
        last = {(topic_name, 0): (5, 0), (topic_name, 1): (6, 0)}
        assert fetch(7, True) == (0, pending)
        assert fetch(8, True) == (0, pending)
        assert kw.offset_fetch(tbroker.bootstrap, 8, group, None, require_stable=True) == (0, pending)
        assert fetch(7, False) == (0, last)
        assert fetch(6, False) == (0, last)
        getattr(p, end + "_transaction")(20)
        # Until the marker is applied the stable answer may still be UNSTABLE, never the older offset.
        after = {(topic_name, 0): (expected, 0), (topic_name, 1): (6, 0)}
        seen = []
        wait_until(lambda: seen.append(fetch(7, True)) or seen[-1] == (0, after), 20, f"the {end} to be applied")
        assert all(a in ((0, pending), (0, after)) for a in seen), seen
    c.close()


def test_read_committed_committed_after_commit_transaction_is_never_the_older_offset(tbroker, topic_name):
    """The new user's txn_offsets_stale.py: librdkafka asks OffsetFetch with require_stable for a
    read_committed consumer and retries on UNSTABLE_OFFSET_COMMIT, so committed() right after
    commit_transaction() returns the transaction's offset, never the one before it."""
    tbroker.create_topic(topic_name)
    group = "fresh-" + topic_name
    p = transactional_producer(tbroker, "fresh-" + topic_name)
    p.init_transactions(20)
    c = Consumer({"bootstrap.servers": tbroker.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    got = []
    for i in range(1, 11):
        p.begin_transaction()
        p.produce(topic_name, value=b"x", partition=0)
        p.send_offsets_to_transaction([TopicPartition(topic_name, 0, i * 10)], c.consumer_group_metadata(), 20)
        p.commit_transaction(20)
        got.append(c.committed([TopicPartition(topic_name, 0)], timeout=10)[0].offset)
    c.close()
    assert got == [i * 10 for i in range(1, 11)]


V2 = {"Content-Type": "application/vnd.kafka.v2+json"}


def test_http_read_committed_instance_reads_the_offsets_of_a_commit_that_answered(tbroker, topic_name):
    """The HTTP door agrees with OffsetFetch's require_stable: a read_committed REST v2 instance's
    GET .../offsets right after an HTTP commit answered is the transaction's offset, never the
    one before (it waits while the offsets are pending, as the Java consumer's committed() does
    behind Confluent's REST proxy); a read_uncommitted instance is answered at once with the
    last committed offset; and one pending in a transaction left open answers 408, not the older
    offset."""
    tbroker.create_topic(topic_name)
    group, tid = "hs-" + topic_name, "hs-" + topic_name

    def instance(name, isolation):
        r = requests.post(f"{tbroker.url}/consumers/{group}", headers=V2,
                          json={"name": name, "format": "json", "isolation.level": isolation})
        assert r.status_code == 200, r.text
        return r.json()["base_uri"]

    def read(inst):
        return requests.get(inst + "/offsets", headers=V2, json={"partitions": [{"topic": topic_name, "partition": 0}]})

    def send_offsets(pid, epoch, offset):
        body = {"producer_id": pid, "producer_epoch": epoch, "group_id": group,
                "offsets": [{"topic": topic_name, "partition": 0, "offset": offset}]}
        # Right after a commit answered its markers may still be written: 409 40907, retry.
        r = wait_until(lambda: (lambda r: r.status_code != 409 and r)(
            requests.post(txn_url(tbroker, f"/{tid}/offsets"), json=body)), 20, "the offsets call")
        assert r.status_code == 204, r.text

    stable, latest = instance("rc", "read_committed"), instance("ru", "read_uncommitted")
    pid, epoch = begin(tbroker, tid)
    for i in range(1, 6):
        send_offsets(pid, epoch, i * 10)
        c = requests.post(txn_url(tbroker, f"/{tid}/commit"), json={"producer_id": pid, "producer_epoch": epoch})
        assert c.status_code == 200, c.text
        epoch = c.json()["producer_epoch"]
        got = read(stable)
        assert got.status_code == 200, got.text
        assert [o["offset"] for o in got.json()["offsets"]] == [i * 10]
    send_offsets(pid, epoch, 99)   # left open
    assert [o["offset"] for o in read(latest).json()["offsets"]] == [50]
    pending = read(stable)
    assert pending.status_code == 408 and "pending in an open transaction" in pending.json()["message"], pending.text


# ---------------------------------------------------------------- consume-transform-produce under SIGKILL

def run_pipeline_with_kills(b, topic, records, kills, seed):
    """Produces `records` input records (keys k0..k4, each in one of 2 partitions), runs eos_app.py and
    SIGKILLs it `kills` times at seeded moments, restarting it each time, until the output is
    complete; then checks that a read_committed reader of the output sees every input record
    exactly once, in order per key."""
    import os
    import random
    import subprocess
    import sys
    rng = random.Random(seed)
    print(f"eos pipeline seed {seed} (replay with RINGLOG_EOS_SEED={seed})")
    inp, out = topic + "-in", topic + "-out"
    b.create_topic(inp, partitions=2)
    b.create_topic(out, partitions=2)
    p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True})
    for i in range(records):
        key = b"k%d" % (i % 5)
        p.produce(inp, key=key, value=b"%s-%06d" % (key, i), partition=(i % 5) % 2)   # a key stays in one partition
    assert p.flush(30) == 0
    app = [sys.executable, os.path.join(os.path.dirname(__file__), "eos_app.py"), b.bootstrap, inp, out,
           "eos-" + topic, "eos-" + topic, "7"]

    def output_count():
        # While the app runs a transaction is open most of the time: count what is readable.
        return len(read_committed_values(b, out, (0, 1), deadline_s=10, require_end=False))

    for k in range(kills + 1):
        proc = subprocess.Popen(app, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            if k < kills:
                deadline = time.monotonic() + rng.uniform(0.5, 3.0)
                while time.monotonic() < deadline and proc.poll() is None:
                    time.sleep(0.05)
                assert proc.poll() is None, proc.stdout.read().decode(errors="replace")
                proc.kill()
            else:
                wait_until(lambda: output_count() >= records or proc.poll() is not None, 120, "the pipeline's output")
                assert proc.poll() is None, proc.stdout.read().decode(errors="replace")
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    values = read_committed_values(b, out, (0, 1), deadline_s=30)
    expected = sorted(b"k%d-%06d|out" % (i % 5, i) for i in range(records))
    assert sorted(values) == expected, "each input record exactly once in the output"
    by_key = {}
    for v in values:
        by_key.setdefault(v[:2], []).append(v)
    for key, vs in by_key.items():
        assert vs == sorted(vs), f"order of key {key}"


def test_consume_transform_produce_survives_sigkill_short(tbroker, topic_name):
    import os
    seed = int(os.environ.get("RINGLOG_EOS_SEED", "1234"))
    run_pipeline_with_kills(tbroker, topic_name, records=300, kills=3, seed=seed)


@pytest.mark.skipif("not config.getoption('--eos-long', default=False)",
                    reason="the long exactly-once run: pytest --eos-long tests/integration/test_transactions.py")
def test_consume_transform_produce_survives_sigkill_long(tbroker, topic_name):
    import os
    seed = int(os.environ.get("RINGLOG_EOS_SEED", str(int(time.time()))))
    run_pipeline_with_kills(tbroker, topic_name, records=5000, kills=25, seed=seed)


def test_self_links_percent_encode_the_transactional_id(tbroker):
    """A transactional id with '/' in it is one path segment of its links (the self link used to
    be `.../transactions/a/b`, which names no resource)."""
    begin(tbroker, "links/a b")
    r = requests.get(txn_url(tbroker, "/" + urllib.parse.quote("links/a b", safe="")))
    assert r.status_code == 200, r.text
    self_link = r.json()["metadata"]["self"]
    assert self_link.endswith("/transactions/links%2Fa%20b"), self_link
    assert requests.get(self_link).json()["transactional_id"] == "links/a b"
    listed = requests.get(txn_url(tbroker)).json()["data"]
    assert [t["metadata"]["self"] for t in listed if t["transactional_id"] == "links/a b"] == [self_link]


def test_offsets_of_an_unknown_partition_are_refused_on_both_doors(tbroker, topic_name):
    """TxnOffsetCommit answers UNKNOWN_TOPIC_OR_PARTITION for a partition the metadata does not
    hold (KafkaApis), the HTTP route 404 with Confluent's codes, holding none of the offsets."""
    tbroker.create_topic(topic_name)
    group = "g-" + topic_name
    p = transactional_producer(tbroker, "unknown-offs-" + topic_name)
    p.init_transactions(20)
    c = Consumer({"bootstrap.servers": tbroker.bootstrap, "group.id": group, "enable.auto.commit": False})
    p.begin_transaction()
    p.produce(topic_name, value=b"x", partition=0)
    with pytest.raises(KafkaException) as refused:
        p.send_offsets_to_transaction([TopicPartition(topic_name, 0, 3), TopicPartition(topic_name, 99, 7)],
                                      c.consumer_group_metadata(), 20)
    assert "UNKNOWN_TOPIC_OR_PART" in str(refused.value) or "nknown" in str(refused.value), str(refused.value)
    c.close()

    tid = "http-unknown-" + topic_name
    pid, epoch = begin(tbroker, tid)
    for entry, code in (({"topic": topic_name, "partition": 99, "offset": 7}, 40402),
                        ({"topic": "no-such-" + topic_name, "partition": 0, "offset": 7}, 40401)):
        r = requests.post(txn_url(tbroker, f"/{tid}/offsets"),
                          json={"producer_id": pid, "producer_epoch": epoch, "group_id": group,
                                "offsets": [{"topic": topic_name, "partition": 0, "offset": 3}, entry]})
        assert r.status_code == 404 and r.json()["error_code"] == code, r.text


# ---------------------------------------------------------------- the transactional id bound

def test_init_producer_id_past_the_transactional_id_bound_is_refused_with_a_log_line_naming_it(ringlog_bin, tmp_path):
    """Breaker of session 36 (LOW): past transactional_ids_per_partition_max (100,000 ids in one
    __transaction_state partition) InitProducerId answered THROTTLING_QUOTA_EXCEEDED and nothing
    said why: the answer has no message field and no line was logged. The refusal now logs a
    warning naming the limit, the transactional id and the client."""
    import struct

    import kafka_wire as kw
    bound = 100_000
    b = Broker(tmp_path / "data", kafka_port=free_port(),
               extra_sets=["transaction.state.log.num.partitions=1", "log.flush.policy=replication"]).start()
    try:
        def body(i):
            return kw.string(f"tid-{i}") + struct.pack(">i", 60000)

        def first_ready():
            with kw.connect(b.bootstrap) as s:
                _, answer = kw.exchange(s, 22, 0, 0, body(0))
            return struct.unpack_from(">h", answer, 4)[0] == 0

        # The coordinator's partition is created and loaded on first use (retriable codes meanwhile).
        wait_until(first_ready, 30, "the transaction coordinator serving tid-0")
        errors = {}
        window = 32
        socks = [kw.connect(b.bootstrap, timeout=60) for _ in range(4)]
        try:
            ids = list(range(1, bound))
            for start in range(0, bound, window * len(socks)):
                sent = []
                for k, s in enumerate(socks):
                    chunk = ids[start + k * window:start + (k + 1) * window]
                    s.sendall(b"".join(kw.frame(22, 0, i, body(i)) for i in chunk))
                    sent.append(chunk)
                for s, chunk in zip(socks, sent):
                    for _ in chunk:
                        size = struct.unpack(">i", kw.read_exact(s, 4))[0]
                        data = kw.read_exact(s, size)
                        errors[struct.unpack_from(">i", data)[0]] = struct.unpack_from(">h", data, 8)[0]
            assert [i for i, e in errors.items() if e != 0] == [], "an id below the bound was refused"
            _, answer = kw.exchange(socks[0], 22, 0, bound, kw.string("one-too-many") + struct.pack(">i", 60000))
            assert struct.unpack_from(">h", answer, 4)[0] == 89   # THROTTLING_QUOTA_EXCEEDED
        finally:
            for s in socks:
                s.close()
        wait_until(lambda: "InitProducerId refused" in b.log_path.read_text(), 10, "the refusal's warning")
        line = next(x for x in b.log_path.read_text().splitlines() if "InitProducerId refused" in x)
        assert "transactional_ids_per_partition_max (100000)" in line, line
        assert "one-too-many" in line and "transactional.id.expiration.ms" in line, line
    finally:
        assert b.stop() == 0
