"""Starts the real `ringlog serve` on a free loopback port with a temporary log.dirs.

RINGLOG_BIN overrides the binary (default build/src/app/ringlog). Waits on /v1/health with a
deadline; never sleeps blindly. Run with: /usr/bin/python3 -m pytest tests/integration
"""
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

import pytest
import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))   # tests/ports.py, shared with tests/cluster
from ports import free_port  # noqa: E402,F401  (tests import it from here)

START_DEADLINE_S = 20.0
STOP_DEADLINE_S = 20.0


def binary_path():
    path = pathlib.Path(os.environ.get("RINGLOG_BIN", ROOT / "build" / "src" / "app" / "ringlog"))
    if not path.is_absolute():
        path = ROOT / path
    return path


# free_port: tests/ports.py (ports 20000-32000, below the ephemeral range; see there why).


def send_until_closed(address, data, shut_write=False, timeout_s=5):
    """Sends `data` on a new connection to `address` ((host, port)) and reads until the peer closes
    it (a reset counts as a close): for bytes a listener must refuse. A peer that keeps the
    connection open past `timeout_s` raises socket.timeout."""
    with socket.create_connection(address, timeout=timeout_s) as s:
        s.sendall(data)
        if shut_write:
            s.shutdown(socket.SHUT_WR)
        s.settimeout(timeout_s)
        try:
            while s.recv(4096):
                pass
        except ConnectionResetError:
            pass


def strict_tls_connections(context, port, count, server_hostname="localhost"):
    """`count` TLS connections to 127.0.0.1:`port`, handshaken, on which a TCP close without TLS's
    close_notify raises ssl.SSLEOFError (Python 3.10+ ignores such an EOF unless told otherwise;
    suppress_ragged_eofs=False makes recv raise it)."""
    import ssl
    context.options &= ~ssl.OP_IGNORE_UNEXPECTED_EOF
    out = []
    for _ in range(count):
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        tls = context.wrap_socket(raw, server_hostname=server_hostname, suppress_ragged_eofs=False)
        tls.do_handshake()
        out.append(tls)
    return out


def read_to_close_notify(connections):
    """Reads each connection to its end: raises ssl.SSLEOFError where the server closed the TCP
    connection without close_notify (see strict_tls_connections)."""
    for tls in connections:
        tls.settimeout(10)
        while tls.recv(65536):
            pass


def read_kafka_answer(sock):
    """One size-prefixed Kafka answer frame, read whole (its bytes, the size included)."""
    import struct
    answer = b""
    while len(answer) < 4 or len(answer) < 4 + struct.unpack(">i", answer[:4])[0]:
        chunk = sock.recv(65536)
        assert chunk, answer
        answer += chunk
    return answer


def wait_until(predicate, deadline_s, what):
    """Polls predicate() until it is truthy or the deadline passes."""
    end = time.monotonic() + deadline_s
    delay = 0.01
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= end:
            raise AssertionError(f"timed out after {deadline_s}s waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


class Broker:
    """One running `ringlog serve` process."""

    def __init__(self, data_dir, extra_sets=(), port=None, kafka_port=None, extra_args=()):
        self.data_dir = pathlib.Path(data_dir)
        self.extra_sets = list(extra_sets)
        self.extra_args = list(extra_args)   # after the --set options (e.g. --add-scram)
        self.port = port or free_port()
        # kafka_port: also serve Kafka clients on kafka://127.0.0.1:kafka_port (tests/integration/test_kafka*.py).
        self.kafka_port = kafka_port
        self.proc = None
        self.log_path = self.data_dir.parent / f"ringlog-{self.port}.log"

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.kafka_port}"

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        listeners = f"http://127.0.0.1:{self.port}"
        if self.kafka_port:
            listeners += f",kafka://127.0.0.1:{self.kafka_port}"
        args = [str(binary_path()), "serve", "--set", f"listeners={listeners}",
                "--set", f"log.dirs={self.data_dir}", "--set", "num.shards=2"]
        for s in self.extra_sets:
            args += ["--set", s]
        args += self.extra_args
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)

        def healthy():
            if self.proc.poll() is not None:
                raise AssertionError(f"ringlog exited with {self.proc.returncode}: {self.log_path.read_text()[-2000:]}")
            try:
                return requests.get(self.url + "/v1/health", timeout=1).status_code == 200
            except requests.ConnectionError:
                return False

        wait_until(healthy, START_DEADLINE_S, "/v1/health")
        return self

    def stop(self, sig=signal.SIGTERM):
        if self.proc is None:
            return None
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=STOP_DEADLINE_S)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.log.close()
        self.proc = None
        return code

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()
        self.proc = None

    # -- helpers
    def cluster_id(self):
        return requests.get(self.url + "/v3/clusters").json()["data"][0]["cluster_id"]

    def v3(self, path=""):
        return f"{self.url}/v3/clusters/{self.cluster_id()}{path}"

    def create_topic(self, name, partitions=1, configs=None):
        body = {"topic_name": name, "partitions_count": partitions}
        if configs:
            body["configs"] = [{"name": k, "value": v} for k, v in configs.items()]
        r = requests.post(self.v3("/topics"), json=body)
        assert r.status_code == 201, r.text
        return r.json()


@pytest.fixture(scope="session")
def ringlog_bin():
    path = binary_path()
    if not path.exists():
        pytest.fail(f"ringlog binary not found at {path}: build it (ninja -C build) or set RINGLOG_BIN")
    return path


@pytest.fixture(scope="module")
def broker(ringlog_bin, tmp_path_factory):
    """A broker shared by the tests of one module (topics are named per test)."""
    b = Broker(tmp_path_factory.mktemp("data") / "ringlog-data").start()
    yield b
    assert b.stop() == 0


@pytest.fixture
def fresh_broker(ringlog_bin, tmp_path):
    """A broker of one's own, for restart and limit tests; `make(extra_sets)` starts it."""
    started = []

    def make(extra_sets=()):
        b = Broker(tmp_path / "ringlog-data", extra_sets).start()
        started.append(b)
        return b

    yield make
    for b in started:
        if b.proc is not None:
            b.stop()


_counter = [0]


@pytest.fixture
def topic_name(request):
    _counter[0] += 1
    safe = "".join(c if c.isalnum() else "-" for c in request.node.name)[:80]
    return f"t{_counter[0]}-{safe}"


def pytest_addoption(parser):
    parser.addoption("--eos-long", action="store_true", default=False,
                     help="also run the long consume-transform-produce SIGKILL run (test_transactions.py)")
