"""A node of a three-node cluster that comes back with an empty data directory (its disk lost or
wiped, restarted with the same node.id and settings) must not cost an acknowledged record or a
committed metadata entry (README, "A node whose disk is lost").

- The metadata quorum (Raft §5.4, KIP-853's "disk loss" problem): with an entry committed by
  {A, B} while C was down, B losing its disk must not let the stale C win an election with B's
  vote. Until it caught up with a leader once, a voter whose directory was formatted on this
  start votes only for candidates that have not caught up either, and only they vote for it.
- Partition replication (KIP-903, broker epochs in the ISR): a follower back with an empty log
  leaves the ISR when it registers and joins again only once it holds every acknowledged record,
  however far its previous incarnation had fetched.

Every wait polls with a deadline; the two "nothing happens for a while" checks are bounded
observations, not sleeps waiting for a condition.
"""
import os
import re
import shutil
import subprocess
import time

import requests

from conftest import free_port, wait_until
from test_cluster import FAILOVER_DEADLINE_S, Cluster, create_topic, describe
from test_replication import JSONV2, isr_of, leader_of, read_all

# How long the tests watch for something that must not happen (a stale quorum forming, an empty
# replica counted in sync): an election takes 1-3 s with the defaults.
OBSERVE_S = 8.0


def topic_on(node, name):
    try:
        return describe(node, name).status_code == 200
    except requests.ConnectionError:
        return False


def healthy_quietly(node):
    """/v1/health answers 200 (False while the node waits for its metadata quorum)."""
    try:
        return node.proc is not None and node.proc.poll() is None and \
            requests.get(node.url + "/v1/health", timeout=1).status_code == 200
    except requests.ConnectionError:
        return False


def test_a_voter_back_with_an_empty_disk_does_not_help_a_stale_voter_win(ringlog_bin, tmp_path):
    c = Cluster(tmp_path).start()
    try:
        a = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        stale = next(n for n in c.nodes if n.node_id != a)
        b = next(n for n in c.nodes if n.node_id not in (a, stale.node_id))
        stale.kill()
        # Committed by {A, B}: the stale node never saw it.
        wait_until(lambda: create_topic(c.node(a), "while-c-was-down", partitions=1).status_code == 201,
                   FAILOVER_DEADLINE_S, "a topic created by the two live voters")
        wait_until(lambda: topic_on(b, "while-c-was-down"), 10.0, "the topic on B")
        c.node(a).kill()
        b.kill()
        shutil.rmtree(b.data_dir)   # B's disk is lost; it comes back with the same node.id and settings
        b.spawn()
        stale.spawn()
        # Neither B (empty) nor the stale node may form a quorum without A: B abstains.
        formed_without_a = False
        end = time.monotonic() + OBSERVE_S
        while time.monotonic() < end and not formed_without_a:
            formed_without_a = healthy_quietly(b) or healthy_quietly(stale)
            time.sleep(0.25)
        c.node(a).spawn()
        for n in c.nodes:
            wait_until(n.healthy, 60.0, f"node {n.node_id} /v1/health")
        lost_on = [n.node_id for n in c.nodes if not topic_on(n, "while-c-was-down")]
        assert not lost_on and not formed_without_a, \
            f"B (empty disk) and the stale voter formed a quorum without A: {formed_without_a}; " \
            f"the topic committed while C was down is missing on nodes {lost_on}"
        assert "grants votes only to candidates that have not caught up either" in b.log_path.read_text()
        assert "caught up with the metadata quorum's leader" in b.log_path.read_text()
        assert (b.data_dir / "meta.properties").exists()
    finally:
        c.stop()


def partition_log_end(node, topic):
    """Partition 0's log end offset on `node` (its /metrics; 0 before it holds the replica)."""
    text = requests.get(node.url + "/metrics", timeout=5).text
    m = re.search(rf'^ringlog_partition_log_end_offset{{topic="{topic}",partition="0"}} (\d+)$', text, re.M)
    return int(m.group(1)) if m else 0


