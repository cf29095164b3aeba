"""Consumer groups through any broker of a three-node cluster (issue "Cluster II").

A group's coordinator is the leader of its __consumer_offsets partition. A REST consumer instance
created through broker A whose coordinator is B is served through A (A passes each call on to B's
HTTP listener): its base_uri names A. kill -9 of B moves the group to a new coordinator, which
loads it from the replicated log: the client keeps using its base_uri, the committed offset is
there and no record is lost. A WebSocket member through a non-coordinator works the same way; the
cluster's under-replicated partition count rises when a broker dies and returns to 0 after it is
back. Every wait polls with a deadline.
"""
import asyncio
import base64
import json
import socket
import subprocess
import threading
import urllib.parse

import requests
import websockets

from conftest import wait_until
from test_cluster import FAILOVER_DEADLINE_S, Cluster, create_topic  # noqa: F401
from test_cluster import cluster  # noqa: F401  (the fixture)
from test_kafka_cluster import _coordinator_partition
from test_pipelined_behind_watch import Reader, get, server_read_all_of

V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
SERVED_BY = "X-Ringlog-Served-By"
FORWARDED_BY = "X-Ringlog-Forwarded-By"
# A moved group: fencing the dead broker (its heartbeats stop), electing new leaders and loading the
# group from the log all fit in seconds; generous for a loaded CI machine.
GROUP_FAILOVER_DEADLINE_S = 40.0


def b64(text):
    return base64.b64encode(text.encode()).decode()


def unb64(text):
    return base64.b64decode(text).decode()


def produce(node, topic, values):
    r = requests.post(f"{node.url}/topics/{topic}", json={"records": [{"value": b64(v)} for v in values]},
                      headers={"Content-Type": BINARY}, timeout=40)
    assert r.status_code == 200, r.text
    assert all(o.get("error") is None for o in r.json()["offsets"]), r.text


def ready_cluster(cluster, topic, partitions=2):
    """A controller, a replicated topic and __consumer_offsets with a leader for every partition."""
    wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    n1 = cluster.node(1)
    r = create_topic(n1, topic, partitions=partitions, replication_factor=3)
    assert r.status_code == 201, r.text

    def led_everywhere(name):
        # Each node answers from its own metadata: every one has applied the topic with its leaders
        # (a leader that has not yet refuses forwarded produces as retriable).
        for n in cluster.live():
            r = requests.get(n.v3(f"/topics/{name}/partitions"), timeout=5)
            if r.status_code != 200 or not all(p["leader"] is not None for p in r.json()["data"]):
                return False
        return True
    wait_until(lambda: led_everywhere("__consumer_offsets"), FAILOVER_DEADLINE_S, "__consumer_offsets with leaders")
    wait_until(lambda: led_everywhere(topic), FAILOVER_DEADLINE_S, f"{topic} with leaders on every node")


def consumer_through(node, prefix, not_served_by=None):
    """Creates a binary REST consumer through `node` in the first group named prefix-N whose
    coordinator is another broker (not `not_served_by` either): (group, base_uri, coordinator id)."""
    for i in range(64):
        group = f"{prefix}-{i}"
        r = requests.post(f"{node.url}/consumers/{group}", json={"format": "binary", "auto.offset.reset": "earliest"},
                          headers={"Content-Type": V2}, timeout=40)
        assert r.status_code == 200, r.text
        served_by = r.headers.get(SERVED_BY)
        base_uri = r.json()["base_uri"]
        if served_by is not None and int(served_by) != not_served_by:
            return group, base_uri, int(served_by)
        d = requests.delete(base_uri, headers={"Content-Type": V2}, timeout=40)
        assert d.status_code == 204, d.text
    raise AssertionError("no group among 64 names is coordinated by another broker")


def poll(base_uri, timeout_ms=500):
    """One records read: (status, records or error body, headers)."""
    r = requests.get(f"{base_uri}/records", params={"timeout": timeout_ms}, headers={"Accept": BINARY}, timeout=60)
    return r.status_code, r.json(), r.headers


def consume(base_uri, want, deadline_s, seen):
    """Reads through base_uri until every value of `want` is in `seen` (value -> offsets read);
    503 (a coordinator moving) is retried, with Retry-After, until the deadline."""
    def step():
        status, body, headers = poll(base_uri)
        if status == 503:
            assert headers.get("Retry-After") == "1", headers
            return False
        assert status == 200, body
        for rec in body:
            seen.setdefault(unb64(rec["value"]), []).append((rec["partition"], rec["offset"]))
        return want <= set(seen)
    wait_until(step, deadline_s, f"{len(want)} values read through {base_uri}")


