"""WebSocket clients that never read cost bounded memory (http-api/ws-protocol.md, "credit").

The breaker of session 35: each session that sent messages answered with errors and never read
its answers held 6-8 MiB of queued answers (the per-session bound, ws_write_queue_bytes_max), and
an `id` of 60 KB was echoed in every answer. A session whose queue holds
ws_write_queue_low_water_bytes (1 MiB) is no longer read from until it drains, and an `id` longer
than ws_id_bytes_max (1024 bytes as JSON text) is refused with an error naming the limit.
The breaker of session 38: sessions that never read holding the total of all queues
(ws_write_queue_total_bytes_max) must not hold up a subscriber that reads.
"""
import asyncio
import base64
import json
import os
import socket
import struct
import time

import requests
import websockets

from conftest import wait_until

SESSIONS = 24
SEND_BYTES_PER_SESSION = 6 << 20   # answers of about as many bytes: under the 8 MiB close
ID = "x" * 1000                     # under ws_id_bytes_max: echoed in every answer
# Without the bound every session queues ~6 MiB (SESSIONS * 6 = 144 MiB); with it ~1 MiB each.
RSS_GROWTH_MAX_MIB = 64


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS")).split()[1]) / 1024


def masked_frame(text):
    payload = text.encode()
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        header = bytes([0x81, 0x80 | n])
    elif n < 65536:
        header = bytes([0x81, 0x80 | 126]) + struct.pack(">H", n)
    else:
        header = bytes([0x81, 0x80 | 127]) + struct.pack(">Q", n)
    return header + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload))


