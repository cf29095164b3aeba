"""Retries and dead letters in a three-node cluster (issue 18): the group's coordinator, the
record's partition, the retry topic's delay partition and the dead-letter topic may each be led by
a different broker. Every call goes to a node in turn, so most reach the coordinator through
another broker (api_group_forward.cc); a poison record still reaches the dead-letter topic after
exactly max.delivery.attempts deliveries, and a redrive through yet another node puts it back once."""
import base64
import time

import requests

from conftest import wait_until
from test_cluster import FAILOVER_DEADLINE_S, cluster, create_topic  # noqa: F401 (fixture)

BINARY = "application/vnd.kafka.binary.v2+json"
V2 = "application/vnd.kafka.v2+json"
DEADLINE_S = 60.0


def header(rec, name):
    for h in reversed(rec["headers"] or []):
        if h["key"] == name:
            return base64.b64decode(h["value"]).decode()
    return None


def test_nacks_through_any_broker_reach_the_dead_letter_topic_and_redrive_once(cluster):
    wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    nodes = cluster.nodes
    r = create_topic(nodes[0], "rc", partitions=3, replication_factor=3)
    assert r.status_code == 201, r.text
    values = [f"v{i}" for i in range(12)]
    pending = [{"key": base64.b64encode(f"k{i % 4}".encode()).decode(), "value": base64.b64encode(v.encode()).decode()}
               for i, v in enumerate(values)]
    r = requests.post(f"{nodes[1].url}/topics/rc", json={"records": pending}, headers={"Content-Type": BINARY}, timeout=40)
    assert r.status_code == 200, r.text
    group = "rcg"
    turn = [0]

    def node():
        turn[0] += 1
        return nodes[turn[0] % len(nodes)]

    def call(method, path, **kw):
        # Through some node; a coordinator moving or a topic just created answers a retriable 503.
        end = time.monotonic() + DEADLINE_S
        while True:
            r = requests.request(method, node().url + path, timeout=40, **kw)
            if r.status_code != 503 or time.monotonic() > end:
                return r

    r = call("POST", f"/consumers/{group}", headers={"Content-Type": V2},
             json={"name": "c1", "format": "binary", "auto.offset.reset": "earliest",
                   "max.delivery.attempts": 2, "retry.backoff.ms": 200})
    assert r.status_code == 200, r.text
    inst = f"/consumers/{group}/instances/c1"
    r = call("POST", inst + "/subscription", json={"topics": ["rc"]}, headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    deliveries = {}
    processed = []

    def round_():
        r = call("GET", inst + "/records", params={"timeout": 200}, headers={"Accept": BINARY})
        assert r.status_code == 200, r.text
        for rec in r.json():
            value = base64.b64decode(rec["value"]).decode()
            deliveries.setdefault(value, []).append(rec["topic"])
            if base64.b64decode(rec["key"]) == b"k0":
                n = call("POST", inst + "/nacks", headers={"Content-Type": V2},
                         json={"offsets": [{"topic": rec["topic"], "partition": rec["partition"], "offset": rec["offset"],
                                            "reason": f"cluster {len(deliveries[value])}"}]})
                assert n.status_code == 204, n.text
            else:
                processed.append(value)
        c = call("POST", inst + "/offsets", headers={"Content-Type": V2})
        assert c.status_code == 204, c.text
        r = call("GET", f"/v3/clusters/{nodes[0].cluster_id()}/consumer-groups/{group}/dead-letters")
        data = r.json().get("data", []) if r.status_code == 200 else []
        return data and data[0]["dead_letters"] == 3 and len(processed) == 9

    wait_until(round_, DEADLINE_S, "the three poison records dead-lettered")
    for v in ("v0", "v4", "v8"):
        assert deliveries[v] == ["rc", "rc.rcg.retry"], deliveries
    assert sorted(processed) == sorted(v for i, v in enumerate(values) if i % 4 != 0)
    cluster_id = nodes[0].cluster_id()
    url = f"/v3/clusters/{cluster_id}/consumer-groups/{group}/dead-letters/rc.rcg.dlq"
    r = call("GET", url + "/records")
    assert r.status_code == 200, r.text
    assert all(d["reasons"] == ["cluster 1", "cluster 2"] and d["attempts"] == 2 for d in r.json()["data"])
    r = call("POST", url + "/redrive", json={})
    assert r.status_code == 200 and r.json()["redriven"] == 3, r.text
    r = call("POST", url + "/redrive", json={})
    assert r.status_code == 200 and r.json()["redriven"] == 0 and r.json()["already_redriven"] == 3, r.text


def test_a_group_that_nacked_without_committing_gets_its_retry_copies_after_its_coordinator_dies(cluster):
    """The breaker's finding: after a kill -9 of the group coordinator, a member that had nacked
    (and not committed) read the originals again but its retry-topic position was at the end, so
    the retry copies were skipped. The retry topic is read from its start (docs/retries.md)."""
    from test_group_forwarding import GROUP_FAILOVER_DEADLINE_S, SERVED_BY, produce, ready_cluster
    ready_cluster(cluster, "rk")
    a = cluster.node(1)
    for i in range(64):
        group = f"rk-{i}"
        r = requests.post(f"{a.url}/consumers/{group}", headers={"Content-Type": V2}, timeout=40,
                          json={"format": "binary", "auto.offset.reset": "earliest", "retry.backoff.ms": 3000,
                                "max.delivery.attempts": 3})
        assert r.status_code == 200, r.text
        base_uri, coordinator = r.json()["base_uri"], int(r.headers[SERVED_BY])
        if coordinator != 1:
            break
        assert requests.delete(base_uri, headers={"Content-Type": V2}, timeout=40).status_code == 204
    else:
        raise AssertionError("no group among 64 names is coordinated by another broker than node 1")
    r = requests.post(base_uri + "/subscription", json={"topics": ["rk"]}, headers={"Content-Type": V2}, timeout=40)
    assert r.status_code == 204, r.text
    values = [f"v{i}" for i in range(20)]
    produce(a, "rk", values)
    taken = {}

    def take():
        r = requests.get(base_uri + "/records", params={"timeout": 300}, headers={"Accept": BINARY}, timeout=60)
        assert r.status_code == 200, r.text
        for rec in r.json():
            taken[base64.b64decode(rec["value"]).decode()] = rec
        return len(taken) == len(values)

    wait_until(take, DEADLINE_S, "every record read once")
    r = requests.post(base_uri + "/nacks", headers={"Content-Type": V2}, timeout=40,
                      json={"offsets": [{"topic": rec["topic"], "partition": rec["partition"], "offset": rec["offset"],
                                         "reason": "before the kill"} for rec in taken.values()]})
    assert r.status_code == 204, r.text
    cluster.node(coordinator).kill()   # no commit: the new coordinator knows no position
    retried = {}

    def retries_back():
        r = requests.get(base_uri + "/records", params={"timeout": 500}, headers={"Accept": BINARY}, timeout=60)
        if r.status_code == 503:
            return False
        assert r.status_code == 200, r.text
        for rec in r.json():
            if rec["topic"] == f"rk.{group}.retry":
                retried[base64.b64decode(rec["value"]).decode()] = header(rec, "ringlog-delivery-attempt")
        return len(retried) == len(values)

    wait_until(retries_back, GROUP_FAILOVER_DEADLINE_S + DEADLINE_S, "every retry copy read after the coordinator died")
    assert retried == {v: "2" for v in values}
