"""WebSocket produces passed on by a broker that does not lead the partition (leader_forwarder,
src/broker/forwarding.cc), found by the breaker of session 28:

- ws_order_fault.py: one WebSocket at a non-leader node streams one-record acks=all produces to
  partition 0 while the leader is SIGSTOPped and a new leader is elected. Batches the old leader
  refused unread (or that were never sent) were sent again to the new leader after later batches
  had gone there directly: acked offsets went backwards against send order and records were
  stored out of send order. Now the forwarder keeps each partition's batches in the order it took
  them (http-api/ws-protocol.md "Order across a leader change").
- barrier_burst.py: a burst of pipelined produces (several WebSockets, thousands each) through a
  non-leader to a healthy leader was refused 503 past the cluster client's 1024 pending requests.
  Now the forwarded calls wait for room on the connection to the leader.

Every wait polls with a deadline.
"""
import asyncio
import base64
import itertools
import json
import signal
import time

import requests
import websockets

from conftest import wait_until
from test_cluster import FAILOVER_DEADLINE_S, Cluster, create_topic

# Two shards per node, as the breaker ran: the WebSocket's shard and the forwarder's (the
# controller shard) see a new metadata view at slightly different times.
SETS = ("num.shards=2",)


def leader_seen_by(node, topic, partition=0):
    """The leader `node` names for the partition (-1: none or not known)."""
    r = requests.get(node.v3(f"/topics/{topic}/partitions/{partition}"), timeout=5)
    if r.status_code != 200 or not r.json().get("leader"):
        return -1
    return int(r.json()["leader"]["related"].rsplit("/", 1)[1])


def read_values(node, topic, partition=0):
    """Every record value of the partition in offset order, read through `node`."""
    out, offset = [], 0
    while True:
        r = requests.get(node.url + f"/topics/{topic}/partitions/{partition}/records",
                         params={"offset": offset, "max_bytes": 1000000, "timeout": 200},
                         headers={"Accept": "application/vnd.kafka.binary.v2+json"}, timeout=40)
        assert r.status_code == 200, r.text
        records = r.json()
        if not records:
            return out
        out += [(x["offset"], base64.b64decode(x["value"]).decode()) for x in records]
        offset = records[-1]["offset"] + 1


def ready_topic(cluster, name, **extra):
    entry = cluster.nodes[0]
    wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    wait_until(lambda: create_topic(entry, name, partitions=1, **extra).status_code in (201, 409),
               FAILOVER_DEADLINE_S, f"topic {name}")
    leader = wait_until(lambda: all(leader_seen_by(n, name) >= 0 for n in cluster.nodes) and leader_seen_by(entry, name),
                        FAILOVER_DEADLINE_S, f"a leader of {name} known to every node")
    return leader


def produce_message(topic, ident, acks=None):
    m = {"type": "produce", "id": ident, "topic": topic, "partition": 0,
         "value": base64.b64encode(ident.encode()).decode()}
    if acks is not None:
        m["acks"] = acks
    return json.dumps(m)


def stream_through(client_at, topic, answers, sent, fault):
    """One WebSocket at `client_at` streams one-record acks=all produces to partition 0 of
    `topic` (20 every 5 ms) while `fault()` runs in a thread, then waits (60 s at most) for the
    answers to all it sent."""
    async def run():
        async with websockets.connect(f"ws://127.0.0.1:{client_at.port}/v1/ws", max_size=None,
                                      ping_interval=None) as ws:
            stop = asyncio.Event()

            async def reader():
                while True:
                    m = json.loads(await ws.recv())
                    answers[m["id"]] = m

            async def writer():
                n = 0
                while not stop.is_set():
                    for _ in range(20):
                        await ws.send(produce_message(topic, f"m-{n}"))
                        sent.append(f"m-{n}")
                        n += 1
                    await asyncio.sleep(0.005)

            async def nemesis():
                try:
                    await asyncio.get_running_loop().run_in_executor(None, fault)
                finally:
                    stop.set()

            read = asyncio.ensure_future(reader())
            await asyncio.gather(writer(), nemesis())
            deadline = time.monotonic() + 60
            while len(answers) < len(sent) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            read.cancel()

    asyncio.run(run())


def assert_acked_in_send_order(client_at, topic, answers, sent):
    """Acknowledged offsets increase in send order, each acked record is stored at its offset,
    and the stored records are in send order."""
    assert len(answers) == len(sent), f"{len(sent) - len(answers)} of {len(sent)} produces unanswered"
    acked = [i for i in sent if answers[i]["type"] == "produce_ack"]
    assert len(acked) > len(sent) // 2, [(k, len(list(g))) for k, g in itertools.groupby(
        answers[i]["type"] for i in sent)]
    offsets = [answers[i]["offset"] for i in acked]
    backwards = [(acked[k - 1], offsets[k - 1], acked[k], offsets[k]) for k in range(1, len(acked))
                 if offsets[k] < offsets[k - 1]]
    assert not backwards, f"{len(backwards)} acked offsets go backwards in send order: {backwards[:5]}"
    stored = read_values(client_at, topic)
    at = {v: o for o, v in stored}
    assert all(at.get(i) == answers[i]["offset"] for i in acked), "an acked record is not stored at its offset"
    order = [int(v.split("-")[1]) for _, v in stored]
    out_of_order = [(order[k - 1], order[k]) for k in range(1, len(order)) if order[k] < order[k - 1]]
    assert not out_of_order, f"{len(out_of_order)} records stored out of send order: {out_of_order[:6]}"


def ordered_topic(cluster, name):
    """An RF3 min.insync.replicas=2 topic of one partition; its leader's id."""
    return ready_topic(cluster, name, replication_factor=3, configs=[{"name": "min.insync.replicas", "value": "2"}])


