"""Log compaction of a replicated partition (issue 17) on three real `ringlog serve` processes.

Each replica cleans its own log (as in Kafka: the cleaner is per broker, nothing about cleaning
is replicated; followers copy the leader's batches, cleaned or not, and clean them again). A
compacted topic with replication factor 3 is written through its leader; one follower is killed
with SIGKILL after it has cleaned, writes go on with the two others, the follower comes back and
catches up; then every replica's own segment files (read with kafka-python's record decoder)
must hold exactly the latest value of every key, once, with the same log end offset. Every wait
polls with a deadline.
"""
import base64

import requests
from kafka.record.default_records import DefaultRecordBatch

from conftest import wait_until
from test_cluster import FAILOVER_DEADLINE_S, SESSION_DEADLINE_S, Cluster, create_topic
from test_replication import isr_of, leader_of

BINARY = "application/vnd.kafka.binary.v2+json"
FAST_CLEANER = ["log.cleaner.backoff.ms=200", "log.retention.check.interval.ms=1000"]
COMPACT = {"cleanup.policy": "compact", "segment.bytes": "2048", "segment.ms": "1000", "min.cleanable.dirty.ratio": "0.01",
           "min.insync.replicas": "2"}
KEYS = 30
CONVERGE_DEADLINE_S = 60.0


def b64(s):
    return base64.b64encode(s.encode()).decode()


def produce(node, topic, items):
    records = [{"key": b64(k), "value": None if v is None else b64(v)} for k, v in items]
    r = requests.post(f"{node.url}/topics/{topic}/partitions/0", params={"acks": "all"}, json={"records": records},
                      headers={"Content-Type": BINARY}, timeout=40)
    assert r.status_code == 200, r.text
    assert all(o.get("error") is None for o in r.json()["offsets"]), r.text


def write_versions(node, topic, versions, expected):
    for v in versions:
        items = [(f"key{k}", f"key{k}-v{v}-" + "x" * 60) for k in range(KEYS)]
        produce(node, topic, items)
        expected.update(items)


def local_log(node, topic):
    """(records [(offset, key, value or None)], log end offset) of `node`'s own segment files, or
    None while a file changes under the read (a swap of the node's cleaner, a roll)."""
    records, end = [], 0
    try:
        for seg in sorted((node.data_dir / f"{topic}-0").glob("*.log")):
            data = seg.read_bytes()
            pos = 0
            while pos + 61 <= len(data):
                size = int.from_bytes(data[pos + 8:pos + 12], "big") + 12
                if pos + size > len(data):
                    return None   # a batch still being written
                batch = DefaultRecordBatch(data[pos:pos + size])
                assert batch.validate_crc(), (seg, pos)
                end = max(end, int.from_bytes(data[pos:pos + 8], "big") +
                          int.from_bytes(data[pos + 23:pos + 27], "big") + 1)
                for r in batch:
                    records.append((r.offset, r.key.decode(), r.value.decode() if r.value is not None else None))
                pos += size
    except FileNotFoundError:
        return None
    return records, end


def compacted(node, topic, expected):
    """The node's log when it holds every key once, at its latest value; None until then."""
    got = local_log(node, topic)
    if got is None:
        return None
    records, end = got
    keys = [k for _, k, _ in records]
    if len(keys) != len(set(keys)):
        return None   # not cleaned yet (or the last segment not rolled yet)
    latest = {k: v for _, k, v in records}
    return (records, end) if latest == expected else None


def test_a_compacted_rf3_partition_converges_on_every_replica_after_kill_9_of_a_follower(ringlog_bin, tmp_path):
    cluster = Cluster(tmp_path, extra_sets=FAST_CLEANER).start()
    try:
        wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        n1 = cluster.node(1)
        r = create_topic(n1, "table", partitions=1, replication_factor=3,
                         configs=[{"name": k, "value": v} for k, v in COMPACT.items()])
        assert r.status_code == 201, r.text
        leader_id = wait_until(lambda: leader_of(n1, "table", 0), 10.0, "a leader")
        wait_until(lambda: isr_of(n1, "table", 0) == [1, 2, 3], 10.0, "ISR of three")
        leader = cluster.node(leader_id)
        for node in cluster.nodes:   # each node applies the topic's creation at its own pace
            wait_until(lambda: leader_of(node, "table", 0) == leader_id, 10.0, f"node {node.node_id} knows the topic")
        expected = {}
        write_versions(leader, "table", range(0, 6), expected)
        # Every replica cleans what it has (each its own log), before the kill.
        for node in cluster.nodes:
            wait_until(lambda: compacted(node, "table", expected), CONVERGE_DEADLINE_S, f"node {node.node_id} compacted")

        victim = cluster.node(next(n.node_id for n in cluster.nodes if n.node_id != leader_id))
        victim.kill()   # SIGKILL
        wait_until(lambda: victim.node_id not in isr_of(leader, "table", 0), SESSION_DEADLINE_S, "ISR without the killed node")
        # Writes go on without it: newer versions, and tombstones for three keys.
        write_versions(leader, "table", range(6, 12), expected)
        produce(leader, "table", [(f"key{k}", None) for k in range(3)])
        expected.update({f"key{k}": None for k in range(3)})

        victim.spawn()
        wait_until(victim.healthy, 60.0, "the restarted node")
        wait_until(lambda: isr_of(leader, "table", 0) == [1, 2, 3], 30.0, "the ISR of three again")
        end = requests.get(f"{leader.url}/topics/table/partitions/0/offsets", timeout=10).json()["end_offset"]
        assert end == KEYS * 12 + 3
        logs = {}
        for node in cluster.nodes:
            logs[node.node_id] = wait_until(lambda: compacted(node, "table", expected), CONVERGE_DEADLINE_S,
                                            f"node {node.node_id} converged")
        # The same log end offset everywhere (compaction never moves it), and the same records
        # (offsets, keys, values) on every replica once each has cleaned its own copy.
        assert {e for _, e in logs.values()} == {end}, {n: e for n, (_, e) in logs.items()}
        first = logs[leader_id][0]
        for node_id, (records, _) in logs.items():
            assert records == first, (node_id, records[:5], first[:5])
        assert len(first) == KEYS
        # Each replica's cleaner ran on its own (its metrics count passes over the partition).
        for node in cluster.nodes:
            metrics = requests.get(node.url + "/metrics", timeout=10).text
            passes = [float(l.rsplit(" ", 1)[1]) for l in metrics.splitlines()
                      if l.startswith("ringlog_log_cleaner_passes_total{") and '"table"' in l]
            assert passes and passes[0] > 0, (node.node_id, passes)
    finally:
        cluster.stop()