def test_a_follower_back_with_an_empty_disk_is_in_sync_only_once_it_holds_every_acknowledged_record(
        ringlog_bin, tmp_path):
    c = Cluster(tmp_path).start()
    try:
        controller = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        n1 = c.node(1)
        r = create_topic(n1, "kept", partitions=1, replication_factor=3,
                         configs=[{"name": "min.insync.replicas", "value": "2"}])
        assert r.status_code == 201, r.text
        leader = wait_until(lambda: leader_of(n1, "kept", 0), 10.0, "a leader")
        wait_until(lambda: isr_of(n1, "kept", 0) == [1, 2, 3], 10.0, "ISR of three")
        # ~2 MiB acknowledged (acks=all): the wiped follower, throttled to 128 KiB/s while out of
        # the ISR, needs ~16 s to copy it back.
        acked = []
        for i in range(16):
            values = [os.urandom(8 * 1024).hex() for _ in range(8)]
            r = requests.post(f"{c.node(leader).url}/topics/kept", params={"acks": "all"},
                              json={"records": [{"value": v, "partition": 0} for v in values]},
                              headers={"Content-Type": JSONV2}, timeout=40)
            assert r.status_code == 200 and all(o.get("error") is None for o in r.json()["offsets"]), r.text[:500]
            acked += [(o["offset"], v) for o, v in zip(r.json()["offsets"], values)]
        assert [o for o, _ in acked] == list(range(len(acked)))
        victim = next(n for n in c.nodes if n.node_id not in (leader, controller)) if leader != controller else \
            next(n for n in c.nodes if n.node_id != leader)
        victim.kill()
        shutil.rmtree(victim.data_dir)
        victim.extra_sets.append("follower.replication.throttled.rate=131072")
        victim.spawn()
        wait_until(victim.healthy, 60.0, "the wiped follower")
        # The leader knew how far the previous incarnation had fetched; the new one holds nothing.
        end = time.monotonic() + OBSERVE_S
        while time.monotonic() < end:
            isr = isr_of(c.node(leader), "kept", 0)
            log_end = partition_log_end(victim, "kept")
            assert victim.node_id not in isr or log_end >= len(acked), \
                f"broker {victim.node_id} is in the ISR {isr} with log end offset {log_end} < {len(acked)}"
            time.sleep(0.2)
        # Once it holds them all it is in sync again; then leaderships move in turn (to it too, in
        # replica order) and every acknowledged record stays.
        for _ in range(2):
            wait_until(lambda: isr_of(c.node(leader), "kept", 0) == [1, 2, 3], 60.0, "the ISR of three")
            c.node(leader).kill()
            survivor = next(n for n in c.live())
            old = leader
            leader = wait_until(lambda: (lambda l: l if l not in (None, old) else None)(leader_of(survivor, "kept", 0)),
                                FAILOVER_DEADLINE_S, "a new leader")
            got = wait_until(lambda: (lambda g: g if len(g) >= len(acked) else None)(
                read_all(c.node(leader), "kept", 0, len(acked))), FAILOVER_DEADLINE_S,
                f"every acknowledged record on the new leader {leader}")
            assert [(x["offset"], x["value"]) for x in got[:len(acked)]] == acked
            c.node(old).spawn()
            wait_until(c.node(old).healthy, 60.0, f"node {old} back")
    finally:
        c.stop()


def test_a_new_node_started_with_the_wrong_cluster_id_pins_nothing_and_starts_once_given_the_right_one(
        ringlog_bin, tmp_path):
    """A LOW of session 36: the failed start had written meta.properties with the wrong id, so the
    restart with the right one was refused until the directory was removed by hand."""
    c = Cluster(tmp_path / "c").start()
    try:
        wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(c.ports))
        data = tmp_path / "newcomer"
        http_port, cluster_port = free_port(), free_port()
        args = [str(ringlog_bin), "serve", "--set", "node.id=4", "--set", "process.roles=broker",
                "--set", f"controller.quorum.voters={voters}", "--set", "num.shards=1",
                "--set", f"listeners=http://127.0.0.1:{http_port},cluster://127.0.0.1:{cluster_port}",
                "--set", f"log.dirs={data}"]
        done = subprocess.run(args + ["--set", "cluster.id=another-cluster"], capture_output=True, text=True,
                              timeout=120)
        out = done.stdout + done.stderr
        assert done.returncode == 1, out
        assert "INCONSISTENT_CLUSTER_ID" in out and "'another-cluster'" in out, out
        assert "nothing was pinned" in out and "GET /v3/clusters" in out, out
        assert not (data / "meta.properties").exists()
        # The right cluster.id (the default one here): it starts, and now the directory is pinned.
        log_path = tmp_path / "newcomer.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        try:
            def healthy():
                assert proc.poll() is None, log_path.read_text()[-2000:]
                try:
                    return requests.get(f"http://127.0.0.1:{http_port}/v1/health", timeout=1).status_code == 200
                except requests.ConnectionError:
                    return False
            wait_until(healthy, 60.0, "the newcomer with the right cluster.id")
            assert "cluster.id=ringlog-cluster" in (data / "meta.properties").read_text()
        finally:
            proc.kill()
            proc.wait()
    finally:
        c.stop()