def committed(base_uri):
    r = requests.get(f"{base_uri}/offsets", headers={"Content-Type": V2, "Accept": V2}, timeout=40)
    return r.status_code, r.json()


def test_rest_consumer_through_a_non_coordinator_survives_kill_9_of_the_coordinator(cluster):
    ready_cluster(cluster, "orders")
    a = cluster.node(1)
    group, base_uri, coordinator = consumer_through(a, "fwd")
    assert coordinator != 1
    # base_uri names the broker the client used, not the coordinator.
    assert base_uri.startswith(a.url + "/consumers/"), base_uri
    r = requests.post(f"{base_uri}/subscription", json={"topics": ["orders"]}, headers={"Content-Type": V2}, timeout=40)
    assert r.status_code == 204, r.text
    # The v3 group resource, read through A, is the coordinator's.
    g = requests.get(a.v3(f"/consumer-groups/{group}"), timeout=40)
    assert g.status_code == 200, g.text
    assert g.headers.get(SERVED_BY) == str(coordinator)
    assert g.json()["coordinator"]["related"].endswith(f"/brokers/{coordinator}")

    first = {f"a{i}" for i in range(30)}
    produce(a, "orders", sorted(first))
    seen = {}
    consume(base_uri, first, 30.0, seen)
    c = requests.post(f"{base_uri}/offsets", headers={"Content-Type": V2}, timeout=40)
    assert c.status_code == 204, c.text
    status, before = committed(base_uri)
    assert status == 200, before
    stored = {(o["topic"], o["partition"]): o["offset"] for o in before["offsets"]}
    assert sum(stored.values()) == 30, before   # every record read was committed (next offsets)

    second = {f"b{i}" for i in range(30)}
    produce(a, "orders", sorted(second))
    # The coordinator dies; the client keeps using its base_uri on A.
    cluster.node(coordinator).kill()
    after_kill = {}

    def committed_is_back():
        status, body = committed(base_uri)
        if status == 503:
            return False
        assert status == 200, body
        return {(o["topic"], o["partition"]): o["offset"] for o in body["offsets"]}
    back = wait_until(committed_is_back, GROUP_FAILOVER_DEADLINE_S, "the committed offsets at a new coordinator")
    assert back == stored   # an acknowledged commit is never lost
    consume(base_uri, second, GROUP_FAILOVER_DEADLINE_S, after_kill)
    # Nothing committed is read again and nothing after the commit is lost: the new coordinator
    # resumed each partition from its committed offset.
    for value, reads in after_kill.items():
        for partition, offset in reads:
            assert offset >= stored[("orders", partition)], (value, partition, offset, stored)
    # The instance is now served by a live broker (A itself or the third one).
    status, _, headers = poll(base_uri, timeout_ms=0)
    assert status == 200
    assert headers.get(SERVED_BY) in (None, *[str(n.node_id) for n in cluster.live() if n.node_id != 1])
    d = requests.delete(base_uri, headers={"Content-Type": V2}, timeout=40)
    assert d.status_code == 204, d.text


def read_by_peer(via, to):
    """Whether `to` has read a whole request `via` sent to its HTTP listener on a connection that
    is still open: `via`'s socket to that port has sent bytes and `to`'s end of it has
    received bytes and holds none unread (ss(8) socket counters; a forwarded call is one request
    on a connection of its own, group_proxy.h)."""
    def sockets(*where):
        out = subprocess.run(["ss", "-tinpH", "state", "established", *where], capture_output=True, text=True,
                             check=True).stdout.split("\n")
        # Each socket is a line (Recv-Q, Send-Q, local, peer, process) and a line of counters.
        return [(a.split(), b) for a, b in zip(out[0::2], out[1::2]) if a.strip()]
    for fields, info in sockets(f"( dport = :{to.port} )"):
        if f"pid={via.proc.pid}," not in " ".join(fields) or "bytes_sent:" not in info:
            continue
        local_port = fields[2].rsplit(":", 1)[1]
        for peer_fields, peer_info in sockets(f"( sport = :{to.port} and dport = :{local_port} )"):
            if peer_fields[0] == "0" and "bytes_received:" in peer_info:
                return True
    return False


def subscribed_and_read_first(other, base_uri, topic):
    """Subscribes the v2 instance at `base_uri` to `topic` through broker `other`, produces "r0" and
    reads it there: (the instance's path, its URL through `other`, the reads so far for consume)."""
    instance = "/consumers/" + base_uri.split("/consumers/", 1)[1]
    through_other = other.url + instance
    r = requests.post(f"{through_other}/subscription", json={"topics": [topic]}, headers={"Content-Type": V2},
                      timeout=40)
    assert r.status_code == 204, r.text
    produce(other, topic, ["r0"])
    seen = {}
    consume(through_other, {"r0"}, 30.0, seen)
    return instance, through_other, seen


