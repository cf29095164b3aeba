"""Idempotent producers (issue 16, KIP-98) against the real binary: confluent-kafka with
enable.idempotence=true, raw InitProducerId + Produce frames resent over new connections (the
retry of a lost answer), the HTTP producer sessions, and broker restarts (clean and SIGKILL)
that must keep the producer state, so that a retry after the restart is still a duplicate.
"""
import struct
import subprocess
import time

import pytest
import requests
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka.record.default_records import DefaultRecordBatchBuilder

import kafka_wire as kw
from conftest import Broker, free_port

API_INIT_PRODUCER_ID = 22
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47


@pytest.fixture
def ibroker(ringlog_bin, tmp_path):
    """A broker of this test's own (HTTP and Kafka listeners), restartable on the same data."""
    b = Broker(tmp_path / "ringlog-data", kafka_port=free_port()).start()
    yield b
    if b.proc is not None:
        b.stop()


def restart(b, kill=False):
    if kill:
        b.kill()
    else:
        assert b.stop() == 0
    return b.start()


def init_producer_id(bootstrap):
    """InitProducerId v0 without a transactional.id: (error, producer_id, producer_epoch)."""
    with kw.connect(bootstrap) as s:
        _, body = kw.exchange(s, API_INIT_PRODUCER_ID, 0, 7, kw.string(None) + struct.pack(">i", 60000))
    r = kw.Reader(body)
    r.take(">i")   # throttle_time_ms
    return r.take(">h"), r.take(">q"), r.take(">h")


def idempotent_batch(pid, epoch, seq, values):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=pid,
                                  producer_epoch=epoch, base_sequence=seq, batch_size=1 << 20)
    for i, v in enumerate(values):
        b.append(i, timestamp=int(time.time() * 1000), key=None, value=v, headers=[])
    return bytes(b.build())


def produce_once(bootstrap, topic, partition, batch):
    """One Produce v3 (acks=all) on a connection of its own, as a client retrying after a lost
    answer would: (error, base_offset)."""
    with kw.connect(bootstrap) as s:
        _, body = kw.exchange(s, kw.API_PRODUCE, 3, 1, kw.produce_v3(topic, partition, batch))
    (_, _, error, base_offset, _), = kw.parse_produce_v3(body)
    return error, base_offset


