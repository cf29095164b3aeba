"""A cluster whose only HTTP listener is https:// (session 25's new user, H1 and H2): each node
registers that door as "https", the others pass group calls on to it over TLS (checking its
certificate against ssl.truststore.location), and a REST consumer created through any node gets a
base_uri with the scheme the client used. Before: peers spoke plaintext to the https:// port
(400 "send the request over TLS"), consumer-group listings had every peer unanswered, and a
base_uri made on the coordinator for a forwarded call said http://.
"""
import subprocess

import pytest
import requests

from conftest import free_port, wait_until
from test_cluster import FAILOVER_DEADLINE_S, Cluster, Node
from tls_certs import Material

V2 = "application/vnd.kafka.v2+json"


class HttpsNode(Node):
    """A cluster node with https:// as its only HTTP listener, or (`plain_port`) with http:// too."""
    plain_port = None

    def listeners(self):
        listeners = f"https://127.0.0.1:{self.port},cluster://127.0.0.1:{self.cluster_port}"
        if self.plain_port:
            listeners += f",http://127.0.0.1:{self.plain_port}"
        return listeners

    @property
    def url(self):
        return f"https://127.0.0.1:{self.port}"


@pytest.fixture(params=["https only", "https and http"])
def https_cluster(request, ringlog_bin, tmp_path, monkeypatch):
    certs = Material(tmp_path / "certs")
    # requests checks the brokers' certificates against the test CA.
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(certs.ca_file))
    sets = ["listener.security.protocol.map=CLUSTER:SSL", f"ssl.keystore.location={certs.broker_pem}",
            f"ssl.truststore.location={certs.ca_file}"]
    c = Cluster(tmp_path, extra_sets=sets)
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(c.ports))
    c.nodes = [HttpsNode(n.data_dir, n.node_id, n.cluster_port, voters, sets) for n in c.nodes]
    if request.param == "https and http":
        for n in c.nodes:
            n.plain_port = free_port()
    c.start()
    yield c
    c.stop()


def test_group_calls_pass_on_over_tls_and_base_uri_keeps_https(https_cluster):
    c = https_cluster
    wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    n1 = c.node(1)
    # An https-only node registered its door as https; one with http:// too registers that one.
    brokers = wait_until(lambda: (lambda b: b if len(b) == 3 else None)(n1.brokers()), 20.0, "three brokers")
    assert {b["scheme"] for b in brokers.values()} == {"http" if n1.plain_port else "https"}, brokers
    # Groups whose coordinators are spread over the nodes: through node 1, each consumer is made
    # here or passed on to its coordinator over TLS.
    passed_on = 0
    for g in range(8):
        group = f"hg{g}"
        r = requests.post(f"{n1.url}/consumers/{group}", headers={"Content-Type": V2},
                          json={"name": "c1", "format": "binary"}, timeout=30)
        assert r.status_code == 200, r.text
        assert r.json()["base_uri"] == f"{n1.url}/consumers/{group}/instances/c1", r.text
        served_by = r.headers.get("X-Ringlog-Served-By")
        passed_on += served_by not in (None, "1")
        # The client follows base_uri, as REST Proxy clients do.
        s = requests.post(r.json()["base_uri"] + "/subscription", headers={"Content-Type": V2},
                          json={"topics": ["h-topic"]}, timeout=30)
        assert s.status_code == 204, s.text
    assert passed_on > 0, "no group's coordinator was another node: nothing was passed on"
    # A streamed read of an instance coordinated elsewhere is redirected to the coordinator's
    # registered door with its scheme (session 32's new user: http:// on an https-only cluster,
    # where following it failed and carried a fresh access token in the clear).
    redirected = 0
    for g in range(8):
        r = requests.get(f"{n1.url}/consumers/hg{g}/instances/c1/records", params={"timeout": 100, "access_token": "t"},
                         headers={"Accept": "application/x-ndjson"}, allow_redirects=False, timeout=30)
        if r.status_code != 307:
            continue
        redirected += 1
        scheme = "http" if n1.plain_port else "https"
        assert r.headers["Location"].startswith(f"{scheme}://"), r.headers
        assert r.headers["X-Ringlog-Coordinator"].startswith(f"{scheme}://"), r.headers
        # From TLS to a plaintext door, no credential travels in the URL.
        assert ("access_token" in r.headers["Location"]) == (scheme == "https"), r.headers
    assert redirected > 0, "no streamed read was redirected"
    # A listing asks every broker: none unanswered.
    r = requests.get(n1.v3("/consumer-groups"), timeout=30)
    assert r.status_code == 200, r.text
    assert not r.json().get("unanswered_brokers"), r.text
    assert {g["consumer_group_id"] for g in r.json()["data"]} >= {f"hg{g}" for g in range(8)}, r.text


def test_a_wildcard_https_listener_is_told_to_advertise_https(ringlog_bin, tmp_path):
    """An https:// listener bound to 0.0.0.0 warns that peers are told 127.0.0.1, and its advice
    names https://HOST:PORT: advertised.listeners=http://... for an https listener is refused at
    start (session 34's new user followed the advice as written and the node would not start)."""
    certs = Material(tmp_path / "certs")
    port, cluster_port = free_port(), free_port()
    log_path = tmp_path / "node.log"
    args = [str(ringlog_bin), "serve", "--set", "node.id=1", "--set", f"controller.quorum.voters=1@127.0.0.1:{cluster_port}",
            "--set", f"listeners=https://0.0.0.0:{port},cluster://127.0.0.1:{cluster_port}",
            "--set", f"ssl.keystore.location={certs.broker_pem}", "--set", f"ssl.truststore.location={certs.ca_file}",
            "--set", f"log.dirs={tmp_path / 'data'}"]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        try:
            warning = wait_until(lambda: next((line for line in log_path.read_text().splitlines()
                                               if "binds a wildcard address" in line), None), 30.0, "the wildcard warning")
            assert "advertised.listeners=https://HOST:PORT" in warning, warning
        finally:
            proc.terminate()
            proc.wait(timeout=30)
