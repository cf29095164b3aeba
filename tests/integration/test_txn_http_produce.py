"""Producing inside a transaction over HTTP and WebSocket (issue 16): the producer session of a
transactional.id (POST .../transactions) produces transactional batches with producer_id,
producer_epoch, transactional_id and a per-partition sequence; read_committed readers (a
confluent-kafka consumer and the HTTP direct reader) see them only once the transaction commits,
and never after an abort. Also the breaker's findings of session 9 on the transaction routes:
internal topics, an unknown state filter, control characters and over-long ids, and an abort
right after a commit.
"""
import asyncio
import base64
import json
import struct
import time
import uuid

import pytest
import requests
import websockets
from confluent_kafka import Consumer, TopicPartition

import kafka_wire as kw
from conftest import Broker, free_port, wait_until

PRODUCER_FENCED_HTTP = 40906
CONCURRENT_TRANSACTIONS_HTTP = 40907
BINARY = "application/vnd.kafka.binary.v2+json"


@pytest.fixture
def tbroker(ringlog_bin, tmp_path):
    b = Broker(tmp_path / "ringlog-data", kafka_port=free_port(),
               extra_sets=["transaction.state.log.num.partitions=4"]).start()
    yield b
    if b.proc is not None:
        b.stop()


def txn_url(b, path=""):
    return b.v3("/transactions" + path)


def begin(b, tid):
    r = requests.post(txn_url(b), json={"transactional_id": tid})
    assert r.status_code == 200, r.text
    return r.json()["producer_id"], r.json()["producer_epoch"]


def end(b, tid, pid, epoch, how):
    """Commit or abort; retried while the coordinator answers CONCURRENT_TRANSACTIONS. The
    answer's (producer_id, producer_epoch) of the next transaction."""
    deadline = time.monotonic() + 20
    while True:
        r = requests.post(txn_url(b, f"/{tid}/{how}"), json={"producer_id": pid, "producer_epoch": epoch})
        if r.status_code == 409 and r.json()["error_code"] == CONCURRENT_TRANSACTIONS_HTTP and time.monotonic() < deadline:
            time.sleep(0.02)
            continue
        assert r.status_code == 200, r.text
        return r.json()["producer_id"], r.json()["producer_epoch"]


def describe(b, tid):
    r = requests.get(txn_url(b, "/" + tid))
    assert r.status_code == 200, r.text
    return r.json()


