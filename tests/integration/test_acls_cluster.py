"""Issue 30: ACLs are metadata records, so every node of a cluster holds the same rule set. An ACL
created through one node is answered by every node (Kafka's DescribeAcls and the v3 route read
the node's own image), survives the loss of the active controller, and reaches a node that was
down when it was made. Every wait polls with a deadline; the seconds it took are printed."""
import signal
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


class FromHost(requests.adapters.HTTPAdapter):
    """Connects from `source` (any 127.0.0.0/8 address is this machine's loopback)."""

    def __init__(self, source):
        self.source = source
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        kwargs["source_address"] = (self.source, 0)
        super().init_poolmanager(*args, **kwargs)


def test_a_host_deny_holds_for_group_calls_another_node_passes_on(ringlog_bin, tmp_path):
    """The breaker's probe_forward_host.py: a v2 consumer call that reaches a node which does not
    coordinate its group is passed on over HTTP, and the coordinator authorized it with the
    passing node's address, so a DENY for the client's host never applied. The passing node now
    names the client's address (X-Ringlog-Forwarded-For), believed only from a registered
    broker's address: a client that sends the header itself changes nothing (nor its quota)."""
    sets = (AUTHORIZER, "super.users=User:nobody", "allow.everyone.if.no.acl.found=true")
    cluster = Cluster(tmp_path, size=2, extra_sets=sets).start()
    try:
        wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        entry = cluster.nodes[0]
        wait_until(lambda: requests.post(entry.v3("/topics"), json={"topic_name": "pub", "partitions_count": 1,
                                                                     "replication_factor": 1},
                                         timeout=30).status_code in (201, 409), FAILOVER_DEADLINE_S, "topic pub")
        allow = {"resource_type": "TOPIC", "resource_name": "pub", "pattern_type": "LITERAL",
                 "principal": "User:ANONYMOUS", "host": "*", "operation": "READ", "permission": "ALLOW"}
        deny = dict(allow, host="127.0.0.2", permission="DENY")
        wait_until(lambda: created(entry, allow) and created(entry, deny), FAILOVER_DEADLINE_S, "the ACLs")
        for n in cluster.nodes:
            wait_until(lambda: len(principals_on(n)) == 2, 10.0, f"the ACLs on node {n.node_id}")
        far = requests.Session()
        far.mount("http://", FromHost("127.0.0.2"))
        V2 = {"Content-Type": "application/vnd.kafka.v2+json"}
        direct = f"{entry.url}/topics/pub/partitions/0/records?offset=0"
        assert far.get(direct, timeout=10).status_code == 403
        # A client's own forwarding headers are not believed: it is still 127.0.0.2.
        forged = {"X-Ringlog-Forwarded-By": "2", "X-Ringlog-Forwarded-For": "127.0.0.9"}
        assert far.get(direct, headers=forged, timeout=10).status_code == 403
        # Groups the other node coordinates: their calls through `entry` are passed on.
        passed_on = 0
        for i in range(24):
            group = f"g{i}"
            r = far.post(f"{entry.url}/consumers/{group}", json={"name": "x", "format": "json"}, headers=V2, timeout=30)
            assert r.status_code == 200, r.text
            if r.headers.get("X-Ringlog-Served-By") != str(cluster.nodes[1].node_id):
                far.delete(f"{entry.url}/consumers/{group}/instances/x", headers=V2, timeout=30)
                continue
            passed_on += 1
            s = far.post(f"{entry.url}/consumers/{group}/instances/x/subscription", json={"topics": ["pub"]},
                         headers=V2, timeout=30)
            assert s.status_code == 403 and s.json()["error_code"] == 40301, (group, s.status_code, s.text)
            far.delete(f"{entry.url}/consumers/{group}/instances/x", headers=V2, timeout=30)
            if passed_on == 2:
                break
        assert passed_on >= 1, "no group of the 24 is coordinated by the other node"
    finally:
        cluster.stop()


