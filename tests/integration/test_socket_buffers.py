"""socket.send.buffer.bytes and socket.receive.buffer.bytes (Kafka's keys, default 102400): the
kernel's send and receive buffers of every socket the http, https and Kafka listeners accept.

The breaker of session 39: 300 WebSocket subscribers that never read held 1.12 GB of kernel
Send-Q (about 3.7 MiB each: Linux autotunes a loopback socket's send buffer up to
net.ipv4.tcp_wmem's maximum), near the host's TCP memory pressure threshold, while ringlog's own
queues were bounded. Linux doubles the value set (its bookkeeping), so a socket holds at most
2 x socket.send.buffer.bytes, and one more segment.
"""
import base64
import os
import re
import socket
import subprocess

import requests

from conftest import Broker, free_port, wait_until
from test_websocket_queue import subscribed_never_reading
from tls_certs import Material

SUBSCRIBERS = 16
RECORD_BYTES = 2_000_000     # about 2.7 MB as base64 in a `record` message
RECORDS = 2                  # under ws_write_queue_bytes_max per session with credit for both
SEND_BUFFER_BYTES = 102400   # the default
# Linux checks the buffer before it queues the next segment, so a full socket may pass 2 x the
# value by one segment: on loopback up to 64 KiB (its 65536-byte MTU).
SEGMENT_BYTES_MAX = 64 * 1024
BACKED_UP_BYTES = 64 * 1024  # every server socket holds at least this: the clients really do not read


def server_send_queues(server_port, client_ports):
    """tx_queue of the server's end of each connection (/proc/net/tcp: bytes written, not yet
    acknowledged by the client), by client port."""
    out = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                if fields[3] == "01" and local_port == server_port and remote_port in client_ports:
                    out[remote_port] = int(fields[4].split(":")[0], 16)
    return out


def test_websocket_subscribers_that_never_read_hold_at_most_the_send_buffer_in_the_kernel(fresh_broker, topic_name):
    b = fresh_broker(["message.max.bytes=8388608"])
    b.create_topic(topic_name)
    for _ in range(RECORDS):
        value = base64.b64encode(os.urandom(RECORD_BYTES)).decode()
        r = requests.post(f"{b.url}/topics/{topic_name}", json={"records": [{"value": value}]},
                          headers={"Content-Type": "application/vnd.kafka.binary.v2+json"})
        assert r.status_code == 200, r.text
    socks = []
    try:
        for i in range(SUBSCRIBERS):
            socks.append(subscribed_never_reading(b.port, i, topic_name, RECORDS))
        ports = {s.getsockname()[1] for s in socks}
        last = {}

        def backed_up_and_settled():
            # Every server socket holds bytes its client has not read, and none grew since the
            # previous poll: the server has written all the kernel takes.
            nonlocal last
            now = server_send_queues(b.port, ports)
            settled = now == last and len(now) == SUBSCRIBERS and min(now.values()) >= BACKED_UP_BYTES
            last = now
            return now if settled else None

        queues = wait_until(backed_up_and_settled, 30, f"{SUBSCRIBERS} server sockets backed up and settled")
        bound = 2 * SEND_BUFFER_BYTES + SEGMENT_BYTES_MAX
        over = {port: q for port, q in queues.items() if q > bound}
        assert not over, (f"server Send-Q over 2 x socket.send.buffer.bytes + a segment = {bound} bytes: "
                          f"{sorted(over.values())}; "
                          f"{sum(queues.values()) >> 20} MiB held by {SUBSCRIBERS} subscribers that never read")
        assert b.proc.poll() is None
    finally:
        for s in socks:
            s.close()


def accepted_socket_buffers(server_port):
    """(tb, rb) of every established socket with local port `server_port`, from ss's skmem:
    the kernel's SO_SNDBUF and SO_RCVBUF (as doubled) of the server's end of each connection."""
    out = subprocess.run(["ss", "-tmnH", "state", "established", f"( sport = :{server_port} )"],
                         capture_output=True, text=True, check=True).stdout
    return [(int(tb), int(rb)) for rb, tb in re.findall(r"rb(\d+),t\d+,tb(\d+)", out)]


def test_every_client_listener_applies_the_keys_to_the_sockets_it_accepts(ringlog_bin, tmp_path):
    certs = Material(tmp_path / "certs")
    http, https, kafka = free_port(), free_port(), free_port()
    b = Broker(tmp_path / "data", port=http, extra_sets=[
        f"listeners=http://127.0.0.1:{http},https://127.0.0.1:{https},kafka://127.0.0.1:{kafka}",
        f"ssl.keystore.location={certs.broker_pem}",
        "socket.send.buffer.bytes=65536", "socket.receive.buffer.bytes=32768"]).start()
    clients = []
    try:
        for port in (http, https, kafka):
            clients.append(socket.create_connection(("127.0.0.1", port), timeout=10))
            got = wait_until(lambda: accepted_socket_buffers(port) or None, 10, f"the accepted socket of :{port}")
            assert got == [(2 * 65536, 2 * 32768)], (port, got)
    finally:
        for c in clients:
            c.close()
        assert b.stop() == 0


def test_values_out_of_bounds_are_refused_naming_the_key(ringlog_bin, tmp_path):
    for key, value in (("socket.send.buffer.bytes", "0"), ("socket.receive.buffer.bytes", "-2"),
                       ("socket.send.buffer.bytes", "2147483647")):
        out = subprocess.run([str(ringlog_bin), "serve", "--set", f"log.dirs={tmp_path / 'data'}",
                              "--set", f"listeners=http://127.0.0.1:{free_port()}", "--set", f"{key}={value}"],
                             capture_output=True, text=True, timeout=30)
        said = out.stdout + out.stderr
        assert out.returncode == 2, (key, value, out.returncode, said[-2000:])
        assert f"{key}={value}: must be -1 (the OS default) or an integer in [4096, 1073741824]" in said, said[-2000:]
