"""Three real `ringlog serve` processes on 127.0.0.1 forming one cluster (issue "Cluster I").

Each node is a voter of the metadata quorum and a broker (process.roles=broker,controller), with
its own HTTP and cluster:// ports and data directory. The tests kill -9 the active controller,
SIGTERM a broker, restart nodes and start one with the wrong identity, and check what a user sees
through any node's HTTP API. Every wait polls with a deadline.
"""
import signal
import subprocess
import time

import pytest
import requests

from conftest import Broker, binary_path, free_port, wait_until

# Failover must fit in seconds with the defaults (election 1000 ms, fetch 1000 ms); the
# deadlines below are generous so a loaded CI machine does not fail them.
FAILOVER_DEADLINE_S = 20.0
SESSION_DEADLINE_S = 20.0


class Node(Broker):
    """A cluster node: starts without waiting (a lone voter cannot elect a leader)."""

    def __init__(self, data_dir, node_id, cluster_port, voters, extra_sets=(), kafka_port=None, extra_args=()):
        self.node_id = node_id
        self.cluster_port = cluster_port
        super().__init__(data_dir, [f"node.id={node_id}", f"controller.quorum.voters={voters}",
                                    "num.shards=1", *extra_sets], kafka_port=kafka_port, extra_args=extra_args)

    def listeners(self):
        """The node's `listeners` value (subclasses serve other doors)."""
        listeners = f"http://127.0.0.1:{self.port},cluster://127.0.0.1:{self.cluster_port}"
        if self.kafka_port:
            listeners += f",kafka://127.0.0.1:{self.kafka_port}"
        return listeners

    def spawn(self):
        args = [str(binary_path()), "serve", "--set", f"listeners={self.listeners()}",
                "--set", f"log.dirs={self.data_dir}"]
        for s in self.extra_sets:
            args += ["--set", s]
        args += self.extra_args
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        return self

    def healthy(self):
        if self.proc is None:
            return False
        if self.proc.poll() is not None:
            raise AssertionError(f"node {self.node_id} exited with {self.proc.returncode}: "
                                 f"{self.log_path.read_text()[-2000:]}")
        try:
            return requests.get(self.url + "/v1/health", timeout=1).status_code == 200
        except requests.ConnectionError:
            return False

    def quorum(self):
        return requests.get(self.v3("/quorum"), timeout=5).json()

    def brokers(self):
        return {b["broker_id"]: b for b in requests.get(self.v3("/brokers"), timeout=5).json()["data"]}


class Cluster:
    def __init__(self, root, size=3, extra_sets=(), kafka=False, extra_args=()):
        self.ports = [free_port() for _ in range(size)]
        voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(self.ports))
        self.nodes = [Node(root / f"node{i + 1}" / "data", i + 1, self.ports[i], voters, extra_sets,
                           kafka_port=free_port() if kafka else None, extra_args=extra_args)
                      for i in range(size)]
        for n in self.nodes:
            n.data_dir.parent.mkdir(parents=True, exist_ok=True)

    def start(self):
        start_nodes(self.nodes)
        return self

    def node(self, node_id):
        return self.nodes[node_id - 1]

    def live(self):
        return [n for n in self.nodes if n.proc is not None]

    def controller(self, among=None):
        """The node id every live node agrees leads the quorum (None while they do not)."""
        leaders = {n.quorum()["leader_id"] for n in (among or self.live())}
        return leaders.pop() if len(leaders) == 1 and None not in leaders else None

    def stop(self):
        kill_nodes(self.nodes)


def start_nodes(nodes):
    """Spawns every node, then waits for each one's /v1/health. When one fails to start, kills
    every node it spawned (they must not stay running) and raises."""
    for n in nodes:
        n.spawn()
    try:
        for n in nodes:
            wait_until(n.healthy, 60.0, f"node {n.node_id} /v1/health")
    except BaseException:
        kill_nodes(nodes)
        raise


def kill_nodes(nodes):
    """kill -9 of every node still running."""
    for n in nodes:
        if n.proc is not None:
            n.kill()


@pytest.fixture
def cluster(ringlog_bin, tmp_path):
    c = Cluster(tmp_path).start()
    yield c
    c.stop()


def create_topic(node, name, partitions=3, **extra):
    body = {"topic_name": name, "partitions_count": partitions, **extra}
    return requests.post(node.v3("/topics"), json=body, timeout=40)


