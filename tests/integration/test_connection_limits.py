"""Listener hardening (issue 31's connection limits, issue 29's breaker findings, issue 28's one
acceptor): max.connections.per.ip caps a storm of idle connects from one address while another
client is served; connection.authentication.timeout.ms closes a TLS handshake or a SASL login that
never finishes; out of descriptors, the acceptor pauses with one warning instead of spinning.
Refusals are counted on /metrics by listener and reason.
"""
import base64
import re
import resource
import socket
import ssl
import struct
import time

import requests
from confluent_kafka import Producer

from conftest import Broker, free_port, wait_until
from tls_certs import Material


def refused(b, listener, reason):
    """ringlog_connections_refused_total{listener, reason} on /metrics (None: no such line)."""
    text = requests.get(b.url + "/metrics", timeout=5).text
    m = re.search(r'ringlog_connections_refused_total\{listener="%s",reason="%s"\} (\d+)' % (listener, reason), text)
    return int(m.group(1)) if m else None


def peer_closed(sock):
    """True when the broker closed `sock` (EOF or reset); False while it is open and silent."""
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def produce_one(bootstrap, topic, value):
    """A real client (librdkafka) produces one record and waits for its acknowledgement."""
    acked = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 20000})
    p.produce(topic, value=value, on_delivery=lambda err, msg: acked.append(err))
    p.flush(30)
    return acked == [None]


def test_a_connect_storm_from_one_address_is_capped_while_another_client_is_served(ringlog_bin, tmp_path):
    kafka_port = free_port()
    b = Broker(tmp_path / "data", kafka_port=kafka_port, extra_sets=[
        "max.connections.per.ip=20", "max.connection.creation.rate=100000"]).start()
    storm = []
    try:
        b.create_topic("served")
        # 200 idle connects from 127.0.0.2 (loopback answers every 127/8 address): the broker
        # keeps 20 and closes the rest at once.
        for _ in range(200):
            s = socket.socket()
            s.bind(("127.0.0.2", 0))
            s.connect(("127.0.0.1", kafka_port))
            storm.append(s)
        wait_until(lambda: (refused(b, "PLAINTEXT", "max.connections.per.ip") or 0) >= 180, 20,
                   "180 refusals by max.connections.per.ip on /metrics")
        wait_until(lambda: sum(peer_closed(s) for s in storm) >= 180, 20, "the storm's extra connections closed")
        assert sum(not peer_closed(s) for s in storm) <= 20
        # The log names the limit, in one line for the whole storm (not one per refusal: they
        # were only counted on /metrics, session 41's breaker).
        lines = [line for line in b.log_path.read_text().splitlines() if "connections refused at a limit" in line]
        assert len(lines) == 1 and "limit=max.connections.per.ip" in lines[0] and "peer=127.0.0.2" in lines[0], lines
        # A client from another address is served meanwhile.
        assert produce_one(b.bootstrap, "served", b"while the storm holds its 20")
    finally:
        for s in storm:
            s.close()
        assert b.stop() == 0


def test_a_slow_header_storm_on_plain_http_is_capped_per_address(ringlog_bin, tmp_path):
    """The breaker's storm_http_sustained.py: plain http:// had only http.connections.max, so one
    address trickling request headers (slowloris) held every place and fresh clients got 503.
    max.connections.per.ip (and the creation rate) now apply to http:// as to every listener."""
    b = Broker(tmp_path / "data", extra_sets=["max.connections.per.ip=20", "max.connection.creation.rate=100000"]).start()
    storm = []
    try:
        for _ in range(200):
            s = socket.socket()
            s.bind(("127.0.0.2", 0))
            s.connect(("127.0.0.1", b.port))
            try:
                s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")   # never finished
            except OSError:
                pass   # already closed by the broker
            storm.append(s)
        wait_until(lambda: (refused(b, "HTTP", "max.connections.per.ip") or 0) >= 180, 20,
                   "180 refusals by max.connections.per.ip on /metrics")
        wait_until(lambda: sum(peer_closed(s) for s in storm) >= 180, 20, "the storm's extra connections closed")
        assert sum(not peer_closed(s) for s in storm) <= 20
        assert requests.get(b.url + "/v1/health", timeout=5).status_code == 200
    finally:
        for s in storm:
            s.close()
        assert b.stop() == 0


