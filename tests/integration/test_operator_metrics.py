"""The gauges an operator of a three-node cluster alerts on (docs/metrics.md): whether there is an
active controller (Kafka's ActiveControllerCount) and whether each node knows a metadata quorum
leader. During a quorum loss the metadata's gauges stay as last known, so these say when not to
trust them. Every wait polls with a deadline.
"""
import requests

from conftest import wait_until
from test_cluster import FAILOVER_DEADLINE_S, Cluster  # noqa: F401
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