def values_in(bootstrap, topic, partition):
    """Every record value of a partition, in offset order, read with librdkafka."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, partition, 0)])
    out = []
    end = time.monotonic() + 20
    try:
        while time.monotonic() < end:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:   # _PARTITION_EOF: everything read
                    break
                raise AssertionError(m.error())
            out.append(m.value())
    finally:
        c.close()
    return out


def test_confluent_kafka_idempotent_producer_stores_every_record_once_in_order(ibroker, topic_name):
    ibroker.create_topic(topic_name, partitions=3)
    p = Producer({"bootstrap.servers": ibroker.bootstrap, "enable.idempotence": True, "linger.ms": 5,
                  "batch.num.messages": 50})
    failures = []
    count = 3000
    for i in range(count):
        p.produce(topic_name, key=f"k{i % 7}".encode(), value=f"{i}".encode(),
                  on_delivery=lambda err, msg: err and failures.append(err))
        if i % 500 == 0:
            p.poll(0)
    assert p.flush(30) == 0
    assert failures == []
    seen = []
    for partition in range(3):
        values = [int(v) for v in values_in(ibroker.bootstrap, topic_name, partition)]
        assert values == sorted(values), f"partition {partition} out of order"
        seen += values
    assert sorted(seen) == list(range(count))


def test_a_resent_produce_gets_the_original_offset_and_is_stored_once(ibroker, topic_name, ringlog_bin):
    ibroker.create_topic(topic_name)
    error, pid, epoch = init_producer_id(ibroker.bootstrap)
    assert error == 0 and pid >= 0 and epoch == 0
    error2, pid2, _ = init_producer_id(ibroker.bootstrap)
    assert error2 == 0 and pid2 != pid
    # Someone else's records first, so offsets do not start at 0 by chance.
    assert produce_once(ibroker.bootstrap, topic_name, 0, kw.batch([(None, b"other", None, 1)]))[0] == 0
    first = idempotent_batch(pid, epoch, 0, [b"a0", b"a1", b"a2"])
    assert produce_once(ibroker.bootstrap, topic_name, 0, first) == (0, 1)
    # The same bytes again, on a new connection: the original offset, nothing stored.
    assert produce_once(ibroker.bootstrap, topic_name, 0, first) == (0, 1)
    second = idempotent_batch(pid, epoch, 3, [b"a3"])
    assert produce_once(ibroker.bootstrap, topic_name, 0, second) == (0, 4)
    assert produce_once(ibroker.bootstrap, topic_name, 0, first) == (0, 1)
    # A gap in the sequence is refused.
    gap = idempotent_batch(pid, epoch, 9, [b"lost"])
    assert produce_once(ibroker.bootstrap, topic_name, 0, gap)[0] == OUT_OF_ORDER_SEQUENCE_NUMBER
    assert values_in(ibroker.bootstrap, topic_name, 0) == [b"other", b"a0", b"a1", b"a2", b"a3"]

    # A clean restart keeps the producer state (the close-time snapshot): still duplicates.
    restart(ibroker)
    assert produce_once(ibroker.bootstrap, topic_name, 0, second) == (0, 4)
    assert produce_once(ibroker.bootstrap, topic_name, 0, first) == (0, 1)
    third = idempotent_batch(pid, epoch, 4, [b"a4"])
    assert produce_once(ibroker.bootstrap, topic_name, 0, third) == (0, 5)
    # SIGKILL: the state is rebuilt from the last snapshot and the log.
    restart(ibroker, kill=True)
    assert produce_once(ibroker.bootstrap, topic_name, 0, third) == (0, 5)
    assert produce_once(ibroker.bootstrap, topic_name, 0, second) == (0, 4)
    # Ids handed out before the restart are never handed out again (ProducerIdsRecord blocks).
    error3, pid3, _ = init_producer_id(ibroker.bootstrap)
    assert error3 == 0 and pid3 not in (pid, pid2)
    assert values_in(ibroker.bootstrap, topic_name, 0) == [b"other", b"a0", b"a1", b"a2", b"a3", b"a4"]
    # The close-time snapshot holds the producer; dump-log prints it.
    assert ibroker.stop() == 0
    snapshots = sorted((ibroker.data_dir / f"{topic_name}-0").glob("*.snapshot"))
    assert snapshots, list((ibroker.data_dir / f"{topic_name}-0").iterdir())
    dumped = subprocess.run([str(ringlog_bin), "dump-log", str(snapshots[-1])], capture_output=True, text=True)
    assert dumped.returncode == 0, dumped.stdout + dumped.stderr
    assert f"producerId: {pid} producerEpoch: 0" in dumped.stdout
    assert "firstSequence: 4 lastSequence: 4 baseOffset: 5 lastOffset: 5" in dumped.stdout, dumped.stdout


def test_api_versions_lists_init_producer_id(ibroker):
    with kw.connect(ibroker.bootstrap) as s:
        _, body = kw.exchange(s, kw.API_VERSIONS, 0, 1, b"")
    r = kw.Reader(body)
    assert r.take(">h") == 0
    keys = {}
    for _ in range(r.take(">i")):
        k, lo, hi = r.take(">h"), r.take(">h"), r.take(">h")
        keys[k] = (lo, hi)
    assert keys[API_INIT_PRODUCER_ID] == (0, 5)


# ---------------------------------------------------------------- HTTP producer sessions

def test_http_producer_session_resend_gets_the_same_offsets(ibroker, topic_name):
    ibroker.create_topic(topic_name, partitions=2)
    r = requests.post(ibroker.v3("/producers"))
    assert r.status_code == 201, r.text
    pid, epoch = r.json()["producer_id"], r.json()["producer_epoch"]
    assert epoch == 0
    url = ibroker.v3(f"/topics/{topic_name}/records")
    params = {"producer_id": pid, "producer_epoch": epoch}
    body = "".join(
        '{"partition_id": %d, "sequence": %d, "value": {"type": "STRING", "data": "r%d"}}' % (i % 2, i // 2, i)
        for i in range(10))

    def send():
        resp = requests.post(url, params=params, data=body, headers={"Content-Type": "application/json"})
        assert resp.status_code == 200, resp.text
        reports = [__import__("json").loads(line) for line in resp.text.splitlines() if line.strip()]
        assert all(x["error_code"] == 200 for x in reports), reports
        return [(x["partition_id"], x["offset"]) for x in reports]

    first = send()
    assert sorted(first) == [(p, o) for p in (0, 1) for o in range(5)]
    assert send() == first            # the answer was lost: the same request, the same offsets
    restart(ibroker)
    assert send() == first            # and after a restart
    for partition in (0, 1):
        assert values_in(ibroker.bootstrap, topic_name, partition) == [f"r{i}".encode() for i in range(partition, 10, 2)]

    # A skipped sequence is 409 OUT_OF_ORDER_SEQUENCE_NUMBER, named.
    gap = requests.post(url, params=params, json={"partition_id": 0, "sequence": 9, "value": {"type": "STRING", "data": "x"}})
    assert gap.status_code == 409 and gap.json()["error_code"] == 40905, gap.text
    assert "expects 5" in gap.json()["message"]
    # Records of an idempotent produce name their partition and sequence.
    missing = requests.post(url, params=params, json={"value": {"type": "STRING", "data": "x"}})
    assert missing.status_code in (400, 422) or missing.json().get("error_code") != 200, missing.text
    # An id never handed out is 404; half of the pair is 422.
    unknown = requests.post(url, params={"producer_id": pid + 100000, "producer_epoch": 0},
                            json={"partition_id": 0, "sequence": 0, "value": {"type": "STRING", "data": "x"}})
    assert unknown.status_code == 404 and unknown.json()["error_code"] == 40405, unknown.text
    half = requests.post(url, params={"producer_id": pid}, json={"partition_id": 0, "sequence": 0})
    assert half.status_code == 422 and "producer_epoch" in half.json()["message"], half.text


def test_http_producer_session_refuses_a_delayed_record(ibroker, topic_name):
    """A delivery time inside an idempotent session is refused, nothing stored: its delayed copy
    would be delayed (and delivered) once per resend (breaker: three resends, three records)."""
    ibroker.create_topic(topic_name)
    pid = requests.post(ibroker.v3("/producers")).json()["producer_id"]
    url = ibroker.v3(f"/topics/{topic_name}/records")
    record = {"partition_id": 0, "sequence": 0, "delay_ms": 100, "value": {"type": "STRING", "data": "late"}}
    for _ in range(2):
        r = requests.post(url, params={"producer_id": pid, "producer_epoch": 0}, json=record)
        reports = [__import__("json").loads(line) for line in r.text.splitlines() if line.strip()]
        assert r.status_code == 422 or reports[0]["error_code"] == 422, r.text
        assert "idempotent producer session" in r.text, r.text
    # Sequence 0 is still the next one: the refused record took none.
    ok = requests.post(url, params={"producer_id": pid, "producer_epoch": 0},
                       json={"partition_id": 0, "sequence": 0, "value": {"type": "STRING", "data": "now"}})
    assert ok.status_code == 200 and '"error_code":200' in ok.text.replace(" ", ""), ok.text
    # No delayed copy appears later: 2 s is twenty times the 100 ms delay asked for.
    deadline = time.time() + 2
    while time.time() < deadline:
        assert values_in(ibroker.bootstrap, topic_name, 0) == [b"now"]
        time.sleep(0.5)


def test_http_batch_produce_is_idempotent(ibroker, topic_name):
    ibroker.create_topic(topic_name)
    pid = requests.post(ibroker.v3("/producers")).json()["producer_id"]
    url = ibroker.v3(f"/topics/{topic_name}/records:batch")
    body = {"entries": [{"id": str(i), "partition_id": 0, "sequence": i, "value": {"type": "STRING", "data": f"b{i}"}}
                        for i in range(20)]}
    first = requests.post(url, params={"producer_id": pid, "producer_epoch": 0}, json=body)
    assert first.status_code == 207 and first.json()["failures"] == [], first.text
    again = requests.post(url, params={"producer_id": pid, "producer_epoch": 0}, json=body)
    assert [s["offset"] for s in again.json()["successes"]] == [s["offset"] for s in first.json()["successes"]]
    assert len(values_in(ibroker.bootstrap, topic_name, 0)) == 20


def test_http_resent_idempotent_record_answers_the_stored_timestamp(ibroker, topic_name):
    """A resent idempotent v3 produce (same producer_id and sequence) is a duplicate: Kafka's answer
    carries the original batch's offset and timestamp (UnifiedLog: setLogAppendTime(duplicate.
    timestamp)). ringlog answered the original offset with the retry's fresh timestamp."""
    ibroker.create_topic(topic_name)
    pid = requests.post(ibroker.v3("/producers")).json()["producer_id"]
    url = ibroker.v3(f"/topics/{topic_name}/records")
    params = {"producer_id": pid, "producer_epoch": 0}
    record = {"partition_id": 0, "sequence": 0, "value": {"type": "STRING", "data": "once"}}
    first = requests.post(url, params=params, json=record)
    assert first.status_code == 200 and first.json()["error_code"] == 200, first.text
    started_ms = time.time() * 1000
    from conftest import wait_until
    wait_until(lambda: time.time() * 1000 >= started_ms + 20, 1, "the clock to move on")   # the retry's own time differs
    again = requests.post(url, params=params, json=record)
    assert again.status_code == 200, again.text
    assert again.json()["offset"] == first.json()["offset"] == 0
    assert again.json()["timestamp"] == first.json()["timestamp"], (first.json(), again.json())
    assert values_in(ibroker.bootstrap, topic_name, 0) == [b"once"]