def created_once_led(node, name, **extra):
    """Creates a topic; False (poll again) while the quorum has no leader (503, Retry-After: 1)."""
    r = create_topic(node, name, **extra)
    if r.status_code == 503:
        assert r.headers.get("Retry-After") == "1", r.headers
        return False
    assert r.status_code == 201, r.text
    return True


def describe(node, name):
    return requests.get(node.v3(f"/topics/{name}/partitions"), timeout=5)


def test_three_nodes_agree_on_a_controller_and_any_node_answers_admin_calls(cluster):
    controller = wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    for n in cluster.nodes:
        brokers = wait_until(lambda: (lambda b: b if len(b) == 3 else None)(n.brokers()), SESSION_DEADLINE_S,
                             f"3 brokers registered as node {n.node_id} sees them")
        assert sorted(brokers) == [1, 2, 3]
        assert all(b["state"] == "unfenced" for b in brokers.values())
        assert [i for i, b in brokers.items() if b["is_controller"]] == [controller]
        cluster_json = requests.get(n.v3()).json()
        assert cluster_json["controller"]["related"].endswith(f"/brokers/{controller}")
    q = cluster.node(controller).quorum()
    assert q["role"] == "leader" and q["leader_id"] == controller
    assert sorted(v["replica_id"] for v in q["voters"]) == [1, 2, 3]
    assert all(v["lag"] is not None for v in q["voters"])

    # A create sent to a node that is not the controller is forwarded, and answered once this
    # node applied it: the topic is visible there at once and on the others soon after.
    follower = next(n for n in cluster.nodes if n.node_id != controller)
    r = create_topic(follower, "orders", partitions=6)
    assert r.status_code == 201, r.text
    assert r.json()["replication_factor"] == 3
    parts = describe(follower, "orders").json()["data"]
    assert len(parts) == 6
    # Placement balances leaderships over every topic (__consumer_offsets included, created
    # while brokers were still registering): the new partitions lead on at least two brokers,
    # and each has 3 distinct replicas.
    leaders = [p["leader"]["related"].rsplit("/", 1)[1] for p in parts]
    assert len(set(leaders)) >= 2, leaders
    for p in range(6):
        replicas = requests.get(follower.v3(f"/topics/orders/partitions/{p}/replicas")).json()["data"]
        assert sorted(r["broker_id"] for r in replicas) == [1, 2, 3]
    for n in cluster.nodes:
        wait_until(lambda: describe(n, "orders").status_code == 200, 10.0, f"orders on node {n.node_id}")
    # A replication factor above the live brokers is refused naming both numbers.
    r = create_topic(follower, "too-many", replication_factor=4)
    assert r.status_code == 400 and "replication_factor 4" in r.text and "(3)" in r.text, r.text
    # Delete through a third node.
    other = next(n for n in cluster.nodes if n.node_id not in (controller, follower.node_id))
    assert requests.delete(other.v3("/topics/orders"), timeout=40).status_code == 204
    for n in cluster.nodes:
        wait_until(lambda: describe(n, "orders").status_code == 404, 10.0, f"orders gone on node {n.node_id}")


def test_kill_9_of_the_controller_a_new_one_takes_over_and_the_node_catches_up_after_restart(cluster):
    old = wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    cluster.node(old).kill()
    survivors = cluster.live()
    started = time.monotonic()
    new = wait_until(lambda: (lambda c: c if c is not None and c != old else None)(cluster.controller(survivors)),
                     FAILOVER_DEADLINE_S, "a new controller")
    assert new != old

    wait_until(lambda: created_once_led(survivors[0], "after-failover", partitions=2), FAILOVER_DEADLINE_S,
               "a topic create after failover")
    print(f"controller {old} killed; topic created after {time.monotonic() - started:.2f} s")
    # The killed broker misses its heartbeats and is fenced by the new controller.
    wait_until(lambda: survivors[0].brokers()[old]["state"] == "fenced", SESSION_DEADLINE_S,
               f"broker {old} fenced")
    # It restarts, catches up with what was created while it was down, and is unfenced.
    restarted = cluster.node(old).spawn()
    wait_until(restarted.healthy, 60.0, "the restarted node")
    assert describe(restarted, "after-failover").status_code == 200
    wait_until(lambda: all(b["state"] == "unfenced" for b in survivors[0].brokers().values()), SESSION_DEADLINE_S,
               "every broker unfenced")
    assert restarted.quorum()["leader_id"] == new


