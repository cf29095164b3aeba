"""The partition side of transactions (issue 16, KIP-98) against the real binary: transactional
batches produced with raw Kafka frames (each in a transaction begun and added over HTTP, so the
leader's KIP-890 verification admits it; the coordinator never ends them here), transaction
markers written over the cluster listener with Kafka's WriteTxnMarkers (as a
coordinator on another broker sends them), and read_committed on every read path: the HTTP
direct partition read, the NDJSON stream, a WebSocket subscription, a REST v2 consumer with
isolation.level, Kafka Fetch with librdkafka (confluent-kafka and kcat), ListOffsets. Then a
SIGKILL: the open transaction and the aborted-transaction index come back from disk.
"""
import asyncio
import base64
import json
import shutil
import struct
import subprocess
import time

import pytest
import requests
import websockets
from confluent_kafka import Consumer, TopicPartition
from kafka.record.default_records import DefaultRecordBatchBuilder

import kafka_wire as kw
from conftest import Broker, free_port, wait_until

API_WRITE_TXN_MARKERS = 27
INVALID_PRODUCER_EPOCH = 47
DEADLINE_S = 20
BINARY = "application/vnd.kafka.binary.v2+json"


@pytest.fixture
def tbroker(ringlog_bin, tmp_path):
    """A broker with HTTP, Kafka and cluster listeners, restartable on the same data."""
    cluster_port = free_port()
    b = Broker(tmp_path / "ringlog-data", kafka_port=free_port())
    b.cluster_port = cluster_port
    b.extra_sets = [f"listeners=http://127.0.0.1:{b.port},kafka://127.0.0.1:{b.kafka_port},"
                    f"cluster://127.0.0.1:{cluster_port}"]
    b.start()
    yield b
    if b.proc is not None:
        b.stop()


# ---------------------------------------------------------------- raw Kafka frames

def txn_batch(pid, epoch, seq, values, transactional=True):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional, producer_id=pid,
                                  producer_epoch=epoch, base_sequence=seq, batch_size=1 << 20)
    for i, v in enumerate(values):
        b.append(i, timestamp=int(time.time() * 1000), key=None, value=v.encode(), headers=[])
    return bytes(b.build())


def begin_txn(b, tid, topic):
    """A transaction of `tid` (HTTP) with partition 0 of `topic` added, so that its leader's
    KIP-890 verification lets the raw transactional batches in; its markers are then written by
    hand (WriteTxnMarkers). A long timeout: the coordinator never ends it during the test."""
    r = requests.post(b.v3("/transactions"), json={"transactional_id": tid, "transaction_timeout_ms": 900000})
    assert r.status_code == 200, r.text
    pid, epoch = r.json()["producer_id"], r.json()["producer_epoch"]
    r = requests.post(b.v3(f"/transactions/{tid}/partitions"), json={
        "producer_id": pid, "producer_epoch": epoch, "partitions": [{"topic": topic, "partition": 0}]})
    assert r.status_code == 204, r.text
    return pid, epoch


def produce(bootstrap, topic, batch, transactional_id=None):
    with kw.connect(bootstrap) as s:
        _, body = kw.exchange(s, kw.API_PRODUCE, 3, 1, kw.produce_v3(topic, 0, batch, transactional_id=transactional_id))
    (_, _, error, base_offset, _), = kw.parse_produce_v3(body)
    assert error == 0, error
    return base_offset


def write_txn_markers(cluster_port, markers):
    """WriteTxnMarkers v1 (flexible, request header v2) on the cluster listener: markers are
    (producer_id, epoch, commit, coordinator_epoch, topic, [partitions]). Returns
    [(producer_id, [(topic, partition, error)])]."""
    body = kw.uvarint(len(markers) + 1)
    for pid, epoch, commit, coordinator_epoch, topic, partitions in markers:
        name = topic.encode()
        body += struct.pack(">qh?", pid, epoch, commit)
        body += kw.uvarint(2) + kw.uvarint(len(name) + 1) + name + kw.uvarint(len(partitions) + 1)
        body += b"".join(struct.pack(">i", p) for p in partitions) + b"\x00"
        body += struct.pack(">i", coordinator_epoch) + b"\x00"
    body += b"\x00"
    # The cluster listener serves nodes only: this stands in for the coordinator node 99 (a client
    # id that is not a node's is refused, as a Kafka client's is).
    header = struct.pack(">hhi", API_WRITE_TXN_MARKERS, 1, 9) + kw.string("ringlog-node-99") + b"\x00"
    with kw.connect(f"127.0.0.1:{cluster_port}", timeout=DEADLINE_S) as s:
        s.sendall(struct.pack(">i", len(header + body)) + header + body)
        size = struct.unpack(">i", kw.read_exact(s, 4))[0]
        r = kw.FlexReader(kw.read_exact(s, size))
    assert r.take(">i") == 9
    assert r.uvarint() == 0   # response header tagged fields
    out = []
    for _ in range(r.uvarint() - 1):
        pid = r.take(">q")
        results = []
        for _ in range(r.uvarint() - 1):
            length = r.uvarint() - 1
            name = r.data[r.pos:r.pos + length]
            r.pos += length
            for _ in range(r.uvarint() - 1):
                results.append((name.decode(), r.take(">i"), r.take(">h")))
                assert r.uvarint() == 0
            assert r.uvarint() == 0
        assert r.uvarint() == 0
        out.append((pid, results))
    return out


