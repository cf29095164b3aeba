"""Dedicated controllers (process.roles=controller, KIP-631) beside broker-only nodes.

Three real `ringlog serve` processes run process.roles=controller (the voters of
controller.quorum.voters) and two run process.roles=broker (observers of the metadata log). The
controllers never register as brokers: placement, default.replication.factor, v3 `brokers`, Kafka
Metadata and `ringlog cluster status` know only the two brokers, while the quorum lists the three
controllers as its voters. kill -9 of the active dedicated controller elects another one, a topic
create works again within seconds, and the brokers keep their sessions with the new controller.
Every wait polls with a deadline.
"""
import re
import subprocess
import time

import requests
from confluent_kafka.admin import AdminClient

from conftest import binary_path, free_port, wait_until
from test_cluster import (FAILOVER_DEADLINE_S, SESSION_DEADLINE_S, Node, create_topic, created_once_led, describe,
                          kill_nodes, start_nodes)
from test_replication import isr_of, leader_of, produce, read_all, replicas_of

CONTROLLERS = [1, 2, 3]
BROKERS = [4, 5]
# Short sessions, so "the brokers keep their sessions with the new controller" is seen quickly.
SESSION_MS = 1500
TIMING = [f"broker.session.timeout.ms={SESSION_MS}", "broker.heartbeat.interval.ms=250"]


class DedicatedCluster:
    """`roles`: node id -> process.roles; the nodes with controller are the voters."""

    def __init__(self, root, roles=None):
        roles = roles or {**{i: "controller" for i in CONTROLLERS}, **{i: "broker" for i in BROKERS}}
        ports = {i: free_port() for i in roles}
        voters = ",".join(f"{i}@127.0.0.1:{ports[i]}" for i, r in roles.items() if "controller" in r)
        self.ids = sorted(roles)
        self.nodes = {}
        for i, r in roles.items():
            self.nodes[i] = Node(root / f"n{i}" / "data", i, ports[i], voters, [f"process.roles={r}", *TIMING],
                                 kafka_port=free_port() if "broker" in r else None)
        for n in self.nodes.values():
            n.data_dir.parent.mkdir(parents=True, exist_ok=True)

    def start(self):
        start_nodes(list(self.nodes.values()))
        return self

    def live(self, ids):
        return [self.nodes[i] for i in ids if self.nodes[i].proc is not None]

    def controller(self):
        """The node id every live node agrees leads the quorum (None while they do not)."""
        leaders = {n.quorum()["leader_id"] for n in self.live(self.ids)}
        return leaders.pop() if len(leaders) == 1 and None not in leaders else None

    def stop(self):
        kill_nodes(list(self.nodes.values()))


def brokers_unfenced(node, ids=BROKERS):
    b = node.brokers()
    return sorted(b) == ids and all(x["state"] == "unfenced" for x in b.values())


