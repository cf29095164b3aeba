"""Calls one broker passes on to another are believed only when a broker signed them (session 25's
H2 and M2; docs/security.md "Calls passed on between brokers").

A broker that passes an HTTP call on to a peer (a group's or a transaction's coordinator, another
broker's configs) names the client's address (X-Ringlog-Forwarded-For) and may say what it already
did (?ringlog_txn_offsets_added=1: AddOffsetsToTxn). The peer believed both for any call from a
registered broker's address, which every process on that host shares: a client there sent
X-Ringlog-Forwarded-By itself and was authorized as 10.9.9.9 (a host DENY bypassed), or put
offsets into another producer's transaction. Now a call is believed only with an HMAC of the
cluster's forwarding secret (X-Ringlog-Forwarded-Proof), and a passed-on offsets call is still
verified at the transaction's coordinator. Every wait polls with a deadline.
"""
import asyncio
import json
import signal
import time
import urllib.parse

import requests
import websockets

from conftest import wait_until
from test_acls_cluster import AUTHORIZER, FromHost, created, principals_on
from test_cluster import FAILOVER_DEADLINE_S, Cluster, create_topic
from test_kafka_cluster import _coordinator_partition

V2 = {"Content-Type": "application/vnd.kafka.v2+json"}
SERVED_BY = "X-Ringlog-Served-By"
# A proof of the right shape that no secret made ("<signed_at_ms>:<64 hex digits>").
FORGED_PROOF = "1764930000000:" + "ab" * 32


def forged_headers(node_id):
    return {"X-Ringlog-Forwarded-By": str(node_id), "X-Ringlog-Forwarded-For": "10.9.9.9"}


def produce_v3(session, node, topic, headers=None):
    return session.post(node.v3(f"/topics/{topic}/records"), json={"value": {"type": "STRING", "data": "x"}},
                        headers=headers or {}, timeout=30)