def test_without_a_quorum_writes_answer_503_with_retry_after_and_reads_still_work(cluster):
    wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    assert create_topic(cluster.node(1), "before").status_code == 201
    cluster.node(2).kill()
    cluster.node(3).kill()
    lone = cluster.node(1)
    wait_until(lambda: lone.quorum()["leader_id"] is None, FAILOVER_DEADLINE_S, "the lone node to lose its leader")
    r = create_topic(lone, "no-quorum")
    assert r.status_code == 503, r.text
    assert r.headers.get("Retry-After") == "1"
    assert "no leader" in r.json()["message"] or "retry" in r.json()["message"]
    assert describe(lone, "before").status_code == 200


def test_sigterm_is_a_controlled_shutdown(cluster):
    controller = wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    r = create_topic(cluster.node(controller), "led-everywhere", partitions=3)
    assert r.status_code == 201, r.text
    leaving = next(n for n in cluster.nodes if n.node_id != controller)
    assert leaving.stop(signal.SIGTERM) == 0
    observer = cluster.node(controller)
    assert observer.brokers()[leaving.node_id]["state"] == "controlled_shutdown"
    # Its leaderships moved to in-sync followers (replication factor 3) and it left every ISR:
    # every partition is led, none by the stopped broker.
    parts = describe(observer, "led-everywhere").json()["data"]
    leaders = [p["leader"] and int(p["leader"]["related"].rsplit("/", 1)[1]) for p in parts]
    assert None not in leaders and leaving.node_id not in leaders, parts
    for p in range(3):
        replicas = requests.get(observer.v3(f"/topics/led-everywhere/partitions/{p}/replicas")).json()["data"]
        assert not any(r["broker_id"] == leaving.node_id and r["is_in_sync"] for r in replicas), replicas
    leaving.spawn()
    wait_until(leaving.healthy, 60.0, "the restarted node")

    def back_in_sync():
        for p in range(3):
            replicas = requests.get(observer.v3(f"/topics/led-everywhere/partitions/{p}/replicas")).json()["data"]
            if not all(r["is_in_sync"] for r in replicas):
                return False
        return True

    wait_until(back_in_sync, SESSION_DEADLINE_S, "the restarted broker back in every ISR")


def test_a_node_with_the_wrong_node_id_or_cluster_id_for_its_directory_refuses_to_start(cluster):
    wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    node = cluster.node(3)
    node.stop()
    for bad, named in ((["node.id=7"], "node.id"), (["cluster.id=another-cluster"], "cluster.id")):
        args = [str(binary_path()), "serve", "--set", f"listeners=http://127.0.0.1:{free_port()}",
                "--set", f"log.dirs={node.data_dir}", *sum((["--set", s] for s in bad), [])]
        done = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert done.returncode != 0
        out = done.stdout + done.stderr
        assert named in out, out