def test_a_request_whose_headers_trickle_in_is_answered_408_at_the_header_deadline(ringlog_bin, tmp_path):
    """A slowloris client (a header byte now and then) held an HTTP place for the whole
    http.idle.timeout.ms (60 s). Its line and headers now have http.request.header.timeout.ms from
    their first byte: 408 naming the key, then a close. An idle keep-alive connection that has sent
    nothing is held to the idle timeout only, and a request sent at once is served."""
    b = Broker(tmp_path / "data", extra_sets=["http.request.header.timeout.ms=1000", "http.idle.timeout.ms=20000"]).start()
    try:
        idle = socket.create_connection(("127.0.0.1", b.port))
        slow = socket.create_connection(("127.0.0.1", b.port))
        slow.settimeout(0.2)
        started = time.monotonic()
        answer = b""
        for ch in b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"y" * 200:
            try:
                slow.sendall(bytes([ch]))
            except OSError:
                break   # closed by the broker
            try:
                got = slow.recv(4096)
            except socket.timeout:
                continue
            answer += got
            if not got or b"\r\n\r\n" in answer:
                break
        waited = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b"http.request.header.timeout.ms=1000" in answer, answer
        assert waited < 10, waited   # the trickle alone would last 40 s
        wait_until(lambda: peer_closed(slow), 10, "the slow connection closed after its 408")
        # The idle connection outlived the header deadline and still serves a request.
        assert not peer_closed(idle)
        idle.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        idle.settimeout(10)
        assert idle.recv(4096).startswith(b"HTTP/1.1 200"), "an idle connection served after the header deadline"
    finally:
        assert b.stop() == 0


def test_unfinished_tls_handshakes_and_sasl_logins_are_closed_by_the_deadline(ringlog_bin, tmp_path):
    certs = Material(tmp_path / "certs")
    http, ssl_port, sasl_port, sasl_ssl_port = free_port(), free_port(), free_port(), free_port()
    b = Broker(tmp_path / "data", port=http, extra_sets=[
        f"listeners=http://127.0.0.1:{http},SSL://127.0.0.1:{ssl_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port},"
        f"SASL_SSL://127.0.0.1:{sasl_ssl_port}",
        f"ssl.keystore.location={certs.broker_pem}", "connection.authentication.timeout.ms=300",
        "connection.failed.authentication.delay.ms=10"]).start()
    try:
        # A client that finished its handshake first: its deadline is cancelled, it stays open.
        context = ssl.create_default_context(cafile=str(certs.ca_file))
        context.check_hostname = False
        good = context.wrap_socket(socket.create_connection(("127.0.0.1", ssl_port)))
        silent_tls = socket.create_connection(("127.0.0.1", ssl_port))
        silent_sasl = socket.create_connection(("127.0.0.1", sasl_port))
        # SASL_SSL: the TLS handshake done, the login never sent.
        silent_sasl_ssl = context.wrap_socket(socket.create_connection(("127.0.0.1", sasl_ssl_port)))
        wait_until(lambda: peer_closed(silent_tls), 20, "the silent TLS connection closed")
        wait_until(lambda: peer_closed(silent_sasl), 20, "the silent SASL connection closed")

        def tls_closed():
            silent_sasl_ssl.setblocking(False)
            try:
                return silent_sasl_ssl.recv(1) == b""
            except ssl.SSLWantReadError:
                return False
            except (ConnectionResetError, ssl.SSLError):
                return True
        wait_until(tls_closed, 20, "the silent SASL_SSL connection closed")
        good.setblocking(False)
        try:
            assert good.recv(1) != b"", "the handshaken TLS connection was closed"
        except ssl.SSLWantReadError:
            pass   # open and silent, as it should be
        assert refused(b, "SSL", "connection.authentication.timeout.ms") >= 1
        assert refused(b, "SASL_PLAINTEXT", "connection.authentication.timeout.ms") >= 1
        log = b.log_path.read_text()
        audit = [line for line in log.splitlines() if "audit=authentication" in line and "SASL login not finished" in line]
        assert any("security.protocol=SASL_PLAINTEXT" in line for line in audit), log[-3000:]
        # The listener's real protocol (the line said SASL_PLAINTEXT on SASL_SSL before).
        assert any("security.protocol=SASL_SSL" in line and "listener=SASL_SSL://" in line for line in audit), audit
        good.close()
    finally:
        assert b.stop() == 0


