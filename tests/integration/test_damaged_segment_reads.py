"""Reads through a damaged batch in a sealed segment, on a real `ringlog serve`.

The breaker of session 40: a batch_length flipped on disk (first batch of a sealed segment, below
the recovery point, so a clean restart does not scan it) made every read through it fail - a
Kafka Fetch from offset 0 answered CORRUPT_MESSAGE and HTTP 422 - although the batches before the
damage are whole, Kafka serves them, and docs/configuration.md promises 503 50301 for stored
damage. Now a read from before the damage answers the batches up to it; a read at it answers HTTP
503 50301 and Kafka CORRUPT_MESSAGE (as Kafka's broker does for a batch header it cannot decode);
nothing stored changes.
"""
import base64
import hashlib
import struct

import pytest
import requests

import kafka_wire as kw
from conftest import Broker, free_port

BINARY = "application/vnd.kafka.binary.v2+json"
TOPIC = "dmg"
BATCHES = 40
PER_BATCH = 5
CORRUPT_MESSAGE = 2


def produce_batches(b):
    for n in range(BATCHES):
        body = {"records": [{"value": base64.b64encode(f"{n}-{i}".encode() * 8).decode()} for i in range(PER_BATCH)]}
        r = requests.post(f"{b.url}/topics/{TOPIC}/partitions/0", json=body,
                          headers={"Content-Type": BINARY}, timeout=10)
        assert r.status_code == 200, r.text


def log_digests(partition_dir):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(partition_dir.glob("*.log"))}


def http_read(b, offset):
    return requests.get(f"{b.url}/topics/{TOPIC}/partitions/0/records",
                        params={"offset": offset, "max_bytes": 1 << 20}, headers={"Accept": BINARY}, timeout=10)


def kafka_fetch(b, offset):
    """(error code, last offset of the last whole batch answered or None)."""
    with kw.connect(b.bootstrap) as s:
        _, body = kw.exchange(s, kw.API_FETCH, 4, 1, kw.fetch_v4(TOPIC, 0, offset))
    (_, _, error, _, records), = kw.parse_fetch_v4(body)
    last, pos = None, 0
    records = records or b""
    while pos + 61 <= len(records):
        base, length = struct.unpack_from(">qi", records, pos)
        if pos + 12 + length > len(records):
            break
        last = base + struct.unpack_from(">i", records, pos + 23)[0]
        pos += 12 + length
    return error, last


@pytest.fixture(params=["true", "false"], ids=["zero-copy", "copy"])
def damaged(request, ringlog_bin, tmp_path):
    """A broker whose TOPIC-0 has its second segment's first batch_length flipped to -1; yields
    (broker, offset of the damaged batch, digests of the .log files)."""
    b = Broker(tmp_path / "ringlog-data", [f"kafka.fetch.zero.copy={request.param}"], kafka_port=free_port()).start()
    try:
        # An offset index entry after every batch: a clean restart checks each sealed segment
        # only past its last entry, so the damage below stays on disk as it would in a large one.
        b.create_topic(TOPIC, configs={"segment.bytes": "2048", "index.interval.bytes": "1"})
        produce_batches(b)
        assert b.stop() == 0   # clean: the restart trusts the sealed segments and scans none
        partition_dir = b.data_dir / f"{TOPIC}-0"
        segments = sorted(partition_dir.glob("*.log"))
        assert len(segments) >= 3, segments
        with open(segments[1], "r+b") as f:
            f.seek(8)
            f.write(b"\xff\xff\xff\xff")
        digests = log_digests(partition_dir)
        b.start()
        assert "recovery cut" not in b.log_path.read_text()   # the damage is still there to read
        yield b, int(segments[1].stem), digests
    finally:
        if b.proc is not None:
            b.stop()


def test_reads_before_damage_answer_up_to_it_and_a_read_at_it_names_it(damaged):
    b, at, digests = damaged
    # HTTP: from offset 0, the records up to the damage, each once and in order.
    offset, seen = 0, []
    while offset < at:
        r = http_read(b, offset)
        assert r.status_code == 200, (offset, r.status_code, r.text)
        got = [x["offset"] for x in r.json()]
        assert got, offset
        seen += got
        offset = got[-1] + 1
    assert seen == list(range(at))
    r = http_read(b, at)
    assert r.status_code == 503 and r.json()["error_code"] == 50301, r.text
    assert "damaged" in r.json()["message"], r.text
    # Kafka: from offset 0, whole batches up to the damage; at it, CORRUPT_MESSAGE.
    error, last = kafka_fetch(b, 0)
    assert error == 0 and last == at - 1, (error, last, at)
    error, _ = kafka_fetch(b, at)
    assert error == CORRUPT_MESSAGE, error
    # A read changes nothing stored.
    assert log_digests(b.data_dir / f"{TOPIC}-0") == digests