def test_a_broker_with_another_cluster_id_exits_naming_inconsistent_cluster_id(cluster, tmp_path):
    """A new broker-only node given another cluster.id than the quorum's is refused by the leader
    (INCONSISTENT_CLUSTER_ID, 104) on every Fetch: it exits at once naming that, instead of
    waiting out initial.broker.registration.timeout.ms (300 s by default) with no reason given
    (a LOW of session 22)."""
    wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(cluster.ports))
    args = [str(binary_path()), "serve", "--set", "node.id=4", "--set", "process.roles=broker",
            "--set", f"controller.quorum.voters={voters}", "--set", "cluster.id=another-cluster",
            "--set", f"listeners=http://127.0.0.1:{free_port()},cluster://127.0.0.1:{free_port()}",
            "--set", f"log.dirs={tmp_path / 'stranger'}"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "INCONSISTENT_CLUSTER_ID" in out and "'another-cluster'" in out, out


def test_a_node_restarted_with_other_voters_refuses_to_start(cluster):
    """The breaker's split brain: node 3 alone as its own voter elected itself beside the others."""
    wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    node = cluster.node(3)
    assert node.stop() == 0
    args = [str(binary_path()), "serve", "--set", "node.id=3",
            "--set", f"controller.quorum.voters=3@127.0.0.1:{node.cluster_port}",
            "--set", f"listeners=http://127.0.0.1:{free_port()},cluster://127.0.0.1:{node.cluster_port}",
            "--set", f"log.dirs={node.data_dir}"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "records the voters 1,2,3 but controller.quorum.voters names 3" in out, out


def test_sigterm_while_waiting_for_the_quorum_stops_at_once(ringlog_bin, tmp_path):
    c = Cluster(tmp_path)
    lone = c.node(1).spawn()   # the other two never start: no majority, start-up waits
    try:
        wait_until(lambda: "waiting for the metadata quorum" in lone.log_path.read_text(), 20.0, "the waiting log line")
        lone.proc.send_signal(signal.SIGTERM)
        assert lone.proc.wait(timeout=10) == 143
        assert "stopped during start-up" in lone.log_path.read_text()
    finally:
        if lone.proc.poll() is None:
            lone.proc.kill()
        lone.proc = None


def test_voters_sharing_an_address_or_not_naming_this_listener_are_refused(ringlog_bin, tmp_path):
    port = free_port()
    for voters, listener_port, named in ((f"1@127.0.0.1:{port},2@127.0.0.1:{port}", port, "the same address"),
                                         (f"1@127.0.0.1:{port},2@127.0.0.1:{free_port()}", free_port(), "is listed at")):
        args = [str(binary_path()), "serve", "--set", "node.id=1", "--set", f"controller.quorum.voters={voters}",
                "--set", f"listeners=http://127.0.0.1:{free_port()},cluster://127.0.0.1:{listener_port}",
                "--set", f"log.dirs={tmp_path / 'data'}"]
        done = subprocess.run(args, capture_output=True, text=True, timeout=30)
        out = done.stdout + done.stderr
        assert done.returncode == 2, out
        assert named in out, out


def test_a_lone_voter_gives_up_after_initial_broker_registration_timeout(ringlog_bin, tmp_path):
    """initial.broker.registration.timeout.ms (Kafka's key) bounds start-up's waits: a voter whose
    two fellow voters never start exits 1 once it has waited that long, naming the key (the bound
    was a fixed 300 s that no setting named: the breaker's LOW of session 21)."""
    port = free_port()
    voters = f"1@127.0.0.1:{port},2@127.0.0.1:{free_port()},3@127.0.0.1:{free_port()}"
    args = [str(binary_path()), "serve", "--set", "node.id=1", "--set", f"controller.quorum.voters={voters}",
            "--set", f"listeners=http://127.0.0.1:{free_port()},cluster://127.0.0.1:{port}",
            "--set", f"log.dirs={tmp_path / 'data'}", "--set", "initial.broker.registration.timeout.ms=2000"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "after 2000 ms (initial.broker.registration.timeout.ms;" in out, out


def test_a_partition_added_through_one_node_is_served_at_once_by_the_others(cluster):
    """The new user of session 36: for about 200 ms after a partition count was raised through
    node 1, nodes 2 and 3 answered a produce or an offsets query naming a new partition with a
    definitive 404 40402 "partition N does not exist" (6 of 6 tries). A call naming a partition
    this node's image lacks now waits at the metadata barrier first, as one naming a topic just
    created elsewhere does. The leader waits so too for a call a peer forwarded for a partition it
    has not applied yet (session 36's CI: a forwarded offsets query was answered not-leader by
    the new partition's leader 2 ms before it applied the partition)."""
    wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    wait_until(lambda: created_once_led(cluster.node(1), "grown", partitions_count=1), FAILOVER_DEADLINE_S,
               "the topic created")
    binary = {"Content-Type": "application/vnd.kafka.binary.v2+json"}
    for count in range(2, 7):
        r = requests.patch(cluster.node(1).v3("/topics/grown"), json={"partitions_count": count}, timeout=40)
        assert r.status_code == 200, r.text
        for other in (cluster.node(2), cluster.node(3)):
            produced = requests.post(f"{other.url}/topics/grown/partitions/{count - 1}", headers=binary,
                                     json={"records": [{"value": "dg=="}]}, timeout=40)
            assert produced.status_code == 200, (count, other.node_id, produced.text)
            # A v2 produce answers 200 with a per-record error: the record must be stored.
            assert produced.json()["offsets"][0].get("error_code") is None, (count, other.node_id, produced.text)
            offsets = requests.get(f"{other.url}/topics/grown/partitions/{count - 1}/offsets", timeout=40)
            assert offsets.status_code == 200, (count, other.node_id, offsets.text)