def test_out_of_descriptors_the_acceptor_pauses_with_one_warning(ringlog_bin, tmp_path):
    kafka_port = free_port()
    b = Broker(tmp_path / "data", kafka_port=kafka_port).start()
    held = []
    try:
        b.create_topic("after")
        pid = b.proc.pid
        before = b.log_path.read_text()
        import os
        open_now = len(os.listdir(f"/proc/{pid}/fd"))
        old = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        # Room for a few connections only; the rest wait in the listen backlog while accept()
        # fails with EMFILE.
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (open_now + 3, old[1]))
        for _ in range(20):
            held.append(socket.create_connection(("127.0.0.1", kafka_port)))
        wait_until(lambda: "accept paused" in b.log_path.read_text()[len(before):], 20, "the 'accept paused' warning")
        resource.prlimit(pid, resource.RLIMIT_NOFILE, old)
        for s in held:
            s.close()
        held = []
        # Accepting resumed: a real client is served.
        assert produce_one(b.bootstrap, "after", b"descriptors are back")
        log = b.log_path.read_text()[len(before):]
        paused = [line for line in log.splitlines() if "accept paused" in line]
        spin = [line for line in log.splitlines() if "accept failed" in line]
        # One warning per accept_warning_interval_ms (10 s) names the limit; no line per failure.
        assert 1 <= len(paused) <= 2 and "RLIMIT_NOFILE" in paused[0], paused
        assert spin == [], spin[:3]
    finally:
        for s in held:
            s.close()
        assert b.stop() == 0


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_a_declared_frame_size_is_not_allocated_before_its_bytes_arrive(ringlog_bin, tmp_path):
    """A breaker sent 4-byte size headers of 100 MiB on idle connections: the broker allocated and
    zeroed each frame at once (20 connections, 1.7 GB). The buffer now grows as bytes arrive."""
    b = Broker(tmp_path / "data", kafka_port=free_port()).start()
    socks = []
    try:
        before = rss_bytes(b.proc.pid)
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", b.kafka_port), timeout=5)
            s.sendall((100 * 1024 * 1024).to_bytes(4, "big") + b"\x00\x12\x00\x00")   # 100 MiB declared, 4 sent
            socks.append(s)
        # The broker answers a real client afterwards (its reads of the headers came first).
        produce_one(b.bootstrap, "frames", b"served")
        grown = max(rss_bytes(b.proc.pid) for _ in range(20)) - before
        assert grown < 200 * 1024 * 1024, f"RSS grew {grown >> 20} MiB for 20 declared 100 MiB frames"
    finally:
        for s in socks:
            s.close()
        assert b.stop() == 0


def api_versions_frame(correlation_id):
    """A Kafka ApiVersions v0 request (key 18, no body) with client id "idle-test", framed."""
    client_id = b"idle-test"
    body = (18).to_bytes(2, "big") + (0).to_bytes(2, "big") + correlation_id.to_bytes(4, "big") + \
        len(client_id).to_bytes(2, "big") + client_id
    return len(body).to_bytes(4, "big") + body