def test_a_clients_own_forwarding_headers_do_not_bypass_a_host_deny(ringlog_bin, tmp_path):
    """The breaker's repro_forged_host_acl.sh on a three-node cluster: from the brokers' own
    address (127.0.0.1, DENY WRITE for that host) a produce with X-Ringlog-Forwarded-By naming any
    node and X-Ringlog-Forwarded-For naming another host is still 403, with or without a made-up
    proof. A call a broker really passes on still carries its client's address: a client on
    127.0.0.2 is allowed through a node whose own address is denied."""
    sets = (AUTHORIZER, "super.users=User:nobody", "allow.everyone.if.no.acl.found=true")
    cluster = Cluster(tmp_path, extra_sets=sets).start()
    try:
        wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        entry = cluster.nodes[0]
        wait_until(lambda: create_topic(entry, "pub", partitions=1, replication_factor=3).status_code in (201, 409),
                   FAILOVER_DEADLINE_S, "topic pub")
        rules = []
        for operation in ("WRITE", "READ"):
            allow = {"resource_type": "TOPIC", "resource_name": "pub", "pattern_type": "LITERAL",
                     "principal": "User:ANONYMOUS", "host": "*", "operation": operation, "permission": "ALLOW"}
            rules += [allow, dict(allow, host="127.0.0.1", permission="DENY")]
        for rule in rules:
            wait_until(lambda: created(entry, rule), FAILOVER_DEADLINE_S, f"the ACL {rule}")
        for n in cluster.nodes:
            wait_until(lambda: len(principals_on(n)) == len(rules), 10.0, f"the ACLs on node {n.node_id}")

        here = requests.Session()   # 127.0.0.1: the brokers' own address
        for n in cluster.nodes:
            assert produce_v3(here, n, "pub").status_code == 403
            for named in (1, 2, 3):
                forged = produce_v3(here, n, "pub", forged_headers(named))
                assert forged.status_code == 403, (n.node_id, named, forged.status_code, forged.text[:200])
                with_proof = produce_v3(here, n, "pub", dict(forged_headers(named), **{"X-Ringlog-Forwarded-Proof": FORGED_PROOF}))
                assert with_proof.status_code == 403, (n.node_id, named, with_proof.status_code, with_proof.text[:200])

        far = requests.Session()
        far.mount("http://", FromHost("127.0.0.2"))
        wait_until(lambda: produce_v3(far, entry, "pub").status_code == 200, FAILOVER_DEADLINE_S,
                   "a produce from 127.0.0.2 (not denied)")

        # Group calls another node coordinates, passed on by `entry` (127.0.0.1, denied READ):
        # the coordinator authorizes the client's 127.0.0.2, which it believes from the proof.
        # The forwarding secret is committed by the active controller on its first tick; a call
        # passed on before it exists is authorized as `entry` (403), so the first one polls.
        def subscribed_through_entry(session, group):
            r = session.post(f"{entry.url}/consumers/{group}", json={"name": "x", "format": "json"}, headers=V2, timeout=30)
            assert r.status_code == 200, r.text
            try:
                if r.headers.get(SERVED_BY) in (None, str(entry.node_id)):
                    return None   # served by `entry` itself: not passed on
                s = session.post(f"{entry.url}/consumers/{group}/instances/x/subscription", json={"topics": ["pub"]},
                                 headers=V2, timeout=30)
                return s.status_code
            finally:
                session.delete(f"{entry.url}/consumers/{group}/instances/x", headers=V2, timeout=30)
        passed_on = [g for g in (f"g{i}" for i in range(48)) if subscribed_through_entry(requests.Session(), g) is not None]
        assert passed_on, "no group of 48 is coordinated by another node"
        wait_until(lambda: subscribed_through_entry(far, passed_on[0]) == 204, FAILOVER_DEADLINE_S,
                   "a passed-on subscription from 127.0.0.2 allowed")
        for group in passed_on[:3]:
            assert subscribed_through_entry(far, group) == 204, group
            # ...and the client on the denied host is denied through it, as directly.
            assert subscribed_through_entry(here, group) == 403, group

        # The secret (proven to exist above) is no user: not listed, not described, not changed.
        secret_user = "__ringlog_forwarding_secret"
        for n in cluster.nodes:
            listed = requests.get(n.v3("/users"), timeout=10)
            assert listed.status_code == 200, listed.text
            assert secret_user not in {u["user_name"] for u in listed.json()["data"]}, listed.text
            assert requests.get(n.v3(f"/users/{secret_user}"), timeout=10).status_code == 404
        changed = requests.post(entry.v3(f"/users/{secret_user}"), json={"password": "guess"}, timeout=30)
        assert changed.status_code in (400, 422) and "reserved" in changed.text, (changed.status_code, changed.text)
        deleted = requests.delete(entry.v3(f"/users/{secret_user}"), timeout=30)
        assert deleted.status_code == 404, (deleted.status_code, deleted.text)   # as for a user that is not there
        # ...and the passed-on calls still verify (the secret was neither replaced nor removed).
        assert subscribed_through_entry(far, passed_on[0]) == 204
    finally:
        cluster.stop()