# ---------------------------------------------------------------- readers

def http_read(b, topic, offset, isolation=None):
    params = {"offset": offset}
    if isolation:
        params["isolation_level"] = isolation
    r = requests.get(f"{b.url}/topics/{topic}/partitions/0/records", params=params, headers={"Accept": BINARY})
    assert r.status_code == 200, r.text
    return r


def http_values(b, topic, isolation=None):
    """Every value a direct reader sees, following Ringlog-Next-Offset past markers."""
    out, at = [], 0
    for _ in range(50):
        r = http_read(b, topic, at, isolation)
        out += [base64.b64decode(x["value"]).decode() for x in r.json()]
        nxt = int(r.headers["Ringlog-Next-Offset"])
        if nxt == at:
            return out
        at = nxt
    raise AssertionError("the direct reader never reached the end")


def ndjson_values(b, topic, isolation, count):
    r = requests.get(f"{b.url}/topics/{topic}/partitions/0/records",
                     params={"offset": 0, "isolation_level": isolation, "timeout": 3000},
                     headers={"Accept": "application/x-ndjson"}, stream=True, timeout=DEADLINE_S)
    assert r.status_code == 200, r.text
    out = []
    for line in r.iter_lines():
        if line:
            out.append(base64.b64decode(json.loads(line)["value"]).decode())
        if len(out) == count:
            break
    r.close()
    return out


def ws_values(b, topic, count):
    async def go():
        async with websockets.connect(f"ws://127.0.0.1:{b.port}/v1/ws") as ws:
            await ws.send(json.dumps({"type": "subscribe", "id": "s", "topic": topic, "partition": 0, "offset": 0,
                                      "isolation_level": "read_committed"}))
            sub = json.loads(await asyncio.wait_for(ws.recv(), DEADLINE_S))
            assert sub["type"] == "subscribed", sub
            await ws.send(json.dumps({"type": "credit", "records": 100}))
            got = []
            while len(got) < count:
                m = json.loads(await asyncio.wait_for(ws.recv(), DEADLINE_S))
                assert m["type"] == "record", m
                got.append(base64.b64decode(m["value"]).decode())
            # Nothing more comes: the aborted and open records stay hidden.
            await ws.send(json.dumps({"type": "ping", "id": "p"}))
            m = json.loads(await asyncio.wait_for(ws.recv(), DEADLINE_S))
            assert m == {"type": "pong", "id": "p"}, m
            return got
    return asyncio.run(go())


