"""Issue 30: ACLs are metadata records, so every node of a cluster holds the same rule set. An ACL
created through one node is answered by every node (Kafka's DescribeAcls and the v3 route read
the node's own image), survives the loss of the active controller, and reaches a node that was
down when it was made. Every wait polls with a deadline; the seconds it took are printed."""
import time

import requests

from conftest import wait_until
from test_cluster import FAILOVER_DEADLINE_S, Cluster

AUTHORIZER = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# HTTP here is unauthenticated (User:ANONYMOUS); it administers the ACLs as a super user.
SETS = (AUTHORIZER, "super.users=User:ANONYMOUS")


def acl(principal):
    return {"resource_type": "TOPIC", "resource_name": "orders-", "pattern_type": "PREFIXED",
            "principal": principal, "host": "*", "operation": "WRITE", "permission": "ALLOW"}


def principals_on(node):
    r = requests.get(node.v3("/acls"), params={"resource_type": "TOPIC"}, timeout=5)
    assert r.status_code == 200, r.text
    return sorted(a["principal"] for a in r.json()["data"])


def created(node, body):
    r = requests.post(node.v3("/acls"), json=body, timeout=30)
    if r.status_code == 503:   # no quorum leader at this moment: Retry-After
        return False
    assert r.status_code == 201, r.text
    return True


def test_an_acl_reaches_every_node_survives_failover_and_a_restarted_node(ringlog_bin, tmp_path):
    cluster = Cluster(tmp_path, extra_sets=SETS).start()
    try:
        controller = wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        entry = cluster.nodes[0] if cluster.nodes[0].node_id != controller else cluster.nodes[1]
        started = time.monotonic()
        wait_until(lambda: created(entry, acl("User:alice")), FAILOVER_DEADLINE_S, "an ACL create")
        for n in cluster.nodes:
            wait_until(lambda: principals_on(n) == ["User:alice"], 10.0, f"the ACL on node {n.node_id}")
        print(f"ACL created through node {entry.node_id} and answered by every node after "
              f"{time.monotonic() - started:.3f} s")

        # The active controller dies; the ACL stays, and a new one is made through a survivor.
        cluster.node(controller).kill()
        survivors = cluster.live()
        wait_until(lambda: created(survivors[0], acl("User:bob")), FAILOVER_DEADLINE_S,
                   "an ACL create after failover")
        for n in survivors:
            wait_until(lambda: principals_on(n) == ["User:alice", "User:bob"], 10.0, f"both ACLs on node {n.node_id}")

        # The node that was down learns the ACL made without it.
        restarted = cluster.node(controller).spawn()
        wait_until(restarted.healthy, 60.0, "the restarted node")
        wait_until(lambda: principals_on(restarted) == ["User:alice", "User:bob"], 20.0,
                   "both ACLs on the restarted node")
    finally:
        cluster.stop()