def test_forged_transaction_offsets_are_not_held_for_another_producer(ringlog_bin, tmp_path):
    """The breaker's repro_forged_txn_offsets.sh: ?ringlog_txn_offsets_added=1 with a forged
    X-Ringlog-Forwarded-By skipped AddOffsetsToTxn, so offsets of a group nobody committed were
    held for the victim's producer id under a transactional id the caller chose, and committed
    with the victim's transaction (whose own group shares their __consumer_offsets partition).
    Now each such call is refused on every node, and after the victim's commit only its own
    group has an offset."""
    cluster = Cluster(tmp_path).start()
    try:
        wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        n1 = cluster.node(1)
        assert create_topic(n1, "in", partitions=1, replication_factor=3).status_code == 201

        def internal_topics_led():
            for name in ("__consumer_offsets", "__transaction_state"):
                r = requests.get(n1.v3(f"/topics/{name}/partitions"), timeout=5)
                if r.status_code != 200 or not all(p["leader"] is not None for p in r.json()["data"]):
                    return None
            return len(requests.get(n1.v3("/topics/__consumer_offsets/partitions"), timeout=5).json()["data"])
        offsets_partitions = wait_until(internal_topics_led, FAILOVER_DEADLINE_S, "internal topics with leaders")
        victim_group = "gvictim"
        own_group = next(g for g in (f"gown-{i}" for i in range(1000))
                         if _coordinator_partition(g, offsets_partitions) ==
                         _coordinator_partition(victim_group, offsets_partitions))

        r = requests.post(n1.v3("/transactions"), json={"transactional_id": "victim-app"}, timeout=40)
        assert r.status_code == 200, r.text
        pid, epoch = r.json()["producer_id"], r.json()["producer_epoch"]
        forged_body = {"producer_id": pid, "producer_epoch": epoch, "group_id": victim_group,
                       "offsets": [{"topic": "in", "partition": 0, "offset": 777}]}
        for n in cluster.nodes:
            for proof in (None, FORGED_PROOF):
                headers = {"X-Ringlog-Forwarded-By": str(n.node_id)}
                if proof:
                    headers["X-Ringlog-Forwarded-Proof"] = proof
                forged = requests.post(n.v3("/transactions/anything/offsets"), params={"ringlog_txn_offsets_added": "1"},
                                       json=forged_body, headers=headers, timeout=40)
                assert forged.status_code != 204, (n.node_id, forged.status_code, forged.text[:300])

        # The victim: its own group's offsets, then the commit (its markers reach the shared
        # __consumer_offsets partition).
        r = requests.post(n1.v3("/transactions/victim-app/offsets"),
                          json={"producer_id": pid, "producer_epoch": epoch, "group_id": own_group,
                                "offsets": [{"topic": "in", "partition": 0, "offset": 1}]}, timeout=40)
        assert r.status_code == 204, r.text

        def committed():
            r = requests.post(n1.v3("/transactions/victim-app/commit"),
                              json={"producer_id": pid, "producer_epoch": epoch}, timeout=40)
            if r.status_code == 409:   # CONCURRENT_TRANSACTIONS: a previous step's markers
                return False
            assert r.status_code == 200, r.text
            return True
        wait_until(committed, FAILOVER_DEADLINE_S, "the victim's commit")

        def offsets_of(group):
            r = requests.get(n1.v3(f"/consumer-groups/{group}/lags"), timeout=40)
            if r.status_code == 404:
                return {}
            assert r.status_code == 200, r.text
            return {(x["topic_name"], x["partition_id"]): x["current_offset"] for x in r.json()["data"]}
        wait_until(lambda: offsets_of(own_group) == {("in", 0): 1}, FAILOVER_DEADLINE_S,
                   f"{own_group}'s offset committed with the transaction")
        assert offsets_of(victim_group) == {}, offsets_of(victim_group)
    finally:
        cluster.stop()


ADMIN = ("admin", "admin-secret")
BINARY = "application/vnd.kafka.binary.v2+json"