def never_reading_session(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(f"GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += s.recv(1)
    assert b" 101 " in answer, answer
    s.setblocking(False)
    return s


def subscribed_never_reading(port, subscription_id, topic, credit_records):
    """A never_reading_session (blocking) subscribed to `topic` from the earliest offset with
    credit for `credit_records` records: the broker fills its socket and its queue."""
    s = never_reading_session(port)
    s.setblocking(True)
    s.sendall(masked_frame(json.dumps({"type": "subscribe", "id": subscription_id, "topic": topic,
                                       "position": "earliest"})))
    s.sendall(masked_frame(json.dumps({"type": "credit", "records": credit_records})))
    return s


def test_sessions_that_never_read_hold_about_the_low_water_mark_each(broker):
    pid = broker.proc.pid
    # An invalid topic name: each message is answered at once with an error echoing the id.
    message = masked_frame(json.dumps({"type": "produce", "id": ID, "topic": "no such topic!", "value": "AA=="}))
    socks = [never_reading_session(broker.port) for _ in range(SESSIONS)]
    try:
        before = rss_mib(pid)
        sent = [0] * SESSIONS
        # Send until every session has sent its share or none can send more for 3 s (the server
        # stopped reading them and the socket buffers are full).
        idle_since = time.monotonic()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and time.monotonic() - idle_since < 3:
            progress = False
            for i, s in enumerate(socks):
                if sent[i] >= SEND_BYTES_PER_SESSION:
                    continue
                try:
                    sent[i] += s.send(message)
                    progress = True
                except BlockingIOError:
                    pass
            if progress:
                idle_since = time.monotonic()
            elif all(x >= SEND_BYTES_PER_SESSION for x in sent):
                break
            else:
                time.sleep(0.05)
        # The server answers what it has read after the client's sends return: watch its memory
        # for a while (ended early by a failure), the peak is what counts.
        growth = 0
        watch_until = time.monotonic() + 10
        while time.monotonic() < watch_until and growth < RSS_GROWTH_MAX_MIB:
            growth = max(growth, rss_mib(pid) - before)
            time.sleep(0.2)
        assert growth < RSS_GROWTH_MAX_MIB, (growth, [x >> 20 for x in sent])
        assert broker.proc.poll() is None
    finally:
        for s in socks:
            s.close()


def test_an_id_longer_than_the_limit_is_refused_naming_it(broker):
    async def go():
        async with websockets.connect(f"ws://127.0.0.1:{broker.port}/v1/ws", max_size=None) as ws:
            for message in ({"type": "produce", "id": "y" * 2000, "topic": "t", "value": "AA=="},
                            {"type": "ping", "id": ["z" * 600, "z" * 600]}):
                await ws.send(json.dumps(message))
                answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
                assert answer["type"] == "error" and answer["id"] is None, answer
                assert answer["error_code"] == 422 and "ws_id_bytes_max" in answer["message"], answer
            await ws.send(json.dumps({"type": "ping", "id": "short"}))
            assert json.loads(await asyncio.wait_for(ws.recv(), 10)) == {"type": "pong", "id": "short"}

    asyncio.run(go())


# The breaker of session 38 (MEDIUM): subscribers that granted credit and never read held the
# queues' total (ws_write_queue_total_bytes_max, 256 MiB), and then no session fetched, a reader
# that keeps up included: its new records waited until the slow sessions were closed, about 34 s
# later. Each slow session here holds one `record` message of about 6 MB (a 4.5 MB record in
# base64, under ws_write_queue_bytes_max), so 60 of them queue about 340 MiB.
SLOW_SUBSCRIBERS = 60
BIG_RECORD_BYTES = 4_500_000
QUEUES_TOTAL_MIB = 256          # ws_write_queue_total_bytes_max
DELIVERY_DEADLINE_S = 5         # a reader that keeps up gets a new record in milliseconds


def test_a_subscriber_that_reads_is_served_while_others_hold_the_queues_total(fresh_broker, topic_name):
    b = fresh_broker(["message.max.bytes=8388608"])
    b.create_topic(topic_name)
    big = base64.b64encode(os.urandom(BIG_RECORD_BYTES)).decode()
    r = requests.post(f"{b.url}/topics/{topic_name}", json={"records": [{"value": big}]},
                      headers={"Content-Type": "application/vnd.kafka.binary.v2+json"})
    assert r.status_code == 200, r.text
    before = rss_mib(b.proc.pid)
    slow = []
    try:
        for i in range(SLOW_SUBSCRIBERS):
            slow.append(subscribed_never_reading(b.port, i, topic_name, 1000))
        # The slow sessions queued their answers: the total is passed.
        wait_until(lambda: rss_mib(b.proc.pid) - before >= QUEUES_TOTAL_MIB, 20,
                   f"{SLOW_SUBSCRIBERS} sessions queueing a {BIG_RECORD_BYTES}-byte record each")

        async def healthy():
            async with websockets.connect(f"ws://127.0.0.1:{b.port}/v1/ws", max_size=None) as ws:
                await ws.send(json.dumps({"type": "subscribe", "id": "h", "topic": topic_name, "position": "latest"}))
                answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
                assert answer["type"] == "subscribed" and answer["offset"] == 1, answer
                await ws.send(json.dumps({"type": "credit", "records": 10}))
                for n in range(3):
                    r = await asyncio.to_thread(
                        requests.post, f"{b.url}/topics/{topic_name}", json={"records": [{"value": "aGk="}]},
                        headers={"Content-Type": "application/vnd.kafka.binary.v2+json"})
                    assert r.status_code == 200, r.text
                    produced = time.monotonic()
                    try:
                        got = json.loads(await asyncio.wait_for(ws.recv(), DELIVERY_DEADLINE_S))
                    except asyncio.TimeoutError:
                        raise AssertionError(f"record {n + 1} not delivered within {DELIVERY_DEADLINE_S} s while "
                                             f"{SLOW_SUBSCRIBERS} sessions that never read hold the queues' total") from None
                    assert got["type"] == "record" and got["offset"] == n + 1, got
                    assert time.monotonic() - produced < DELIVERY_DEADLINE_S

        asyncio.run(healthy())
        assert b.proc.poll() is None
    finally:
        for s in slow:
            s.close()
