"""queued.max.request.bytes (Kafka's key, KIP-72's memory pool): the bytes of Kafka request frames
being read or handled, every Kafka listener together. The breaker of session 36 (MEDIUM) held
about 2 GB with 20 connections each sending a 90 MB frame slowly (each frame's buffer grows as its
bytes arrive, but nothing bounded them together). A frame now reserves its declared size before
its body is read; one that does not fit waits, unread, until room is given back; one larger than
the pool closes its connection with a log line naming the key. Every wait polls with a deadline.
"""
import re
import select
import socket
import struct
import subprocess
import time
from pathlib import Path

import requests

import kafka_wire as kw
from conftest import Broker, free_port, wait_until
from test_connection_limits import produce_one, rss_bytes

DEFAULT_POOL = 536870912   # queued.max.request.bytes default (512 MiB)


def gauge(b, name):
    for line in requests.get(f"{b.url}/metrics", timeout=10).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def send_until_stalled(socks, each_bytes, stall_s=2.0, deadline_s=120.0):
    """Sends `each_bytes` of zeros on every socket (non-blocking) until all are sent or none of
    them has taken a byte for `stall_s` (the broker stopped reading them). Returns the bytes sent
    per socket."""
    sent = [0] * len(socks)
    chunk = bytes(1 << 20)
    for s in socks:
        s.setblocking(False)
    last_progress = time.monotonic()
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        pending = [s for i, s in enumerate(socks) if sent[i] < each_bytes]
        if not pending or time.monotonic() - last_progress > stall_s:
            break
        _, writable, _ = select.select([], pending, [], 0.2)
        for s in writable:
            i = socks.index(s)
            try:
                n = s.send(chunk[:min(len(chunk), each_bytes - sent[i])])
            except BlockingIOError:
                continue
            sent[i] += n
            last_progress = time.monotonic()
    return sent


def test_twenty_slow_90_mb_frames_hold_at_most_queued_max_request_bytes(ringlog_bin, tmp_path):
    """The breaker's case with the default pool: 20 connections declare 90 MB frames and send
    60 MB of each. Before, the broker read all of it (1.2 GB grew its RSS); now five frames fit
    in the 512 MiB pool and are read, the other fifteen wait unread, and a small client is still
    served beside them."""
    b = Broker(tmp_path / "data", kafka_port=free_port()).start()
    socks = []
    try:
        b.create_topic("served")
        assert produce_one(b.bootstrap, "served", b"before")
        before = rss_bytes(b.proc.pid)
        frame_bytes, sent_bytes = 90_000_000, 60_000_000
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", b.kafka_port), timeout=10)
            s.sendall(struct.pack(">i", frame_bytes))
            socks.append(s)
        sent = send_until_stalled(socks, sent_bytes)
        grown = max(rss_bytes(b.proc.pid) for _ in range(10)) - before
        fully = sum(1 for n in sent if n >= sent_bytes)
        print(f"\nRSS grew {grown >> 20} MiB; {fully} of 20 connections sent their {sent_bytes} bytes; "
              f"sent in total {sum(sent) >> 20} MiB")
        assert grown < DEFAULT_POOL + (64 << 20), f"RSS grew {grown >> 20} MiB for 20 slow 90 MB frames"
        assert fully == DEFAULT_POOL // frame_bytes, sent
        assert gauge(b, "ringlog_kafka_request_pool_waiting_frames") == 20 - fully
        assert gauge(b, "ringlog_kafka_request_pool_reserved_bytes") == fully * frame_bytes
        # A small request fits beside them and is answered.
        assert produce_one(b.bootstrap, "served", b"beside")
        # Closing the connections gives every byte back: waiters are read in turn, see their
        # client gone, and give back what they got.
        for s in socks:
            s.close()
        socks = []
        wait_until(lambda: gauge(b, "ringlog_kafka_request_pool_reserved_bytes") == 0 and
                   gauge(b, "ringlog_kafka_request_pool_waiting_frames") == 0, 30, "the pool empty again")
        assert produce_one(b.bootstrap, "served", b"after")
    finally:
        for s in socks:
            s.close()
        assert b.stop() == 0


def test_a_frame_waits_for_room_and_is_answered_once_room_is_given_back(ringlog_bin, tmp_path):
    """With a 4 MiB pool, a 3.5 MB frame being received holds the room a 0.9 MB Produce needs:
    the Produce is not read (no answer) until the first connection goes, then it is stored."""
    b = Broker(tmp_path / "data", kafka_port=free_port(), extra_sets=["queued.max.request.bytes=4194304"]).start()
    try:
        b.create_topic("waits")
        holder = socket.create_connection(("127.0.0.1", b.kafka_port), timeout=10)
        holder.sendall(struct.pack(">i", 3_500_000) + bytes(1000))
        wait_until(lambda: gauge(b, "ringlog_kafka_request_pool_reserved_bytes") == 3_500_000, 10,
                   "the holder's frame reserved")
        batch = kw.batch([(None, bytes(900_000), None, int(time.time() * 1000))])
        producer = kw.connect(b.bootstrap, timeout=30)
        producer.sendall(kw.frame(kw.API_PRODUCE, 3, 7, kw.produce_v3("waits", 0, batch, acks=1)))
        wait_until(lambda: gauge(b, "ringlog_kafka_request_pool_waiting_frames") == 1, 10, "the produce waiting")
        readable, _, _ = select.select([producer], [], [], 0.5)
        assert readable == [], "the produce was answered while its frame could not fit"
        holder.close()
        size = struct.unpack(">i", kw.read_exact(producer, 4))[0]
        data = kw.read_exact(producer, size)
        assert struct.unpack_from(">i", data)[0] == 7
        (_, _, error, base_offset, _), = kw.parse_produce_v3(data[4:])
        assert (error, base_offset) == (0, 0)
        producer.close()
        wait_until(lambda: gauge(b, "ringlog_kafka_request_pool_reserved_bytes") == 0, 10, "the pool empty again")
    finally:
        assert b.stop() == 0