def test_a_token_or_session_authenticated_call_works_through_a_non_coordinator(ringlog_bin, tmp_path):
    """The breaker's ws_token_join.py and token_stream_forward.py (session 26): an access token
    (POST /v1/tokens) and a console session are their node's own, and the passed-on call carried
    only Authorization, so the coordinator saw no caller: a WebSocket join answered
    "authentication required", a v2 consumer's read 401 "access_token unknown or expired" (and
    the token crossed to the peer in the URL). The passing broker now names the principal it
    authenticated, under the forwarding proof; the coordinator takes it only from a proven call."""
    cluster = Cluster(tmp_path, extra_sets=("http.authentication.method=BASIC", "super.users=User:admin"),
                      extra_args=("--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret]")).start()
    try:
        admin = requests.Session()
        admin.auth = ADMIN
        entry = cluster.node(1)

        def cluster_id():
            r = admin.get(entry.url + "/v3/clusters", timeout=5)
            return r.json()["data"][0]["cluster_id"] if r.status_code == 200 else None
        v3 = f"{entry.url}/v3/clusters/{wait_until(cluster_id, FAILOVER_DEADLINE_S, 'the cluster id')}"
        wait_until(lambda: admin.post(v3 + "/topics", json={"topic_name": "tk", "partitions_count": 1,
                                                            "replication_factor": 3}, timeout=40).status_code in (201, 409),
                   FAILOVER_DEADLINE_S, "topic tk")
        wait_until(lambda: admin.post(f"{entry.url}/topics/tk", json={"records": [{"value": "YQ=="}, {"value": "Yg=="}]},
                                      headers={"Content-Type": BINARY}, timeout=40).status_code == 200,
                   FAILOVER_DEADLINE_S, "two records in tk")
        token = admin.post(entry.url + "/v1/tokens", timeout=10).json()["access_token"]

        def instance_elsewhere(group):
            """A subscribed binary instance of `group` through `entry` when another node coordinates it."""
            r = admin.post(f"{entry.url}/consumers/{group}", json={"name": "i", "format": "binary",
                                                                    "auto.offset.reset": "earliest"},
                           headers=V2, timeout=40)
            assert r.status_code == 200, r.text
            base = r.json()["base_uri"]
            if r.headers.get(SERVED_BY) in (None, str(entry.node_id)):
                admin.delete(base, headers=V2, timeout=40)
                return None
            s = admin.post(base + "/subscription", json={"topics": ["tk"]}, headers=V2, timeout=40)
            assert s.status_code == 204, s.text
            return base
        # The forwarding secret is committed on the controller's first tick: wait for a proven call.
        bases = [b for b in (instance_elsewhere(f"tk{i}") for i in range(24)) if b]
        assert len(bases) >= 2, "fewer than 2 of 24 groups coordinated by another node"

        # A v2 consumer's reads by ?access_token=, passed on (binary) and redirected (NDJSON).
        def read_by_token():
            r = requests.get(bases[0] + "/records", params={"timeout": 500, "access_token": token},
                             headers={"Accept": BINARY}, timeout=40)
            return r if r.status_code == 200 and len(r.json()) == 2 else None
        wait_until(read_by_token, FAILOVER_DEADLINE_S, "a passed-on read by access_token")
        with requests.get(bases[1] + "/records", params={"timeout": 1000, "access_token": token},
                          headers={"Accept": "application/x-ndjson"}, stream=True, timeout=40) as s:
            assert s.status_code == 200, s.text
            assert s.history and s.history[0].status_code == 307, s.history
            assert token not in s.history[0].text, s.history[0].text
            lines = []
            for line in s.iter_lines(chunk_size=None):
                lines += [line] if line else []
                if len(lines) == 2:
                    break
            assert len(lines) == 2, lines

        # A WebSocket member made by ?access_token= joins a group another node coordinates.
        group = next(f"tkw{i}" for i in range(24) if instance_elsewhere(f"tkw{i}"))
        admin.delete(f"{entry.url}/consumers/{group}/instances/i", headers=V2, timeout=40)

        async def join():
            async with websockets.connect(f"ws://127.0.0.1:{entry.port}/v1/ws?access_token={token}") as ws:
                await ws.send(json.dumps({"type": "join", "id": 1, "group": group, "topics": ["tk"], "position": "earliest"}))
                await ws.send(json.dumps({"type": "credit", "records": 100}))
                records = 0
                while records < 2:
                    m = json.loads(await asyncio.wait_for(ws.recv(), 30))
                    assert m["type"] != "error", m
                    records += m["type"] == "record"
        asyncio.run(join())

        # The principal is never taken from an unproven call: a client naming one itself (with or
        # without a made-up proof) and no credentials is refused by the coordinator itself.
        coordinator = cluster.node(int(requests.get(bases[0] + "/records", params={"access_token": token, "timeout": 0},
                                                    headers={"Accept": BINARY}, timeout=40).headers[SERVED_BY]))
        path = bases[0][len(entry.url):] + "/records"
        for proof in ({}, {"X-Ringlog-Forwarded-Proof": FORGED_PROOF}):
            r = requests.get(coordinator.url + path, headers={"Accept": BINARY, "X-Ringlog-Forwarded-By": "1",
                                                              "X-Ringlog-Forwarded-Principal": "User:admin", **proof},
                             timeout=40)
            assert r.status_code == 401, (r.status_code, r.text)
        # Basic still works through any broker.
        r = admin.get(bases[0] + "/records", params={"timeout": 0}, headers={"Accept": BINARY}, timeout=40)
        assert r.status_code == 200, r.text

        # The console's partitions page by token (or session): every leader's own figures. A new
        # user's MEDIUM (session 26): the call to another leader went without a caller, so its
        # partitions showed high_watermark_established false on a console logged in by cookie.
        wait_until(lambda: admin.post(v3 + "/topics", json={"topic_name": "tp", "partitions_count": 3,
                                                            "replication_factor": 3}, timeout=40).status_code in (201, 409),
                   FAILOVER_DEADLINE_S, "topic tp")
        assert wait_until(lambda: len({(p["leader"] or {}).get("related") for p in admin.get(v3 + "/topics/tp/partitions", timeout=40)
                                       .json()["data"]}) > 1, FAILOVER_DEADLINE_S, "tp led by more than one node")
        fresh = admin.post(entry.url + "/v1/tokens", timeout=10).json()["access_token"]

        def figures_by_token():
            r = requests.get(v3 + "/topics/tp/partitions", params={"access_token": fresh}, timeout=40)
            assert r.status_code == 200, r.text
            d = r.json()
            settled = all(p["high_watermark_established"] for p in d["data"]) and "unanswered_brokers" not in d.get("metadata", {})
            return d if settled else None
        wait_until(figures_by_token, FAILOVER_DEADLINE_S, "every leader's figures by access_token")

        # The breaker's redirect_token.py (session 27, HIGH): the token the coordinator gives a
        # redirected stream was tied to no credential (a passed-on caller came with none), so it
        # and a WebSocket opened with it outlived the user's deletion. It now ends with the user.
        assert admin.post(v3 + "/users/carol", json={"mechanism": "SCRAM-SHA-512", "password": "carol-pw"},
                          timeout=40).status_code in (200, 201, 204)
        carol = requests.Session()
        carol.auth = ("carol", "carol-pw")
        wait_until(lambda: all(carol.get(n.url + "/v1/whoami", timeout=10).status_code == 200 for n in cluster.nodes),
                   FAILOVER_DEADLINE_S, "carol known on every node")
        carol_base = None
        for i in range(24):
            r = carol.post(f"{entry.url}/consumers/tkc{i}", json={"name": "c", "format": "binary",
                                                                   "auto.offset.reset": "earliest"}, headers=V2, timeout=40)
            assert r.status_code == 200, r.text
            if r.headers.get(SERVED_BY) not in (None, str(entry.node_id)):
                carol_base = r.json()["base_uri"]
                break
            carol.delete(r.json()["base_uri"], headers=V2, timeout=40)
        assert carol_base, "no group of 24 coordinated by another node"
        assert carol.post(carol_base + "/subscription", json={"topics": ["tk"]}, headers=V2, timeout=40).status_code == 204
        carol_token = carol.post(entry.url + "/v1/tokens", timeout=10).json()["access_token"]
        redirect = requests.get(carol_base + "/records", params={"timeout": 0, "access_token": carol_token},
                                headers={"Accept": "application/x-ndjson"}, allow_redirects=False, timeout=40)
        assert redirect.status_code == 307, (redirect.status_code, redirect.text)
        location = redirect.headers["Location"]
        given = urllib.parse.parse_qs(urllib.parse.urlparse(location).query)["access_token"][0]
        coordinator_url = location.split("/consumers/")[0]
        assert requests.get(coordinator_url + "/v1/whoami", params={"access_token": given}, timeout=10).status_code == 200
        assert admin.delete(v3 + "/users/carol", timeout=40).status_code in (200, 204)
        wait_until(lambda: requests.get(coordinator_url + "/v1/whoami", params={"access_token": given},
                                        timeout=10).status_code == 401,
                   FAILOVER_DEADLINE_S, "the coordinator's token for carol's stream ends with carol")
    finally:
        cluster.stop()


