"""Partition reassignment (KIP-455) on a running cluster, through HTTP, the Kafka listener and the CLI.

Three voters (process.roles=broker,controller) hold an rf-3 topic with data; a 4th, broker-only
node joins. Partition 0 is moved so that broker 4 holds a replica in place of its leader, while an
acks=all producer keeps writing: broker 4 copies the partition, joins the ISR, takes the
leadership, and the removed broker deletes its copy. Then a move that cannot finish (its target
is down) is listed over HTTP and the Kafka listener (ListPartitionReassignments, API 46) and
cancelled. Every wait polls with a deadline.
"""
import struct
import subprocess
import threading
import time

import requests

import kafka_wire as kw
from conftest import binary_path, wait_until
from test_add_broker import start_broker_only
from test_cluster import FAILOVER_DEADLINE_S, SESSION_DEADLINE_S, Cluster, create_topic, describe
from test_replication import isr_of, leader_of, produce, read_all, replicas_of

TOPIC = "moving"
RECORDS_BEFORE = 300
# The move copies RECORDS_BEFORE records and whatever the producer adds meanwhile; generous for CI.
MOVE_DEADLINE_S = 60.0
API_ALTER_REASSIGNMENTS, API_LIST_REASSIGNMENTS = 45, 46


# ---- Kafka's flexible encoding (request header v2, response header v1), for APIs 45 and 46

def compact_int32s(ids):
    if ids is None:
        return kw.uvarint(0)
    return kw.uvarint(len(ids) + 1) + b"".join(struct.pack(">i", i) for i in ids)


def flexible_exchange(bootstrap, api_key, body):
    sock = kw.connect(bootstrap)
    try:
        header = struct.pack(">hhi", api_key, 0, 7) + kw.string("ringlog-test") + kw.uvarint(0)
        sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        size = struct.unpack(">i", kw.read_exact(sock, 4))[0]
        r = kw.FlexReader(kw.read_exact(sock, size))
        assert r.take(">i") == 7
        r.skip_tags()
        return r
    finally:
        sock.close()


def kafka_list_reassignments(bootstrap):
    """ListPartitionReassignments v0 of every partition: (error_code, {(topic, p): (replicas, adding, removing)})."""
    r = flexible_exchange(bootstrap, API_LIST_REASSIGNMENTS, struct.pack(">i", 10000) + kw.uvarint(0) + kw.uvarint(0))
    r.take(">i")  # throttle
    error = r.take(">h")
    r.compact_string()
    out = {}
    for _ in range(r.uvarint() - 1):
        name = r.compact_string()
        for _ in range(r.uvarint() - 1):
            p = r.take(">i")
            out[(name, p)] = (r.int32s(), r.int32s(), r.int32s())
            r.skip_tags()
        r.skip_tags()
    return error, out


def kafka_alter_reassignment(bootstrap, topic, partition, replicas):
    """AlterPartitionReassignments v0 of one partition: (top error, partition error, message)."""
    body = (struct.pack(">i", 10000) + kw.uvarint(2) + kw.compact_string(topic) + kw.uvarint(2) + struct.pack(">i", partition)
            + compact_int32s(replicas) + kw.uvarint(0) + kw.uvarint(0) + kw.uvarint(0))
    r = flexible_exchange(bootstrap, API_ALTER_REASSIGNMENTS, body)
    r.take(">i")
    top = r.take(">h")
    r.compact_string()
    assert r.uvarint() == 2 and r.compact_string() == topic and r.uvarint() == 2
    assert r.take(">i") == partition
    return top, r.take(">h"), r.compact_string()


# ---- helpers

def reassignments(node, topic=None):
    path = f"/topics/{topic}/partitions/-/reassignment" if topic else "/topics/-/partitions/-/reassignment"
    r = requests.get(node.v3(path), timeout=5)
    assert r.status_code == 200, r.text
    return {(x["topic_name"], x["partition_id"]): x for x in r.json()["data"]}


def log_bytes(node, topic, partition):
    """The partition's segment files (*.log) on `node`, concatenated in offset order."""
    d = node.data_dir / f"{topic}-{partition}"
    return b"".join(f.read_bytes() for f in sorted(d.glob("*.log")))