def the_rest_comes_through(other, through_other, topic, seen):
    """Produces "r1".."r3" and reads them through `other`: no record was taken for a client that
    never got it, so offsets 0-3 are each read once, in order."""
    for value in ("r1", "r2", "r3"):
        produce(other, topic, [value])
    try:
        consume(through_other, {"r1", "r2", "r3"}, 30.0, seen)
    except AssertionError as e:
        raise AssertionError(f"{e}; read through broker {other.node_id}: {sorted(seen)}") from None
    assert [o for _, o in sorted(reads[0] for reads in seen.values())] == [0, 1, 2, 3], seen


def test_a_poll_passed_on_by_a_broker_killed_meanwhile_takes_no_record(cluster):
    """A v2 poll through broker V, passed on to the group's coordinator, waits there; V is killed
    -9 during the wait, then records arrive. The answer can reach nobody: the coordinator must not
    move the instance's position past them (it did: the next poll through another broker started
    after them, and a commit of everything returned committed past records nobody received,
    breaking at-least-once). Every record must come through another broker afterwards."""
    ready_cluster(cluster, "orphan", partitions=1)
    leader = int(requests.get(cluster.node(1).v3("/topics/orphan/partitions/0"), timeout=10)
                 .json()["leader"]["related"].rsplit("/", 1)[1])
    group, base_uri, coordinator = consumer_through(cluster.node(1), "orphan")
    victim = next(n for n in cluster.nodes if n.node_id not in (coordinator, leader))
    other = next(n for n in cluster.nodes if n is not victim)
    instance, through_other, seen = subscribed_and_read_first(other, base_uri, "orphan")

    # The long poll through the victim, passed on to the coordinator: it waits there for records.
    orphaned = {}

    def long_poll():
        try:
            orphaned["answer"] = requests.get(f"{victim.url}{instance}/records", params={"timeout": 20000},
                                              headers={"Accept": BINARY}, timeout=60)
        except requests.RequestException as e:
            orphaned["error"] = e
    t = threading.Thread(target=long_poll)
    t.start()
    wait_until(lambda: read_by_peer(victim, cluster.node(coordinator)), 20.0,
               f"the coordinator (broker {coordinator}) to read the poll broker {victim.node_id} passed on")
    victim.kill()
    t.join(60)
    assert "error" in orphaned, orphaned   # the client got nothing: its broker died
    the_rest_comes_through(other, through_other, "orphan", seen)


def passing_on(via, to):
    """Whether `via` holds an open connection to `to`'s HTTP listener (a call it passes on)."""
    out = subprocess.run(["ss", "-tnpH", "state", "established", f"( dport = :{to.port} )"], capture_output=True,
                         text=True, check=True).stdout
    return any(f"pid={via.proc.pid}," in line for line in out.split("\n"))


def test_a_poll_passed_on_for_a_client_that_left_takes_no_record(cluster):
    """A v2 poll through broker V, passed on to the group's coordinator, waits there; the client
    closes its connection to V during the wait, then records arrive. V kept its call to the
    coordinator open until the poll's deadline, so the coordinator's poll took the records and
    moved the instance's position past them for a client that was gone (the next poll through
    another broker skipped them). V must close its call once its client leaves, and every record
    must come through another broker afterwards."""
    ready_cluster(cluster, "left", partitions=1)
    group, base_uri, coordinator = consumer_through(cluster.node(1), "left")
    via = next(n for n in cluster.nodes if n.node_id != coordinator)
    other = next(n for n in cluster.nodes if n is not via)
    instance, through_other, seen = subscribed_and_read_first(other, base_uri, "left")

    # The long poll through `via`, on a socket of our own so that the client can leave mid-wait.
    client = socket.create_connection(("127.0.0.1", via.port), timeout=10)
    client.sendall(f"GET {instance}/records?timeout=30000 HTTP/1.1\r\nHost: 127.0.0.1:{via.port}\r\n"
                   f"Accept: {BINARY}\r\n\r\n".encode())
    wait_until(lambda: read_by_peer(via, cluster.node(coordinator)), 20.0,
               f"the coordinator (broker {coordinator}) to read the poll broker {via.node_id} passed on")
    client.close()
    # Well before the poll's 30 s deadline: the call passed on is closed as its client left.
    wait_until(lambda: not passing_on(via, cluster.node(coordinator)), 10.0,
               f"broker {via.node_id} to close the poll it passed on once its client left")
    the_rest_comes_through(other, through_other, "left", seen)


