"""http-api/openapi.yaml documents every served route, and documented routes answer as shown."""
import pathlib
import re

import requests
import yaml

from conftest import wait_until

ROOT = pathlib.Path(__file__).resolve().parents[2]


def served_routes():
    """The route table of src/gateway/api.cc: {"GET", "/topics", handler, "needs"} entries."""
    source = (ROOT / "src" / "gateway" / "api.cc").read_text()
    table = source[source.index("route_table()"):]
    return {(m, p) for m, p in re.findall(r'\{"(GET|HEAD|POST|PATCH|DELETE|PUT)", "(/[^"]*)", \w+, "[^"]*"\}', table)}


def documented_routes():
    spec = yaml.safe_load((ROOT / "http-api" / "openapi.yaml").read_text())
    out = set()
    for path, item in spec["paths"].items():
        for method in item:
            if method in ("get", "head", "post", "patch", "delete", "put"):
                out.add((method.upper(), path))
    return out, spec


def test_every_served_route_is_documented():
    served = served_routes()
    assert len(served) >= 20
    documented, _ = documented_routes()
    assert served - documented == set(), "served but undocumented"
    assert documented - served == set(), "documented but not served"


def test_documented_get_routes_answer_as_shown(broker, topic_name):
    broker.create_topic(topic_name, partitions=1)
    cluster = broker.cluster_id()
    # A consumer instance for the consumer routes: {group}, {instance}, {consumer_group_id}.
    group = "openapi-" + topic_name
    created = requests.post(f"{broker.url}/consumers/{group}", json={"format": "binary", "auto.offset.reset": "earliest"},
                            headers={"Content-Type": "application/vnd.kafka.v2+json"})
    assert created.status_code == 200, created.text
    instance = created.json()["instance_id"]
    subscribed = requests.post(f"{broker.url}/consumers/{group}/instances/{instance}/subscription",
                               json={"topics": [topic_name]}, headers={"Content-Type": "application/vnd.kafka.v2+json"})
    assert subscribed.status_code == 204, subscribed.text
    # A committed offset, so the group's lag routes have a lag to answer with (404 without one).
    produced = requests.post(f"{broker.url}/topics/{topic_name}", json={"records": [{"value": "eA=="}]},
                             headers={"Content-Type": "application/vnd.kafka.binary.v2+json"})
    assert produced.status_code == 200, produced.text
    base = f"{broker.url}/consumers/{group}/instances/{instance}"

    def poll():
        r = requests.get(base + "/records", params={"timeout": 500},
                         headers={"Accept": "application/vnd.kafka.binary.v2+json"})
        assert r.status_code == 200, r.text
        return r.json()

    wait_until(poll, 20, "the consumer's first record")
    committed = requests.post(base + "/offsets", headers={"Content-Type": "application/vnd.kafka.v2+json"})
    assert committed.status_code == 204, committed.text
    # A transactional id, so GET .../transactions/{transactional_id} has one to describe.
    transactional_id = "openapi-txn-" + topic_name
    began = requests.post(broker.v3("/transactions"), json={"transactional_id": transactional_id})
    assert began.status_code == 200, began.text
    values = {"transactional_id": transactional_id, "cluster_id": cluster, "topic_name": topic_name, "topic": topic_name, "partition_id": "0",
              "partition": "0", "name": "retention.ms", "group": group, "instance": instance,
              "consumer_group_id": group, "file": "index.html", "broker_id": "0", "consumer_id": instance}
    # A cluster-wide broker config, so GET .../broker-configs/{name} has one to answer with (404 before).
    set_default = requests.put(broker.v3("/broker-configs/log.retention.ms"), json={"value": "604800000"})
    assert set_default.status_code == 204, set_default.text
    # A dead-letter topic of the group, so GET .../dead-letters/{topic_name}/records has one (404 otherwise).
    dead_letter_topic = f"{topic_name}.{group}.dlq"
    broker.create_topic(dead_letter_topic)
    documented, spec = documented_routes()
    for method, path in sorted(documented):
        if method != "GET":
            continue
        # {name} is a topic config on topic routes and a broker config on broker routes.
        names = values | ({"name": "log.retention.ms"} if "broker" in path else {})
        if "/dead-letters/" in path:   # {topic_name} is the group's dead-letter topic there
            names = names | {"topic_name": dead_letter_topic}
        url = broker.url + re.sub(r"\{(\w+)\}", lambda m: names[m.group(1)], path)
        params = {"offset": 0} if path.startswith("/topics") and path.endswith("/records") else {}
        if path.startswith("/consumers") and path.endswith("/records"):
            params = {"timeout": 0}
        r = requests.get(url, params=params)
        op = spec["paths"][path]["get"]
        assert str(r.status_code) in op["responses"], (path, r.status_code, r.text)
        if path.endswith("/partitions/{partition_id}/reassignment"):
            # 404 while the partition is not being moved, as Confluent's (one node moves nothing);
            # the 200 answer is checked in test_reassignment.py.
            assert r.status_code == 404, (path, r.text)
            continue
        if path.endswith("/acls"):
            # No authorizer on this broker: Kafka's SECURITY_DISABLED (the 200 list: test_acls.py).
            assert r.status_code == 400 and "authorizer.class.name" in r.text, (path, r.text)
            continue
        if path.endswith("/tasks/remove-broker"):
            # No decommission here: the documented 404 (test_cluster_balance.py checks the 200).
            assert r.status_code == 404, (path, r.text)
            continue
        if path.endswith("/users/{name}"):
            # No such SCRAM user on this broker: the documented 404 (test_sasl.py checks the 200).
            assert r.status_code == 404, (path, r.text)
            continue
        assert r.status_code == 200, (path, r.text)
        content = op["responses"]["200"].get("content", {})
        media = r.headers.get("Content-Type", "").split(";")[0]
        assert media in content, (path, media, list(content))