def group_acl(name, principal, pattern_type="LITERAL"):
    return {"resource_type": "GROUP", "resource_name": name, "pattern_type": pattern_type,
            "principal": principal, "host": "*", "operation": "DESCRIBE", "permission": "ALLOW"}


def group_acl_count(node):
    r = requests.get(node.v3("/acls"), params={"resource_type": "GROUP"}, timeout=5)
    assert r.status_code == 200, r.text
    return len(r.json()["data"])


def groups_coordinated_by_one_peer(entry, prefix, want):
    """`want` names prefix-N whose group calls `entry` passes on to one and the same other broker
    (X-Ringlog-Served-By of a describe through `entry`): (that broker's id, the names)."""
    by_node = {}
    for i in range(96):
        name = f"{prefix}-{i}"
        r = requests.get(entry.v3(f"/consumer-groups/{name}"), timeout=30)
        assert r.status_code in (200, 404), r.text
        served_by = r.headers.get("X-Ringlog-Served-By")
        if served_by is None:
            continue
        names = by_node.setdefault(int(served_by), [])
        names.append(name)
        if len(names) == want:
            return int(served_by), names
    raise AssertionError(f"no broker coordinates {want} of 96 groups {prefix}-N: {by_node}")


def test_an_acl_made_through_one_node_holds_at_once_for_a_call_it_passes_on(ringlog_bin, tmp_path):
    """Read-your-writes across nodes (session 40): an ACL created through node E (its 201 came
    from E's image) and at once a group call through E that E passes on to the group's
    coordinator C. C answered 403 for 0.2-1 s, until its image applied the ACL. E's calls now carry
    the metadata offset E's image has applied (X-Ringlog-Metadata-Offset) and C authorizes only
    once it has applied it too. C is paused (SIGSTOP) while the ACL is made, so each round starts
    with C's image behind E's: on the binary before, some round answered 403."""
    sets = (AUTHORIZER, "super.users=User:nobody", "allow.everyone.if.no.acl.found=true")
    cluster = Cluster(tmp_path, extra_sets=sets).start()
    try:
        controller = wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        # Through the active controller: the ACL commits with the third node while C is paused.
        entry = cluster.node(controller)
        wait_until(lambda: requests.get(entry.v3("/consumer-groups/probe"), timeout=30).status_code in (200, 404),
                   FAILOVER_DEADLINE_S, "group calls answered (__consumer_offsets led)")
        target_id, names = groups_coordinated_by_one_peer(entry, "rw", 12)
        target = cluster.node(target_id)
        # Groups rw-* get an ACL naming someone else: User:ANONYMOUS may no longer describe them.
        wait_until(lambda: created(entry, group_acl("rw-", "User:someone", "PREFIXED")), FAILOVER_DEADLINE_S,
                   "the ACL on groups rw-*")
        for n in cluster.nodes:
            wait_until(lambda: group_acl_count(n) == 1, 10.0, f"the group ACL on node {n.node_id}")
        refused = requests.get(entry.v3(f"/consumer-groups/{names[0]}"), timeout=30)
        assert refused.status_code == 403, refused.text
        answers = []
        for name in names:
            target.proc.send_signal(signal.SIGSTOP)
            try:
                wait_until(lambda: created(entry, group_acl(name, "User:ANONYMOUS")), FAILOVER_DEADLINE_S,
                           f"the ACL on group {name}")
            finally:
                target.proc.send_signal(signal.SIGCONT)
            r = requests.get(entry.v3(f"/consumer-groups/{name}"), timeout=30)
            answers.append((name, r.status_code, r.headers.get("X-Ringlog-Served-By")))
        assert all(status in (200, 404) for _, status, _ in answers), answers
        assert all(served_by == str(target_id) for _, _, served_by in answers), answers
    finally:
        for n in cluster.nodes:
            if n.proc is not None:
                n.proc.send_signal(signal.SIGCONT)
        cluster.stop()