def test_a_request_pipelined_behind_a_poll_passed_on_is_answered_after_it(cluster):
    """A v2 poll through broker V is passed on to the coordinator; V watches its client's
    connection meanwhile (to close the call passed on once the client leaves). That watch read
    and dropped the bytes of a request the client pipelined behind the poll, and V closed the
    connection after the poll's answer: the pipelined request was never answered. It is now kept
    and answered after the poll, on the same connection."""
    ready_cluster(cluster, "piped", partitions=1)
    group, base_uri, coordinator = consumer_through(cluster.node(1), "piped")
    via = next(n for n in cluster.nodes if n.node_id != coordinator)
    instance, _, _ = subscribed_and_read_first(via, base_uri, "piped")
    with socket.create_connection(("127.0.0.1", via.port), timeout=30) as s:
        reader = Reader(s)
        client_port = s.getsockname()[1]
        s.sendall(get(f"{instance}/records?timeout=20000", via.port, BINARY))
        wait_until(lambda: read_by_peer(via, cluster.node(coordinator)), 20.0,
                   f"the coordinator (broker {coordinator}) to read the poll broker {via.node_id} passed on")
        s.sendall(get("/v1/health", via.port))
        wait_until(lambda: server_read_all_of(via.port, client_port), 10.0,
                   f"broker {via.node_id} to read the pipelined request")
        produce(via, "piped", ["r1"])
        status, headers, body = reader.response()
        assert status == 200, body
        assert [unb64(x["value"]) for x in json.loads(body)] == ["r1"]
        assert headers.get(SERVED_BY.lower()) == str(coordinator), headers
        status, _, body = reader.response()
        assert status == 200, body


def test_a_forwarded_call_is_never_forwarded_again(cluster):
    """The loop guard: a call marked as passed on is served where it arrives: 503 NOT_COORDINATOR
    naming the coordinator when that broker does not coordinate the group."""
    ready_cluster(cluster, "loop")
    a = cluster.node(1)
    group, base_uri, coordinator = consumer_through(a, "loop")
    r = requests.get(f"{base_uri}/assignments", headers={"Accept": V2, FORWARDED_BY: "3"}, timeout=40)
    assert r.status_code == 503, r.text
    assert r.headers.get("Retry-After") == "1"
    assert r.json()["error_code"] == 50301
    assert f"broker {coordinator}" in r.json()["message"]
    assert SERVED_BY not in r.headers
    # Without the mark the same call is passed on and served.
    r = requests.get(f"{base_uri}/assignments", headers={"Accept": V2}, timeout=40)
    assert r.status_code == 200, r.text
    assert r.headers.get(SERVED_BY) == str(coordinator)


def test_an_unreachable_coordinator_is_a_503_naming_it(ringlog_bin, tmp_path):
    # A dead broker stays the coordinator until it is fenced: with a long broker session the
    # window is the whole test, so the answer below is deterministic.
    c = Cluster(tmp_path)
    for n in c.nodes:
        n.extra_sets.append("broker.session.timeout.ms=120000")
    c.start()
    try:
        ready_cluster(c, "gone")
        a = c.node(1)
        group, base_uri, coordinator = consumer_through(a, "gone")
        c.node(coordinator).kill()
        r = requests.get(f"{base_uri}/assignments", headers={"Accept": V2}, timeout=40)
        assert r.status_code == 503, r.text
        assert r.headers.get("Retry-After") == "1"
        assert r.json()["error_code"] == 50301
        message = r.json()["message"]
        assert f"coordinated by broker {coordinator} at http://127.0.0.1:{c.node(coordinator).port}" in message, message
        assert "did not answer" in message, message
        assert r.headers.get("X-Ringlog-Coordinator") == f"http://127.0.0.1:{c.node(coordinator).port}"
    finally:
        c.stop()