def test_retention_deleting_a_producers_segments_keeps_it_known(ringlog_bin, tmp_path, topic_name):
    b = Broker(tmp_path / "ringlog-data", extra_sets=["log.retention.check.interval.ms=1000"],
               kafka_port=free_port()).start()
    try:
        b.create_topic(topic_name, configs={"segment.bytes": "1024", "retention.bytes": "2048"})
        _, pid, epoch = init_producer_id(b.bootstrap)
        mine = idempotent_batch(pid, epoch, 0, [b"mine"])
        assert produce_once(b.bootstrap, topic_name, 0, mine) == (0, 0)
        # Others' records roll many segments past it.
        for i in range(60):
            assert produce_once(b.bootstrap, topic_name, 0, kw.batch([(None, b"x" * 200, None, 1)]))[0] == 0
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "unused"})
        try:
            def log_start():
                low, _ = c.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=5, cached=False)
                return low > 0

            from conftest import wait_until
            wait_until(log_start, 20, "retention to delete the first segment")
        finally:
            c.close()
        # The batch's segment is gone; its retry is still a duplicate with the original offset.
        assert produce_once(b.bootstrap, topic_name, 0, mine) == (0, 0)
        restart(b)
        assert produce_once(b.bootstrap, topic_name, 0, mine) == (0, 0)
        nxt = idempotent_batch(pid, epoch, 1, [b"mine2"])
        assert produce_once(b.bootstrap, topic_name, 0, nxt) == (0, 61)
    finally:
        if b.proc is not None:
            b.stop()


