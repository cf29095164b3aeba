"""broker.partitions.max holds for a whole request and across concurrent requests
(docs/configuration.md "broker.partitions.max").

The breaker of session 35: the limit was checked per topic against the partitions of the image
before the request, so one CreateTopics naming 300 one-partition topics with the limit at 100
created 316 partitions, 40 concurrent REST v3 creates of 10 partitions each all answered 201 (400
partitions), and one Metadata v4 naming 600 unknown topics with auto-creation on created 617
partitions, running the process out of file descriptors. The active controller now counts each
create against the image plus the partitions of the creates it has proposed and not yet applied,
in the order it proposes them; the excess is refused with INVALID_PARTITIONS (37; REST: 400)
naming broker.partitions.max.
"""
import struct
import threading

import requests

from conftest import Broker, free_port
from kafka_wire import Reader, connect, exchange

LIMIT = 100
INVALID_PARTITIONS = 37


def limited_broker(tmp_path):
    return Broker(tmp_path / "ringlog-data", extra_sets=[f"broker.partitions.max={LIMIT}"],
                  kafka_port=free_port()).start()


def partitions_held(b):
    topics = requests.get(b.v3("/topics"), timeout=30).json()["data"]
    return sum(t["partitions_count"] for t in topics)


def s16(text):
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def create_topics_v2(names):
    """CreateTopics v2: each name with 1 partition, replication factor 1, timeout 30 s."""
    topics = b"".join(s16(n) + struct.pack(">ihii", 1, 1, 0, 0) for n in names)
    return struct.pack(">i", len(names)) + topics + struct.pack(">i", 30000) + b"\x00"


def parse_create_topics_v2(body):
    """name -> (error code, error message) of a CreateTopics v2 answer."""
    r = Reader(body)
    r.take(">i")   # throttle_time_ms
    out = {}
    for _ in range(r.take(">i")):
        name = r.string()
        code = r.take(">h")
        out[name] = (code, r.string())
    return out


def test_one_create_topics_naming_many_topics_keeps_to_the_limit(ringlog_bin, tmp_path):
    b = limited_broker(tmp_path)
    try:
        names = [f"ct{i:04d}" for i in range(300)]
        with connect(b.bootstrap, timeout=120) as sock:
            _, body = exchange(sock, 19, 2, 1, create_topics_v2(names))
            answer = parse_create_topics_v2(body)
        created = [n for n in names if answer[n][0] == 0]
        refused = [n for n in names if answer[n][0] != 0]
        assert partitions_held(b) <= LIMIT
        assert 0 < len(created) <= LIMIT and len(created) + len(refused) == 300
        assert all(answer[n][0] == INVALID_PARTITIONS for n in refused), {answer[n] for n in refused}
        assert "broker.partitions.max=100" in answer[refused[0]][1], answer[refused[0]]
        # Topics are taken in the request's order: the refused ones are its tail.
        assert refused == names[len(created):]
    finally:
        b.stop()


def test_concurrent_creates_keep_to_the_limit(ringlog_bin, tmp_path):
    b = limited_broker(tmp_path)
    try:
        before = partitions_held(b)
        statuses = {}

        def create(i):
            r = requests.post(b.v3("/topics"), json={"topic_name": f"cc{i}", "partitions_count": 10}, timeout=60)
            statuses[i] = (r.status_code, r.text)

        threads = [threading.Thread(target=create, args=(i,)) for i in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        made = [i for i, (code, _) in statuses.items() if code == 201]
        refused = [(code, text) for code, text in statuses.values() if code != 201]
        assert partitions_held(b) <= LIMIT
        assert len(made) <= (LIMIT - before) // 10 and len(made) > 0
        assert refused and all(code == 400 and "broker.partitions.max" in text for code, text in refused), refused
        # A refused create left nothing behind, and a created one is there.
        for i, (code, _) in statuses.items():
            expect = 200 if code == 201 else 404
            assert requests.get(b.v3(f"/topics/cc{i}"), timeout=30).status_code == expect
    finally:
        b.stop()


def test_metadata_auto_creating_many_topics_keeps_to_the_limit(ringlog_bin, tmp_path):
    b = limited_broker(tmp_path)
    try:
        names = [f"auto{i:04d}" for i in range(300)]
        body = struct.pack(">i", len(names)) + b"".join(s16(n) for n in names) + b"\x01"
        with connect(b.bootstrap, timeout=120) as sock:
            exchange(sock, 3, 4, 1, body)   # Metadata v4, allow_auto_topic_creation
        held = partitions_held(b)
        assert 0 < held <= LIMIT
        # Nothing more is created after the answer: a create that fits the room left is the last.
        room = LIMIT - held
        if room > 0:
            r = requests.post(b.v3("/topics"), json={"topic_name": "last", "partitions_count": room}, timeout=30)
            assert r.status_code == 201, r.text
        r = requests.post(b.v3("/topics"), json={"topic_name": "over", "partitions_count": 1}, timeout=30)
        assert r.status_code == 400 and "broker.partitions.max=100" in r.text, r.text
        assert partitions_held(b) == LIMIT
    finally:
        b.stop()