def test_websocket_member_through_a_non_coordinator(cluster):
    ready_cluster(cluster, "wsfwd")
    a = cluster.node(1)
    # A group coordinated elsewhere: found with a REST instance, which is then deleted.
    group, base_uri, coordinator = consumer_through(a, "wsg")
    assert requests.delete(base_uri, headers={"Content-Type": V2}, timeout=40).status_code == 204
    values = [f"w{i}" for i in range(20)]
    produce(a, "wsfwd", values)

    async def run():
        async with websockets.connect(f"ws://127.0.0.1:{a.port}/v1/ws") as ws:
            await ws.send(json.dumps({"type": "join", "id": 1, "group": group, "topics": ["wsfwd"],
                                      "position": "earliest"}))
            await ws.send(json.dumps({"type": "credit", "records": 1000, "bytes": 1 << 20}))
            got = set()
            joined = None
            while len(got) < len(values):
                m = json.loads(await asyncio.wait_for(ws.recv(), 30))
                if m["type"] == "joined":
                    joined = m
                elif m["type"] == "record":
                    got.add(unb64(m["value"]))
                elif m["type"] == "error":
                    raise AssertionError(m)
            await ws.send(json.dumps({"type": "commit", "id": 2}))
            while True:
                m = json.loads(await asyncio.wait_for(ws.recv(), 30))
                if m["type"] == "committed":
                    return joined, got, m
                if m["type"] == "error":
                    raise AssertionError(m)

    joined, got, commit = asyncio.run(run())
    assert joined["group"] == group
    assert joined["member_id"].startswith("ws-"), joined
    assert got == set(values)
    assert sum(o["offset"] for o in commit["offsets"]) == len(values), commit
    # The commit is the coordinator's: read through another broker (the group's v3 lags, passed on).
    other = next(n for n in cluster.nodes if n.node_id not in (1,))
    lags = requests.get(other.v3(f"/consumer-groups/{group}/lags"), timeout=40)
    assert lags.status_code == 200, lags.text
    assert sum(x["current_offset"] for x in lags.json()["data"]) == len(values), lags.text


def test_group_list_gathers_every_brokers_groups(cluster):
    ready_cluster(cluster, "listed")
    a = cluster.node(1)
    made = []
    for i in range(6):
        group = f"listed-{i}"
        r = requests.post(f"{a.url}/consumers/{group}", json={"format": "binary"}, headers={"Content-Type": V2},
                          timeout=40)
        assert r.status_code == 200, r.text
        # A group is listed once it has a member (an instance joins when it subscribes).
        s = requests.post(f"{r.json()['base_uri']}/subscription", json={"topics": ["listed"]},
                          headers={"Content-Type": V2}, timeout=40)
        assert s.status_code == 204, s.text
        made.append(group)
    for n in cluster.nodes:
        r = requests.get(n.v3("/consumer-groups"), timeout=40)
        assert r.status_code == 200, r.text
        ids = {g["consumer_group_id"] for g in r.json()["data"]}
        assert set(made) <= ids, (n.node_id, ids)


def cluster_health(node):
    r = requests.get(node.v3(""), timeout=40)
    assert r.status_code == 200, r.text
    return r.json()["under_replicated_partitions_count"], r.json()["offline_partitions_count"]


def topic_health(node, topic):
    r = requests.get(node.v3(f"/topics/{topic}"), timeout=40)
    assert r.status_code == 200, r.text
    return r.json()["under_replicated_partitions_count"], r.json()["offline_partitions_count"]


def test_under_replicated_counts_rise_when_a_broker_dies_and_return_to_0(cluster):
    ready_cluster(cluster, "health")
    n1 = cluster.node(1)
    wait_until(lambda: cluster_health(n1) == (0, 0), FAILOVER_DEADLINE_S, "a healthy cluster")
    produce(n1, "health", [f"h{i}" for i in range(10)])
    victim = cluster.node(3)
    victim.kill()
    # Every partition has a replica on the dead broker (replication factor 3 of 3): once its ISRs
    # shrink, every partition of the topic is under-replicated, none offline (two replicas live).
    wait_until(lambda: topic_health(n1, "health") == (2, 0), FAILOVER_DEADLINE_S, "2 under-replicated partitions")
    # Every live broker counts from its own copy of the metadata, which applies the ISR changes a
    # moment apart: the cluster-wide count (every topic) reaches the topic's through broker 2 too.
    wait_until(lambda: (lambda u, o: u >= 2 and o == 0)(*cluster_health(cluster.node(2))), FAILOVER_DEADLINE_S,
               "the cluster's under-replicated count through broker 2")
    metrics = requests.get(f"{n1.url}/metrics", timeout=40).text
    assert 'ringlog_topic_under_replicated_partitions{topic="health"} 2' in metrics
    assert 'ringlog_topic_offline_partitions{topic="health"} 0' in metrics
    victim.spawn()
    wait_until(victim.healthy, 60.0, "node 3 back")
    wait_until(lambda: cluster_health(n1) == (0, 0), 60.0, "every partition back in sync")
    # The restarted broker's metadata catches up to the same counts.
    wait_until(lambda: topic_health(victim, "health") == (0, 0), FAILOVER_DEADLINE_S, "node 3 counting 0 too")