def test_three_dedicated_controllers_two_brokers_placement_failover_and_visibility(ringlog_bin, tmp_path):
    c = DedicatedCluster(tmp_path).start()
    try:
        active = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        assert active in CONTROLLERS
        # v3 brokers on every node lists the two brokers only, never a controller.
        for n in c.nodes.values():
            wait_until(lambda n=n: brokers_unfenced(n), SESSION_DEADLINE_S, f"node {n.node_id} to list brokers 4, 5")
        # The quorum: the controllers are its voters, the brokers its observers.
        q = c.nodes[active].quorum()
        assert q["role"] == "leader" and sorted(v["replica_id"] for v in q["voters"]) == CONTROLLERS, q
        wait_until(lambda: sorted(o["replica_id"] for o in c.nodes[active].quorum()["observers"]) == BROKERS,
                   FAILOVER_DEADLINE_S, "the quorum leader to list brokers 4, 5 as observers")
        assert c.nodes[4].quorum()["is_observer"] is True
        assert c.nodes[1].quorum()["is_observer"] is False
        # The cluster's controller link names the active controller.
        link = requests.get(c.nodes[4].v3(), timeout=5).json()["controller"]["related"]
        assert link.endswith(f"/brokers/{active}"), link
        # ... and the link resolves: a dedicated controller is no broker (not in the list), but its
        # .../brokers/{id} answers with its roles (it answered 404 before).
        r = requests.get(link, timeout=5)
        assert r.status_code == 200, r.text
        me = r.json()
        assert me["kind"] == "KafkaBroker" and me["broker_id"] == active and me["roles"] == ["controller"], me
        assert me["is_controller"] is True and me["host"] is None and me["state"] is None, me
        assert [b["roles"] for b in requests.get(c.nodes[1].v3("/brokers"), timeout=5).json()["data"]] == [["broker"]] * 2
        r = requests.get(c.nodes[1].v3("/brokers/99"), timeout=5)
        assert r.status_code == 404 and "4, 5" in r.json()["message"], r.text

        # Placement never names a controller; a create on a controller's HTTP listener works (it
        # commits as the active controller or forwards to it).
        r = create_topic(c.nodes[CONTROLLERS[0]], "placed", partitions=4, replication_factor=2)
        assert r.status_code == 201, r.text
        for p in range(4):
            assert sorted(replicas_of(c.nodes[CONTROLLERS[0]], "placed", p)) == BROKERS
            wait_until(lambda p=p: leader_of(c.nodes[4], "placed", p) in BROKERS, FAILOVER_DEADLINE_S,
                       f"partition {p} led by a broker")
        # default.replication.factor counts brokers only: 2 here, not 5 nodes (nor 3 "at least 3").
        r = create_topic(c.nodes[4], "defaulted", partitions=2)
        assert r.status_code == 201, r.text
        assert r.json()["replication_factor"] == 2, r.text
        # A replication factor above the live brokers is refused naming both numbers.
        r = create_topic(c.nodes[5], "too-many", replication_factor=3)
        assert r.status_code == 400 and "replication_factor 3" in r.text and "(2)" in r.text, r.text
        # Internal topics too are placed on brokers only.
        for p in range(int(requests.get(c.nodes[4].v3("/topics/__consumer_offsets"), timeout=5)
                           .json().get("partitions_count", 0))):
            assert set(replicas_of(c.nodes[4], "__consumer_offsets", p)) <= set(BROKERS)

        # Produce through one broker (acks=all: both replicas), read back through the other.
        for p in range(4):
            r = produce(c.nodes[4], "placed", p, [f"v{p}-{i}" for i in range(3)])
            assert r.status_code == 200, r.text
            assert all(o.get("error") is None for o in r.json()["offsets"]), r.text
        for p in range(4):
            assert [x["value"] for x in read_all(c.nodes[5], "placed", p, 3)] == [f"v{p}-{i}" for i in range(3)]
        # A dedicated controller holds no replica: its partition figures are the leaders' (they
        # were 0), in the list and in one partition, as the leader itself answers them.
        listed = requests.get(c.nodes[1].v3("/topics/placed/partitions"), timeout=10).json()
        assert "unanswered_brokers" not in listed["metadata"], listed
        figures = ("log_start_offset", "high_watermark", "log_end_offset", "size_bytes")
        for p in range(4):
            mine = next(x for x in listed["data"] if x["partition_id"] == p)
            assert mine["high_watermark"] == 3 and mine["log_end_offset"] == 3 and mine["size_bytes"] > 0, mine
            one = requests.get(c.nodes[2].v3(f"/topics/placed/partitions/{p}"), timeout=10).json()
            leader = c.nodes[leader_of(c.nodes[4], "placed", p)]
            theirs = requests.get(leader.v3(f"/topics/placed/partitions/{p}"), timeout=10).json()
            assert [one[f] for f in figures] == [theirs[f] for f in figures] == [mine[f] for f in figures], (one, theirs)
        out = subprocess.run([str(binary_path()), "topics", "describe", "placed", "--bootstrap-server", c.nodes[3].url],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0 and out.stdout.count("HighWatermark: 3\t") == 4, out
        # A dedicated controller serves no records: a clear 421 naming the brokers.
        r = produce(c.nodes[1], "placed", 0, ["nope"])
        assert r.status_code == 421, r.text
        assert "dedicated controller" in r.json()["message"] and c.nodes[4].url in r.json()["message"], r.text
        # The WebSocket upgrade too names the brokers (breaker, session 11: it named none).
        r = requests.get(c.nodes[1].url + "/v1/ws", timeout=5, headers={
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
        assert r.status_code == 421 and c.nodes[4].url in r.json()["message"], r.text
        r = requests.get(c.nodes[2].v3("/consumer-groups/g1/lag-summary"), timeout=5)
        assert r.status_code == 421 and "dedicated controller" in r.json()["message"], r.text
        # ... but answers health, metrics, metadata reads and the group list (gathered from the brokers).
        assert requests.get(c.nodes[1].url + "/metrics", timeout=5).status_code == 200
        r = requests.get(c.nodes[1].v3("/consumer-groups"), timeout=10)
        assert r.status_code == 200 and r.json()["data"] == [] and "unanswered_brokers" not in r.json()["metadata"], r.text
        assert describe(c.nodes[1], "placed").status_code == 200

        # Kafka Metadata (through a broker) lists the brokers only, and names a broker as the
        # controller (a dedicated controller has no client listener).
        admin = AdminClient({"bootstrap.servers": c.nodes[4].bootstrap})
        md = admin.list_topics(timeout=10)
        assert sorted(md.brokers) == BROKERS
        assert md.controller_id in BROKERS
        del admin   # its threads would go on reconnecting to the brokers stopped at the end

        # `ringlog cluster status`: brokers 4, 5 in the BROKER table, controllers as voters.
        out = subprocess.run([str(binary_path()), "cluster", "status", "--bootstrap-server", c.nodes[1].url],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out
        lines = out.stdout.splitlines()
        broker_rows = lines[lines.index(next(x for x in lines if x.startswith("BROKER"))) + 1:]
        broker_rows = broker_rows[:next(i for i, x in enumerate(broker_rows) if not x.strip())]
        assert sorted(int(x.split("\t")[0]) for x in broker_rows) == BROKERS, out.stdout
        # The active controller is named as a dedicated one (newcomer finding 17).
        assert any(re.fullmatch(r"Controller:\tnode [123] \(dedicated\)", x) for x in lines), out.stdout
        voter_rows = lines[lines.index(next(x for x in lines if x.startswith("VOTER"))) + 1:][:3]
        assert sorted((int(x.split("\t")[0]), x.split("\t")[-1]) for x in voter_rows) == \
            [(i, "controller") for i in CONTROLLERS], out.stdout

        # kill -9 of the active controller: another controller takes over, a create works again
        # within seconds, and the brokers keep their sessions (heartbeats to the new leader).
        c.nodes[active].kill()
        killed_at = time.monotonic()
        survivors = [i for i in CONTROLLERS if i != active]
        new = wait_until(lambda: (lambda x: x if x is not None and x != active else None)(c.controller()),
                         FAILOVER_DEADLINE_S, "a new controller")
        assert new in survivors

        wait_until(lambda: created_once_led(c.nodes[5], "after-failover", partitions=2, replication_factor=2),
                   FAILOVER_DEADLINE_S, "a topic create after the failover")
        print(f"active controller {active} killed; topic created after {time.monotonic() - killed_at:.2f} s")
        for p in range(2):
            assert sorted(replicas_of(c.nodes[5], "after-failover", p)) == BROKERS
        # Two sessions after the failover the brokers are still unfenced on the new controller:
        # it heard their heartbeats all along.
        wait_until(lambda: time.monotonic() - killed_at > 2 * SESSION_MS / 1000 or None, 10.0, "two sessions")
        assert brokers_unfenced(c.nodes[new]), c.nodes[new].brokers()
        r = produce(c.nodes[5], "after-failover", 0, ["after"])
        assert r.status_code == 200 and all(o.get("error") is None for o in r.json()["offsets"]), r.text
        assert isr_of(c.nodes[4], "after-failover", 0) == BROKERS
        # SIGTERM of the active dedicated controller: no controlled shutdown to wait for (it has no
        # broker), it hands the quorum over and stops cleanly.
        assert c.nodes[new].stop() == 0
        assert "stopped cleanly" in c.nodes[new].log_path.read_text()
    finally:
        c.stop()


def test_combined_and_dedicated_voters_mixed_place_on_brokers_only(ringlog_bin, tmp_path):
    # Voters 1 (broker,controller), 2 and 3 (controller); node 4 a broker-only observer.
    c = DedicatedCluster(tmp_path, {1: "broker,controller", 2: "controller", 3: "controller", 4: "broker"}).start()
    try:
        active = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        for n in c.nodes.values():
            wait_until(lambda n=n: brokers_unfenced(n, [1, 4]), SESSION_DEADLINE_S,
                       f"node {n.node_id} to list brokers 1, 4")
        assert sorted(v["replica_id"] for v in c.nodes[2].quorum()["voters"]) == [1, 2, 3]
        # Roles: a combined voter, a broker-only observer, and the dedicated controllers (not in
        # the list, but each answers at .../brokers/{id}).
        listed = {b["broker_id"]: b["roles"] for b in requests.get(c.nodes[4].v3("/brokers"), timeout=5).json()["data"]}
        assert listed == {1: ["broker", "controller"], 4: ["broker"]}, listed
        for i in (2, 3):
            r = requests.get(c.nodes[4].v3(f"/brokers/{i}"), timeout=5)
            assert r.status_code == 200 and r.json()["roles"] == ["controller"], r.text
            assert r.json()["is_controller"] is (active == i), r.text
        r = create_topic(c.nodes[3], "mixed", partitions=4)
        assert r.status_code == 201, r.text
        assert r.json()["replication_factor"] == 2, r.text
        for p in range(4):
            assert sorted(replicas_of(c.nodes[3], "mixed", p)) == [1, 4]
        # Whichever voter led, kill -9 of a dedicated one (the active controller when it is one)
        # leaves a quorum of two that still creates topics on the brokers.
        victim = active if active in (2, 3) else 2
        c.nodes[victim].kill()
        wait_until(lambda: (lambda x: x if x is not None and x != victim else None)(c.controller()),
                   FAILOVER_DEADLINE_S, "a controller among the survivors")

        # Both brokers serving again first: a broker that missed heartbeats during the failover is
        # fenced for a moment, and a create then places on the other alone (a loaded machine's flake).
        wait_until(lambda: all(c.nodes[4].brokers().get(b, {}).get("state") == "unfenced" for b in (1, 4)),
                   FAILOVER_DEADLINE_S, "brokers 1 and 4 unfenced after the failover")
        wait_until(lambda: created_once_led(c.nodes[4], "mixed-after", partitions=2), FAILOVER_DEADLINE_S,
                   "a topic create after the kill")
        for p in range(2):
            assert sorted(replicas_of(c.nodes[4], "mixed-after", p)) == [1, 4]
        r = produce(c.nodes[1], "mixed-after", 0, ["x"])
        assert r.status_code == 200 and all(o.get("error") is None for o in r.json()["offsets"]), r.text
    finally:
        c.stop()
