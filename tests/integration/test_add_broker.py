"""Adding a broker to a running cluster without touching controller.quorum.voters.

A 3-voter cluster (process.roles=broker,controller) runs; a 4th node starts with
process.roles=broker and the same controller.quorum.voters. It follows the metadata log as a raft
observer (KIP-595), registers, and the other nodes learn its cluster:// address from its broker
registration. Then it takes replicas and leaderships like any broker, is fenced after kill -9, and
catches up after a restart. Every wait polls with a deadline.
"""
import subprocess
import time

import requests

from conftest import binary_path, free_port, wait_until
from test_cluster import FAILOVER_DEADLINE_S, SESSION_DEADLINE_S, Cluster, Node, create_topic, describe
from test_replication import isr_of, leader_of, produce, read_all, replicas_of

TOPIC = "four-way"
PARTITIONS = 4


def voters_of(cluster):
    return ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(cluster.ports))


def start_broker_only(cluster, root, node_id=4):
    node = Node(root / f"node{node_id}" / "data", node_id, free_port(), voters_of(cluster),
                ["process.roles=broker"])
    node.data_dir.parent.mkdir(parents=True, exist_ok=True)
    node.spawn()
    wait_until(node.healthy, 60.0, f"broker-only node {node_id} /v1/health")
    return node