def test_idle_kafka_connections_are_closed_and_busy_ones_kept(ringlog_bin, tmp_path):
    """The breaker's storm_kafka.py: idle connects from 11 addresses held all 10,000 max.connections
    places, locking new clients out (nothing closed idle Kafka connections). connections.max.idle.ms
    (Kafka's key) closes a connection with no request and no answer for that long."""
    kafka_port = free_port()
    b = Broker(tmp_path / "data", kafka_port=kafka_port, extra_sets=["connections.max.idle.ms=1000"]).start()
    try:
        idle = socket.create_connection(("127.0.0.1", kafka_port))
        busy = socket.create_connection(("127.0.0.1", kafka_port))
        busy.settimeout(10)
        # The busy one asks ApiVersions every 200 ms for 3 s (three idle times); each is answered.
        deadline = time.monotonic() + 3
        n = 0
        while time.monotonic() < deadline:
            n += 1
            busy.sendall(api_versions_frame(n))
            size = int.from_bytes(busy.recv(4, socket.MSG_WAITALL), "big")
            assert size > 0 and len(busy.recv(size, socket.MSG_WAITALL)) == size
            time.sleep(0.2)   # the client's pace, not a wait for the broker
        wait_until(lambda: peer_closed(idle), 10, "the idle connection closed by connections.max.idle.ms")
        busy.setblocking(True)
        busy.sendall(api_versions_frame(n + 1))
        assert int.from_bytes(busy.recv(4, socket.MSG_WAITALL), "big") > 0, "the busy connection was closed"
        assert "idle for connections.max.idle.ms=1000" in b.log_path.read_text()
        idle.close()
        busy.close()
    finally:
        assert b.stop() == 0


def fetch_v4_frame(correlation_id, topic, max_bytes):
    """A Kafka Fetch v4 request (key 1) of partition 0 of `topic` from offset 0, framed."""
    client_id = b"noread-test"
    name = topic.encode()
    body = struct.pack(">hhi", 1, 4, correlation_id) + struct.pack(">h", len(client_id)) + client_id
    body += struct.pack(">iiiib", -1, 0, 1, max_bytes, 0)   # replica, max wait, min bytes, max bytes, isolation
    body += struct.pack(">i", 1) + struct.pack(">h", len(name)) + name
    body += struct.pack(">i", 1) + struct.pack(">iqi", 0, 0, max_bytes)
    return struct.pack(">i", len(body)) + body


def test_a_kafka_client_that_never_reads_its_answers_is_closed_as_idle(ringlog_bin, tmp_path):
    """The breaker of session 36: 50 connections that sent requests and never read the answers
    outlived connections.max.idle.ms by minutes, each holding its max.connections place and its
    queued answers (the idle check counted an answer waiting to be written as activity). Kafka's
    Selector counts only completed reads and writes."""
    kafka_port = free_port()
    b = Broker(tmp_path / "data", kafka_port=kafka_port, extra_sets=["connections.max.idle.ms=2000"]).start()
    try:
        topic = "noread"
        b.create_topic(topic)
        value = base64.b64encode(b"v" * 60000).decode()
        for _ in range(4):   # about 1 MB in partition 0
            r = requests.post(f"{b.url}/topics/{topic}/partitions/0", json={"records": [{"value": value}] * 4},
                              headers={"Content-Type": "application/vnd.kafka.binary.v2+json"}, timeout=30)
            assert r.status_code == 200, r.text
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", kafka_port))
        # 32 answers of about 1 MB each: far more than the socket buffers hold, so the broker's
        # writes stop and wait for a reader that never comes.
        s.sendall(b"".join(fetch_v4_frame(i, topic, 1 << 20) for i in range(32)))
        wait_until(lambda: "answers not read by the client" in b.log_path.read_text(), 20,
                   "the non-reading connection closed by connections.max.idle.ms")
        s.close()
    finally:
        assert b.stop() == 0


