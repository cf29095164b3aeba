"""Produces racing the deletion of their topic (new user, session 36): every produce is answered -
stored, or refused (UNKNOWN_TOPIC_OR_PARTITION: HTTP 404, or an error in its answer) - never left
without an answer. Before the fix an acks=all append whose flush completed after its replica was
removed waited on the removed replica for good: a WebSocket's produces stalled from there on (they
are answered in order), and an HTTP produce got its connection closed with no reply (curl exit 52).

Each test loops a few rounds, since the race is timing-dependent; every wait has a deadline.
"""
import asyncio
import json
import threading
import time

import requests
import websockets

ROUNDS = 6
ANSWER_DEADLINE_S = 15


def ws_url(broker):
    return f"ws://127.0.0.1:{broker.port}/v1/ws"


async def ws_produces_during_delete(broker, topic, healthy_topic, count=300):
    """`count` produces sent 1 ms apart on one socket while `topic` is deleted. Returns the ids
    still unanswered after the deadline, and whether a ping and a produce to `healthy_topic` sent
    afterwards on the same socket were answered."""
    async with websockets.connect(ws_url(broker)) as ws:
        answers = {}

        async def reader():
            while True:
                m = json.loads(await ws.recv())
                answers[m.get("id")] = m

        read = asyncio.create_task(reader())

        async def sender():
            for i in range(count):
                await ws.send(json.dumps({"type": "produce", "id": i, "topic": topic, "partition": 0,
                                          "value": "YQ=="}))
                await asyncio.sleep(0.001)

        send = asyncio.create_task(sender())
        await asyncio.sleep(0.05)
        deleted = await asyncio.to_thread(requests.delete, broker.v3(f"/topics/{topic}"))
        assert deleted.status_code == 204, deleted.text
        await send
        end = time.monotonic() + ANSWER_DEADLINE_S
        while time.monotonic() < end and any(i not in answers for i in range(count)):
            await asyncio.sleep(0.05)
        missing = [i for i in range(count) if i not in answers]
        await ws.send(json.dumps({"type": "ping", "id": "after-ping"}))
        await ws.send(json.dumps({"type": "produce", "id": "after-produce", "topic": healthy_topic,
                                  "partition": 0, "value": "YQ=="}))
        end = time.monotonic() + ANSWER_DEADLINE_S
        while time.monotonic() < end and "after-produce" not in answers:
            await asyncio.sleep(0.05)
        read.cancel()
        return missing, answers


def test_websocket_produces_racing_a_topic_delete_are_all_answered(broker, topic_name):
    healthy = topic_name + "-healthy"
    broker.create_topic(healthy)
    for round_ in range(ROUNDS):
        topic = f"{topic_name}-{round_}"
        broker.create_topic(topic)
        missing, answers = asyncio.run(
            asyncio.wait_for(ws_produces_during_delete(broker, topic, healthy), 3 * ANSWER_DEADLINE_S))
        assert not missing, f"round {round_}: {len(missing)} produces never answered, first id {missing[0]}"
        for i in range(300):
            m = answers[i]
            # Stored, or refused because the topic is gone (or being re-created by auto-create).
            assert m["type"] in ("produce_ack", "error"), m
        after = answers.get("after-produce")
        assert after is not None and after["type"] == "produce_ack", f"round {round_}: the socket's next produce: {after}"


def http_produces_during_delete(broker, topic, threads=3, per_thread=40):
    """Produces in `threads` loops while `topic` is deleted: the failures that got no HTTP answer."""
    no_answer = []
    statuses = []
    lock = threading.Lock()

    def loop():
        session = requests.Session()
        for _ in range(per_thread):
            try:
                r = session.post(f"{broker.url}/topics/{topic}/partitions/0",
                                 headers={"Content-Type": "application/vnd.kafka.json.v2+json"},
                                 data='{"records":[{"value":"x"}]}', timeout=ANSWER_DEADLINE_S)
                with lock:
                    statuses.append(r.status_code)
            except requests.RequestException as e:
                with lock:
                    no_answer.append(repr(e))

    workers = [threading.Thread(target=loop) for _ in range(threads)]
    for w in workers:
        w.start()
    time.sleep(0.05)   # let the loops get going: the delete must land among them
    deleted = requests.delete(broker.v3(f"/topics/{topic}"))
    assert deleted.status_code == 204, deleted.text
    for w in workers:
        w.join(2 * ANSWER_DEADLINE_S * per_thread)
    return no_answer, statuses