class Producer(threading.Thread):
    """acks=all writes to one partition through one node until stopped; keeps what was acknowledged."""

    def __init__(self, node, topic, partition):
        super().__init__(daemon=True)
        self.node, self.topic, self.partition = node, topic, partition
        self.acknowledged, self.refused = [], 0
        self.stopping = threading.Event()

    def run(self):
        i = 0
        while not self.stopping.is_set():
            value = f"during-{i}"
            i += 1
            try:
                r = produce(self.node, self.topic, self.partition, [value])
            except requests.RequestException:
                self.refused += 1
                continue
            if r.status_code == 200 and all(o.get("error") is None for o in r.json()["offsets"]):
                self.acknowledged.append(value)
            else:
                self.refused += 1  # e.g. not_leader_or_follower while the leadership moves: retried

    def stop(self):
        self.stopping.set()
        self.join(timeout=60)


def cli(node, *args):
    return subprocess.run([str(binary_path()), "cluster", *args, "--bootstrap-server", node.url],
                          capture_output=True, text=True, timeout=60)


def test_reassignment_moves_a_replica_and_the_leadership_onto_a_new_broker_while_producing(ringlog_bin, tmp_path):
    c = Cluster(tmp_path, kafka=True).start()
    extra = None
    producer = None
    try:
        controller = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        # An existing rf-3 topic with data, before broker 4 exists.
        r = create_topic(c.node(controller), TOPIC, partitions=2, replication_factor=3)
        assert r.status_code == 201, r.text
        for n in c.nodes:
            wait_until(lambda n=n: describe(n, TOPIC).status_code == 200, FAILOVER_DEADLINE_S, "the topic everywhere")
        for p in range(2):
            wait_until(lambda p=p: isr_of(c.node(1), TOPIC, p) == [1, 2, 3], SESSION_DEADLINE_S, "a full ISR")
            r = produce(c.node(1), TOPIC, p, [f"before-{i}" for i in range(RECORDS_BEFORE)])
            assert r.status_code == 200 and all(o.get("error") is None for o in r.json()["offsets"]), r.text

        extra = start_broker_only(c, tmp_path)
        wait_until(lambda: c.node(1).brokers().get(4, {}).get("state") == "unfenced", SESSION_DEADLINE_S,
                   "broker 4 unfenced")
        assert set(replicas_of(c.node(1), TOPIC, 0)) == {1, 2, 3}
        assert reassignments(c.node(1)) == {}

        # `ringlog cluster status` on the quorum leader lists broker 4 as an observer of the quorum
        # (it fetches the metadata log without a vote), after the voters.
        def observer_rows():
            leader = c.controller()
            out = cli(c.node(leader), "status") if leader else None
            if out is None or out.returncode != 0 or "\nOBSERVER\t" not in out.stdout:
                return None
            rows = out.stdout.split("\nOBSERVER\t", 1)[1].splitlines()[1:]
            return rows if any(r.startswith("4\t") for r in rows) else None
        rows = wait_until(observer_rows, FAILOVER_DEADLINE_S, "broker 4 listed as an observer by cluster status")
        assert not any(r.split("\t")[0] in ("1", "2", "3") for r in rows), rows

        # Refusals name the problem, change nothing.
        r = requests.patch(c.node(2).v3(f"/topics/{TOPIC}/partitions/0/reassignment"), json={"replicas": [1, 9]},
                           timeout=40)
        assert r.status_code == 400 and "broker 9, which is not registered" in r.json()["message"], r.text
        r = requests.patch(c.node(2).v3(f"/topics/{TOPIC}/partitions/0/reassignment"), json={"replicas": [1, 1]},
                           timeout=40)
        assert r.status_code == 400 and "twice" in r.json()["message"], r.text
        r = requests.delete(c.node(2).v3(f"/topics/{TOPIC}/partitions/0/reassignment"), timeout=40)
        assert r.status_code == 409 and "is not being reassigned" in r.json()["message"], r.text
        r = requests.get(c.node(2).v3(f"/topics/{TOPIC}/partitions/0/reassignment"), timeout=5)
        assert r.status_code == 404, r.text
        assert kafka_alter_reassignment(c.node(3).bootstrap, TOPIC, 0, [9])[:2] == (0, 39)
        assert kafka_alter_reassignment(c.node(3).bootstrap, "no-such-topic", 0, [1])[:2] == (0, 3)

        # Move partition 0 off its leader onto broker 4, producing acks=all all along.
        old_leader = wait_until(lambda: leader_of(c.node(1), TOPIC, 0), FAILOVER_DEADLINE_S, "a leader of partition 0")
        target = [4] + [b for b in (1, 2, 3) if b != old_leader]
        through = c.node(target[1])  # a node that stays a replica: its producer never loses its entry point
        producer = Producer(through, TOPIC, 0)
        producer.start()
        wait_until(lambda: len(producer.acknowledged) >= 20, FAILOVER_DEADLINE_S, "acks=all writes before the move")

        r = requests.patch(c.node(old_leader).v3(f"/topics/{TOPIC}/partitions/0/reassignment"),
                           json={"replicas": target}, timeout=40)
        assert r.status_code == 200, r.text
        started = r.json()
        assert started["kind"] == "KafkaReassignment" and started["partition_id"] == 0
        # The answer comes once the move started; broker 4 may already have caught up.
        assert (started["adding_replicas"], started["removing_replicas"]) in (([4], [old_leader]), ([], [])), started

        def moved():
            return (set(replicas_of(c.node(1), TOPIC, 0)) == set(target) and isr_of(c.node(1), TOPIC, 0) == sorted(target)
                    and reassignments(c.node(1)) == {})
        wait_until(moved, MOVE_DEADLINE_S, "partition 0 on its target replicas, all in sync")
        # The removed leader gave the leadership to the first in-sync target replica: broker 4.
        assert wait_until(lambda: leader_of(c.node(1), TOPIC, 0), FAILOVER_DEADLINE_S, "a leader") == 4
        # acks=all writes went on through the move (and after the leadership moved).
        count = len(producer.acknowledged)
        wait_until(lambda: len(producer.acknowledged) >= count + 20, FAILOVER_DEADLINE_S, "writes after the move")
        producer.stop()

        # Every acknowledged record is in the partition, read from its new leader, broker 4.
        expected = [f"before-{i}" for i in range(RECORDS_BEFORE)] + producer.acknowledged
        # Right after its election the new leader may answer "retry" until its high watermark is
        # established (KIP-207): poll for the figure (a fresh-clone CI run read it too early).
        def latest_offset():
            answer = requests.get(extra.v3(f"/topics/{TOPIC}/partitions/0/offset"), timeout=5).json()
            return answer if "latest_offset" in answer else None
        end = int(wait_until(latest_offset, FAILOVER_DEADLINE_S, "the new leader's latest offset")["latest_offset"])
        values = [x["value"] for x in read_all(extra, TOPIC, 0, end)]
        missing = [v for v in expected if v not in set(values)]
        assert not missing, f"{len(missing)} acknowledged records missing, e.g. {missing[:5]}"
        assert values[:RECORDS_BEFORE] == expected[:RECORDS_BEFORE]
        # The new replica's log is byte for byte the other replicas' (followers copy batches as the
        # leader wrote them), once every replica has the same log end.
        others = [b for b in target if b != 4]
        wait_until(lambda: all(log_bytes(c.node(b), TOPIC, 0) == log_bytes(extra, TOPIC, 0) for b in others),
                   SESSION_DEADLINE_S, "identical logs on every replica of partition 0")
        assert len(log_bytes(extra, TOPIC, 0)) > 0
        # The removed replica deleted its local log; partition 1 (not moved) is still there.
        wait_until(lambda: not (c.node(old_leader).data_dir / f"{TOPIC}-0").exists(), SESSION_DEADLINE_S,
                   f"broker {old_leader} to delete its copy of partition 0")
        assert (c.node(old_leader).data_dir / f"{TOPIC}-1").exists()
        assert not (extra.data_dir / f"{TOPIC}-1").exists()

        # The CLI: move a follower of partition 1 onto broker 4 (the leader stays), list, done.
        leader1 = wait_until(lambda: leader_of(c.node(1), TOPIC, 1), FAILOVER_DEADLINE_S, "a leader of partition 1")
        follower = next(b for b in (1, 2, 3) if b != leader1)
        target1 = [b if b != follower else 4 for b in sorted(replicas_of(c.node(1), TOPIC, 1))]
        out = cli(c.node(1), "reassign", "--topic", TOPIC, "--partition", "1",
                  "--replicas", ",".join(map(str, target1)))
        assert out.returncode == 0, out.stderr
        assert f"partition 1 of {TOPIC}" in out.stdout, out.stdout
        wait_until(lambda: set(replicas_of(c.node(1), TOPIC, 1)) == set(target1) and reassignments(c.node(1)) == {},
                   MOVE_DEADLINE_S, "partition 1 on its target replicas")
        assert leader_of(c.node(1), TOPIC, 1) == leader1
        wait_until(lambda: not (c.node(follower).data_dir / f"{TOPIC}-1").exists(), SESSION_DEADLINE_S,
                   f"broker {follower} to delete its copy of partition 1")
        # Node 2 applies the completing change at its own pace.
        out = wait_until(lambda: (o := cli(c.node(2), "reassignments")).returncode == 0
                         and "(no reassignment under way)" in o.stdout and o, FAILOVER_DEADLINE_S,
                         "node 2 to list no reassignment")
        assert out.stdout.startswith("TOPIC\tPARTITION\tREPLICAS\tADDING\tREMOVING\n"), out.stdout

        # With broker 4 down: partition 0 goes back to brokers 1, 2, 3 (a batch over HTTP; the
        # removed leader of before copies the partition anew) and an unknown partition is refused
        # on its own.
        extra.kill()
        wait_until(lambda: c.node(1).brokers()[4]["state"] == "fenced", SESSION_DEADLINE_S, "broker 4 fenced")
        r = requests.post(c.node(3).v3("/topics/-/partitions/-/reassignment:alter"),
                          json={"data": [{"topic_name": TOPIC, "partition_id": 0, "replicas": [1, 2, 3]},
                                         {"topic_name": TOPIC, "partition_id": 5, "replicas": [1]}]}, timeout=40)
        assert r.status_code == 200, r.text
        results = r.json()["data"]
        assert results[0]["error"] is None, results
        assert results[1]["error_code"] == 3 and results[1]["error"] == "unknown_topic_or_partition", results
        wait_until(lambda: set(replicas_of(c.node(1), TOPIC, 0)) == {1, 2, 3} and isr_of(c.node(1), TOPIC, 0) == [1, 2, 3]
                   and reassignments(c.node(1)) == {}, MOVE_DEADLINE_S, "partition 0 back on brokers 1, 2, 3")

        # A move onto the down broker 4 (Kafka's AlterPartitionReassignments) cannot finish: it is
        # listed over HTTP, the Kafka listener and the CLI until it is cancelled.
        assert kafka_alter_reassignment(c.node(2).bootstrap, TOPIC, 0, [1, 2, 3, 4]) == (0, 0, None)
        wait_until(lambda: (TOPIC, 0) in reassignments(c.node(1)), FAILOVER_DEADLINE_S, "the move listed")
        ongoing = reassignments(c.node(1), TOPIC)[(TOPIC, 0)]
        assert (ongoing["replica_ids"], ongoing["adding_replicas"], ongoing["removing_replicas"]) == ([1, 2, 3, 4], [4], [])
        r = requests.get(c.node(1).v3(f"/topics/{TOPIC}/partitions/0/reassignment"), timeout=5)
        assert r.status_code == 200 and r.json()["adding_replicas"] == [4], r.text
        assert kafka_list_reassignments(c.node(1).bootstrap) == (0, {(TOPIC, 0): ([1, 2, 3, 4], [4], [])})
        out = cli(c.node(1), "reassignments", "--topic", TOPIC)
        assert out.returncode == 0 and f"{TOPIC}\t0\t1,2,3,4\t4\t-" in out.stdout, out
        assert isr_of(c.node(1), TOPIC, 0) == [1, 2, 3]
        # The replication factor without the replica being added, as Kafka's kafka-topics shows it
        # (it showed 4 during a 3 -> 3 move: new user, session 24).
        r = requests.get(c.node(1).v3(f"/topics/{TOPIC}"), timeout=5)
        assert r.status_code == 200 and r.json()["replication_factor"] == 3, r.text
        # A node judges a cancel on its own copy of the metadata: node 3 must have applied the move.
        wait_until(lambda: (TOPIC, 0) in reassignments(c.node(3)), FAILOVER_DEADLINE_S, "node 3 to list the move")
        out = cli(c.node(3), "reassign", "--topic", TOPIC, "--partition", "0", "--cancel")
        assert out.returncode == 0 and "Cancelled" in out.stdout, out
        wait_until(lambda: reassignments(c.node(1)) == {} and set(replicas_of(c.node(1), TOPIC, 0)) == {1, 2, 3},
                   FAILOVER_DEADLINE_S, "the cancelled move gone, the original replicas kept")
        assert kafka_list_reassignments(c.node(1).bootstrap) == (0, {})

        # Broker 4 was down when partition 0 left it: it deletes that copy when it starts again,
        # and keeps its replica of partition 1.
        assert (extra.data_dir / f"{TOPIC}-0").exists()
        extra.spawn()
        wait_until(extra.healthy, 60.0, "the restarted broker-only node")
        assert not (extra.data_dir / f"{TOPIC}-0").exists()
        assert (extra.data_dir / f"{TOPIC}-1").exists()
        wait_until(lambda: 4 in isr_of(c.node(1), TOPIC, 1), SESSION_DEADLINE_S, "broker 4 back in the ISR of partition 1")
    finally:
        if producer is not None and producer.is_alive():
            producer.stop()
        if extra is not None and extra.proc is not None:
            extra.kill()
        c.stop()