def test_a_broker_only_node_joins_a_running_cluster_takes_replicas_and_survives_kill_9(ringlog_bin, tmp_path):
    c = Cluster(tmp_path).start()
    extra = None
    try:
        controller = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        extra = start_broker_only(c, tmp_path)

        # It is an observer of the metadata quorum, not a voter, and knows the same leader.
        q = extra.quorum()
        assert q["is_observer"] is True, q
        assert q["role"] in ("follower", "unattached"), q
        assert sorted(v["replica_id"] for v in q["voters"]) == [1, 2, 3]
        wait_until(lambda: extra.quorum()["leader_id"] == c.controller(), FAILOVER_DEADLINE_S,
                   "the broker-only node to follow the quorum leader")
        leader_node = c.node(c.controller())
        wait_until(lambda: 4 in [o["replica_id"] for o in leader_node.quorum()["observers"]], FAILOVER_DEADLINE_S,
                   "the quorum leader to list node 4 as an observer")
        assert not c.node(1).quorum()["is_observer"]
        # Its meta.properties line says what it is: an observer, never a voter (it said "it votes
        # and stands for election like any voter from now on").
        written = wait_until(lambda: next((l for l in extra.log_path.read_text().splitlines()
                                           if "meta.properties written" in l), None), 20, "node 4's meta.properties line")
        assert "never votes or stands for election" in written and "like any voter" not in written, written
        voter_line = next(l for l in c.node(1).log_path.read_text().splitlines() if "meta.properties written" in l)
        assert "stands for election like any voter" in voter_line, voter_line

        # It registered: every node lists it, unfenced.
        for n in [*c.nodes, extra]:
            wait_until(lambda n=n: n.brokers().get(4, {}).get("state") == "unfenced", SESSION_DEADLINE_S,
                       f"node {n.node_id} to list broker 4 unfenced")

        # A topic created afterwards with replication factor 4 has a replica (and, with 4
        # partitions balanced over 4 brokers, a leadership) on it.
        r = create_topic(c.node(controller), TOPIC, partitions=PARTITIONS, replication_factor=4)
        assert r.status_code == 201, r.text
        # Each node applies the metadata log at its own pace: wait until node 4 has the topic.
        wait_until(lambda: describe(extra, TOPIC).status_code == 200, FAILOVER_DEADLINE_S, "node 4 to know the topic")
        for p in range(PARTITIONS):
            assert 4 in replicas_of(extra, TOPIC, p)
        led = wait_until(lambda: [p for p in range(PARTITIONS) if leader_of(c.node(1), TOPIC, p) == 4] or None,
                         FAILOVER_DEADLINE_S, "a partition led by broker 4")
        # acks=all through a voter lands on every replica, the broker-only one included; a write
        # to the partition it leads goes through it (forwarded over cluster://).
        for p in range(PARTITIONS):
            r = produce(c.node(1), TOPIC, p, [f"v{p}-{i}" for i in range(5)])
            assert r.status_code == 200, r.text
            assert all(o.get("error") is None for o in r.json()["offsets"]), r.text
            wait_until(lambda p=p: isr_of(c.node(1), TOPIC, p) == [1, 2, 3, 4], SESSION_DEADLINE_S,
                       f"partition {p} fully in sync")
        got = read_all(extra, TOPIC, led[0], 5)
        assert [x["value"] for x in got] == [f"v{led[0]}-{i}" for i in range(5)]

        # kill -9: fenced like any broker (the controller's probe reaches its learned address and
        # is refused), its leaderships move to in-sync replicas, acks=all writes go on.
        extra.kill()
        wait_until(lambda: c.node(1).brokers()[4]["state"] == "fenced", SESSION_DEADLINE_S, "broker 4 fenced")
        for p in range(PARTITIONS):
            wait_until(lambda p=p: leader_of(c.node(1), TOPIC, p) not in (None, 4), FAILOVER_DEADLINE_S,
                       f"partition {p} led by a live broker")

        def produced_without_4():
            r = produce(c.node(2), TOPIC, led[0], ["while-4-down"])
            return r.status_code == 200 and all(o.get("error") is None for o in r.json()["offsets"])
        wait_until(produced_without_4, FAILOVER_DEADLINE_S, "an acks=all write while broker 4 is down")

        # Restarted, it catches up (metadata and partitions) and rejoins every ISR.
        extra.spawn()
        wait_until(extra.healthy, 60.0, "the restarted broker-only node")
        wait_until(lambda: c.node(1).brokers()[4]["state"] == "unfenced", SESSION_DEADLINE_S, "broker 4 unfenced")
        for p in range(PARTITIONS):
            wait_until(lambda p=p: 4 in isr_of(c.node(1), TOPIC, p), SESSION_DEADLINE_S,
                       f"broker 4 back in the ISR of partition {p}")
        assert extra.quorum()["is_observer"] is True
        # A topic created while it runs again reaches it too.
        r = create_topic(c.node(2), "after-restart", partitions=1, replication_factor=4)
        assert r.status_code == 201, r.text
        wait_until(lambda: describe(extra, "after-restart").status_code == 200, FAILOVER_DEADLINE_S,
                   "node 4 to know the topic created after its restart")
        assert 4 in replicas_of(extra, "after-restart", 0)
    finally:
        if extra is not None and extra.proc is not None:
            extra.kill()
        c.stop()


# How long the first node 4 must keep its registration beside a twin: the breaker saw the two
# swap it every ~0.3 s, so a few seconds of polls see any swap many times over.
DUPLICATE_WINDOW_S = 5.0