def test_websocket_produce_resent_after_reconnect_gets_the_same_offsets(ibroker, topic_name):
    import asyncio
    import base64
    import json
    import websockets

    ibroker.create_topic(topic_name)
    pid = requests.post(ibroker.v3("/producers")).json()["producer_id"]
    url = ibroker.url.replace("http://", "ws://") + "/v1/ws"
    message = {"type": "produce", "id": "m1", "topic": topic_name, "producer_id": pid, "producer_epoch": 0,
               "records": [{"partition": 0, "sequence": i, "value": base64.b64encode(f"w{i}".encode()).decode()}
                           for i in range(4)]}

    async def send_once(msg):
        async with websockets.connect(url) as ws:
            await ws.send(json.dumps(msg))
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

    first = asyncio.run(send_once(message))
    assert first["type"] == "produce_ack", first
    again = asyncio.run(send_once(message))   # a new connection: the answer was lost
    assert [r["offset"] for r in again["results"]] == [r["offset"] for r in first["results"]] == [0, 1, 2, 3]
    gap = dict(message, id="m2", records=[{"partition": 0, "sequence": 9, "value": None}])
    refused = asyncio.run(send_once(gap))
    assert refused["results"][0]["error_code"] == 40905, refused
    loose = {"type": "produce", "id": "m3", "topic": topic_name, "partition": 0, "sequence": 0, "value": None}
    assert asyncio.run(send_once(loose))["error_code"] == 422
    assert values_in(ibroker.bootstrap, topic_name, 0) == [b"w0", b"w1", b"w2", b"w3"]