def test_websocket_member_keeps_its_membership_when_the_coordinator_dies(cluster):
    ready_cluster(cluster, "wsfail")
    a = cluster.node(1)
    group, base_uri, coordinator = consumer_through(a, "wsf")
    assert requests.delete(base_uri, headers={"Content-Type": V2}, timeout=40).status_code == 204
    first = [f"x{i}" for i in range(10)]
    second = [f"y{i}" for i in range(10)]
    produce(a, "wsfail", first)

    async def read_until(ws, want, got, errors, deadline_s):
        async def loop():
            while not want <= got:
                m = json.loads(await ws.recv())
                if m["type"] == "record":
                    got.add(unb64(m["value"]))
                elif m["type"] == "error":
                    errors.append(m)
                    # Only the coordinator moving is acceptable: retriable, the membership stays.
                    assert m["error_code"] == 50301, m
        await asyncio.wait_for(loop(), deadline_s)

    async def run():
        async with websockets.connect(f"ws://127.0.0.1:{a.port}/v1/ws") as ws:
            await ws.send(json.dumps({"type": "join", "id": 1, "group": group, "topics": ["wsfail"],
                                      "position": "earliest"}))
            await ws.send(json.dumps({"type": "credit", "records": 1000, "bytes": 1 << 20}))
            got, errors = set(), []
            await read_until(ws, set(first), got, errors, 30)
            await ws.send(json.dumps({"type": "commit", "id": 2}))
            while True:
                m = json.loads(await asyncio.wait_for(ws.recv(), 30))
                if m["type"] == "committed":
                    break
                assert m["type"] in ("assignment", "record"), m
            produce(a, "wsfail", second)
            cluster.node(coordinator).kill()
            # The same connection keeps reading once a new coordinator loaded the group.
            await read_until(ws, set(second), got, errors, GROUP_FAILOVER_DEADLINE_S)
            return got

    got = asyncio.run(run())
    assert set(second) <= got


def test_streamed_read_and_lag_summary_through_a_non_coordinator(cluster):
    """A consumer instance's NDJSON read through another broker is redirected (307, Location on
    the coordinator's listener) and, followed, streams the records; the group's lag through a
    third broker counts the log end offsets of partitions led anywhere."""
    ready_cluster(cluster, "streamed")
    a = cluster.node(1)
    group, base_uri, coordinator = consumer_through(a, "streamed")
    r = requests.post(f"{base_uri}/subscription", json={"topics": ["streamed"]}, headers={"Content-Type": V2},
                      timeout=40)
    assert r.status_code == 204, r.text
    values = [f"s{i}" for i in range(10)]
    produce(a, "streamed", values)

    moved = requests.get(f"{base_uri}/records", params={"timeout": 1000},
                         headers={"Accept": "application/x-ndjson"}, allow_redirects=False, timeout=40)
    assert moved.status_code == 307, moved.text
    target = urllib.parse.urlsplit(base_uri)
    coordinator_url = moved.headers["X-Ringlog-Coordinator"]
    assert moved.headers["Location"] == coordinator_url + target.path + "/records?timeout=1000", moved.headers
    assert moved.json()["error_code"] == 307 and f"broker {coordinator}" in moved.json()["message"], moved.text

    got = []
    with requests.get(f"{base_uri}/records", params={"timeout": 30000}, headers={"Accept": "application/x-ndjson"},
                      stream=True, timeout=60) as s:
        assert s.status_code == 200, s.text
        assert s.url.startswith(coordinator_url), s.url
        for line in s.iter_lines(chunk_size=None):
            if line:
                got.append(unb64(json.loads(line)["value"]))
            if len(got) == len(values):
                break
    assert sorted(got) == sorted(values)

    # Commit 3 records of each partition, then read the lag through a broker that is neither.
    offsets = [{"topic": "streamed", "partition": p, "offset": 2} for p in (0, 1)]
    r = requests.post(f"{base_uri}/offsets", json={"offsets": offsets}, headers={"Content-Type": V2}, timeout=40)
    assert r.status_code == 204, r.text
    # Each partition's end from its leader (a follower's high watermark may lag a fetch round).
    def ends_from_leaders():
        out = []
        for p in (0, 1):
            leader = requests.get(a.v3(f"/topics/streamed/partitions/{p}"), timeout=10).json()["leader"]
            node = cluster.node(int(leader["related"].rsplit("/", 1)[1]))
            out.append(requests.get(node.v3(f"/topics/streamed/partitions/{p}/offset"), timeout=10).json()["latest_offset"])
        return out if sum(out) == len(values) else None
    ends = wait_until(ends_from_leaders, 20.0, "both partitions' ends from their leaders")
    third = next(n for n in cluster.nodes if n.node_id not in (1, coordinator))
    summary = requests.get(third.v3(f"/consumer-groups/{group}/lag-summary"), timeout=40)
    assert summary.status_code == 200, summary.text
    assert summary.json()["total_lag"] == sum(max(e - 3, 0) for e in ends), (summary.text, ends)
    lags = requests.get(third.v3(f"/consumer-groups/{group}/lags"), timeout=40).json()["data"]
    assert sorted((l["partition_id"], l["log_end_offset"]) for l in lags) == [(0, ends[0]), (1, ends[1])], lags


