"""The https:// listener (issue 29): REST with curl and python requests, a WebSocket over wss://,
an NDJSON stream, the console and the `ringlog` CLI over TLS; plaintext on the https port and
strangers are closed with a log line while the server goes on serving; an https-only node.
Certificates come from tls_certs.py.
"""
import asyncio
import base64
import json
import os
import signal
import socket
import ssl
import subprocess

import pytest
import requests
import websockets

from conftest import Broker, binary_path, free_port, read_to_close_notify, strict_tls_connections, wait_until
from tls_certs import Material

JSONV2 = "application/vnd.kafka.json.v2+json"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return Material(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def https_broker(ringlog_bin, certs, tmp_path_factory):
    http, https = free_port(), free_port()
    b = Broker(tmp_path_factory.mktemp("httpsdata") / "ringlog-data", port=http, extra_sets=[
        f"listeners=http://127.0.0.1:{http},https://127.0.0.1:{https}",
        f"ssl.keystore.location={certs.broker_pem}"])
    b.https = f"https://localhost:{https}"
    b.https_port = https
    b.start()
    yield b
    assert b.stop() == 0


def curl(*args):
    r = subprocess.run(["curl", "-sS", "--max-time", "20", *args], capture_output=True, timeout=30)
    return r


def test_curl_produces_and_reads_over_https(https_broker, certs, topic_name):
    r = curl("--cacert", certs.ca_file, "-X", "POST", "-H", f"Content-Type: {JSONV2}",
             "--data", json.dumps({"records": [{"value": {"n": 1}}, {"value": {"n": 2}}]}),
             f"{https_broker.https}/topics/{topic_name}")
    assert r.returncode == 0, r.stderr
    assert [o["offset"] for o in json.loads(r.stdout)["offsets"]] == [0, 1]
    r = curl("--cacert", certs.ca_file, "-H", f"Accept: {JSONV2}",
             f"{https_broker.https}/topics/{topic_name}/partitions/0/records?offset=0")
    assert r.returncode == 0, r.stderr
    assert [x["value"] for x in json.loads(r.stdout)] == [{"n": 1}, {"n": 2}]
    # The console's files too.
    r = curl("--cacert", certs.ca_file, "-o", "/dev/null", "-w", "%{http_code}", f"{https_broker.https}/console/")
    assert r.stdout.decode() == "200"
    # Without the CA the client refuses the certificate: nothing is sent.
    r = curl(f"{https_broker.https}/v3/clusters")
    assert r.returncode != 0


def test_ndjson_stream_over_https(https_broker, certs, topic_name):
    requests.post(f"{https_broker.https}/topics/{topic_name}", verify=certs.ca_file,
                  json={"records": [{"value": i} for i in range(5)]}, headers={"Content-Type": JSONV2}, timeout=10)
    with requests.get(f"{https_broker.https}/topics/{topic_name}/partitions/0/records",
                      params={"offset": 0, "timeout": 20000}, headers={"Accept": "application/x-ndjson"},
                      verify=certs.ca_file, stream=True, timeout=20) as r:
        assert r.status_code == 200, r.text
        assert r.headers["Content-Type"].startswith("application/x-ndjson")
        got = []
        for line in r.iter_lines(chunk_size=None):
            if line:
                got.append(json.loads(line))
            if len(got) == 5:
                break
    assert [g["offset"] for g in got] == list(range(5))


def test_websocket_over_wss(https_broker, certs, topic_name):
    ctx = ssl.create_default_context(cafile=certs.ca_file)

    async def go():
        async with websockets.connect(f"wss://localhost:{https_broker.https_port}/v1/ws", ssl=ctx) as ws:
            for i in range(10):
                await ws.send(json.dumps({"type": "produce", "id": f"r{i}", "topic": topic_name, "partition": 0,
                                          "value": base64.b64encode(b"v%d" % i).decode()}))
            acks = [json.loads(await ws.recv()) for _ in range(10)]
            assert [a["offset"] for a in acks] == list(range(10)), acks

    asyncio.run(asyncio.wait_for(go(), 60))


def test_cli_reaches_the_https_listener(https_broker, certs, topic_name):
    env = {**os.environ, "RINGLOG_CA_FILE": certs.ca_file}
    r = subprocess.run([str(binary_path()), "topics", "create", topic_name, "--bootstrap-server", https_broker.https],
                       capture_output=True, env=env, timeout=30)
    assert r.returncode == 0, r.stderr.decode()
    r = subprocess.run([str(binary_path()), "topics", "list", "--bootstrap-server", https_broker.https],
                       capture_output=True, env=env, timeout=30)
    assert r.returncode == 0 and topic_name in r.stdout.decode(), r.stderr.decode()
    # Without the CA the CLI refuses the certificate and says how to name it.
    env.pop("RINGLOG_CA_FILE")
    r = subprocess.run([str(binary_path()), "topics", "list", "--bootstrap-server", https_broker.https],
                       capture_output=True, env=env, timeout=30)
    assert r.returncode != 0 and "RINGLOG_CA_FILE" in r.stderr.decode()
    r = subprocess.run([str(binary_path()), "topics", "list", "--bootstrap-server", https_broker.https],
                       capture_output=True, env={**env, "RINGLOG_TLS_INSECURE": "1"}, timeout=30)
    assert r.returncode == 0, r.stderr.decode()


def test_plaintext_http_on_the_https_port_is_told_to_use_https_with_a_log_line(https_broker, certs):
    with socket.create_connection(("127.0.0.1", https_broker.https_port), timeout=5) as s:
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        s.settimeout(5)
        data = b""
        try:
            while chunk := s.recv(4096):
                data += chunk
        except ConnectionResetError:
            pass
    # A new user's curl http://...:8443 got an empty reply: now a 400 saying what to do.
    assert data.startswith(b"HTTP/1.1 400") and b"https://" in data, data[:200]
    wait_until(lambda: "listener=HTTPS" in https_broker.log_path.read_text(errors="replace"), 10, "a log line")
    assert requests.get(f"{https_broker.https}/v1/health", verify=certs.ca_file, timeout=5).status_code == 200


def test_an_https_only_node_serves(ringlog_bin, certs, tmp_path):
    https = free_port()
    log = open(tmp_path / "log", "wb")
    p = subprocess.Popen([str(binary_path()), "serve", "--set", f"log.dirs={tmp_path / 'd'}", "--set", "num.shards=1",
                          "--set", f"listeners=https://127.0.0.1:{https}",
                          "--set", f"ssl.keystore.location={certs.broker_pem}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        def healthy():
            assert p.poll() is None, (tmp_path / "log").read_text()
            try:
                return requests.get(f"https://localhost:{https}/v1/health", verify=certs.ca_file, timeout=1).ok
            except requests.ConnectionError:
                return False
        wait_until(healthy, 20, "https health")
        # Session 32: its "serving" line listed no listener at all ("listeners= cluster.id=...").
        def serving():
            return [line for line in (tmp_path / "log").read_text().splitlines() if 'msg="serving"' in line]
        wait_until(serving, 10, "the serving line")   # logged once every listener listens
        assert len(serving()) == 1 and f"listeners=https://127.0.0.1:{https} " in serving()[0], serving()
    finally:
        p.terminate()
        assert p.wait(20) == 0


def test_links_on_the_https_listener_say_https_and_the_plain_one_http(https_broker, certs):
    """A new user's REST Proxy client followed base_uri "http://localhost:<https port>/..." and
    spoke plaintext to the TLS port: links follow the listener the request came in on."""
    group = "links-over-https"
    r = curl("--cacert", certs.ca_file, "-X", "POST", "-H", f"Content-Type: {JSONV2}",
             "--data", json.dumps({"name": "one", "format": "json"}), f"{https_broker.https}/consumers/{group}")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["base_uri"].startswith(f"https://localhost:{https_broker.https_port}/"), r.stdout
    r = curl("--cacert", certs.ca_file, f"{https_broker.https}/v3/clusters")
    assert json.loads(r.stdout)["data"][0]["metadata"]["self"].startswith("https://"), r.stdout
    r = curl(f"{https_broker.url}/v3/clusters")
    assert json.loads(r.stdout)["data"][0]["metadata"]["self"].startswith("http://"), r.stdout


def read_http_answer(tls):
    """One HTTP/1.1 answer with a Content-Length, read from `tls`."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = tls.recv(65536)
        assert chunk, data
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = int(next(l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")))
    while len(body) < length:
        chunk = tls.recv(65536)
        assert chunk, data
        body += chunk
    return head


def test_a_controlled_shutdown_ends_https_connections_with_close_notify(ringlog_bin, certs, tmp_path):
    """As the Kafka listeners do since session 39: on SIGTERM an https:// connection was cut
    without TLS's close_notify (the HTTP server's drain closed it under the TLS tunnel), which a
    strict TLS client reports as a truncation attack ("unexpected eof while reading")."""
    http, https = free_port(), free_port()
    b = Broker(tmp_path / "data", port=http, extra_sets=[
        f"listeners=http://127.0.0.1:{http},https://127.0.0.1:{https}", f"ssl.keystore.location={certs.broker_pem}"])
    b.start()
    context = ssl.create_default_context(cafile=certs.ca_file)
    context.check_hostname = False
    clients = []
    try:
        clients = strict_tls_connections(context, https, 3)
        # Every connection is served (a keep-alive request answered) before the stop.
        for tls in clients:
            tls.sendall(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert read_http_answer(tls).startswith(b"HTTP/1.1 200"), tls
        b.proc.send_signal(signal.SIGTERM)
        read_to_close_notify(clients)
    finally:
        for tls in clients:
            tls.close()
        assert b.stop() == 0