def partition_series(node, topic):
    """The /metrics lines of `node` for a partition of `topic` (ringlog_partition_*, ringlog_log_cleaner_*)."""
    text = requests.get(node.url + "/metrics", timeout=5).text
    return [l for l in text.splitlines() if f'{{topic="{topic}",partition=' in l and not l.startswith("#")]


def test_a_replica_moved_away_takes_its_metrics_series_with_it(ringlog_bin, tmp_path):
    # Newcomer finding 1: a broker that deleted its replica (reassigned away) kept reporting its
    # ringlog_partition_* gauges (40 MB "stored" in the console of a node holding nothing).
    c = Cluster(tmp_path).start()
    try:
        controller = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        r = create_topic(c.node(controller), "metered", partitions=1, replication_factor=1,
                         configs=[{"name": "cleanup.policy", "value": "compact"}])
        assert r.status_code == 201, r.text
        holder = c.node(wait_until(lambda: leader_of(c.node(1), "metered", 0), FAILOVER_DEADLINE_S, "a leader"))

        def produced():   # 404 until the holder applied the topic's creation
            r = requests.post(f"{holder.url}/topics/metered/partitions/0",
                              json={"records": [{"key": f"k{i % 10}", "value": "x" * 100} for i in range(200)]},
                              headers={"Content-Type": "application/vnd.kafka.json.v2+json"}, timeout=40)
            assert r.status_code in (200, 404), r.text
            return r.status_code == 200
        wait_until(produced, FAILOVER_DEADLINE_S, "a produce to the holder")

        def sized(node):
            lines = partition_series(node, "metered")
            size = [l for l in lines if l.startswith("ringlog_partition_size_bytes{")]
            return lines if size and int(size[0].rsplit(" ", 1)[1]) > 0 else None
        lines = wait_until(lambda: sized(holder), FAILOVER_DEADLINE_S, "the holder's size gauge")
        assert any(l.startswith("ringlog_log_cleaner_passes_total{") for l in lines), lines
        target = next(n for n in c.nodes if n is not holder)
        r = requests.patch(c.node(controller).v3("/topics/metered/partitions/0/reassignment"),
                           json={"replicas": [target.node_id]}, timeout=40)
        assert r.status_code == 200, r.text
        wait_until(lambda: set(replicas_of(c.node(1), "metered", 0)) == {target.node_id} and reassignments(c.node(1)) == {}
                   and not (holder.data_dir / "metered-0").exists(), MOVE_DEADLINE_S, "the move, the old copy deleted")
        # The old holder: no series of the partition, and its stored total no longer counts it.
        wait_until(lambda: partition_series(holder, "metered") == [], SESSION_DEADLINE_S,
                   "the old holder's series to go")
        wait_until(lambda: sized(target), SESSION_DEADLINE_S, "the new holder's size gauge")
        # Nodes that never held a replica have no series of it either (they used to show 0).
        for n in c.nodes:
            if n is not target:
                assert partition_series(n, "metered") == [], n.node_id
    finally:
        c.stop()


