"""Issue 30: ACLs enforced on the HTTP doors. Every route of the server's own table
(src/gateway/api.cc) declares what it needs, in Kafka's operation x resource terms; the OpenAPI
document says the same (x-acl). The walk: as a principal without ACLs every route that needs one
answers 403/40301 and nothing changes; with exactly the declared ACLs (created through the v3
routes, visible within a second) the same request passes authorization. Then a PREFIXED ACL, a
DENY over an ALLOW, User:*, host filters, filtered lists, WebSocket frames and NDJSON streams.

Clients: curl (Basic auth), python3-requests, python3-websockets.
"""
import asyncio
import base64
import json
import os
import pathlib
import re
import subprocess
import time

import pytest
import requests
import websockets

from conftest import Broker, wait_until

ROOT = pathlib.Path(__file__).resolve().parents[2]
AUTHORIZER = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
ADMIN = ("admin", USERS["admin"])
ALICE = ("alice", USERS["alice"])
BOB = ("bob", USERS["bob"])
V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
ACL_VISIBLE_S = 1.0   # issue 30: an ACL change takes effect within a second


def route_table():
    """(method, pattern, needs) of every route, from the table itself."""
    source = (ROOT / "src" / "gateway" / "api.cc").read_text()
    table = source[source.index("route_table()"):]
    routes = re.findall(r'\{"(GET|HEAD|POST|PATCH|DELETE|PUT)", "(/[^"]*)", \w+, "([^"]*)"\}', table)
    # Every entry has a needs text: a route added without one does not match the pattern above.
    entries = re.findall(r'\{"(?:GET|HEAD|POST|PATCH|DELETE|PUT)", "/[^"]*", \w+', table)
    assert len(routes) == len(entries) >= 100, "a route of the table declares no needs"
    return routes


def parse_needs(text):
    """The requirements of a needs text ("none": []), each [(OPERATION, TYPE, NAME)] of which any one
    is enough ("DELETE TOPIC:{topic_name} | DELETE CLUSTER:kafka-cluster")."""
    if text == "none":
        return []
    out = []
    for requirement in text.split(";"):
        any_of = []
        for part in requirement.split("|"):
            op_type, name = part.strip().split(":", 1)
            op, rtype = op_type.split(" ")
            any_of.append((op, rtype, name))
        out.append(any_of)
    return out


def test_every_route_declares_its_needs_and_the_openapi_says_the_same():
    import yaml
    spec = yaml.safe_load((ROOT / "http-api" / "openapi.yaml").read_text())
    ops = {"READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
           "IDEMPOTENT_WRITE", "CLUSTER_ACTION"}
    for method, pattern, needs in route_table():
        documented = spec["paths"][pattern][method.lower()].get("x-acl")
        assert documented == needs, (method, pattern, documented, needs)
        for op, rtype, name in (need for any_of in parse_needs(needs) for need in any_of):
            assert op in ops and rtype in ("TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID"), (pattern, needs)
            assert name in ("body", "listed", "kafka-cluster") or name.strip("{}") in re.findall(r"\{(\w+)\}", pattern), \
                (pattern, needs)


@pytest.fixture(scope="module")
def secured(ringlog_bin, tmp_path_factory):
    data = tmp_path_factory.mktemp("aclhttp") / "ringlog-data"
    scram = [a for u, p in USERS.items() for a in ("--add-scram", f"SCRAM-SHA-512=[name={u},password={p}]")]
    b = Broker(data, [AUTHORIZER, "super.users=User:admin", "http.authentication.method=BASIC",
                   "http.metrics.authentication=true"],
               extra_args=scram).start()
    yield b
    assert b.stop() == 0


def cluster_id(b):
    return requests.get(b.url + "/v3/clusters", auth=ADMIN).json()["data"][0]["cluster_id"]


def v3(b, path=""):
    return f"{b.url}/v3/clusters/{cluster_id(b)}{path}"


def acl(principal, rtype, name, op, permission="ALLOW", pattern="LITERAL", host="*"):
    return {"resource_type": rtype, "resource_name": name, "pattern_type": pattern, "principal": principal,
            "host": host, "operation": op, "permission": permission}


def grant(b, acls):
    if acls:
        r = requests.post(v3(b, "/acls:batch"), json={"data": acls}, auth=ADMIN)
        assert r.status_code == 201, r.text


def revoke(b, principal):
    r = requests.delete(v3(b, "/acls"), params={"resource_type": "ANY", "pattern_type": "ANY", "operation": "ANY",
                                                 "permission": "ANY", "principal": principal}, auth=ADMIN)
    assert r.status_code == 200, r.text


def refused(r):
    return r.status_code == 403 and r.headers.get("Content-Type", "").startswith("application/json") and \
        r.json().get("error_code") == 40301


def topic_with_a_record(b, name):
    """Topic `name` (1 partition), made by the super user, holding one record."""
    requests.post(v3(b, "/topics"), json={"topic_name": name, "partitions_count": 1}, auth=ADMIN)
    r = requests.post(f"{b.url}/topics/{name}", json={"records": [{"value": "eA=="}]},
                      headers={"Content-Type": BINARY}, auth=ADMIN)
    assert r.status_code == 200, r.text


def snapshot(b, topic, group):
    """What an unauthorized request must not change, as the super user sees it."""
    topics = requests.get(v3(b, "/topics"), auth=ADMIN).json()["data"]
    configs = requests.get(v3(b, f"/topics/{topic}/configs"), auth=ADMIN).json()["data"]
    offsets = [requests.get(f"{b.url}/topics/{topic}/partitions/{p}/offsets", auth=ADMIN).json() for p in (0, 1)]
    acls = requests.get(v3(b, "/acls"), auth=ADMIN).json()["data"]
    users = requests.get(v3(b, "/users"), auth=ADMIN).json()
    broker_configs = requests.get(v3(b, "/broker-configs"), auth=ADMIN).json()["data"]
    group_state = requests.get(v3(b, f"/consumer-groups/{group}"), auth=ADMIN).json()
    return (sorted((t["topic_name"], t["partitions_count"]) for t in topics),
            sorted((c["name"], c["value"]) for c in configs), offsets,
            sorted(json.dumps(a, sort_keys=True) for a in acls), users,
            sorted((c["name"], c["value"]) for c in broker_configs),
            group_state.get("consumer_group_id"))