def test_acked_order_matches_send_order_when_the_leader_shuts_down(ringlog_bin, tmp_path):
    """ws_order_fault.py with SIGTERM: the leader's controlled shutdown moves its leadership, and
    it refuses the batches it still gets unread; those went to the new leader after later batches
    (2 of 3 runs reordered on the code before). Twice (the leader restarted in between) while one
    WebSocket at another node streams: its acknowledged records keep its send order."""
    cluster = Cluster(tmp_path, extra_sets=SETS).start()
    try:
        topic = "ordered"
        ordered_topic(cluster, topic)
        # The last replica: an election picks the first live in-sync one, so the leadership
        # moves to the other node and the client's produces stay forwarded.
        replicas = requests.get(cluster.nodes[0].v3(f"/topics/{topic}/partitions/0/replicas"), timeout=5).json()["data"]
        client_at = cluster.node(replicas[-1]["broker_id"])
        answers, sent = {}, []

        def fault():
            time.sleep(0.5)   # a stream under way before the fault
            for _ in range(2):
                now = leader_seen_by(client_at, topic)
                if now in (-1, client_at.node_id):
                    return   # the client's own node leads: nothing forwarded to shut down
                victim = cluster.node(now)
                victim.proc.send_signal(signal.SIGTERM)
                wait_until(lambda: leader_seen_by(client_at, topic) not in (-1, now), FAILOVER_DEADLINE_S,
                           f"node {client_at.node_id} names a leader other than the stopping {now}")
                victim.proc.wait(timeout=30)
                victim.spawn()
                wait_until(victim.healthy, 60.0, f"node {now} back")
            time.sleep(0.5)   # produces after the last move

        stream_through(client_at, topic, answers, sent, fault)
        assert_acked_in_send_order(client_at, topic, answers, sent)
    finally:
        cluster.stop()


def test_acked_order_matches_send_order_across_a_paused_leader(ringlog_bin, tmp_path):
    """ws_order_fault.py leader: the leader is paused until the client's node names a new one
    (and 2 s more: its calls wait on), then continued, while one WebSocket at another node
    streams: its acknowledged records keep its send order, and a paused leader's calls waiting
    for room are held back (42901 past the socket's own in-flight bound), not refused 50301."""
    cluster = Cluster(tmp_path, extra_sets=SETS).start()
    paused = []
    try:
        topic = "ordered"
        leader = ordered_topic(cluster, topic)
        client_at = next(n for n in cluster.nodes if n.node_id != leader)
        answers, sent = {}, []

        def fault():
            time.sleep(1.0)   # a stream under way before the fault
            cluster.node(leader).proc.send_signal(signal.SIGSTOP)
            paused.append(cluster.node(leader))
            wait_until(lambda: leader_seen_by(client_at, topic) not in (-1, leader), FAILOVER_DEADLINE_S,
                       f"node {client_at.node_id} names a leader other than the paused {leader}")
            time.sleep(2.0)
            paused.pop().proc.send_signal(signal.SIGCONT)
            time.sleep(2.0)   # produces after it woke

        stream_through(client_at, topic, answers, sent, fault)
        assert_acked_in_send_order(client_at, topic, answers, sent)
        refused = [answers[i]["message"] for i in sent if "client_pending_requests_max" in answers[i].get("message", "")]
        assert not refused, f"{len(refused)} refused by the cluster client's bound: {refused[:1]}"
    finally:
        for n in paused:
            n.proc.send_signal(signal.SIGCONT)
        cluster.stop()


def test_a_burst_of_forwarded_produces_to_a_healthy_leader_is_not_refused(ringlog_bin, tmp_path):
    """barrier_burst.py 3000 6 0: 6 WebSockets at one node each pipeline 3,000 one-record produces
    to a topic the first of them auto-creates: they wait behind the creation (produce_lines.h) and
    go out as one burst, far past the cluster client's 1024 pending requests (each socket within
    its ws_produce_in_flight_max). When a healthy node other than the client's leads the new
    topic, every produce is acknowledged, each socket's in send order. (The placement of a new
    topic is the controller's: a topic the client's own node leads is not forwarded, and the
    burst is tried again with another topic.)"""
    cluster = Cluster(tmp_path, extra_sets=(*SETS, "auto.create.topics.enable=true")).start()
    try:
        client_at = cluster.node(2)
        wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        wait_until(lambda: all(len(n.brokers()) == 3 for n in cluster.nodes), FAILOVER_DEADLINE_S, "three brokers")
        per_socket, sockets = 3000, 6

        async def burst(topic, answers, c):
            async with websockets.connect(f"ws://127.0.0.1:{client_at.port}/v1/ws", max_size=None,
                                          ping_interval=None) as ws:
                for n in range(per_socket):
                    await ws.send(produce_message(topic, f"{c}-{n}", acks=1))
                for _ in range(per_socket):
                    m = json.loads(await asyncio.wait_for(ws.recv(), 60))
                    answers[m["id"]] = m

        async def main(topic, answers):
            await asyncio.gather(*(burst(topic, answers, c) for c in range(sockets)))

        for attempt in range(8):
            topic, answers = f"burst{attempt}", {}
            asyncio.run(main(topic, answers))
            if leader_seen_by(client_at, topic) == client_at.node_id:
                continue   # served where it arrived: nothing forwarded
            refused = [m for m in answers.values() if m["type"] != "produce_ack"]
            assert not refused, f"{len(refused)} of {len(answers)} refused, e.g. {refused[:2]}"
            for c in range(sockets):
                offsets = [answers[f"{c}-{n}"]["offset"] for n in range(per_socket)]
                assert offsets == sorted(offsets), f"socket {c}'s acked offsets are not in send order"
            return
        raise AssertionError("every new topic was led by the client's own node")
    finally:
        cluster.stop()