def test_http_transactions_through_a_broker_that_does_not_coordinate_them(cluster):
    """Every HTTP transaction call (begin, a transactional produce, commit, describe) sent to a
    broker that does not coordinate the transactional id is passed on to its coordinator, as group
    calls are: it answered 503 NOT_COORDINATOR with Retry-After forever (the new user's LOW of
    session 23). The committed records are then read_committed through that broker."""
    topic = "txn-forwarded"
    ready_cluster(cluster, topic)
    n1 = cluster.node(1)

    def transaction_state_led():
        r = requests.get(n1.v3("/topics/__transaction_state/partitions"), timeout=5)
        return r.status_code == 200 and all(p["leader"] is not None for p in r.json()["data"])
    wait_until(transaction_state_led, FAILOVER_DEADLINE_S, "__transaction_state with leaders")

    begun = None
    for i in range(64):
        tid = f"fwd-{i}"
        r = requests.post(n1.v3("/transactions"), json={"transactional_id": tid}, timeout=40)
        assert r.status_code == 200, r.text
        if r.headers.get(SERVED_BY) not in (None, "1"):
            begun = tid, r.json()["producer_id"], r.json()["producer_epoch"], int(r.headers[SERVED_BY])
            break
    assert begun is not None, "no transactional id among 64 is coordinated by another broker"
    tid, pid, epoch, coordinator = begun

    body = "".join(json.dumps({"partition_id": p, "sequence": 0, "value": {"type": "STRING", "data": f"v{p}"}})
                   for p in (0, 1))
    r = requests.post(n1.v3(f"/topics/{topic}/records"),
                      params={"producer_id": pid, "producer_epoch": epoch, "transactional_id": tid},
                      data=body, headers={"Content-Type": "application/json"}, timeout=40)
    assert r.status_code == 200, r.text
    assert r.headers.get(SERVED_BY) == str(coordinator), r.headers
    reports = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    assert [x["error_code"] for x in reports] == [200, 200], reports

    # The offsets of a group whose coordinator is neither broker 1 nor the transaction's: the
    # AddOffsetsToTxn half at the transaction's coordinator, the TxnOffsetCommit half at the
    # group's (the new user of session 24 found no broker taking the call).
    offsets_partitions = {p["partition_id"]: p["leader"]["related"].rsplit("/", 1)[-1]
                          for p in requests.get(n1.v3("/topics/__consumer_offsets/partitions"), timeout=5).json()["data"]}
    group = next(g for g in (f"fwd-group-{i}" for i in range(256))
                 if int(offsets_partitions[_coordinator_partition(g, len(offsets_partitions))]) not in (1, coordinator))
    r = requests.post(n1.v3(f"/transactions/{tid}/offsets"),
                      json={"producer_id": pid, "producer_epoch": epoch, "group_id": group,
                            "offsets": [{"topic": topic, "partition": 0, "offset": 1}]}, timeout=40)
    assert r.status_code == 204, r.text

    r = requests.get(n1.v3(f"/transactions/{tid}"), timeout=40)
    assert r.status_code == 200 and r.json()["state"] == "Ongoing", r.text
    in_txn = sorted((p["topic"], p["partition"]) for p in r.json()["partitions"])
    assert (topic, 0) in in_txn and (topic, 1) in in_txn, r.text

    def committed():
        r = requests.post(n1.v3(f"/transactions/{tid}/commit"), json={"producer_id": pid, "producer_epoch": epoch},
                          timeout=40)
        if r.status_code == 409:   # CONCURRENT_TRANSACTIONS: the markers of a previous step
            return False
        assert r.status_code == 200, r.text
        return True
    wait_until(committed, FAILOVER_DEADLINE_S, "the commit through broker 1")

    def read_committed_all():
        seen = []
        for p in (0, 1):
            r = requests.get(f"{n1.url}/topics/{topic}/partitions/{p}/records",
                             params={"offset": 0, "isolation_level": "read_committed"},
                             headers={"Accept": BINARY}, timeout=40)
            assert r.status_code == 200, r.text
            seen += [unb64(x["value"]) for x in r.json()]
        return sorted(seen) == ["v0", "v1"]
    wait_until(read_committed_all, FAILOVER_DEADLINE_S, "both committed records read_committed through broker 1")

    def group_committed():
        r = requests.get(n1.v3(f"/consumer-groups/{group}/lags"), timeout=40)
        if r.status_code != 200:
            return False
        return {(x["topic_name"], x["partition_id"]): x["current_offset"] for x in r.json()["data"]} == {(topic, 0): 1}
    wait_until(group_committed, FAILOVER_DEADLINE_S, f"group {group}'s offset committed with the transaction")