def test_every_route_refuses_without_its_acl_and_serves_with_it(secured):
    b = secured
    cluster = cluster_id(b)
    topic, group, txn, doomed = "walk-t", "walk-g", "walk-tx", "walk-doomed"
    for name in (topic, doomed):
        r = requests.post(v3(b, "/topics"), json={"topic_name": name, "partitions_count": 2}, auth=ADMIN)
        assert r.status_code == 201, r.text
    r = requests.post(f"{b.url}/topics/{topic}", json={"records": [{"value": "eA=="}]},
                      headers={"Content-Type": BINARY}, auth=ADMIN)
    assert r.status_code == 200, r.text
    assert requests.post(v3(b, "/transactions"), json={"transactional_id": txn}, auth=ADMIN).status_code == 200
    # Alice's own consumer instance (an instance is its creator's: issue 29).
    grant(b, [acl("User:alice", "GROUP", group, "READ")])
    r = requests.post(f"{b.url}/consumers/{group}", json={"format": "binary", "name": "i1"},
                      headers={"Content-Type": V2}, auth=ALICE)
    assert r.status_code == 200, r.text
    revoke(b, "User:alice")
    wait_until(lambda: refused(requests.get(f"{b.url}/consumers/{group}/instances/i1/subscription", auth=ALICE)),
               ACL_VISIBLE_S, "the revoke")

    values = {"cluster_id": cluster, "topic_name": topic, "topic": topic, "partition_id": "0", "partition": "0",
              "name": "retention.ms", "group": group, "instance": "i1", "consumer_group_id": group,
              "consumer_id": "i1", "transactional_id": txn, "broker_id": "0", "file": "index.html"}
    # What a body names, for the routes that read their resource there (parse_route_needs "body").
    p0 = [{"topic": topic, "partition": 0}]
    bodies = {
        ("POST", "/v3/clusters/{cluster_id}/topics"): ({"topic_name": "walk-new", "partitions_count": 1},
                                                       {"TOPIC": "walk-new"}),
        ("POST", "/v3/clusters/{cluster_id}/topics/-/configs:alter"):
            ({"data": [{"topic_name": topic, "configs": [{"name": "retention.ms", "value": "123456"}]}]}, {"TOPIC": topic}),
        ("POST", "/v3/clusters/{cluster_id}/transactions"): ({"transactional_id": txn}, {"TRANSACTIONAL_ID": txn}),
        # KIP-679: IDEMPOTENT_WRITE on the cluster (or WRITE on some topic, the test below).
        ("POST", "/v3/clusters/{cluster_id}/producers"): ({}, {"CLUSTER": "kafka-cluster"}),
        ("POST", "/v3/clusters/{cluster_id}/transactions/{transactional_id}/partitions"):
            ({"producer_id": 0, "producer_epoch": 0, "partitions": p0}, {"TOPIC": topic}),
        ("POST", "/v3/clusters/{cluster_id}/transactions/{transactional_id}/offsets"):
            ({"producer_id": 0, "producer_epoch": 0, "group_id": group, "offsets": [dict(p0[0], offset=0)]},
             {"GROUP": group, "TOPIC": topic}),
        ("POST", "/consumers/{group}/instances/{instance}/subscription"): ({"topics": [topic]}, {"TOPIC": topic}),
        ("POST", "/consumers/{group}/instances/{instance}/assignments"): ({"partitions": p0}, {"TOPIC": topic}),
        ("POST", "/consumers/{group}/instances/{instance}/offsets"): ({"offsets": [dict(p0[0], offset=0)]}, {"TOPIC": topic}),
        ("GET", "/consumers/{group}/instances/{instance}/offsets"): ({"partitions": p0}, {"TOPIC": topic}),
        ("POST", "/consumers/{group}/instances/{instance}/nacks"): ({"offsets": [dict(p0[0], offset=0)]}, {"TOPIC": topic}),
        ("POST", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/offsets:reset"):
            ({"to": "earliest", "topics": [topic]}, {"TOPIC": topic}),
    }
    # Routes that change what others need are walked on resources of their own.
    overrides = {("DELETE", "/v3/clusters/{cluster_id}/topics/{topic_name}"): {"topic_name": doomed},
                 ("DELETE", "/consumers/{group}/instances/{instance}"): {"instance": "i-none"},
                 ("DELETE", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}"): {"consumer_group_id": "walk-none"}}
    # A list names what the caller may see: the name that must be missing, then present.
    listed_name = {"/v3/clusters/{cluster_id}/topics": topic, "/topics": topic,
                   "/v3/clusters/{cluster_id}/topics/-/configs": topic,
                   "/v3/clusters/{cluster_id}/consumer-groups": group,
                   "/v3/clusters/{cluster_id}/transactions": txn}

    def request(method, pattern, who):
        params = dict(values, **overrides.get((method, pattern), {}))
        path = re.sub(r"\{(\w+)\}", lambda m: requests.utils.quote(params[m.group(1)], safe=""), pattern)
        body, _ = bodies.get((method, pattern), (None, {}))
        # The v2 routes read only their own types (a v2 body of application/json is 415).
        headers = {"Content-Type": V2 if pattern.startswith("/consumers") else
                   BINARY if pattern.startswith("/topics") else "application/json"}
        if pattern.endswith("/records") and method == "GET":
            headers["Accept"] = BINARY
        if pattern == "/v1/login":
            body = {"user": who[0], "password": who[1]}
        return requests.request(method, b.url + path, json=body, headers=headers, auth=who,
                                params={"timeout": 0} if pattern.endswith("/records") else None, timeout=30)

    def acls_for(method, pattern, needs):
        params = dict(values, **overrides.get((method, pattern), {}))
        _, named = bodies.get((method, pattern), (None, {}))
        out = []
        for op, rtype, name in (any_of[0] for any_of in parse_needs(needs)):   # the first of each is enough
            if name == "kafka-cluster":
                resource = "kafka-cluster"
            elif name == "listed":
                resource = listed_name[pattern] if rtype != "TOPIC" or pattern in listed_name else topic
            elif name == "body":
                resource = named.get(rtype, "walk-unused")
            else:
                resource = params[name.strip("{}")]
            out.append(acl("User:alice", rtype, resource, op))
        return out

    routes = route_table()
    before = snapshot(b, topic, group)
    for method, pattern, needs in routes:
        r = request(method, pattern, ALICE)
        needed = parse_needs(needs)
        if not needed or all(any(n == "listed" for _, _, n in any_of) for any_of in needed):
            assert not refused(r), (method, pattern, r.status_code, r.text)
            if method == "GET" and pattern in listed_name:
                assert r.status_code == 200 and listed_name[pattern] not in r.text, (pattern, r.text)
            continue
        assert refused(r), (method, pattern, r.status_code, r.text)
        message = r.json()["message"]
        assert "User:alice" in message and needed[0][0][0] in message, (pattern, message)
    assert snapshot(b, topic, group) == before, "an unauthorized request changed something"

    for method, pattern, needs in routes:
        if not parse_needs(needs):
            continue
        grant(b, acls_for(method, pattern, needs))
        r = None

        def served():
            nonlocal r
            r = request(method, pattern, ALICE)
            return not refused(r)

        wait_until(served, ACL_VISIBLE_S, f"{method} {pattern} served with {needs}")
        assert r.status_code < 500, (method, pattern, r.status_code, r.text)
        if method == "GET" and pattern in listed_name:
            assert listed_name[pattern] in r.text, (pattern, r.text)
        revoke(b, "User:alice")


def test_prefixed_deny_over_allow_user_star_and_hosts(secured):
    b = secured
    for name in ("pre-a", "pre-b", "other-c"):
        requests.post(v3(b, "/topics"), json={"topic_name": name, "partitions_count": 1}, auth=ADMIN)

    def produce(topic, who=BOB):
        return requests.post(f"{b.url}/topics/{topic}", json={"records": [{"value": "eA=="}]},
                             headers={"Content-Type": BINARY}, auth=who)

    # PREFIXED: every topic starting with "pre-".
    grant(b, [acl("User:bob", "TOPIC", "pre-", "WRITE", pattern="PREFIXED")])
    wait_until(lambda: produce("pre-a").status_code == 200, ACL_VISIBLE_S, "the prefixed ACL")
    assert produce("pre-b").status_code == 200
    r = produce("other-c")
    assert refused(r), r.text
    # WRITE implies DESCRIBE: the refusal names a topic Bob may describe, and only such.
    assert "other-c" not in r.json()["message"], r.text
    # DENY wins over ALLOW.
    grant(b, [acl("User:bob", "TOPIC", "pre-b", "WRITE", permission="DENY")])
    wait_until(lambda: refused(produce("pre-b")), ACL_VISIBLE_S, "the DENY")
    # The refusal names the DENY that decided, not an ALLOW Bob already holds (the new user of
    # session 31 was told "an ACL ALLOW READ on the TOPIC is needed" while a DENY was the cause).
    message = produce("pre-b").json()["message"]
    assert "denied by the ACL DENY WRITE on TOPIC pre-b (LITERAL) for User:bob" in message, message
    assert "is needed" not in message, message
    assert "is needed" in produce("other-c").json()["message"]
    assert produce("pre-a").status_code == 200
    # Lists show only what the caller may DESCRIBE.
    listed = requests.get(f"{b.url}/topics", auth=BOB).json()
    assert "pre-a" in listed and "other-c" not in listed, listed
    revoke(b, "User:bob")
    # User:* with a host: only from that host.
    grant(b, [acl("User:*", "TOPIC", "other-c", "WRITE", host="10.9.9.9")])
    r = produce("other-c")
    assert refused(r), r.text
    grant(b, [acl("User:*", "TOPIC", "other-c", "WRITE", host="127.0.0.1")])
    wait_until(lambda: produce("other-c").status_code == 200, ACL_VISIBLE_S, "User:* from 127.0.0.1")
    assert produce("other-c", ALICE).status_code == 200
    revoke(b, "User:*")
    wait_until(lambda: refused(produce("other-c")), ACL_VISIBLE_S, "the revoke of User:*")
    # A topic Bob may not DESCRIBE answers 403, never 404: its existence is not revealed.
    for name in ("other-c", "no-such-topic"):
        r = requests.get(f"{b.url}/topics/{name}", auth=BOB)
        assert refused(r) and name not in r.json()["message"], r.text


def test_curl_with_basic_auth(secured):
    b = secured
    requests.post(v3(b, "/topics"), json={"topic_name": "curl-t", "partitions_count": 1}, auth=ADMIN)
    out = subprocess.run(["curl", "-s", "-u", "bob:" + USERS["bob"], "-o", "-", "-w", "\n%{http_code}",
                          "-X", "DELETE", v3(b, "/topics/curl-t")], capture_output=True, text=True, check=True)
    body, status = out.stdout.rsplit("\n", 1)
    assert status == "403" and json.loads(body)["error_code"] == 40301, out.stdout
    assert "DELETE" in json.loads(body)["message"]
    assert requests.get(v3(b, "/topics/curl-t"), auth=ADMIN).status_code == 200


def test_websocket_frames_and_streams_are_checked(secured):
    b = secured
    requests.post(v3(b, "/topics"), json={"topic_name": "ws-t", "partitions_count": 1}, auth=ADMIN)
    token_of = lambda who: requests.post(b.url + "/v1/tokens", auth=who).json()["access_token"]

    async def session():
        url = b.url.replace("http://", "ws://") + "/v1/ws?access_token=" + token_of(BOB)
        async with websockets.connect(url) as ws:
            await ws.send(json.dumps({"type": "produce", "id": 1, "topic": "ws-t", "value": "eA=="}))
            refused_produce = json.loads(await asyncio.wait_for(ws.recv(), 10))
            await ws.send(json.dumps({"type": "subscribe", "id": 2, "topic": "ws-t", "position": "earliest"}))
            refused_subscribe = json.loads(await asyncio.wait_for(ws.recv(), 10))
            await ws.send(json.dumps({"type": "join", "id": 3, "group": "ws-g", "topics": ["ws-t"]}))
            refused_join = json.loads(await asyncio.wait_for(ws.recv(), 10))
            # The socket stays open: a ping is answered.
            await ws.send(json.dumps({"type": "ping", "id": 4}))
            pong = json.loads(await asyncio.wait_for(ws.recv(), 10))
            grant(b, [acl("User:bob", "TOPIC", "ws-t", "WRITE")])
            deadline = time.monotonic() + ACL_VISIBLE_S
            while True:
                await ws.send(json.dumps({"type": "produce", "id": 5, "topic": "ws-t", "value": "eA=="}))
                answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
                if answer.get("error_code") != 40301 or time.monotonic() > deadline:
                    break
            return refused_produce, refused_subscribe, refused_join, pong, answer

    produce, subscribe, join, pong, answer = asyncio.run(session())
    for frame in (produce, subscribe, join):
        assert frame["error_code"] == 40301 and "User:bob" in frame["message"], frame
    assert pong["type"] == "pong", pong
    assert answer.get("type") == "ack" or "offset" in json.dumps(answer), answer
    revoke(b, "User:bob")

    # An NDJSON stream of a partition: READ on the topic.
    r = requests.get(f"{b.url}/topics/ws-t/partitions/0/records", params={"timeout": 0},
                     headers={"Accept": "application/x-ndjson"}, auth=BOB)
    assert refused(r), r.text
    grant(b, [acl("User:bob", "TOPIC", "ws-t", "READ")])
    wait_until(lambda: requests.get(f"{b.url}/topics/ws-t/partitions/0/records", params={"timeout": 0, "offset": 0},
                                    headers={"Accept": "application/x-ndjson"}, auth=BOB).status_code == 200,
               ACL_VISIBLE_S, "the stream with READ")
    revoke(b, "User:bob")


def test_the_acls_cli_creates_lists_and_deletes_with_kafka_acls_words(secured, ringlog_bin):
    b = secured
    requests.post(v3(b, "/topics"), json={"topic_name": "cli-orders", "partitions_count": 1}, auth=ADMIN)

    def cli(*args, who=ADMIN):
        env = dict(os.environ, RINGLOG_USER=who[0], RINGLOG_PASSWORD=who[1])
        return subprocess.run([str(ringlog_bin), "acls", *args, "--bootstrap-server", b.url], env=env,
                              capture_output=True, text=True, timeout=30)

    assert "--allow-principal" in cli("--help").stdout
    out = cli("create", "--allow-principal", "User:bob", "--operation", "Read", "--operation", "DescribeConfigs",
              "--topic", "cli-", "--resource-pattern-type", "prefixed")
    assert out.returncode == 0 and "Created 2 ACLs" in out.stdout, out
    out = cli("create", "--deny-principal", "User:bob", "--deny-host", "10.0.0.9", "--operation", "write",
              "--group", "cli-g")
    assert out.returncode == 0, out
    listed = cli("list", "--principal", "User:bob")
    assert listed.returncode == 0, listed
    rows = sorted(tuple(line.split("\t")) for line in listed.stdout.splitlines()[1:])
    assert rows == [("User:bob", "*", "DESCRIBE_CONFIGS", "ALLOW", "TOPIC", "cli-", "PREFIXED"),
                    ("User:bob", "*", "READ", "ALLOW", "TOPIC", "cli-", "PREFIXED"),
                    ("User:bob", "10.0.0.9", "WRITE", "DENY", "GROUP", "cli-g", "LITERAL")], listed.stdout
    # The ACL works: Bob reads cli-orders's configs now.
    wait_until(lambda: requests.get(v3(b, "/topics/cli-orders/configs"), auth=BOB).status_code == 200,
               ACL_VISIBLE_S, "the CLI's ACL")
    # match: the ACLs that apply to a topic name.
    matched = cli("list", "--topic", "cli-orders", "--resource-pattern-type", "match")
    assert matched.stdout.count("User:bob") == 2, matched.stdout
    # Bob may not change ACLs: the CLI says why (403, 40301) and exits 1.
    refused_out = cli("create", "--allow-principal", "User:bob", "--operation", "All", "--cluster", who=BOB)
    assert refused_out.returncode == 1 and "40301" in refused_out.stderr, refused_out
    out = cli("delete", "--topic", "cli-", "--resource-pattern-type", "prefixed", "--operation", "Read")
    assert out.returncode == 0 and "Deleted 1 ACL" in out.stdout, out
    # kafka-acls.sh users type --force (skip its confirmation): accepted, nothing asks (session 32).
    out = cli("delete", "--group", "cli-g", "--deny-principal", "User:bob", "--deny-host", "10.0.0.9", "--force")
    assert out.returncode == 0 and "Deleted 1 ACL" in out.stdout, out
    left = cli("list", "--principal", "User:bob").stdout.splitlines()[1:]
    assert [line.split("\t")[2] for line in left] == ["DESCRIBE_CONFIGS"], left
    revoke(b, "User:bob")
    # kafka-acls.sh's --producer and --consumer sets (the new user tried --consumer).
    out = cli("create", "--allow-principal", "User:bob", "--consumer", "--topic", "cli-orders", "--group", "cli-g")
    assert out.returncode == 0 and "Created 3 ACLs" in out.stdout, out
    out = cli("create", "--allow-principal", "User:bob", "--producer", "--idempotent", "--topic", "cli-orders")
    assert out.returncode == 0 and "Created 4 ACLs" in out.stdout, out
    rows = sorted(tuple(line.split("\t")[2:6]) for line in cli("list", "--principal", "User:bob").stdout.splitlines()[1:])
    assert rows == [("CREATE", "ALLOW", "TOPIC", "cli-orders"), ("DESCRIBE", "ALLOW", "TOPIC", "cli-orders"),
                    ("IDEMPOTENT_WRITE", "ALLOW", "CLUSTER", "kafka-cluster"), ("READ", "ALLOW", "GROUP", "cli-g"),
                    ("READ", "ALLOW", "TOPIC", "cli-orders"), ("WRITE", "ALLOW", "TOPIC", "cli-orders")], rows
    out = cli("create", "--allow-principal", "User:bob", "--consumer", "--topic", "cli-orders")
    assert out.returncode == 2 and "--consumer needs a --group" in out.stderr, out
    out = cli("delete", "--allow-principal", "User:bob", "--consumer", "--topic", "cli-orders", "--group", "cli-g")
    assert out.returncode == 0 and "Deleted 3 ACLs" in out.stdout, out
    revoke(b, "User:bob")


def test_the_acls_cli_names_the_cluster_literally_under_a_prefixed_pattern(secured, ringlog_bin):
    """The new user's find: `--producer --idempotent --resource-pattern-type prefixed` stored
    IDEMPOTENT_WRITE on CLUSTER kafka-cluster as PREFIXED, and `delete --cluster` then found
    nothing. kafka-acls.sh names the cluster LITERAL whatever the pattern type (AclCommand)."""
    b = secured

    def cli(*args):
        env = dict(os.environ, RINGLOG_USER=ADMIN[0], RINGLOG_PASSWORD=ADMIN[1])
        return subprocess.run([str(ringlog_bin), "acls", *args, "--bootstrap-server", b.url], env=env,
                              capture_output=True, text=True, timeout=30)

    out = cli("create", "--allow-principal", "User:p2", "--producer", "--topic", "logs-",
              "--resource-pattern-type", "prefixed", "--idempotent")
    assert out.returncode == 0 and "Created 4 ACLs" in out.stdout, out
    rows = sorted(tuple(line.split("\t")[2:7]) for line in cli("list", "--principal", "User:p2").stdout.splitlines()[1:])
    assert rows == [("CREATE", "ALLOW", "TOPIC", "logs-", "PREFIXED"), ("DESCRIBE", "ALLOW", "TOPIC", "logs-", "PREFIXED"),
                    ("IDEMPOTENT_WRITE", "ALLOW", "CLUSTER", "kafka-cluster", "LITERAL"),
                    ("WRITE", "ALLOW", "TOPIC", "logs-", "PREFIXED")], rows
    listed = cli("list", "--cluster", "--resource-pattern-type", "prefixed")
    assert "IDEMPOTENT_WRITE" in listed.stdout, listed
    out = cli("delete", "--allow-principal", "User:p2", "--operation", "IdempotentWrite", "--cluster")
    assert out.returncode == 0 and "Deleted 1 ACL" in out.stdout, out
    out = cli("delete", "--allow-principal", "User:p2", "--producer", "--topic", "logs-", "--resource-pattern-type",
              "prefixed")
    assert out.returncode == 0 and "Deleted 3 ACLs" in out.stdout, out
    revoke(b, "User:p2")


def test_a_produce_auto_creates_a_topic_only_with_create(secured):
    """The new user's find: WRITE on a prefix let REST v2, v3 and WebSocket produces create topics
    (Kafka asks CREATE on the cluster or the topic for auto-creation; kcat was refused)."""
    b = secured
    grant(b, [acl("User:bob", "TOPIC", "auto-", "WRITE", pattern="PREFIXED")])
    topics = lambda: {t["topic_name"] for t in requests.get(v3(b, "/topics"), auth=ADMIN).json()["data"]}

    def v2(name):
        return requests.post(f"{b.url}/topics/{name}", json={"records": [{"value": "eA=="}]},
                             headers={"Content-Type": BINARY}, auth=BOB)

    def v3_produce(name):
        return requests.post(v3(b, f"/topics/{name}/records"), json={"value": {"type": "JSON", "data": 1}}, auth=BOB)

    async def ws(name):
        token = requests.post(b.url + "/v1/tokens", auth=BOB).json()["access_token"]
        async with websockets.connect(b.url.replace("http://", "ws://") + "/v1/ws?access_token=" + token) as s:
            await s.send(json.dumps({"type": "produce", "id": 1, "topic": name, "value": "eA=="}))
            return json.loads(await asyncio.wait_for(s.recv(), 10))

    wait_until(lambda: v2("auto-v2").status_code == 404, ACL_VISIBLE_S, "the prefixed WRITE")
    r = v2("auto-v2")
    assert "CREATE" in r.json()["message"] and "User:bob" in r.json()["message"], r.text
    r = v3_produce("auto-v3")
    assert r.status_code == 404 and "CREATE" in r.text, r.text
    frame = asyncio.run(ws("auto-ws"))
    assert "CREATE" in json.dumps(frame) and frame.get("type") != "ack", frame
    assert not {"auto-v2", "auto-v3", "auto-ws"} & topics()
    # With CREATE on the topic the same produce creates it.
    grant(b, [acl("User:bob", "TOPIC", "auto-", "CREATE", pattern="PREFIXED")])
    wait_until(lambda: v2("auto-v2").status_code == 200, ACL_VISIBLE_S, "the CREATE")
    assert "auto-v2" in topics()
    revoke(b, "User:bob")


def test_hosts_match_on_a_dual_stack_listener_and_in_any_spelling(ringlog_bin, tmp_path):
    """The breaker's finds: on http://[::] an IPv4 client was "::ffff:127.0.0.1", so a DENY for
    127.0.0.1 never applied; a DENY written as Java prints "::1" never matched; a host that is no
    address was stored and silently never matched."""
    scram = [a for u, p in USERS.items() for a in ("--add-scram", f"SCRAM-SHA-512=[name={u},password={p}]")]
    b = Broker(tmp_path / "ringlog-data", [AUTHORIZER, "super.users=User:admin", "http.authentication.method=BASIC"],
               extra_args=scram)
    b.extra_sets.append(f"listeners=http://[::]:{b.port}")
    b.start()
    try:
        requests.post(v3(b, "/topics"), json={"topic_name": "dual", "partitions_count": 1}, auth=ADMIN)
        grant(b, [acl("User:alice", "TOPIC", "dual", "DESCRIBE"),
                  acl("User:alice", "TOPIC", "dual", "DESCRIBE", permission="DENY", host="::ffff:127.0.0.1")])
        stored = requests.get(v3(b, "/acls"), params={"principal": "User:alice", "permission": "DENY"}, auth=ADMIN).json()
        assert [a["host"] for a in stored["data"]] == ["127.0.0.1"], stored
        wait_until(lambda: refused(requests.get(f"{b.url}/topics/dual", auth=ALICE)), ACL_VISIBLE_S,
                   "the DENY for 127.0.0.1 applies to an IPv4 client of [::]")
        r = requests.post(v3(b, "/acls"), json=acl("User:alice", "TOPIC", "dual", "READ", host="not an ip"), auth=ADMIN)
        assert r.status_code in (400, 422) and "host" in r.text, r.text
        grant(b, [acl("User:bob", "TOPIC", "dual", "READ", host="0:0:0:0:0:0:0:1")])
        listed = requests.get(v3(b, "/acls"), params={"principal": "User:bob", "host": "0:0:0:0:0:0:0:1"}, auth=ADMIN)
        assert [a["host"] for a in listed.json()["data"]] == ["::1"], listed.text
    finally:
        assert b.stop() == 0


def test_a_v2_poll_is_refused_before_it_moves_positions(secured):
    """The breaker's probe_v2_pattern.py: a poll refused for a topic Alice may not read (here her
    READ is revoked after she subscribed) had moved the instance's positions, so once she was
    granted READ again the records were gone for her."""
    b = secured
    for name in ("pat-pub", "pat-secret"):
        topic_with_a_record(b, name)
    grant(b, [acl("User:alice", "GROUP", "pat-g", "READ"), acl("User:alice", "TOPIC", "pat-pub", "READ"),
              acl("User:alice", "TOPIC", "pat-secret", "READ")])
    base = f"{b.url}/consumers/pat-g"
    wait_until(lambda: requests.post(base, json={"name": "i1", "format": "binary", "auto.offset.reset": "earliest"},
                                     headers={"Content-Type": V2}, auth=ALICE).status_code == 200,
               ACL_VISIBLE_S, "the group ACL")
    inst = f"{base}/instances/i1"
    r = requests.post(inst + "/subscription", json={"topics": ["pat-pub", "pat-secret"]}, headers={"Content-Type": V2},
                      auth=ALICE)
    assert r.status_code == 204, r.text
    r = requests.delete(v3(b, "/acls"), params={"resource_type": "TOPIC", "resource_name": "pat-secret",
                                                "pattern_type": "LITERAL", "principal": "User:alice",
                                                "operation": "READ", "permission": "ALLOW"}, auth=ADMIN)
    assert r.status_code == 200, r.text
    records = lambda: requests.get(inst + "/records", params={"timeout": 500}, headers={"Accept": BINARY}, auth=ALICE)
    wait_until(lambda: refused(records()), 10, "the poll refused while READ on pat-secret is revoked")
    grant(b, [acl("User:alice", "TOPIC", "pat-secret", "READ")])
    got = []

    def both_read():
        r = records()
        if r.status_code == 200:
            got.extend(rec["topic"] for rec in r.json())
        return sorted(got) == ["pat-pub", "pat-secret"]

    wait_until(both_read, 10, "both records, none skipped by the refused polls")
    requests.delete(inst, headers={"Content-Type": V2}, auth=ALICE)
    revoke(b, "User:alice")


def records_of(b, topic):
    r = requests.get(f"{b.url}/topics/{topic}/partitions/0/records", params={"offset": 0, "timeout": 200},
                     headers={"Accept": BINARY}, auth=ADMIN)
    return r.json() if r.status_code == 200 else []


def test_nacks_need_write_and_create_on_the_topics_their_copies_go_to(secured):
    """The breaker's probe_nack_write.py / probe_nack_create.py: a consumer instance's
    dead-letter template could aim at another team's topic (or make new ones), and its nacks
    wrote copies there with no WRITE or CREATE. A nack's copy is a produce by the member."""
    b = secured
    requests.post(v3(b, "/topics"), json={"topic_name": "nk-pub-audit-nkg", "partitions_count": 1}, auth=ADMIN)
    topic_with_a_record(b, "nk-pub")
    grant(b, [acl("User:alice", "GROUP", "nkg", "READ"), acl("User:alice", "TOPIC", "nk-pub", "READ")])

    def instance(name, template):
        base = f"{b.url}/consumers/nkg"
        body = {"name": name, "format": "binary", "auto.offset.reset": "earliest", "max.delivery.attempts": 1,
                "dead.letter.topic.template": template}
        wait_until(lambda: requests.post(base, json=body, headers={"Content-Type": V2}, auth=ALICE).status_code == 200,
                   ACL_VISIBLE_S, "the group ACL")
        inst = f"{base}/instances/{name}"
        r = requests.post(inst + "/assignments", json={"partitions": [{"topic": "nk-pub", "partition": 0}]},
                          headers={"Content-Type": V2}, auth=ALICE)
        assert r.status_code == 204, r.text
        polled = wait_until(lambda: requests.get(inst + "/records", params={"timeout": 500}, headers={"Accept": BINARY},
                                                 auth=ALICE).json() or None, 10, "the record")
        return inst, polled[-1]["offset"]

    def nack(inst, offset):
        return requests.post(inst + "/nacks", json={"offsets": [{"topic": "nk-pub", "partition": 0, "offset": offset}]},
                             headers={"Content-Type": V2}, auth=ALICE)

    inst, offset = instance("n1", "<topic>-audit-<group>")
    r = nack(inst, offset)
    assert refused(r) and "WRITE" in r.json()["message"], r.text
    assert records_of(b, "nk-pub-audit-nkg") == []
    grant(b, [acl("User:alice", "TOPIC", "nk-pub-audit-nkg", "WRITE")])
    wait_until(lambda: nack(inst, offset).status_code == 204, ACL_VISIBLE_S, "the nack with WRITE")
    assert len(records_of(b, "nk-pub-audit-nkg")) == 1
    requests.delete(inst, headers={"Content-Type": V2}, auth=ALICE)

    # A copy that would create its topic needs CREATE too (WRITE alone is not enough).
    grant(b, [acl("User:alice", "TOPIC", "nk-pub-made-", "WRITE", pattern="PREFIXED")])
    inst, offset = instance("n2", "<topic>-made-<group>")
    r = nack(inst, offset)
    assert refused(r) and "CREATE" in r.json()["message"], r.text
    assert "nk-pub-made-nkg" not in {t["topic_name"] for t in requests.get(v3(b, "/topics"), auth=ADMIN).json()["data"]}
    requests.delete(inst, headers={"Content-Type": V2}, auth=ALICE)
    revoke(b, "User:alice")


def test_seeks_need_read_and_lists_hide_a_patterns_undescribable_matches(secured):
    """The breaker's probe_commit_bypass.py and probe_v2_pattern.py: a seek named any topic (then
    an empty-body commit committed it), and a pattern's matches of topics Alice may not DESCRIBE
    were listed in the instance's assignments and the group's v3 consumers. A refusal is logged
    as an audit line."""
    b = secured
    for name in ("sk-pub", "sk-secret"):
        requests.post(v3(b, "/topics"), json={"topic_name": name, "partitions_count": 1}, auth=ADMIN)
    grant(b, [acl("User:alice", "GROUP", "sk-g", "READ"), acl("User:alice", "TOPIC", "sk-pub", "READ")])
    base = f"{b.url}/consumers/sk-g"
    wait_until(lambda: requests.post(base, json={"name": "i1", "format": "binary"}, headers={"Content-Type": V2},
                                     auth=ALICE).status_code == 200, ACL_VISIBLE_S, "the group ACL")
    inst = f"{base}/instances/i1"
    r = requests.post(inst + "/subscription", json={"topic_pattern": "sk-.*"}, headers={"Content-Type": V2}, auth=ALICE)
    assert r.status_code == 204, r.text
    seek = requests.post(inst + "/positions", json={"offsets": [{"topic": "sk-secret", "partition": 0, "offset": 5}]},
                         headers={"Content-Type": V2}, auth=ALICE)
    assert refused(seek) and "sk-secret" not in seek.text, seek.text
    edge = requests.post(inst + "/positions/end", json={"partitions": [{"topic": "sk-secret", "partition": 0}]},
                         headers={"Content-Type": V2}, auth=ALICE)
    assert refused(edge), edge.text

    def assigned_as_admin(expected):
        # The member's own call takes what its new target holds (a poll; its records do not matter).
        requests.get(inst + "/records", params={"timeout": 0}, headers={"Accept": BINARY}, auth=ALICE)
        a = requests.get(v3(b, "/consumer-groups/sk-g/consumers"), auth=ADMIN).json()["data"]
        return sorted(p["topic_name"] for c in a for p in c["assigned_partitions"]) == expected

    # The pattern matches only what Alice may DESCRIBE (Kafka's Metadata never shows her regex
    # the other topics), so her polls are served, not refused for sk-secret.
    wait_until(lambda: assigned_as_admin(["sk-pub"]), 10, "only the describable match assigned")
    shown = requests.get(inst + "/assignments", headers={"Accept": V2}, auth=ALICE).json()["partitions"]
    assert [p["topic"] for p in shown] == ["sk-pub"], shown
    consumers = requests.get(v3(b, "/consumer-groups/sk-g/consumers"), auth=ALICE).json()["data"]
    assert [p["topic_name"] for c in consumers for p in c["assigned_partitions"]] == ["sk-pub"], consumers
    r = requests.get(inst + "/records", params={"timeout": 200}, headers={"Accept": BINARY}, auth=ALICE)
    assert r.status_code == 200, r.text
    # An ACL change re-resolves the pattern: with DESCRIBE (and READ) on sk-secret it is assigned.
    grant(b, [acl("User:alice", "TOPIC", "sk-secret", "READ")])
    wait_until(lambda: assigned_as_admin(["sk-pub", "sk-secret"]), 10, "the pattern re-resolved after the ACL")

    def audited():
        return [line for line in b.log_path.read_text().splitlines()
                if "audit=authorization" in line and "User:alice" in line and 'resource="TOPIC:sk-secret"' in line]

    lines = wait_until(audited, 5, "the audit line of the refused seek")
    assert "operation=READ" in lines[0] and "/positions" in lines[0], lines[0]
    requests.delete(inst, headers={"Content-Type": V2}, auth=ALICE)
    revoke(b, "User:alice")


def test_a_redrive_copies_only_to_topics_the_caller_may_write(secured):
    """Both testers of session 17 (t2_redrive_bob.py): a dead letter's target is its own headers,
    which whoever may write the dead-letter topic can forge; a redrive wrote the forged letter into
    a topic the caller could not produce to. Each letter's copy now needs WRITE on its target."""
    b = secured
    topic_with_a_record(b, "rd-secret")
    requests.post(v3(b, "/topics"), json={"topic_name": "rd-pub", "partitions_count": 1}, auth=ADMIN)
    requests.post(v3(b, "/topics"), json={"topic_name": "rd-pub.rdg.dlq", "partitions_count": 1}, auth=ADMIN)
    grant(b, [acl("User:bob", "TOPIC", "rd-pub", "READ", pattern="PREFIXED"),
              acl("User:bob", "TOPIC", "rd-pub", "WRITE", pattern="PREFIXED"), acl("User:bob", "GROUP", "rdg", "READ")])
    e = lambda s: base64.b64encode(s.encode()).decode()
    headers = [("ringlog-original-topic", "rd-secret"), ("ringlog-original-partition", "0"),
               ("ringlog-original-offset", "0"), ("ringlog-delivery-attempt", "5"), ("ringlog-group", "rdg")]
    forged = {"value": {"type": "BINARY", "data": e("forged")}, "headers": [{"name": k, "value": e(v)} for k, v in headers]}
    wait_until(lambda: requests.post(v3(b, "/topics/rd-pub.rdg.dlq/records"), json=forged, auth=BOB).status_code == 200,
               ACL_VISIBLE_S, "bob's produce of the forged letter")
    before = records_of(b, "rd-secret")
    r = requests.post(v3(b, "/consumer-groups/rdg/dead-letters/rd-pub.rdg.dlq/redrive"), json={"to": "original"}, auth=BOB)
    assert r.status_code == 200 and r.json()["redriven"] == 0, r.text
    assert any("not redriven" in f for f in r.json()["failures"]), r.text
    assert records_of(b, "rd-secret") == before
    # The breaker of session 30: an admin's "redrive all" wrote the forged letter into rd-secret. A
    # letter naming a topic whose dead letters go elsewhere is not redriven, whoever asks.
    r = requests.post(v3(b, "/consumer-groups/rdg/dead-letters/rd-pub.rdg.dlq/redrive"), json={"to": "original"},
                      auth=ADMIN)
    assert r.status_code == 200 and r.json()["redriven"] == 0, r.text
    assert any("go to 'rd-secret.rdg.dlq', not here" in f for f in r.json()["failures"]), r.text
    assert records_of(b, "rd-secret") == before
    revoke(b, "User:bob")


def test_a_transaction_names_only_the_topics_the_caller_may_describe(secured):
    """The breaker's txn_leak.py (session 26): DESCRIBE on a transactional id answered the
    partitions of a topic bob gets 403 for. Kafka's DescribeTransactions keeps only the topics
    the caller may DESCRIBE (KIP-664); the route answers the same."""
    b = secured
    for name in ("td-open", "td-hidden"):
        requests.post(v3(b, "/topics"), json={"topic_name": name, "partitions_count": 1}, auth=ADMIN)
    r = requests.post(v3(b, "/transactions"), json={"transactional_id": "td-tx"}, auth=ADMIN)
    assert r.status_code == 200, r.text
    producer = {"producer_id": r.json()["producer_id"], "producer_epoch": r.json()["producer_epoch"]}
    r = requests.post(v3(b, "/transactions/td-tx/partitions"), auth=ADMIN,
                      json={**producer, "partitions": [{"topic": "td-open", "partition": 0},
                                                       {"topic": "td-hidden", "partition": 0}]})
    assert r.status_code == 204, r.text
    grant(b, [acl("User:bob", "TRANSACTIONAL_ID", "td-tx", "DESCRIBE"), acl("User:bob", "TOPIC", "td-open", "DESCRIBE")])
    got = wait_until(lambda: (lambda r: r if r.status_code == 200 else None)(requests.get(v3(b, "/transactions/td-tx"), auth=BOB)),
                     ACL_VISIBLE_S * 5, "bob's describe of td-tx")
    assert [p["topic"] for p in got.json()["partitions"]] == ["td-open"], got.text
    assert "td-hidden" not in got.text
    everything = requests.get(v3(b, "/transactions/td-tx"), auth=ADMIN).json()["partitions"]
    assert sorted(p["topic"] for p in everything) == ["td-hidden", "td-open"], everything
    requests.post(v3(b, "/transactions/td-tx/abort"), json=producer, auth=ADMIN)
    revoke(b, "User:bob")


def test_a_groups_dead_letter_topics_name_only_describable_topics(secured):
    """The breaker's lag_leak.py (session 26): DESCRIBE on a group listed its dead-letter topics
    and their original topics, hidden ones too (the group's other routes leave them out). A
    dead-letter topic is listed when the caller may DESCRIBE it and its original topic (its
    default name contains the original's)."""
    b = secured
    for name in ("dl-open", "dl-open.dlg.dlq", "dl-hid", "dl-hid.dlg.dlq", "dl-sec", "dl-sec.dlg.dlq"):
        requests.post(v3(b, "/topics"), json={"topic_name": name, "partitions_count": 1}, auth=ADMIN)
    grant(b, [acl("User:bob", "GROUP", "dlg", "DESCRIBE"), acl("User:bob", "TOPIC", "dl-open", "DESCRIBE", pattern="PREFIXED"),
              acl("User:bob", "TOPIC", "dl-hid.dlg.dlq", "DESCRIBE")])

    def listed(who):
        r = requests.get(v3(b, "/consumer-groups/dlg/dead-letters"), auth=who)
        return sorted((t["topic_name"], t["original_topic_name"]) for t in r.json()["data"]) if r.status_code == 200 else None

    assert listed(ADMIN) == [("dl-hid.dlg.dlq", "dl-hid"), ("dl-open.dlg.dlq", "dl-open"), ("dl-sec.dlg.dlq", "dl-sec")]
    wait_until(lambda: listed(BOB) is not None, ACL_VISIBLE_S * 5, "bob's group ACL")
    assert listed(BOB) == [("dl-open.dlg.dlq", "dl-open")]
    revoke(b, "User:bob")


def test_a_topic_create_answers_the_operations_a_get_answers(secured):
    """The breaker (session 26): the create answer said "authorized_operations": [] even to the
    super user, while GET of the topic listed every operation. Both follow GET's rule now."""
    b = secured
    r = requests.post(v3(b, "/topics"), json={"topic_name": "ao-admin", "partitions_count": 1}, auth=ADMIN)
    assert r.status_code == 201, r.text
    got = requests.get(v3(b, "/topics/ao-admin"), auth=ADMIN).json()
    assert r.json()["authorized_operations"] == got["authorized_operations"], (r.text, got)
    assert len(got["authorized_operations"]) == 8, got
    grant(b, [acl("User:bob", "TOPIC", "ao-bob", "CREATE", pattern="PREFIXED"),
              acl("User:bob", "TOPIC", "ao-bob", "DESCRIBE", pattern="PREFIXED")])
    r = wait_until(lambda: (lambda r: r if r.status_code == 201 else None)(
        requests.post(v3(b, "/topics"), json={"topic_name": "ao-bob-1", "partitions_count": 1}, auth=BOB)),
        ACL_VISIBLE_S * 5, "bob's CREATE ACL")
    assert sorted(r.json()["authorized_operations"]) == ["CREATE", "DESCRIBE"], r.text
    got = requests.get(v3(b, "/topics/ao-bob-1"), auth=BOB).json()
    assert r.json()["authorized_operations"] == got["authorized_operations"], (r.text, got)
    revoke(b, "User:bob")


def test_a_producer_session_follows_kip_679_as_the_kafka_door_does(secured):
    """Session 32's new user: InitProducerId on the Kafka door lets a principal with WRITE on some
    topic in (KIP-679), while POST /v3/clusters/{c}/producers asked IDEMPOTENT_WRITE on the
    cluster alone. One rule now: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic."""
    b = secured
    revoke(b, "User:bob")
    r = requests.post(v3(b, "/producers"), auth=BOB)
    assert refused(r) and "IDEMPOTENT_WRITE" in r.json()["message"], r.text
    topic_with_a_record(b, "kip679")
    grant(b, [acl("User:bob", "TOPIC", "kip679", "WRITE")])
    r = wait_until(lambda: (lambda r: r if r.status_code == 201 else None)(requests.post(v3(b, "/producers"), auth=BOB)),
                   5, "a producer session with WRITE on a topic")
    session = r.json()
    r = requests.post(v3(b, "/topics/kip679/records"), auth=BOB,
                      params={"producer_id": session["producer_id"], "producer_epoch": session["producer_epoch"]},
                      json={"partition_id": 0, "value": {"type": "JSON", "data": 1}, "sequence": 0})
    assert r.status_code == 200 and r.json()["error_code"] == 200, r.text
    revoke(b, "User:bob")


def test_topics_describe_needs_describe_on_the_topic_only(secured, ringlog_bin):
    """Session 32's new user: `ringlog topics describe` failed for a user with DESCRIBE on the topic
    ("not authorized to DESCRIBE CLUSTER", from the reassignment listing). kafka-topics.sh goes on
    without the moves; so does the CLI now."""
    b = secured
    topic_with_a_record(b, "described")
    revoke(b, "User:bob")
    grant(b, [acl("User:bob", "TOPIC", "described", "DESCRIBE")])
    env = dict(os.environ, RINGLOG_USER=BOB[0], RINGLOG_PASSWORD=BOB[1])
    r = wait_until(lambda: (lambda r: r if r.returncode == 0 else None)(
        subprocess.run([str(ringlog_bin), "topics", "describe", "described", "--bootstrap-server", b.url],
                       capture_output=True, text=True, timeout=60, env=env)), 5, "a describe with DESCRIBE on the topic")
    assert "Topic: described" in r.stdout and "Partition: 0" in r.stdout, r.stdout
    revoke(b, "User:bob")


def test_a_reset_without_topics_and_the_lag_history_keep_to_what_the_caller_may_see(secured):
    """The breaker's offsets_reset_default_topics.py and lag_history_leak.py (session 35): an
    offsets:reset without "topics" reset (and named) every topic the group committed, including
    one Alice may not even DESCRIBE; the lag history's totals showed activity on such a topic
    while /lags left it out."""
    b = secured
    for name in ("rs-pub", "rs-secret"):
        topic_with_a_record(b, name)
    # The super user commits offset 1 on both topics for group rs-g (a v2 instance, then gone: v2
    # commits the offset after the one named).
    base = f"{b.url}/consumers/rs-g"
    r = requests.post(base, json={"name": "adm", "format": "binary"}, headers={"Content-Type": V2}, auth=ADMIN)
    assert r.status_code == 200, r.text
    inst = f"{base}/instances/adm"
    parts = [{"topic": t, "partition": 0} for t in ("rs-pub", "rs-secret")]
    r = requests.post(inst + "/assignments", json={"partitions": parts}, headers={"Content-Type": V2}, auth=ADMIN)
    assert r.status_code == 204, r.text
    r = requests.post(inst + "/offsets", json={"offsets": [dict(p, offset=0) for p in parts]},
                      headers={"Content-Type": V2}, auth=ADMIN)
    assert r.status_code == 204, r.text
    assert requests.delete(inst, headers={"Content-Type": V2}, auth=ADMIN).status_code == 204

    def committed_as_admin():
        lags = requests.get(v3(b, "/consumer-groups/rs-g/lags"), auth=ADMIN).json()["data"]
        return {l["topic_name"]: l["current_offset"] for l in lags}

    assert committed_as_admin() == {"rs-pub": 1, "rs-secret": 1}
    grant(b, [acl("User:alice", "GROUP", "rs-g", "READ"), acl("User:alice", "TOPIC", "rs-pub", "READ")])
    reset = v3(b, "/consumer-groups/rs-g/offsets:reset")
    wait_until(lambda: requests.post(reset, json={"to": "earliest", "topics": ["rs-pub"]}, auth=ALICE).status_code == 200,
               ACL_VISIBLE_S, "Alice's ACLs")
    for dry_run in (True, False):
        r = requests.post(reset, json={"to": "earliest", "dry_run": dry_run}, auth=ALICE)
        assert r.status_code == 200, r.text
        assert r.json()["offsets"] == [{"topic_name": "rs-pub", "partition_id": 0, "offset": 0}], r.text
    assert committed_as_admin() == {"rs-pub": 0, "rs-secret": 1}, "the hidden topic's offset is untouched"
    assert refused(requests.post(reset, json={"to": "earliest", "topics": ["rs-secret"]}, auth=ALICE))
    assert refused(requests.post(reset, json={"to": "earliest", "topics": ["rs-secret:0"], "dry_run": False}, auth=ALICE))
    # A topic she may DESCRIBE but not READ: refused by name, nothing reset.
    grant(b, [acl("User:alice", "TOPIC", "rs-secret", "DESCRIBE")])
    wait_until(lambda: "rs-secret" in requests.post(reset, json={"to": "latest"}, auth=ALICE).text, ACL_VISIBLE_S,
               "the DESCRIBE ACL")
    r = requests.post(reset, json={"to": "latest", "dry_run": False}, auth=ALICE)
    assert refused(r) and "rs-secret" in r.json()["message"], r.text
    assert committed_as_admin() == {"rs-pub": 0, "rs-secret": 1}
    revoke(b, "User:alice")
    grant(b, [acl("User:alice", "GROUP", "rs-g", "READ"), acl("User:alice", "TOPIC", "rs-pub", "READ")])
    # The lag history's totals cover rs-secret too: refused, as the super user is served.
    history = v3(b, "/consumer-groups/rs-g/lag-history")
    assert requests.get(history, auth=ADMIN).status_code == 200
    wait_until(lambda: refused(requests.get(history, auth=ALICE)), ACL_VISIBLE_S, "the lag history refused")
    r = requests.get(history, auth=ALICE)
    assert refused(r) and "rs-secret" not in r.text, r.text
    # A group with no committed offsets she may see: 404 naming what to do.
    r = requests.post(v3(b, "/consumer-groups/rs-none/offsets:reset"), json={"to": "earliest"}, auth=ADMIN)
    assert r.status_code == 404 and '"topics"' in r.json()["message"], r.text
    revoke(b, "User:alice")


def test_a_topic_delete_and_the_group_list_take_a_grant_on_the_cluster_as_the_kafka_door_does(secured):
    """DELETE /v3/clusters/{c}/topics/{t} takes DELETE on the cluster for every topic, as Kafka's
    DeleteTopics does (ControllerApis.deleteTopics' hasClusterAuth) and ringlog's Kafka door now does; GET
    /v3/clusters/{c}/consumer-groups lists every group to DESCRIBE on the cluster, as Kafka's ListGroups
    and the Kafka door do. The route table's "either of" needs ("DELETE TOPIC:{topic_name} | DELETE
    CLUSTER:kafka-cluster"), and a refusal names both.
    Before: only DELETE on the topic deleted it (403 with DELETE on the cluster), and the list showed only
    the groups with DESCRIBE on each."""
    b = secured
    revoke(b, "User:bob")
    requests.post(v3(b, "/topics"), json={"topic_name": "cd-doomed", "partitions_count": 1}, auth=ADMIN)
    r = requests.delete(v3(b, "/topics/cd-doomed"), auth=BOB)
    assert refused(r) and "or else DELETE on the CLUSTER kafka-cluster" in r.json()["message"], r.text
    r = requests.post(f"{b.url}/consumers/cd-group", json={"format": "binary", "name": "i1"},
                      headers={"Content-Type": V2}, auth=ADMIN)
    assert r.status_code == 200, r.text
    topic_with_a_record(b, "cd-kept")
    r = requests.post(f"{b.url}/consumers/cd-group/instances/i1/subscription", json={"topics": ["cd-kept"]},
                      headers={"Content-Type": V2}, auth=ADMIN)
    assert r.status_code == 204, r.text
    requests.get(f"{b.url}/consumers/cd-group/instances/i1/records", headers={"Accept": BINARY}, auth=ADMIN,
                 params={"timeout": 0})

    def groups(who):
        r = requests.get(v3(b, "/consumer-groups"), auth=who)
        assert r.status_code == 200, r.text
        return [g["consumer_group_id"] for g in r.json()["data"]]
    wait_until(lambda: "cd-group" in groups(ADMIN), 10, "the group listed")
    assert "cd-group" not in groups(BOB)
    grant(b, [acl("User:bob", "CLUSTER", "kafka-cluster", "DELETE"), acl("User:bob", "CLUSTER", "kafka-cluster", "DESCRIBE")])
    try:
        r = wait_until(lambda: (lambda r: r if not refused(r) else None)(
            requests.delete(v3(b, "/topics/cd-doomed"), auth=BOB)), ACL_VISIBLE_S * 5, "bob's DELETE on the cluster")
        assert r.status_code == 204, r.text
        wait_until(lambda: requests.get(v3(b, "/topics/cd-doomed"), auth=ADMIN).status_code == 404, 10, "the delete")
        assert "cd-group" in groups(BOB)
    finally:
        revoke(b, "User:bob")


def test_the_audit_lines_of_acl_and_quota_writes_name_what_changed(secured):
    """The path of POST /acls:batch or PUT /client-quotas does not say what changed; the audit line
    does, in the Kafka door's words (session 41's new user: the HTTP lines named only the path)."""
    grant(secured, [acl("User:audited", "TOPIC", "audited-topic", "READ")])
    revoke(secured, "User:audited")
    r = requests.put(v3(secured, "/client-quotas"), json={"entity": {"user": "audited"},
                                                          "quotas": {"producer_byte_rate": 4096}}, auth=ADMIN)
    assert r.status_code == 200, r.text

    def lines():
        text = secured.log_path.read_text()
        found = [line for line in text.splitlines() if "audit=admin" in line and "audited" in line]
        return found if len(found) >= 3 else None

    found = wait_until(lines, 10, "three audit lines naming the changes")
    assert any('change="create ACL TOPIC:audited-topic LITERAL User:audited READ ALLOW host=*"' in line
               for line in found), found
    assert any('change="delete ACL TOPIC:audited-topic LITERAL User:audited READ ALLOW host=*"' in line
               for line in found), found
    assert any('change="client quota user=audited producer_byte_rate=4096"' in line for line in found), found


def test_a_topic_delete_of_a_missing_topic_the_caller_may_describe_is_404_as_the_kafka_door_answers(secured):
    """Kafka's DeleteTopics (ControllerApis.deleteTopics, broker::topic_deletion_rights_of) asks DESCRIBE,
    then whether the topic exists, then DELETE: a missing topic the caller may describe is
    UNKNOWN_TOPIC_OR_PARTITION, whatever its DELETE right. DELETE /v3/clusters/{c}/topics/{t} answers it
    404 40401, as it answers the super user for that topic; an existing topic the caller may only describe
    stays 403, and so does a missing one it may not describe (never revealed).
    Before: 403 for the missing topic too, where the Kafka door answered UNKNOWN_TOPIC_OR_PARTITION."""
    b = secured
    revoke(b, "User:bob")
    r = requests.post(v3(b, "/topics"), json={"topic_name": "dm-kept", "partitions_count": 1}, auth=ADMIN)
    assert r.status_code == 201, r.text
    missing = v3(b, "/topics/dm-missing")
    assert refused(requests.delete(missing, auth=BOB))
    grant(b, [acl("User:bob", "TOPIC", "dm-", "DESCRIBE", pattern="PREFIXED")])
    try:
        # (a tuple: a 404 Response is falsy, and wait_until waits for a truthy answer)
        r, = wait_until(lambda: (lambda r: None if refused(r) else (r,))(requests.delete(missing, auth=BOB)),
                        ACL_VISIBLE_S * 5, "bob's DESCRIBE on dm-")
        as_admin = requests.delete(missing, auth=ADMIN)
        assert as_admin.status_code == 404 and as_admin.json()["error_code"] == 40401, as_admin.text
        assert (r.status_code, r.json()) == (404, as_admin.json()), r.text
        assert refused(requests.delete(v3(b, "/topics/dm-kept"), auth=BOB))
        assert refused(requests.delete(v3(b, "/topics/other-missing"), auth=BOB))
        assert requests.get(v3(b, "/topics/dm-kept"), auth=ADMIN).status_code == 200
    finally:
        revoke(b, "User:bob")