def produce(b, topic, tid, pid, epoch, records):
    """POST .../records in the transaction: `records` as (partition, sequence, value). The
    reports' (partition, offset), in order."""
    body = "".join(json.dumps({"partition_id": p, "sequence": s, "value": {"type": "STRING", "data": v}})
                   for p, s, v in records)
    r = requests.post(b.v3(f"/topics/{topic}/records"),
                      params={"producer_id": pid, "producer_epoch": epoch, "transactional_id": tid},
                      data=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    reports = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    assert all(x["error_code"] == 200 for x in reports), reports
    return [(x["partition_id"], x["offset"]) for x in reports]


def http_values(b, topic, partition, isolation):
    """Every value the HTTP direct reader sees in one partition, following Ringlog-Next-Offset
    past markers and dropped records."""
    out, at = [], 0
    for _ in range(100):
        r = requests.get(f"{b.url}/topics/{topic}/partitions/{partition}/records",
                         params={"offset": at, "isolation_level": isolation}, headers={"Accept": BINARY})
        assert r.status_code == 200, r.text
        out += [base64.b64decode(x["value"]).decode() for x in r.json()]
        nxt = int(r.headers["Ringlog-Next-Offset"])
        if nxt == at:
            return out
        at = nxt
    raise AssertionError("the direct reader never reached the end")


def last_stable_offset(b, topic, partition):
    r = requests.get(f"{b.url}/topics/{topic}/partitions/{partition}/records",
                     params={"offset": 0, "isolation_level": "read_committed"}, headers={"Accept": BINARY})
    assert r.status_code == 200, r.text
    return int(r.headers["Ringlog-Last-Stable-Offset"])


def kafka_read_committed(b, topic, partitions, deadline_s=20):
    """Every value a read_committed confluent-kafka consumer sees, per partition, once it has
    read to each partition's end (the last stable offset)."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "rc-" + uuid.uuid4().hex,
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in partitions])
    out = {p: [] for p in partitions}
    eof = set()
    end_at = time.monotonic() + deadline_s
    try:
        while time.monotonic() < end_at and len(eof) < len(partitions):
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:   # _PARTITION_EOF
                    eof.add(m.partition())
                    continue
                raise AssertionError(m.error())
            out[m.partition()].append(m.value().decode())
    finally:
        c.close()
    assert len(eof) == len(partitions), "the read_committed consumer did not reach the end"
    return out


def test_http_transactional_produce_is_visible_at_commit_and_dropped_at_abort(tbroker, topic_name):
    tbroker.create_topic(topic_name, partitions=2)
    tid = "http-" + topic_name
    pid, epoch = begin(tbroker, tid)

    # Transaction 1: three records to partition 0, two to partition 1; the partitions join the
    # transaction with the produce (no separate add call).
    records = [(0, 0, "c0"), (1, 0, "c1"), (0, 1, "c2"), (1, 1, "c3"), (0, 2, "c4")]
    first = produce(tbroker, topic_name, tid, pid, epoch, records)
    assert first == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]
    d = describe(tbroker, tid)
    assert d["state"] == "Ongoing"
    assert sorted((p["topic"], p["partition"]) for p in d["partitions"]) == [(topic_name, 0), (topic_name, 1)]
    # Open: read_uncommitted sees the records, read_committed waits below them.
    assert http_values(tbroker, topic_name, 0, "read_uncommitted") == ["c0", "c2", "c4"]
    assert http_values(tbroker, topic_name, 0, "read_committed") == []
    assert last_stable_offset(tbroker, topic_name, 0) == 0
    assert kafka_read_committed(tbroker, topic_name, (0, 1)) == {0: [], 1: []}
    # The answer was lost: the same request again is answered with the same offsets, stored once.
    assert produce(tbroker, topic_name, tid, pid, epoch, records) == first
    pid, epoch2 = end(tbroker, tid, pid, epoch, "commit")
    assert epoch2 == epoch + 1   # KIP-890: every end bumps the epoch

    # Transaction 2 (the new epoch numbers from 0 again) is aborted.
    produce(tbroker, topic_name, tid, pid, epoch2, [(0, 0, "a0"), (1, 0, "a1"), (0, 1, "a2")])
    # A produce with the ended transaction's epoch is fenced and stores nothing.
    old = requests.post(tbroker.v3(f"/topics/{topic_name}/records"),
                        params={"producer_id": pid, "producer_epoch": epoch, "transactional_id": tid},
                        json={"partition_id": 0, "sequence": 3, "value": {"type": "STRING", "data": "zombie"}})
    assert old.status_code == 409 and old.json()["error_code"] == PRODUCER_FENCED_HTTP, old.text
    pid, epoch3 = end(tbroker, tid, pid, epoch2, "abort")

    # Transaction 3 commits one more record.
    produce(tbroker, topic_name, tid, pid, epoch3, [(0, 0, "last")])
    end(tbroker, tid, pid, epoch3, "commit")
    wait_until(lambda: describe(tbroker, tid)["state"] == "CompleteCommit", 20, "the last commit's markers")

    committed = {0: ["c0", "c2", "c4", "last"], 1: ["c1", "c3"]}
    assert kafka_read_committed(tbroker, topic_name, (0, 1)) == committed
    for partition in (0, 1):
        assert http_values(tbroker, topic_name, partition, "read_committed") == committed[partition]
    # read_uncommitted still sees the aborted records (Kafka's rule), never the zombie's.
    assert http_values(tbroker, topic_name, 0, "read_uncommitted") == ["c0", "c2", "c4", "a0", "a2", "last"]


def test_http_transactional_produce_refusals(tbroker, topic_name):
    tbroker.create_topic(topic_name)
    tid = "refuse-" + topic_name
    pid, epoch = begin(tbroker, tid)
    url = tbroker.v3(f"/topics/{topic_name}/records")
    rec = {"partition_id": 0, "sequence": 0, "value": {"type": "STRING", "data": "x"}}
    # transactional_id needs the producer it belongs to.
    r = requests.post(url, params={"transactional_id": tid}, json=rec)
    assert r.status_code == 422 and "producer_id" in r.json()["message"], r.text
    # Another producer id than the id's: refused by the coordinator, nothing stored.
    r = requests.post(url, params={"producer_id": pid + 1000, "producer_epoch": epoch, "transactional_id": tid}, json=rec)
    assert r.status_code == 409, r.text
    # An id that never began.
    r = requests.post(url, params={"producer_id": pid, "producer_epoch": epoch, "transactional_id": "none-" + tid},
                      json=rec)
    assert r.status_code == 409, r.text
    # A delivery time inside a transaction.
    delayed = dict(rec, headers=[{"name": "ringlog-delay-ms", "value": base64.b64encode(b"60000").decode()}])
    r = requests.post(url, params={"producer_id": pid, "producer_epoch": epoch, "transactional_id": tid}, json=delayed)
    assert r.status_code in (400, 422) or r.json().get("error_code") != 200, r.text
    assert "transaction" in r.text
    assert http_values(tbroker, topic_name, 0, "read_uncommitted") == []


def test_websocket_transactional_produce(tbroker, topic_name):
    tbroker.create_topic(topic_name)
    tid = "ws-" + topic_name
    pid, epoch = begin(tbroker, tid)
    url = tbroker.url.replace("http://", "ws://") + "/v1/ws"

    def message(mid, epoch, values, first_seq=0):
        return {"type": "produce", "id": mid, "topic": topic_name, "producer_id": pid, "producer_epoch": epoch,
                "transactional_id": tid,
                "records": [{"partition": 0, "sequence": first_seq + i, "value": base64.b64encode(v.encode()).decode()}
                            for i, v in enumerate(values)]}

    async def send_once(msg):
        async with websockets.connect(url) as ws:
            await ws.send(json.dumps(msg))
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

    ack = asyncio.run(send_once(message("m1", epoch, ["w0", "w1"])))
    assert ack["type"] == "produce_ack", ack
    assert [r["offset"] for r in ack["results"]] == [0, 1]
    assert http_values(tbroker, topic_name, 0, "read_committed") == []
    again = asyncio.run(send_once(message("m1", epoch, ["w0", "w1"])))   # resent on a new connection
    assert [r["offset"] for r in again["results"]] == [0, 1]
    _, epoch2 = end(tbroker, tid, pid, epoch, "commit")
    wait_until(lambda: http_values(tbroker, topic_name, 0, "read_committed") == ["w0", "w1"], 20, "the commit")
    ack = asyncio.run(send_once(message("m2", epoch2, ["x0"])))
    assert ack["type"] == "produce_ack", ack
    end(tbroker, tid, pid, epoch2, "abort")
    wait_until(lambda: describe(tbroker, tid)["state"] == "CompleteAbort", 20, "the abort's markers")
    assert kafka_read_committed(tbroker, topic_name, (0,)) == {0: ["w0", "w1"]}
    # transactional_id without a producer is refused by name.
    loose = {"type": "produce", "id": "m3", "topic": topic_name, "transactional_id": tid, "partition": 0,
             "value": None}
    refused = asyncio.run(send_once(loose))
    assert refused["error_code"] == 422 and "producer_id" in refused["message"], refused


# ---------------------------------------------------------------- breaker findings (session 9)

def test_transaction_routes_refuse_internal_topics(tbroker, topic_name):
    tid = "internal-" + topic_name
    pid, epoch = begin(tbroker, tid)
    for internal in ("__consumer_offsets", "__transaction_state"):
        r = requests.post(txn_url(tbroker, f"/{tid}/partitions"),
                          json={"producer_id": pid, "producer_epoch": epoch,
                                "partitions": [{"topic": internal, "partition": 0}]})
        assert r.status_code == 403 and "internal" in r.json()["message"], r.text
    assert describe(tbroker, tid)["partitions"] == []
    assert describe(tbroker, tid)["state"] == "Empty"


def test_transaction_list_refuses_an_unknown_state(tbroker):
    r = requests.get(txn_url(tbroker), params={"state": "Bogus"})
    assert r.status_code == 400, r.text
    for name in ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead"):
        assert name in r.json()["message"]
    assert requests.get(txn_url(tbroker), params={"state": "Ongoing"}).status_code == 200


def test_transactional_id_with_nul_or_over_long_is_refused(tbroker):
    for bad, why in (("a\u0000b", "control character"), ("x" * 1001, "1000")):
        r = requests.post(txn_url(tbroker), json={"transactional_id": bad})
        assert r.status_code == 422 and why in r.json()["message"], r.text
    assert requests.post(txn_url(tbroker), json={"transactional_id": "x" * 1000}).status_code == 200


def test_abort_right_after_a_commit_is_retriable_never_invalid_state(tbroker, topic_name):
    """The breaker saw ~3% of aborts right after a commit answered INVALID_TXN_STATE while the
    commit's markers were written. Each abort is sent at once after the commit's answer: it may
    hear CONCURRENT_TRANSACTIONS (retry), never any other refusal."""
    tbroker.create_topic(topic_name)
    tid = "race-" + topic_name
    pid, epoch = begin(tbroker, tid)
    concurrent = 0
    for i in range(40):
        # The explicit add (not a produce, which waits itself), so this also runs on a binary
        # without HTTP transactional produce: the negative control of session 10 ran it on
        # main's 058783e, where aborts were refused INVALID_TXN_STATE (409 40903).
        while True:
            r = requests.post(txn_url(tbroker, f"/{tid}/partitions"),
                              json={"producer_id": pid, "producer_epoch": epoch,
                                    "partitions": [{"topic": topic_name, "partition": 0}]})
            if r.status_code != 409 or r.json()["error_code"] != CONCURRENT_TRANSACTIONS_HTTP:
                break
        assert r.status_code == 204, r.text
        c = requests.post(txn_url(tbroker, f"/{tid}/commit"), json={"producer_id": pid, "producer_epoch": epoch})
        assert c.status_code == 200, c.text
        epoch = c.json()["producer_epoch"]
        while True:
            a = requests.post(txn_url(tbroker, f"/{tid}/abort"), json={"producer_id": pid, "producer_epoch": epoch})
            if a.status_code == 200:
                epoch = a.json()["producer_epoch"]
                break
            assert a.status_code == 409 and a.json()["error_code"] == CONCURRENT_TRANSACTIONS_HTTP, a.text
            concurrent += 1
    print(f"CONCURRENT_TRANSACTIONS answers before the 40 aborts went through: {concurrent}")
    wait_until(lambda: describe(tbroker, tid)["state"] == "CompleteAbort", 20, "the last abort")
    assert http_values(tbroker, topic_name, 0, "read_committed") == []   # markers only


# ---------------------------------------------------------------- lag counts what read_committed reads

def group_lags(b, group):
    r = requests.get(b.v3(f"/consumer-groups/{group}/lags"))
    assert r.status_code == 200, r.text
    return {(x["topic_name"], x["partition_id"]): (x["current_offset"], x["log_end_offset"], x["lag"])
            for x in r.json()["data"]}


def test_group_lag_skips_markers_and_aborted_records(tbroker, topic_name):
    """A group's lag is what a read_committed reader still has to read: measured to the last
    stable offset, and neither commit/abort markers nor aborted records count (issue 16)."""
    tbroker.create_topic(topic_name)
    tid = "lag-" + topic_name
    group = "lag-g-" + topic_name
    pid, epoch = begin(tbroker, tid)
    produce(tbroker, topic_name, tid, pid, epoch, [(0, 0, "c0"), (0, 1, "c1"), (0, 2, "c2")])   # offsets 0-2
    pid, epoch = end(tbroker, tid, pid, epoch, "commit")                                          # marker 3
    wait_until(lambda: describe(tbroker, tid)["state"] == "CompleteCommit", 20, "the commit's marker")
    c = Consumer({"bootstrap.servers": tbroker.bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic_name, 0, 3)], asynchronous=False)   # read c0..c2
    c.close()
    # Caught up: only the commit marker is left above the committed offset.
    assert group_lags(tbroker, group)[(topic_name, 0)] == (3, 4, 0)
    # The lag history (the console's chart) samples the same figure: 0, not the marker's offset.
    wait_until(lambda: lag_history(tbroker, group), 15, "a lag-history sample")
    produce(tbroker, topic_name, tid, pid, epoch, [(0, 0, "a0"), (0, 1, "a1")])                 # 4-5
    pid, epoch = end(tbroker, tid, pid, epoch, "abort")                                          # marker 6
    wait_until(lambda: describe(tbroker, tid)["state"] == "CompleteAbort", 20, "the abort's marker")
    assert group_lags(tbroker, group)[(topic_name, 0)] == (3, 7, 0)   # aborted records are not to read
    produce(tbroker, topic_name, tid, pid, epoch, [(0, 0, "open")])                              # 7, open
    # The open transaction is above the last stable offset: nothing more to read yet.
    assert group_lags(tbroker, group)[(topic_name, 0)] == (3, 7, 0)
    pid, epoch = end(tbroker, tid, pid, epoch, "commit")                                         # marker 8
    wait_until(lambda: describe(tbroker, tid)["state"] == "CompleteCommit", 20, "the last commit's marker")
    assert group_lags(tbroker, group)[(topic_name, 0)] == (3, 9, 1)   # one record: "open", committed
    wait_until(lambda: lag_history(tbroker, group)[-1:] == [1], 15, "a lag-history sample of 1")
    # Every sample counted records only: offsets would have given 1, 4, 5 or 6 on the way.
    assert set(lag_history(tbroker, group)) <= {0, 1}, lag_history(tbroker, group)


def lag_history(b, group):
    r = requests.get(b.v3(f"/consumer-groups/{group}/lag-history"))
    assert r.status_code == 200, r.text
    return [s["total_lag"] for s in r.json()["data"]]


# ---------------------------------------------------------------- DescribeProducers (Kafka API 61, KIP-664)

def describe_producers(bootstrap, topic, partitions):
    """DescribeProducers v0 (flexible, request header v2) on the Kafka listener. Returns
    {partition: (error_code, [(producer_id, epoch, last_sequence, coordinator_epoch,
    current_txn_start_offset)])}."""
    name = topic.encode()
    body = kw.uvarint(2) + kw.uvarint(len(name) + 1) + name + kw.uvarint(len(partitions) + 1)
    body += b"".join(struct.pack(">i", p) for p in partitions) + b"\x00" + b"\x00"
    header = struct.pack(">hhi", 61, 0, 5) + kw.string("txn-test") + b"\x00"
    with kw.connect(bootstrap) as s:
        s.sendall(struct.pack(">i", len(header + body)) + header + body)
        size = struct.unpack(">i", kw.read_exact(s, 4))[0]
        r = kw.FlexReader(kw.read_exact(s, size))
    assert r.take(">i") == 5
    assert r.uvarint() == 0   # response header tagged fields
    r.take(">i")                   # throttle
    out = {}
    for _ in range(r.uvarint() - 1):
        name_bytes = r.uvarint() - 1   # topic name (read the length before moving pos)
        r.pos += name_bytes
        for _ in range(r.uvarint() - 1):
            index, error = r.take(">i"), r.take(">h")
            n = r.uvarint()
            r.pos += max(0, n - 1)          # error message (null: 0)
            producers = []
            for _ in range(r.uvarint() - 1):
                pid, epoch, last_seq, _ts, coord, start = (r.take(">q"), r.take(">i"), r.take(">i"), r.take(">q"),
                                                           r.take(">i"), r.take(">q"))
                assert r.uvarint() == 0
                producers.append((pid, epoch, last_seq, coord, start))
            assert r.uvarint() == 0
            out[index] = (error, producers)
        assert r.uvarint() == 0
    return out


# ---------------------------------------------------------------- KIP-890 part 1: verified transactional produce

INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48


def raw_txn_produce(b, topic, partition, tid, pid, epoch, sequence, value):
    """One transactional batch of one record in a Kafka Produce v3 with `tid`: the error code."""
    records = kw.batch([(None, value.encode(), [], int(time.time() * 1000))],
                       producer=(pid, epoch, sequence), transactional=True)
    with kw.connect(b.bootstrap) as s:
        _, body = kw.exchange(s, 0, 3, 11, kw.produce_v3(topic, partition, records, transactional_id=tid))
    [(_, got_partition, error, _, _)] = kw.parse_produce_v3(body)
    assert got_partition == partition
    return error


def add_partitions(b, tid, pid, epoch, topic, partitions):
    r = requests.post(txn_url(b, f"/{tid}/partitions"), json={
        "producer_id": pid, "producer_epoch": epoch,
        "partitions": [{"topic": topic, "partition": p} for p in partitions]})
    assert r.status_code == 204, r.text


def test_kafka_transactional_produce_is_verified_with_the_coordinator(tbroker, topic_name):
    """KIP-890 part 1: before a producer's first transactional batch of a transaction on a
    partition, the leader asks the coordinator whether the partition is in that ongoing
    transaction. A batch to a partition never added, or a late batch of a transaction that has
    ended, is refused and opens nothing: such a batch would open a transaction nobody ends (a
    "hanging transaction"), holding every read_committed reader of the partition back for good."""
    tbroker.create_topic(topic_name, partitions=2)
    tid = "verify-" + topic_name
    pid, epoch = begin(tbroker, tid)
    produce(tbroker, topic_name, tid, pid, epoch, [(0, 0, "in")])   # partition 0 joins the transaction
    assert raw_txn_produce(tbroker, topic_name, 1, tid, pid, epoch, 0, "never-added") == INVALID_TXN_STATE
    assert describe_producers(tbroker.bootstrap, topic_name, [1])[1] == (0, [])   # nothing opened
    # Added (AddPartitionsToTxn) but not yet written: the coordinator verifies it, the batch goes in.
    add_partitions(tbroker, tid, pid, epoch, topic_name, [1])
    assert raw_txn_produce(tbroker, topic_name, 1, tid, pid, epoch, 0, "added") == 0
    next_pid, next_epoch = end(tbroker, tid, pid, epoch, "commit")
    wait_until(lambda: describe(tbroker, tid)["state"] == "CompleteCommit", 20, "the commit's markers")
    # A late batch of the ended transaction, at its old epoch: fenced, on a partition the
    # transaction wrote to (the marker bumped its epoch) and on one it never touched alike.
    other = topic_name + "-other"
    tbroker.create_topic(other)
    assert raw_txn_produce(tbroker, topic_name, 0, tid, pid, epoch, 1, "late") == INVALID_PRODUCER_EPOCH
    assert raw_txn_produce(tbroker, other, 0, tid, pid, epoch, 0, "late") == INVALID_PRODUCER_EPOCH
    assert describe_producers(tbroker.bootstrap, other, [0])[0] == (0, [])
    # The new epoch with no transaction open at the coordinator: refused too.
    assert raw_txn_produce(tbroker, other, 0, tid, next_pid, next_epoch, 0, "no-txn") == INVALID_TXN_STATE
    # Nothing hangs: a read_committed reader reads both partitions to their end.
    assert http_values(tbroker, topic_name, 0, "read_committed") == ["in"]
    assert http_values(tbroker, topic_name, 1, "read_committed") == ["added"]
    assert http_values(tbroker, other, 0, "read_committed") == []


TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53


def test_transactional_batch_without_a_transactional_id_is_refused(tbroker, topic_name):
    """The breaker's finding of session 11: a transactional batch in a Produce whose
    transactional_id is null or empty (or a Produce v2, which has none) skipped the KIP-890
    verification and opened a transaction no coordinator knows, holding read_committed readers
    at its offset for good. Refused as Kafka does, and nothing is opened."""
    tbroker.create_topic(topic_name, partitions=3)
    for partition, version, tid in ((0, 3, None), (1, 3, ""), (2, 2, None)):
        records = kw.batch([(None, b"stray", [], int(time.time() * 1000))], producer=(777777, 0, 0), transactional=True)
        with kw.connect(tbroker.bootstrap) as s:
            _, body = kw.exchange(s, 0, version, 1, kw.produce_v3(topic_name, partition, records,
                                                                  transactional_id=tid, version=version))
        [(_, _, error, _, _)] = kw.parse_produce_v3(body)
        assert error == TRANSACTIONAL_ID_AUTHORIZATION_FAILED, (partition, version, tid, error)
    assert describe_producers(tbroker.bootstrap, topic_name, [0, 1, 2]) == {p: (0, []) for p in range(3)}
    # Later records stay readable at read_committed: nothing hangs.
    for p in range(3):
        r = requests.post(tbroker.v3(f"/topics/{topic_name}/records"), headers={"Content-Type": "application/json"},
                          data=json.dumps({"partition_id": p, "value": {"type": "STRING", "data": "plain"}}))
        assert r.status_code == 200, r.text
        assert http_values(tbroker, topic_name, p, "read_committed") == ["plain"]


INVALID_RECORD = 87


def test_transactional_produce_with_two_batches_is_refused(tbroker, topic_name):
    """The breaker's finding of session 11: the leader verified the first transactional batch of
    a partition's record set only, so a second batch of another producer (one no coordinator
    knows) rode along and opened a transaction nobody ends. Refused whole, as Kafka takes one
    batch per partition, and nothing is opened."""
    tbroker.create_topic(topic_name)
    tid = "two-" + topic_name
    pid, epoch = begin(tbroker, tid)
    add_partitions(tbroker, tid, pid, epoch, topic_name, [0])
    now = int(time.time() * 1000)
    records = kw.batch([(None, b"legit", [], now)], producer=(pid, epoch, 0), transactional=True) + \
        kw.batch([(None, b"stowaway", [], now)], producer=(999999, 0, 0), transactional=True)
    with kw.connect(tbroker.bootstrap) as s:
        _, body = kw.exchange(s, 0, 3, 1, kw.produce_v3(topic_name, 0, records, transactional_id=tid))
    assert kw.parse_produce_v3(body)[0][2] == INVALID_RECORD
    assert describe_producers(tbroker.bootstrap, topic_name, [0])[0] == (0, [])
    end(tbroker, tid, pid, epoch, "commit")
    wait_until(lambda: describe(tbroker, tid)["state"] == "CompleteCommit", 20, "the commit's marker")
    r = requests.post(tbroker.v3(f"/topics/{topic_name}/records"), headers={"Content-Type": "application/json"},
                      data=json.dumps({"partition_id": 0, "value": {"type": "STRING", "data": "after"}}))
    assert r.status_code == 200, r.text
    assert http_values(tbroker, topic_name, 0, "read_committed") == ["after"]   # nothing hangs


def test_describe_producers_shows_the_open_transaction(tbroker, topic_name):
    tbroker.create_topic(topic_name, partitions=2)
    tid = "dp-" + topic_name
    pid, epoch = begin(tbroker, tid)
    produce(tbroker, topic_name, tid, pid, epoch, [(0, 0, "a"), (0, 1, "b"), (0, 2, "c")])
    got = describe_producers(tbroker.bootstrap, topic_name, [0, 1, 7])
    assert got[0] == (0, [(pid, epoch, 2, -1, 0)])   # open since offset 0, last sequence 2
    assert got[1] == (0, [])
    assert got[7][0] == 3   # UNKNOWN_TOPIC_OR_PARTITION
    end(tbroker, tid, pid, epoch, "commit")
    wait_until(lambda: describe(tbroker, tid)["state"] == "CompleteCommit", 20, "the commit's marker")
    (error, [(p, e, _seq, _coord, start)]) = describe_producers(tbroker.bootstrap, topic_name, [0])[0]
    assert (error, p, e, start) == (0, pid, epoch + 1, -1)   # the marker bumped the epoch; nothing open