# Two plans of one partition at once: well under metadata_write_timeout_ms (30 s), which each
# admin call of a node that is not the active controller waited after a refused metadata entry.
CONFLICT_ANSWER_S = 10.0
CONFLICT_ROUNDS = 16


def reorder_at_once(nodes, topic, partition, target):
    """PATCHes `target` as the replicas of the partition at every node of `nodes` at the same
    moment; {node_id: (HTTP status or the exception's name, seconds taken)}."""
    start = threading.Barrier(len(nodes))
    answers = {}

    def ask(node):
        start.wait(timeout=10)
        t0 = time.monotonic()
        try:
            r = requests.patch(node.v3(f"/topics/{topic}/partitions/{partition}/reassignment"),
                               json={"replicas": target}, timeout=CONFLICT_ANSWER_S)
            answers[node.node_id] = (r.status_code, time.monotonic() - t0)
        except requests.RequestException as e:
            answers[node.node_id] = (type(e).__name__, time.monotonic() - t0)

    threads = [threading.Thread(target=ask, args=(n,)) for n in nodes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=CONFLICT_ANSWER_S + 15)
    return answers


def test_two_plans_of_one_partition_at_once_answer_promptly_on_a_node_that_is_not_the_controller(ringlog_bin, tmp_path):
    # The active controller and another voter are asked at once to reorder one partition's
    # replicas (no data moves). The other plans behind its metadata barrier against the image
    # before the controller's change and forwards its entry in an Envelope (KIP-590); that entry
    # names the partition epoch the first changed and is refused when applied, and the retry
    # passes the barrier again. The refused entry, the log's last, was never counted as applied
    # there, so that barrier (and every later admin call at that node) waited 30 s for it
    # (session 41: a decommission, a rebalance cancel and a topic creation each answered 30 s late).
    c = Cluster(tmp_path).start()
    try:
        controller = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        other = c.node(next(n for n in (1, 2, 3) if n != controller))
        r = create_topic(c.node(controller), "twice", partitions=1, replication_factor=3)
        assert r.status_code == 201, r.text
        wait_until(lambda: len(replicas_of(other, "twice", 0)) == 3, SESSION_DEADLINE_S, "every node knows the topic")
        for round_ in range(CONFLICT_ROUNDS):
            target = [1, 2, 3][round_ % 3 + 1:] + [1, 2, 3][:round_ % 3 + 1]
            answers = reorder_at_once([c.node(controller), other], "twice", 0, target)
            assert all(a[0] == 200 for a in answers.values()), (round_, target, answers)
            # A later call at the other node passes its barrier, behind whichever entry was refused.
            t0 = time.monotonic()
            r = requests.patch(other.v3("/topics/twice/partitions/0/reassignment"), json={"replicas": target},
                               timeout=CONFLICT_ANSWER_S)
            assert r.status_code == 200, r.text
            assert time.monotonic() - t0 < CONFLICT_ANSWER_S
            wait_until(lambda: reassignments(other, "twice") == {}, MOVE_DEADLINE_S, "the reorder complete")
    finally:
        c.stop()