def test_another_brokers_configs_answer_within_the_gathered_calls_bound_when_it_is_paused(ringlog_bin, tmp_path):
    """The breaker's paused_peer.py (session 27): GET .../brokers/3/configs through node 1 while
    broker 3 was SIGSTOPped answered 503 only after 70 s, a record read's long-poll bound (the
    fetch wait plus slack). A config call does not long-poll: it now gives up within the bound of
    a gathered call (connect 3 s + exchange slack 10 s), naming the broker."""
    cluster = Cluster(tmp_path).start()
    paused = None
    try:
        entry, other = cluster.node(1), cluster.node(3)
        path = f"/brokers/{other.node_id}/configs"
        wait_until(lambda: requests.get(entry.v3(path), timeout=40).status_code == 200, FAILOVER_DEADLINE_S,
                   "broker 3's configs through broker 1")
        other.proc.send_signal(signal.SIGSTOP)
        paused = other
        started = time.monotonic()
        r = requests.get(entry.v3(path), timeout=90)
        elapsed = time.monotonic() - started
        assert r.status_code == 503 and f"broker {other.node_id} serves its own configs" in r.text, (r.status_code, r.text)
        assert elapsed < 30, f"answered after {elapsed:.1f} s"
    finally:
        if paused is not None:
            paused.proc.send_signal(signal.SIGCONT)
        cluster.stop()