def test_record_answers_not_read_are_bounded_together(broker, topic_name):
    """The breaker's MEDIUM of session 26: each client that sent GET .../records?max_bytes=64MiB
    and never read the answer made the broker hold that whole answer (4 such readers: RSS +150 MB,
    12: +440 MB). Answers built and not yet sent now hold at most http_response_bytes_held_max
    (256 MiB) together: past it a read answers 503 (50301, Retry-After) naming the bound, and the
    bytes come back once the readers' connections close."""
    import base64
    broker.create_topic(topic_name)
    value = base64.b64encode(b"v" * 60000).decode()
    for _ in range(100):   # 48 MB of records: each full read's JSON answer is about 64 MB
        r = requests.post(f"{broker.url}/topics/{topic_name}/partitions/0", json={"records": [{"value": value}] * 8},
                          headers={"Content-Type": "application/vnd.kafka.binary.v2+json"}, timeout=30)
        assert r.status_code == 200, r.text
    request = (f"GET /topics/{topic_name}/partitions/0/records?offset=0&max_bytes=67108864 HTTP/1.1\r\n"
               "Host: x\r\nAccept: application/vnd.kafka.binary.v2+json\r\n\r\n").encode()
    socks, firsts = [], []
    try:
        for _ in range(6):   # 6 x 64 MB > 256 MiB: the fifth is refused
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.settimeout(30)
            s.connect(("127.0.0.1", broker.port))
            s.sendall(request)
            # An answer's first bytes arrive once it is built (or refused): then the next reader.
            firsts.append(s.recv(4096))
        statuses = [first.split(b" ", 2)[1] for first in firsts]
        assert statuses[:4] == [b"200"] * 4, statuses
        assert b"503" in statuses, statuses
        i = statuses.index(b"503")
        answer = firsts[i]
        while b"}" not in answer:
            answer += socks[i].recv(4096)
        assert b"Retry-After: 1" in answer and b"50301" in answer, answer
        assert b"http_response_bytes_held_max" in answer, answer
    finally:
        for s in socks:
            s.close()
    # The held answers are given back when their connections close: a full read is served again.
    url = f"{broker.url}/topics/{topic_name}/partitions/0/records?offset=0&max_bytes=67108864"

    def served():
        return requests.get(url, headers={"Accept": "application/vnd.kafka.binary.v2+json"}, timeout=30).status_code == 200

    wait_until(served, 10, "a full read served after the readers closed")


def test_connections_over_the_creation_rate_wait_and_are_served_not_closed(ringlog_bin, tmp_path):
    """Kafka's acceptor waits over max.connection.creation.rate (ConnectionQuotas.
    waitForConnectionSlot) and then serves the connection. Session 33's new user, whose HTTP client
    opened a connection per request at 1,500/s, got thousands of resets with no answer: ringlog
    held such connections and closed them. With a rate of 5/s, 15 connections in a row, each
    asking /v1/health once, are all answered, the later ones after waiting for the rate."""
    b = Broker(tmp_path / "data", extra_sets=["max.connection.creation.rate=5"]).start()
    try:
        host, port = b.url.removeprefix("http://").split(":")
        started = time.monotonic()
        answered = 0
        for _ in range(15):
            with socket.create_connection((host, int(port)), timeout=10) as s:
                s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                reply = b""
                while chunk := s.recv(4096):
                    reply += chunk
                answered += reply.startswith(b"HTTP/1.1 200")
        elapsed = time.monotonic() - started
        print(f"15 connections at max.connection.creation.rate=5: {answered} answered in {elapsed:.2f} s")
        assert answered == 15
        # A burst of one second's worth (5) passes; the other 10 waited for the rate: about 2 s.
        assert elapsed >= 1.5
        assert (refused(b, "HTTP", "max.connection.creation.rate") or 0) >= 5
    finally:
        assert b.stop() == 0
