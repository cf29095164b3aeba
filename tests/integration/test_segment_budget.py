"""Sealed segments count against a broker-wide open-file budget (storage/segment_file_budget.h,
docs/configuration.md "Segment files: the sealed segment budget").

The breaker of session 31: a topic with segment.ms=1 rolled a segment per produced batch; each
kept its .log open, and at the open-file limit the broker halted ("log directory failed ... check
the disk", exit 74) and then halted again while loading. Here a broker runs under a 512-file limit
(RLIMIT_NOFILE set before exec, soft and hard), single-record batches are flooded into such a
topic, and: the broker is alive and serving, segments on disk stay within the budget the start-up
line names, every acknowledged record reads back, one rate-limited warning names the budget, and
after a restart under the same limit it serves again with every record.
"""
import re
import resource
import subprocess

from confluent_kafka import Consumer, Producer, TopicPartition

from conftest import Broker, free_port, wait_until

FILE_LIMIT = 512
BATCHES = 600          # far more than the budget under FILE_LIMIT holds


class LimitedBroker(Broker):
    """A Broker whose process starts with RLIMIT_NOFILE = FILE_LIMIT (soft and hard)."""

    def start(self):
        real_popen = subprocess.Popen

        def limited(*args, **kwargs):
            kwargs["preexec_fn"] = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))
            return real_popen(*args, **kwargs)

        subprocess.Popen = limited
        try:
            return super().start()
        finally:
            subprocess.Popen = real_popen


def flood(bootstrap, topic, n):
    """n single-record acks=1 produces, each its own batch; the acknowledged values."""
    acked, failed = [], []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1, "acks": 1})

    def done(err, msg):
        (failed if err else acked).append(err or msg.value())

    for i in range(n):
        p.produce(topic, f"v{i}".encode(), partition=0, on_delivery=done)
        if i % 20 == 0:
            p.flush(10)
    assert p.flush(30) == 0
    return acked, failed


def read_all(bootstrap, topic):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False})
    _, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    c.assign([TopicPartition(topic, 0, 0)])
    values, last = [], -1
    deadline_polls = 600
    while last + 1 < high and deadline_polls > 0:
        deadline_polls -= 1
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        values.append(m.value())
        last = m.offset()
    c.close()
    return values


def test_segment_ms_1_flood_keeps_to_the_budget_and_survives_a_restart(ringlog_bin, tmp_path):
    b = LimitedBroker(tmp_path / "ringlog-data", kafka_port=free_port()).start()
    try:
        budget_line = [line for line in b.log_path.read_text().splitlines() if "open-file budget" in line][0]
        assert f"limit={FILE_LIMIT}" in budget_line, budget_line
        sealed_max = int(re.search(r"sealed\.segments\.max=(\d+)", budget_line).group(1))
        assert 0 < sealed_max < BATCHES
        b.create_topic("tiny", configs={"segment.ms": "1"})
        acked, failed = flood(b.bootstrap, "tiny", BATCHES)
        assert failed == [] and len(acked) == BATCHES
        assert b.proc.poll() is None, b.log_path.read_text()[-2000:]
        segments = list((tmp_path / "ringlog-data" / "tiny-0").glob("*.log"))
        assert len(segments) <= sealed_max + 1
        log = b.log_path.read_text()
        assert "log directory failed" not in log
        warned = [line for line in log.splitlines() if "segment not rolled" in line]
        assert 1 <= len(warned) <= 2 and f"sealed.segments.max={sealed_max}" in warned[0], warned
        assert sorted(read_all(b.bootstrap, "tiny")) == sorted(acked)
        assert b.stop() == 0
        b.start()   # the same limit: loads every segment and serves
        assert sorted(read_all(b.bootstrap, "tiny")) == sorted(acked)
        more, failed = flood(b.bootstrap, "tiny", 20)
        assert failed == [] and len(more) == 20
    finally:
        if b.proc is not None:
            b.stop()


def test_default_max_connections_leaves_descriptors_for_http(ringlog_bin, tmp_path):
    """max.connections defaults to an eighth of the open-file limit: one address's silent Kafka
    connections (max.connections.per.ip is 1000) cannot take every descriptor (breaker of session
    31: 1,100 of them under a 1024 limit stopped both HTTP and Kafka accepting)."""
    import socket

    import requests

    b = LimitedBroker(tmp_path / "ringlog-data", kafka_port=free_port()).start()
    held = []
    try:
        budget_line = [line for line in b.log_path.read_text().splitlines() if "open-file budget" in line][0]
        assert f"max.connections={FILE_LIMIT // 8}" in budget_line, budget_line
        for _ in range(FILE_LIMIT):
            held.append(socket.create_connection(("127.0.0.1", b.kafka_port)))
        wait_until(lambda: 'reason="max.connections"' in requests.get(b.url + "/metrics", timeout=5).text, 20,
                   "max.connections refusals counted")
        assert requests.get(b.url + "/v1/health", timeout=5).status_code == 200
        assert b.proc.poll() is None
    finally:
        for s in held:
            s.close()
        assert b.stop() == 0


def test_a_produce_refused_by_the_budget_is_503_and_retriable_on_every_door(ringlog_bin, tmp_path):
    """A size roll refused by the used-up budget is Kafka's KAFKA_STORAGE_ERROR, which Kafka
    counts retriable (KafkaStorageException is a RetriableException): over HTTP it is 503, not
    500, with the same message naming the budget on v3 and v2, and v2's per-record code 2
    (retriable); a WebSocket produce gets the same error code and message (session 32)."""
    import asyncio
    import base64
    import json

    import requests
    import websockets

    b = LimitedBroker(tmp_path / "ringlog-data", kafka_port=free_port()).start()
    try:
        b.create_topic("small", configs={"segment.bytes": "1024"})
        value = base64.b64encode(b"x" * 900).decode()
        url = b.v3("/topics/small/records")
        refused = None
        for _ in range(BATCHES):   # every produce fills a segment: the next one rolls
            r = requests.post(url, json={"partition_id": 0, "value": {"type": "BINARY", "data": value}}, timeout=10)
            if r.status_code != 200 or r.json().get("error_code") != 200:
                refused = r
                break
        assert refused is not None, "the budget was never used up"
        assert refused.status_code == 503, (refused.status_code, refused.text)
        message = refused.json()["message"]
        assert "segment file budget" in message and "(retriable)" in message, message

        v2 = requests.post(f"{b.url}/topics/small/partitions/0", json={"records": [{"value": value}]},
                           headers={"Content-Type": "application/vnd.kafka.binary.v2+json"}, timeout=10)
        if v2.status_code == 200:   # v2 answers per record
            offsets = v2.json()["offsets"]
            assert offsets[0]["error_code"] == 2 and offsets[0]["error"] == message, v2.text
        else:
            assert v2.status_code == 503 and v2.json()["message"] == message, (v2.status_code, v2.text)

        async def ws_produce():
            async with websockets.connect(f"ws://127.0.0.1:{b.port}/v1/ws") as ws:
                await ws.send(json.dumps({"type": "produce", "id": "w", "topic": "small", "partition": 0, "value": value}))
                return json.loads(await asyncio.wait_for(ws.recv(), 10))

        answer = asyncio.run(ws_produce())
        assert answer["type"] == "error" and answer["message"] == message, answer
        assert answer["error_code"] == refused.json()["error_code"] and answer["error_code"] // 100 == 503, answer
        assert b.proc.poll() is None
    finally:
        b.stop()
