"""Retries and dead letters in a three-node cluster (issue 18): the group's coordinator, the
record's partition, the retry topic's delay partition and the dead-letter topic may each be led by
a different broker. Every call goes to a node in turn, so most reach the coordinator through
another broker (api_group_forward.cc); a poison record still reaches the dead-letter topic after
exactly max.delivery.attempts deliveries, and a redrive through yet another node puts it back once."""
import base64
import time

import requests

from conftest import wait_until
from test_cluster import FAILOVER_DEADLINE_S, cluster, create_topic, describe  # noqa: F401 (fixture)

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


def retriable(m):
    """A WebSocket `error` a client retries (http-api/ws-protocol.md): 503 family (50301: the
    coordinator or a partition's leader moving, or a leader that has not applied a topic yet)."""
    return m.get("type") == "error" and 50300 <= m.get("error_code", 0) < 50400


def test_a_websocket_member_joined_through_another_broker_keeps_its_topic_name_templates(cluster):
    """The join's retry.topic.template and dead.letter.topic.template travel with the member to
    its coordinator (member_calls.cc), so its nacks use its names, and the dead-letter list
    through a third broker finds them."""
    import asyncio
    import json

    import websockets

    wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    n1 = cluster.node(1)
    # Replication factor 3 needs all three brokers unfenced: on a busy machine a broker that serves
    # may not have had its first heartbeat answered yet (400 "available brokers (2)" otherwise).
    wait_until(lambda: (lambda b: len(b) == 3 and all(x["state"] == "unfenced" for x in b.values()))(n1.brokers()),
               FAILOVER_DEADLINE_S, "three unfenced brokers")
    r = create_topic(n1, "wn", partitions=1, replication_factor=3)
    assert r.status_code == 201, r.text
    # Every node has applied the topic (the produce below and the member's reads cross brokers).
    wait_until(lambda: all(describe(n, "wn").status_code == 200 for n in cluster.nodes), FAILOVER_DEADLINE_S,
               "wn on every node")
    r = requests.post(f"{n1.url}/topics/wn", json={"records": [{"value": base64.b64encode(b"poison").decode()}]},
                      headers={"Content-Type": BINARY}, timeout=40)
    assert r.status_code == 200, r.text

    def forwarded_group():
        # A group another broker coordinates: node 1 passes its calls on (X-Ringlog-Served-By).
        for i in range(40):
            g = f"wng{i}"
            r = requests.post(f"{n1.url}/consumers/{g}", json={"name": "probe"}, headers={"Content-Type": V2}, timeout=40)
            if r.status_code == 503:
                return None
            assert r.status_code == 200, r.text
            requests.delete(f"{n1.url}/consumers/{g}/instances/probe", headers={"Content-Type": V2}, timeout=40)
            if r.headers.get("X-Ringlog-Served-By") not in (None, "1"):
                return g
        raise AssertionError("every group is coordinated by node 1")

    group = wait_until(forwarded_group, DEADLINE_S, "a group coordinated by another broker")
    dlt = f"{group}-dlt-wn"

    cluster_id = requests.get(n1.url + "/v3/clusters", timeout=10).json()["data"][0]["cluster_id"]
    n3 = cluster.node(3)
    groups_url = f"{n3.url}/v3/clusters/{cluster_id}/consumer-groups/{group}"

    def listed():
        r = requests.get(groups_url + "/dead-letters", timeout=40)
        return r.json()["data"] if r.status_code == 200 and r.json()["data"] else None

    async def run():
        async with websockets.connect(f"ws://127.0.0.1:{n1.port}/v1/ws") as ws:
            await ws.send(json.dumps({"type": "join", "id": 1, "group": group, "topics": ["wn"], "position": "earliest",
                                      "max.delivery.attempts": 1, "retry.topic.template": "<group>-retry-<topic>",
                                      "dead.letter.topic.template": "<group>-dlt-<topic>"}))
            await ws.send(json.dumps({"type": "credit", "records": 10, "bytes": 1 << 20}))
            while True:
                m = json.loads(await asyncio.wait_for(ws.recv(), timeout=DEADLINE_S))
                assert m["type"] != "error" or retriable(m), m   # a 50301 poll error: retried by the server
                if m["type"] == "record":
                    break
            nack = {"type": "nack", "id": 2, "topic": m["topic"], "partition": m["partition"], "offset": m["offset"],
                    "reason": "no"}
            await ws.send(json.dumps(nack))
            end = time.monotonic() + DEADLINE_S
            while True:
                a = json.loads(await asyncio.wait_for(ws.recv(), timeout=DEADLINE_S))
                if a.get("id") == 2 and retriable(a) and time.monotonic() < end:
                    await ws.send(json.dumps(nack))   # e.g. the dead-letter topic's leader not ready yet: retry
                    continue
                if a.get("id") == 2:
                    assert a["type"] == "nacked", a
                    break
            # While the member is there, its templates are the group's: listed through a third node.
            return await asyncio.get_running_loop().run_in_executor(
                None, lambda: wait_until(listed, DEADLINE_S, "the named dead-letter topic listed through node 3"))

    data = asyncio.run(run())
    assert [(t["topic_name"], t["original_topic_name"], t["dead_letters"]) for t in data] == [(dlt, "wn", 1)], data
    assert f"wn.{group}.dlq" not in requests.get(f"{n3.url}/topics", timeout=10).json()
    # The member gone (a WebSocket member's instance ends with its connection), no instance of the
    # group names that template: not listed, as docs/retries.md says; an instance created with the
    # templates (it need not poll) lists it again, and redrive works through it.
    wait_until(lambda: requests.get(groups_url + "/dead-letters", timeout=40).json()["data"] == [], DEADLINE_S,
               "the list without the member")
    r = requests.post(f"{n3.url}/consumers/{group}", headers={"Content-Type": V2}, timeout=40,
                      json={"name": "ops", "retry.topic.template": "<group>-retry-<topic>",
                            "dead.letter.topic.template": "<group>-dlt-<topic>"})
    assert r.status_code == 200, r.text
    assert [t["topic_name"] for t in wait_until(listed, DEADLINE_S, "the list with the ops instance")] == [dlt]
    r = requests.post(f"{groups_url}/dead-letters/{dlt}/redrive", json={"to": "retry"}, timeout=40)
    assert r.status_code == 200 and r.json()["redriven"] == 1, r.text
    assert f"{group}-retry-wn" in requests.get(f"{n3.url}/topics", timeout=10).json()   # the named retry topic
    assert f"wn.{group}.retry" not in requests.get(f"{n3.url}/topics", timeout=10).json()