def test_a_frame_larger_than_the_pool_closes_its_connection_with_a_log_line(ringlog_bin, tmp_path):
    b = Broker(tmp_path / "data", kafka_port=free_port(), extra_sets=["queued.max.request.bytes=1048576"]).start()
    try:
        log = b.log_path.read_text()
        assert "queued.max.request.bytes is below socket.request.max.bytes" in log, log[-2000:]
        with kw.connect(b.bootstrap) as s:
            s.sendall(struct.pack(">i", 2 * 1024 * 1024) + bytes(100))
            s.settimeout(10)
            try:
                assert s.recv(1) == b""
            except ConnectionResetError:
                pass
        wait_until(lambda: "above queued.max.request.bytes=1048576" in b.log_path.read_text(), 10,
                   "the close line naming queued.max.request.bytes")
        line = next(x for x in b.log_path.read_text().splitlines() if "above queued.max.request.bytes" in x)
        assert "kafka connection closed" in line and "frame size 2097152" in line and "can never fit" in line, line
        # A frame within the pool is served as before.
        b.create_topic("small")
        assert produce_one(b.bootstrap, "small", b"fits")
    finally:
        assert b.stop() == 0


def test_queued_max_request_bytes_help_config_file_and_bounds_agree(ringlog_bin, tmp_path):
    help_text = subprocess.run([str(ringlog_bin), "serve", "--help"], capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"^  queued\.max\.request\.bytes = (\d+)\n((?:    .*\n)+)", help_text, re.M)
    assert m, help_text[:3000]
    assert int(m.group(1)) == DEFAULT_POOL
    conf = (Path(__file__).resolve().parents[2] / "conf" / "ringlog.properties").read_text()
    assert f"#queued.max.request.bytes = {DEFAULT_POOL}\n" in conf
    assert "an integer in [1048576, 1099511627776]" in conf.split("#queued.max.request.bytes")[0].splitlines()[-1]
    for bad in ("-1", "1048575", "1099511627777"):
        r = subprocess.run([str(ringlog_bin), "serve", "--set", f"queued.max.request.bytes={bad}",
                            "--set", f"log.dirs={tmp_path}/d"], capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and "queued.max.request.bytes" in r.stdout + r.stderr, (bad, r.stdout, r.stderr)


def test_a_frame_whose_body_does_not_come_gives_its_room_back_at_kafka_request_body_timeout_ms(ringlog_bin, tmp_path):
    """A client that declares a large frame and sends no body held its queued.max.request.bytes
    room until connections.max.idle.ms (10 min): a few such connections (5 x 100 MiB fill the
    default pool) stopped every Kafka client's reads that long. Now its connection is closed
    kafka.request.body.timeout.ms after the room was reserved, and the frame that waited is read."""
    b = Broker(tmp_path / "data", kafka_port=free_port(),
               extra_sets=["queued.max.request.bytes=4194304", "kafka.request.body.timeout.ms=1500"]).start()
    holder = None
    try:
        b.create_topic("body-deadline")
        holder = socket.create_connection(("127.0.0.1", b.kafka_port), timeout=10)
        holder.sendall(struct.pack(">i", 3_500_000) + bytes(1000))   # and nothing more, never closed
        reserved_at = time.monotonic()
        wait_until(lambda: gauge(b, "ringlog_kafka_request_pool_reserved_bytes") == 3_500_000, 10,
                   "the holder's frame reserved")
        batch = kw.batch([(None, bytes(900_000), None, int(time.time() * 1000))])
        producer = kw.connect(b.bootstrap, timeout=30)
        producer.sendall(kw.frame(kw.API_PRODUCE, 3, 7, kw.produce_v3("body-deadline", 0, batch, acks=1)))
        size = struct.unpack(">i", kw.read_exact(producer, 4))[0]   # waits for the holder's deadline
        answered_after = time.monotonic() - reserved_at
        data = kw.read_exact(producer, size)
        (_, _, error, base_offset, _), = kw.parse_produce_v3(data[4:])
        assert (error, base_offset) == (0, 0)
        assert 1.0 <= answered_after < 15, answered_after
        producer.close()
        holder.settimeout(10)
        try:
            assert holder.recv(1) == b"", "the holder's connection is closed"
        except ConnectionResetError:
            pass
        line = next(x for x in b.log_path.read_text().splitlines() if "kafka.request.body.timeout.ms=1500" in x)
        assert "kafka connection closed" in line and "3500000-byte request frame" in line, line
        wait_until(lambda: gauge(b, "ringlog_kafka_request_pool_reserved_bytes") == 0, 10, "the pool empty again")
    finally:
        if holder is not None:
            holder.close()
        assert b.stop() == 0
    for bad in ("-1", "86400001"):
        r = subprocess.run([str(ringlog_bin), "serve", "--set", f"kafka.request.body.timeout.ms={bad}",
                            "--set", f"log.dirs={tmp_path}/d"], capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and "kafka.request.body.timeout.ms" in r.stdout + r.stderr, (bad, r.stdout, r.stderr)