def test_a_second_process_with_a_live_node_id_is_refused_until_the_first_is_gone(ringlog_bin, tmp_path):
    """Kafka's DUPLICATE_BROKER_REGISTRATION (KIP-631): a second process with node.id=4 on other
    ports is refused while the first one's session lives (the first keeps its registration and
    broker epoch, the metadata log stays steady); after kill -9 of the first it registers."""
    c = Cluster(tmp_path).start()
    first = twin = None
    try:
        wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        first = start_broker_only(c, tmp_path)
        wait_until(lambda: c.node(1).brokers().get(4, {}).get("state") == "unfenced", SESSION_DEADLINE_S,
                   "broker 4 registered and unfenced")
        epoch = c.node(1).brokers()[4]["broker_epoch"]

        twin = Node(tmp_path / "node4-twin" / "data", 4, free_port(), voters_of(c), ["process.roles=broker"])
        twin.data_dir.parent.mkdir(parents=True, exist_ok=True)
        twin.spawn()
        wait_until(lambda: "DUPLICATE_BROKER_REGISTRATION" in twin.log_path.read_text(errors="replace"), 60.0,
                   "the twin's log to name DUPLICATE_BROKER_REGISTRATION")
        assert "broker 4 is registered by another live process" in twin.log_path.read_text(errors="replace")

        # Over a polled window the first keeps its registration, and the metadata log does not grow
        # with registrations (the breaker measured ~2.6 entries/s while the two took turns).
        controller = c.node(c.controller())
        log_end = controller.quorum()["log_end_offset"]
        end = time.monotonic() + DUPLICATE_WINDOW_S
        while time.monotonic() < end:
            b = c.node(1).brokers()[4]
            assert (b["broker_epoch"], b["state"]) == (epoch, "unfenced"), b
            assert first.healthy()
            assert twin.proc.poll() is None or twin.proc.returncode != 0
            time.sleep(0.1)
        assert controller.quorum()["log_end_offset"] - log_end <= 2

        # The first is gone (kill -9): the controller fences it (its probe is refused, or its
        # session lapses) and the twin, still retrying, registers in a new broker epoch.
        first.kill()
        if twin.proc.poll() is not None:   # it gave up (initial.broker.registration.timeout.ms): start it again
            twin.spawn()
        wait_until(lambda: c.node(1).brokers().get(4, {}).get("broker_epoch") not in (None, epoch), SESSION_DEADLINE_S + 10,
                   "the twin registered after the first was killed")
        wait_until(twin.healthy, 60.0, "the twin's /v1/health")
        wait_until(lambda: c.node(1).brokers()[4]["state"] == "unfenced", SESSION_DEADLINE_S, "broker 4 unfenced again")
    finally:
        for n in (first, twin):
            if n is not None and n.proc is not None:
                n.kill()
        c.stop()


def test_process_roles_checks_name_the_problem(ringlog_bin, tmp_path):
    port = free_port()

    def serve(*sets):
        args = [str(binary_path()), "serve", "--set", f"listeners=http://127.0.0.1:{free_port()},cluster://127.0.0.1:{port}",
                "--set", f"log.dirs={tmp_path / 'd'}"]
        for s in sets:
            args += ["--set", s]
        return subprocess.run(args, capture_output=True, text=True, timeout=30)

    voters = f"1@127.0.0.1:{port}"
    # A voter must run the controller role.
    r = serve("node.id=1", f"controller.quorum.voters={voters}", "process.roles=broker")
    assert r.returncode == 2, r
    assert "is a voter but process.roles has no controller" in r.stdout + r.stderr
    # A node that runs the controller role must be a voter.
    r = serve("node.id=2", f"controller.quorum.voters={voters}", "process.roles=broker,controller")
    assert r.returncode == 2, r
    assert "runs the controller role (process.roles=broker,controller) but is not one of the voters" in r.stdout + r.stderr
    # A broker-only node needs the voters to find the controllers.
    r = serve("node.id=2", "process.roles=broker")
    assert r.returncode == 2, r
    assert "needs controller.quorum.voters" in r.stdout + r.stderr
    # A dedicated controller that is not a voter is refused naming node.id and the voters.
    r = serve("node.id=2", f"controller.quorum.voters={voters}", "process.roles=controller")
    assert r.returncode == 2, r
    assert (f"controller.quorum.voters={voters}: node.id=2 runs the controller role (process.roles=controller) "
            "but is not one of the voters") in r.stdout + r.stderr
    # A dedicated controller serves no Kafka clients: a kafka:// listener is refused by name.
    args = [str(binary_path()), "serve", "--set",
            f"listeners=http://127.0.0.1:{free_port()},kafka://127.0.0.1:{free_port()},cluster://127.0.0.1:{port}",
            "--set", f"log.dirs={tmp_path / 'd'}", "--set", "node.id=1", "--set", f"controller.quorum.voters={voters}",
            "--set", "process.roles=controller"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r
    assert "a dedicated controller) serves no Kafka clients" in r.stdout + r.stderr