def test_latest_and_resets_use_the_partition_leaders_end_not_the_coordinators(cluster):
    """auto.offset.reset=latest and a group offsets reset read each partition's end from its
    leader. They read it from the group's coordinator, which holds no replica of most partitions
    of a replication-factor-1 topic (its figure: 0): a 'latest' consumer read whole partitions and
    `groups reset --to latest` planned 0 (the new user's HIGH of session 24)."""
    topic = "ends-at-leaders"
    wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    n1 = cluster.node(1)
    r = create_topic(n1, topic, partitions=3, replication_factor=1)
    assert r.status_code == 201, r.text
    for p in range(3):
        body = {"records": [{"value": b64(f"old-{p}-{i}"), "partition": p} for i in range(20)]}
        wait_until(lambda: requests.post(f"{n1.url}/topics/{topic}", json=body, headers={"Content-Type": BINARY},
                                         timeout=40).status_code == 200, FAILOVER_DEADLINE_S, f"20 records in {topic}-{p}")
    everything = [{"topic": topic, "partition": p} for p in range(3)]
    for i in range(4):   # groups on different coordinators: each holds at most one of the partitions
        group = f"latest-{i}"
        r = requests.post(f"{n1.url}/consumers/{group}", json={"format": "binary", "auto.offset.reset": "latest"},
                          headers={"Content-Type": V2}, timeout=40)
        assert r.status_code == 200, r.text
        base = r.json()["base_uri"]
        r = requests.post(base + "/assignments", json={"partitions": everything}, headers={"Content-Type": V2}, timeout=40)
        assert r.status_code == 204, r.text
        got = []
        for _ in range(3):
            r = requests.get(base + "/records", params={"timeout": 200}, headers={"Accept": BINARY}, timeout=40)
            assert r.status_code == 200, r.text
            got += [unb64(x["value"]) for x in r.json()]
        assert not [v for v in got if v.startswith("old-")], f"group {group} read records from before it started: {got[:5]}"
        r = requests.post(base + "/positions/end", json={"partitions": everything}, headers={"Content-Type": V2}, timeout=40)
        assert r.status_code == 204, r.text
        r = requests.post(base + "/offsets", json={"offsets": [{"topic": topic, "partition": p, "offset": 4} for p in range(3)]},
                          headers={"Content-Type": V2}, timeout=40)
        assert r.status_code == 204, r.text
        requests.delete(base, headers={"Content-Type": V2}, timeout=40)
        # The group committed 5 of 20 on each partition: a reset to latest plans every leader's 20.
        r = requests.post(n1.v3(f"/consumer-groups/{group}/offsets:reset"), json={"to": "latest", "topics": [topic]},
                          timeout=40)
        assert r.status_code == 200, r.text
        assert sorted((o["partition_id"], o["offset"]) for o in r.json()["offsets"]) == [(0, 20), (1, 20), (2, 20)], r.text


def test_a_producer_session_made_on_one_broker_is_taken_at_once_by_another(cluster):
    """POST .../producers on broker 2, then an idempotent produce through broker 3 right away:
    broker 3 may not have applied the producer-id block yet; it catches up with the controller
    before deciding instead of answering 404 'not handed out' (the new user's MEDIUM of session 24)."""
    topic = "sessions-anywhere"
    ready_cluster(cluster, topic)
    n2, n3 = cluster.node(2), cluster.node(3)
    for i in range(20):
        r = requests.post(n2.v3("/producers"), timeout=40)
        assert r.status_code == 201, r.text
        pid, epoch = r.json()["producer_id"], r.json()["producer_epoch"]
        r = requests.post(n3.v3(f"/topics/{topic}/records"), params={"producer_id": pid, "producer_epoch": epoch},
                          json={"partition_id": 0, "sequence": 0, "value": {"type": "STRING", "data": f"s{i}"}}, timeout=40)
        assert r.status_code == 200 and '"error_code":200' in r.text.replace(" ", ""), (i, r.text)