def test_http_produces_racing_a_topic_delete_are_all_answered(broker, topic_name):
    for round_ in range(ROUNDS):
        topic = f"{topic_name}-{round_}"
        broker.create_topic(topic)
        no_answer, statuses = http_produces_during_delete(broker, topic)
        assert not no_answer, f"round {round_}: {len(no_answer)} produces got no HTTP answer: {no_answer[:3]}"
        # 200: stored (before the delete, or into the auto-created topic); 404: the topic is gone.
        assert set(statuses) <= {200, 404}, statuses


def test_produces_through_every_node_racing_a_topic_delete_are_answered(ringlog_bin, tmp_path):
    """Three nodes, replication factor 3: produces through the leader and through the nodes that
    forward to it, while the topic is deleted. Each gets an HTTP answer, and a write the deletion
    overtook is refused as such (UNKNOWN_TOPIC_OR_PARTITION), not left "may or may not be stored"
    (the forwarder gave up on the leader, whose answer never came: t_del_produce.sh, session 36)."""
    from conftest import wait_until
    from test_cluster import FAILOVER_DEADLINE_S, Cluster, create_topic

    cluster = Cluster(tmp_path).start()
    try:
        wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        entry = cluster.nodes[0]
        for round_ in range(ROUNDS):
            topic = f"race{round_}"
            wait_until(lambda: create_topic(entry, topic, partitions=1, replication_factor=3).status_code in (201, 409),
                       FAILOVER_DEADLINE_S, f"topic {topic}")
            no_answer, statuses, unknown_outcomes = [], [], []
            lock = threading.Lock()

            def loop(node):
                session = requests.Session()
                for _ in range(25):
                    try:
                        r = session.post(f"{node.url}/topics/{topic}/partitions/0",
                                         headers={"Content-Type": "application/vnd.kafka.json.v2+json"},
                                         data='{"records":[{"value":"x"}]}', timeout=ANSWER_DEADLINE_S)
                    except requests.RequestException as e:
                        with lock:
                            no_answer.append(f"node {node.node_id}: {e!r}")
                        continue
                    with lock:
                        statuses.append(r.status_code)
                        if r.status_code == 200:
                            unknown_outcomes.extend([f"node {node.node_id}: {o['error']}" for o in r.json()["offsets"]
                                                 if o["error"] and "may or may not" in o["error"]])

            # Every node serves the same topic only once each knows it (a produce there would auto-create it).
            wait_until(lambda: all(requests.get(f"{n.url}/topics/{topic}").status_code == 200 for n in cluster.nodes),
                       FAILOVER_DEADLINE_S, f"{topic} known everywhere")
            workers = [threading.Thread(target=loop, args=(n,)) for n in cluster.nodes]
            for w in workers:
                w.start()
            time.sleep(0.05)   # let the loops get going: the delete must land among them
            deleted = requests.delete(entry.v3(f"/topics/{topic}"), timeout=40)
            assert deleted.status_code == 204, deleted.text
            for w in workers:
                w.join(25 * 2 * ANSWER_DEADLINE_S)
            assert not no_answer, f"round {round_}: {len(no_answer)} produces got no HTTP answer: {no_answer[:3]}"
            assert not unknown_outcomes, f"round {round_}: {unknown_outcomes[:3]}"
            assert set(statuses) <= {200, 404}, statuses
    finally:
        cluster.stop()