def librdkafka_values(b, topic, isolation):
    """Every value a librdkafka consumer with isolation.level reads to its end."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "unused", "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": isolation})
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    end = time.monotonic() + DEADLINE_S
    try:
        while time.monotonic() < end:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:   # _PARTITION_EOF
                    return out
                raise AssertionError(m.error())
            out.append(m.value().decode())
        raise AssertionError("no end of partition within the deadline")
    finally:
        c.close()


def watermarks(b, topic, isolation):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "unused", "isolation.level": isolation})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=DEADLINE_S)
    finally:
        c.close()


def v2_consumer_values(b, topic, count):
    group = f"g-{topic}"
    r = requests.post(f"{b.url}/consumers/{group}", json={"isolation.level": "read_committed",
                                                          "auto.offset.reset": "earliest"},
                      headers={"Content-Type": "application/vnd.kafka.v2+json"})
    assert r.status_code == 200, r.text
    base = r.json()["base_uri"]
    r = requests.post(base + "/assignments", json={"partitions": [{"topic": topic, "partition": 0}]},
                      headers={"Content-Type": "application/vnd.kafka.v2+json"})
    assert r.status_code == 204, r.text
    out = []
    end = time.monotonic() + DEADLINE_S
    while len(out) < count and time.monotonic() < end:
        r = requests.get(base + "/records", params={"timeout": 500}, headers={"Accept": BINARY})
        assert r.status_code == 200, r.text
        out += [base64.b64decode(x["value"]).decode() for x in r.json()]
    requests.delete(base)
    return out


# ---------------------------------------------------------------- the test

def test_read_committed_on_every_path(tbroker):
    b = tbroker
    topic = "txp"
    b.create_topic(topic)
    aborted_pid, epoch = begin_txn(b, "txp-aborted", topic)
    committed_pid, committed_epoch = begin_txn(b, "txp-committed", topic)
    open_pid, open_epoch = begin_txn(b, "txp-open", topic)
    assert committed_epoch == open_epoch == epoch

    assert produce(b.bootstrap, topic, txn_batch(-1, -1, -1, ["plain-0"], transactional=False)) == 0
    assert produce(b.bootstrap, topic, txn_batch(aborted_pid, epoch, 0, ["abort-0", "abort-1"]), "txp-aborted") == 1
    assert produce(b.bootstrap, topic, txn_batch(committed_pid, epoch, 0, ["commit-0"]), "txp-committed") == 3
    assert produce(b.bootstrap, topic, txn_batch(-1, -1, -1, ["plain-1"], transactional=False)) == 4

    # Both transactions open: a read_committed reader stops at the first one's first offset.
    r = http_read(b, topic, 0, "read_committed")
    assert [base64.b64decode(x["value"]).decode() for x in r.json()] == ["plain-0"]
    assert r.headers["Ringlog-Last-Stable-Offset"] == "1"
    assert watermarks(b, topic, "read_committed") == (0, 1)
    assert watermarks(b, topic, "read_uncommitted") == (0, 5)

    results = write_txn_markers(b.cluster_port, [(aborted_pid, epoch, False, 0, topic, [0]),
                                                 (committed_pid, epoch, True, 0, topic, [0, 7])])
    assert results == [(aborted_pid, [(topic, 0, 0)]), (committed_pid, [(topic, 0, 0), (topic, 7, 3)])]
    # A marker of an older producer epoch is refused (Kafka's rule; KIP-890 bumps it each end).
    assert write_txn_markers(b.cluster_port, [(committed_pid, epoch + 1, True, 0, topic, [0])]) == \
        [(committed_pid, [(topic, 0, 0)])]
    assert write_txn_markers(b.cluster_port, [(committed_pid, epoch, True, 0, topic, [0])]) == \
        [(committed_pid, [(topic, 0, INVALID_PRODUCER_EPOCH)])]
    # A third transaction stays open: read_committed readers wait before it.
    open_offset = produce(b.bootstrap, topic, txn_batch(open_pid, epoch, 0, ["open-0"]), "txp-open")
    assert open_offset == 8   # after markers at 5, 6 and 7

    committed = ["plain-0", "commit-0", "plain-1"]
    everything = ["plain-0", "abort-0", "abort-1", "commit-0", "plain-1", "open-0"]
    assert http_values(b, topic, "read_committed") == committed
    assert http_values(b, topic) == everything   # read_uncommitted stays the default; markers are never records
    assert http_read(b, topic, 0, "read_committed").headers["Ringlog-Last-Stable-Offset"] == str(open_offset)
    r = requests.get(f"{b.url}/topics/{topic}/partitions/0/records", params={"offset": 0, "isolation_level": "dirty"},
                     headers={"Accept": BINARY})
    assert r.status_code == 422 and "isolation_level" in r.json()["message"], r.text
    assert ndjson_values(b, topic, "read_committed", 3) == committed
    assert ws_values(b, topic, 3) == committed
    assert v2_consumer_values(b, topic, 3) == committed
    assert librdkafka_values(b, topic, "read_committed") == committed
    assert librdkafka_values(b, topic, "read_uncommitted") == everything
    assert watermarks(b, topic, "read_committed") == (0, open_offset)
    if shutil.which("kcat"):
        out = subprocess.run(["kcat", "-C", "-b", b.bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e",
                              "-q", "-X", "isolation.level=read_committed", "-f", "%s\\n"],
                             capture_output=True, text=True, timeout=DEADLINE_S)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == committed

    # SIGKILL: the open transaction and the index are rebuilt from disk.
    b.kill()
    b.start()
    wait_until(lambda: http_read(b, topic, 0, "read_committed").headers["Ringlog-Last-Stable-Offset"] == str(open_offset),
               DEADLINE_S, "the partition's last stable offset after the restart")
    assert http_values(b, topic, "read_committed") == committed
    assert librdkafka_values(b, topic, "read_committed") == committed
    assert write_txn_markers(b.cluster_port, [(open_pid, epoch, True, 0, topic, [0])]) == [(open_pid, [(topic, 0, 0)])]
    assert http_values(b, topic, "read_committed") == committed + ["open-0"]
    assert librdkafka_values(b, topic, "read_committed") == committed + ["open-0"]
