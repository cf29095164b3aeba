"""Answers whose connection is watched while they wait (session 40): a v2 records poll and an
NDJSON / SSE stream watch their client's connection, to take no record for a client that left.
The watch read from the connection and dropped what it read, and the answer closed the
connection: a request the client pipelined behind it (HTTP/1.1) was never answered. What the
watch reads is now kept and served after the answer. And a client's own poll is watched as one
another broker passed on always was: a poll whose client left takes nothing.

Raw sockets, so that requests can be pipelined and a client can leave mid-wait; every wait polls
with a deadline."""
import base64
import json
import socket
import subprocess

import requests

from conftest import wait_until

BINARY = "application/vnd.kafka.binary.v2+json"
V2 = "application/vnd.kafka.v2+json"
NDJSON = "application/x-ndjson"
READ_TIMEOUT_S = 15


def b64(text):
    return base64.b64encode(text.encode()).decode()


def unb64(text):
    return base64.b64decode(text).decode()


def produce(broker, topic, values):
    r = requests.post(f"{broker.url}/topics/{topic}/partitions/0",
                      json={"records": [{"value": b64(v)} for v in values]}, headers={"Content-Type": BINARY}, timeout=30)
    assert r.status_code == 200, r.text


class Reader:
    """HTTP/1.1 responses read one after another off one socket (Content-Length or chunked)."""

    def __init__(self, sock):
        self.sock = sock
        self.data = b""

    def _more(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError(f"the server closed the connection; unread: {self.data[:200]!r}")
        self.data += chunk

    def _take_until(self, marker):
        while marker not in self.data:
            self._more()
        head, self.data = self.data.split(marker, 1)
        return head

    def _take(self, n):
        while len(self.data) < n:
            self._more()
        out, self.data = self.data[:n], self.data[n:]
        return out

    def response(self):
        """(status, headers with lower-case names, body bytes)."""
        head = self._take_until(b"\r\n\r\n").decode()
        lines = head.split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self._take_until(b"\r\n").split(b";")[0], 16)
                if size == 0:
                    self._take_until(b"\r\n")
                    return status, headers, body
                body += self._take(size)
                self._take(2)
        return status, headers, self._take(int(headers.get("content-length", "0")))


def get(path, port, accept="application/json"):
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: {accept}\r\n\r\n".encode()


def subscribed_instance(broker, topic, group):
    """A binary v2 instance subscribed to `topic` that has read its first record "r0": its path."""
    broker.create_topic(topic)
    created = requests.post(f"{broker.url}/consumers/{group}", json={"format": "binary", "auto.offset.reset": "earliest"},
                            headers={"Content-Type": V2}, timeout=30)
    assert created.status_code == 200, created.text
    base = created.json()["base_uri"]
    r = requests.post(base + "/subscription", json={"topics": [topic]}, headers={"Content-Type": V2}, timeout=30)
    assert r.status_code == 204, r.text
    produce(broker, topic, ["r0"])
    wait_until(lambda: [unb64(x["value"]) for x in poll(base)] == ["r0"], 20.0, "r0 read")
    return "/consumers/" + base.split("/consumers/", 1)[1]


def poll(base, timeout_ms=300):
    r = requests.get(f"{base}/records", params={"timeout": timeout_ms}, headers={"Accept": BINARY}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def server_read_all_of(port, client_port):
    """Whether the server's end of the connection from `client_port` to `port` has received bytes
    and holds none unread (ss(8): Recv-Q 0)."""
    out = subprocess.run(["ss", "-tinH", "state", "established", f"( sport = :{port} and dport = :{client_port} )"],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return any(line.split() and line.split()[0] == "0" and "bytes_received:" in info
               for line, info in zip(out[0::2], out[1::2]))


def test_a_request_pipelined_behind_a_poll_or_a_stream_is_answered_after_it(broker, topic_name):
    instance = subscribed_instance(broker, topic_name, "piped-" + topic_name)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=READ_TIMEOUT_S) as s:
        reader = Reader(s)
        client_port = s.getsockname()[1]
        read_by_broker = lambda: server_read_all_of(broker.port, client_port)  # noqa: E731
        # A v2 poll that waits for a record; a request pipelined behind it while it waits.
        s.sendall(get(f"{instance}/records?timeout=20000", broker.port, BINARY))
        wait_until(read_by_broker, 10.0, "the broker to read the poll")
        s.sendall(get("/v1/health", broker.port))
        wait_until(read_by_broker, 10.0, "the broker to read the pipelined request")
        produce(broker, topic_name, ["r1"])
        status, headers, body = reader.response()
        assert status == 200, body
        assert [unb64(x["value"]) for x in json.loads(body)] == ["r1"]
        assert headers.get("connection", "").lower() != "close", headers
        status, _, body = reader.response()
        assert status == 200, body
        # An NDJSON stream of the partition (it ends at its timeout), a request pipelined behind
        # it while it streams, and one sent with it.
        stream = f"/topics/{topic_name}/partitions/0/records?offset=0&timeout=1500"
        s.sendall(get(stream, broker.port, NDJSON))
        wait_until(read_by_broker, 10.0, "the broker to read the stream's request")
        s.sendall(get(f"/topics/{topic_name}", broker.port, V2) + get("/v1/health", broker.port))
        status, headers, body = reader.response()
        assert status == 200, body
        assert [unb64(json.loads(line)["value"]) for line in body.splitlines() if line] == ["r0", "r1"]
        status, _, body = reader.response()
        assert status == 200, body
        assert json.loads(body)["name"] == topic_name
        status, _, body = reader.response()
        assert status == 200, body


def test_a_clients_own_poll_takes_no_record_once_the_client_left(broker, topic_name):
    """As a poll another broker passes on (test_group_forwarding.py): the client leaves during the
    wait, then a record arrives. The poll took it for nobody (its instance's position moved past
    it) and the client's next poll never saw it; now the poll takes nothing and the next one
    returns it."""
    instance = subscribed_instance(broker, topic_name, "left-" + topic_name)
    client = socket.create_connection(("127.0.0.1", broker.port), timeout=READ_TIMEOUT_S)
    client.sendall(get(f"{instance}/records?timeout=20000", broker.port, BINARY))
    client_port = client.getsockname()[1]
    wait_until(lambda: server_read_all_of(broker.port, client_port), 10.0, "the broker to read the poll")
    client.close()
    produce(broker, topic_name, ["r1"])
    seen = []

    def read_r1():
        seen.extend(unb64(x["value"]) for x in poll(broker.url + instance))
        return "r1" in seen
    wait_until(read_r1, 10.0, f"r1 read by the next poll (read so far: {seen})")
    assert seen == ["r1"], seen
