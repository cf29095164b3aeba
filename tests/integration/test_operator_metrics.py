"""The gauges an operator of a three-node cluster alerts on (docs/metrics.md): whether there is an
active controller (Kafka's ActiveControllerCount) and whether each node knows a metadata quorum
leader (during a quorum loss the metadata's gauges stay as last known, so these say when not to
trust them); each broker's partition, leader, under-replicated and under-min-ISR counts (Kafka's
ReplicaManager gauges: a partition counts on its leader only, so their sum over the brokers is the
cluster's figure, unlike the cluster-wide ringlog_topic_* gauges every node reports alike); and
docs/metrics.md naming every metric /metrics has. Every wait polls with a deadline.
"""
import pathlib
import re

import requests

from conftest import wait_until
from test_cluster import FAILOVER_DEADLINE_S, create_topic
from test_cluster import cluster  # noqa: F401  (the fixture)


def gauge(node, name):
    """The value of an unlabelled gauge of the node's /metrics (None when it has no such series)."""
    for line in requests.get(f"{node.url}/metrics", timeout=10).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def test_active_controller_count_and_quorum_leader_known_follow_the_quorum(cluster):
    controller = wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    nodes = cluster.live()
    wait_until(lambda: all(gauge(n, "ringlog_metadata_quorum_leader_known") == 1 for n in nodes),
               FAILOVER_DEADLINE_S, "every node knowing the quorum leader")
    counts = {n.node_id: gauge(n, "ringlog_controller_active_controller_count") for n in nodes}
    assert counts == {n.node_id: (1 if n.node_id == controller else 0) for n in nodes}, (controller, counts)
    # A quorum loss: two of the three voters die. The survivor knows no leader and is no controller.
    lone = cluster.node(1)
    cluster.node(2).kill()
    cluster.node(3).kill()
    wait_until(lambda: gauge(lone, "ringlog_metadata_quorum_leader_known") == 0, FAILOVER_DEADLINE_S,
               "the lone node to know no quorum leader")
    assert gauge(lone, "ringlog_controller_active_controller_count") == 0


def total(nodes, name):
    return sum(gauge(n, name) for n in nodes)


def topic_gauge(node, name, topic):
    for line in requests.get(f"{node.url}/metrics", timeout=10).text.splitlines():
        if line.startswith(f'{name}{{topic="{topic}"}} '):
            return float(line.split()[1])
    return None


def test_per_broker_partition_leader_under_replicated_and_under_min_isr_counts(cluster):
    wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    n1 = cluster.node(1)
    r = create_topic(n1, "gauges", partitions=3, replication_factor=3,
                     configs=[{"name": "min.insync.replicas", "value": "3"}])
    assert r.status_code == 201, r.text
    nodes = cluster.live()

    # /metrics covers the clients' topics, not the internal ones (__consumer_offsets, ...), as its
    # topic and partition series do.
    def partitions_led():
        topics = requests.get(n1.v3("/topics"), timeout=10).json()["data"]
        return sum(t["partitions_count"] for t in topics if not t["is_internal"])

    def replicas_of(node):
        replicas = requests.get(n1.v3(f"/brokers/{node.node_id}/partition-replicas"), timeout=10).json()["data"]
        return len([r for r in replicas if not r["topic_name"].startswith("__")])

    # Every partition has one leader: the leader counts add up to the partitions.
    wait_until(lambda: total(nodes, "ringlog_broker_leader_count") == partitions_led(), FAILOVER_DEADLINE_S,
               "every partition counted on its leader")
    wait_until(lambda: all(gauge(n, "ringlog_broker_partition_count") == replicas_of(n) for n in nodes),
               FAILOVER_DEADLINE_S, "each broker counting the replicas it holds")
    assert total(nodes, "ringlog_broker_under_replicated_partitions") == 0
    assert total(nodes, "ringlog_broker_under_min_isr_partitions") == 0
    # A broker dies: every partition of "gauges" loses an in-sync replica, under its min.insync.replicas (3).
    cluster.node(3).kill()
    live = cluster.live()
    wait_until(lambda: topic_gauge(n1, "ringlog_topic_under_replicated_partitions", "gauges") == 3,
               FAILOVER_DEADLINE_S, "the topic's 3 partitions under-replicated")
    wait_until(lambda: total(live, "ringlog_broker_under_min_isr_partitions") == 3, FAILOVER_DEADLINE_S,
               "the 3 partitions under min.insync.replicas, each counted by its leader")
    # The per-broker figures add up to the cluster's; the cluster-wide ones are the same on every node.

    wait_until(lambda: total(live, "ringlog_broker_under_replicated_partitions") == 3, FAILOVER_DEADLINE_S,
               "the brokers' under-replicated counts adding up to the cluster's, not 3 times it")
    wait_until(lambda: topic_gauge(cluster.node(2), "ringlog_topic_under_replicated_partitions", "gauges") == 3,
               FAILOVER_DEADLINE_S, "broker 2 reporting the same cluster-wide figure")


def test_docs_metrics_md_names_every_metric(broker):
    names = re.findall(r"^# TYPE (ringlog_\w+) ", requests.get(f"{broker.url}/metrics", timeout=10).text, re.MULTILINE)
    assert "ringlog_topic_under_replicated_partitions" in names
    docs = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    missing = sorted({n for n in names if not re.search(rf"`{n}[`{{]", docs)})
    assert missing == [], f"/metrics families docs/metrics.md does not name: {missing}"