def test_http_idempotent_produce_refuses_a_chunked_stream(ibroker, topic_name):
    ibroker.create_topic(topic_name)
    pid = requests.post(ibroker.v3("/producers")).json()["producer_id"]

    def body():
        yield b'{"partition_id": 0, "sequence": 0, "value": {"type": "STRING", "data": "s"}}'

    r = requests.post(ibroker.v3(f"/topics/{topic_name}/records"), params={"producer_id": pid, "producer_epoch": 0},
                      data=body(), headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and "chunked" in r.json()["message"], r.text


# ---------------------------------------------------------------- three nodes

from test_cluster import cluster, create_topic  # noqa: E402,F401  (the fixture)


def test_cluster_ids_from_every_node_and_a_resend_to_the_new_leader_is_a_duplicate(cluster):
    from conftest import wait_until
    from test_replication import isr_of, leader_of
    import json

    wait_until(cluster.controller, 30.0, "one quorum leader")
    # Every node gets ids, the non-controllers by AllocateProducerIds over the cluster listener.
    ids = []
    for node in cluster.nodes:
        r = wait_until(lambda: (lambda x: x if x.status_code == 201 else None)(requests.post(node.v3("/producers"))),
                       30.0, f"a producer id from node {node.node_id}")
        ids.append(r.json()["producer_id"])
    assert len(set(ids)) == 3, ids
    n1 = cluster.node(1)
    r = create_topic(n1, "idem-replicated", partitions=1, replication_factor=3,
                     configs=[{"name": "min.insync.replicas", "value": "2"}])
    assert r.status_code == 201, r.text
    leader = wait_until(lambda: leader_of(n1, "idem-replicated", 0), 10.0, "a leader")
    wait_until(lambda: isr_of(n1, "idem-replicated", 0) == [1, 2, 3], 10.0, "ISR of three")
    pid = ids[0]
    body = "".join('{"partition_id": 0, "sequence": %d, "value": {"type": "STRING", "data": "c%d"}}' % (i, i)
                   for i in range(5))

    def send(node):
        resp = requests.post(node.v3("/topics/idem-replicated/records"), params={"producer_id": pid, "producer_epoch": 0},
                             data=body, headers={"Content-Type": "application/json"}, timeout=40)
        assert resp.status_code == 200, resp.text
        reports = [json.loads(line) for line in resp.text.splitlines() if line.strip()]
        return [(x.get("error_code"), x.get("offset")) for x in reports]

    first = send(cluster.node(leader))
    assert first == [(200, i) for i in range(5)]
    # The leader dies; a follower, which rebuilt the producer state from the batches it
    # replicated, leads and answers the resend with the original offsets.
    cluster.node(leader).kill()
    survivor = next(n for n in cluster.nodes if n.node_id != leader)
    new_leader = wait_until(lambda: (lambda l: l if l not in (None, leader) else None)(leader_of(survivor, "idem-replicated", 0)),
                            30.0, "a new leader")

    def resent():
        got = send(cluster.node(new_leader))
        return got if all(code == 200 for code, _ in got) else None

    assert wait_until(resent, 30.0, "the resend answered by the new leader") == first


# ---------------------------------------------------------------- the per-partition producer bound

def produce_pipelined(bootstrap, topic, partition, batches, window=32):
    """Produce v3 (acks=1) of each batch in order, `window` requests in flight on one connection:
    [(error, base_offset)] in the same order."""
    out = []
    with kw.connect(bootstrap, timeout=60) as s:
        for start in range(0, len(batches), window):
            chunk = batches[start:start + window]
            s.sendall(b"".join(kw.frame(kw.API_PRODUCE, 3, start + i, kw.produce_v3(topic, partition, b, acks=1))
                               for i, b in enumerate(chunk)))
            for _ in chunk:
                size = struct.unpack(">i", kw.read_exact(s, 4))[0]
                body = kw.read_exact(s, size)[4:]   # after the correlation id
                (_, _, error, base_offset, _), = kw.parse_produce_v3(body)
                out.append((error, base_offset))
    return out


def test_past_the_per_partition_producer_bound_the_least_recently_used_producer_makes_room(ibroker, topic_name):
    """Breaker of session 36 (MEDIUM): the 10,001st idempotent producer of a partition was refused
    (THROTTLING_QUOTA_EXCEEDED) for producer.id.expiration.ms, a day. Kafka expires idle producer
    state instead: the bound now forgets the least recently used idle producer (the oldest last
    batch timestamp), whose retry is then stored as new, while recent producers keep their
    duplicate detection, across a clean restart and a SIGKILL."""
    ibroker.create_topic(topic_name)
    bound = 10_000   # storage::producers_per_partition_max
    now_ms = int(time.time() * 1000)
    # Producer i's batch has timestamp now - bound + i: producer 0 is the least recently used.
    pids = [1_000_000 + i for i in range(bound + 1)]

    def batch_of(i):
        return kw.batch([(None, b"v%d" % i, None, now_ms - bound + i)], producer=(pids[i], 0, 0))

    answers = produce_pipelined(ibroker.bootstrap, topic_name, 0, [batch_of(i) for i in range(bound + 1)])
    assert [e for e, _ in answers if e != 0] == [], answers[-3:]
    assert [o for _, o in answers] == list(range(bound + 1))
    # The newest producer's retry is a duplicate: the original offset, nothing stored.
    newest = batch_of(bound)
    assert produce_once(ibroker.bootstrap, topic_name, 0, newest) == (0, bound)
    # Producer 0 was forgotten to make room: its retry is stored again, as after Kafka's expiration.
    assert produce_once(ibroker.bootstrap, topic_name, 0, batch_of(0)) == (0, bound + 1)
    # Producer 1 is forgotten in turn (by producer 0's return); producer 2 still remembered.
    assert produce_once(ibroker.bootstrap, topic_name, 0, batch_of(2)) == (0, 2)
    # The state (and its bound) survives a clean restart (snapshot) and a SIGKILL (replay).
    restart(ibroker)
    assert produce_once(ibroker.bootstrap, topic_name, 0, newest) == (0, bound)
    assert produce_once(ibroker.bootstrap, topic_name, 0, batch_of(2)) == (0, 2)
    restart(ibroker, kill=True)
    assert produce_once(ibroker.bootstrap, topic_name, 0, newest) == (0, bound)
    assert produce_once(ibroker.bootstrap, topic_name, 0, batch_of(0)) == (0, bound + 1)
    assert produce_once(ibroker.bootstrap, topic_name, 0, batch_of(1)) == (0, bound + 2)
