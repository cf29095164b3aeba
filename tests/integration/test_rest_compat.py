"""Issue 14, "REST Proxy compatibility, second pass": each test pins one class of difference from
Confluent's REST Proxy, on the route the issue names and on its siblings."""
import base64
import json
import socket
import subprocess

import requests

from conftest import binary_path, wait_until

V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
JSONV2 = "application/vnd.kafka.json.v2+json"


def b64(text):
    return base64.b64encode(text.encode()).decode()


def end_offset(broker, topic, partition=0):
    r = requests.get(f"{broker.url}/topics/{topic}/partitions/{partition}/offsets")
    assert r.status_code == 200, r.text
    return r.json()["end_offset"]


def produce(broker, topic, values, partition=None):
    records = [{"value": b64(v)} | ({"partition": partition} if partition is not None else {}) for v in values]
    r = requests.post(f"{broker.url}/topics/{topic}", json={"records": records}, headers={"Content-Type": BINARY})
    assert r.status_code == 200, r.text
    return r.json()


def new_consumer(broker, group, **settings):
    body = {"format": "binary", "auto.offset.reset": "earliest"} | settings
    r = requests.post(f"{broker.url}/consumers/{group}", json=body, headers={"Content-Type": V2})
    assert r.status_code == 200, r.text
    return r.json()["base_uri"]


def poll_until_records(base, count):
    """Polls a v2 consumer instance until it has read `count` records in all."""
    got = []

    def step():
        r = requests.get(base + "/records", params={"timeout": 200}, headers={"Accept": BINARY})
        assert r.status_code == 200, r.text
        got.extend(r.json())
        return len(got) >= count

    wait_until(step, 20, f"{count} records")
    return got


# -- item 1: KafkaCluster's related links

def test_cluster_has_every_related_link(broker):
    for cluster in (requests.get(broker.url + "/v3/clusters").json()["data"][0], requests.get(broker.v3()).json()):
        base = broker.v3()
        assert cluster["consumer_groups"] == {"related": base + "/consumer-groups"}, cluster
        assert cluster["broker_configs"] == {"related": base + "/broker-configs"}, cluster
        assert cluster["acls"] == {"related": base + "/acls"}, cluster
        assert cluster["partition_reassignments"] == {"related": base + "/topics/-/partitions/-/reassignment"}, cluster
        # Every link resolves (none is a 404).
        for link in ("consumer_groups", "broker_configs", "partition_reassignments", "brokers", "topics",
                     "controller"):
            r = requests.get(cluster[link]["related"])
            assert r.status_code == 200, (link, r.text)
        # No authorizer on this broker: the acls link answers Kafka's SECURITY_DISABLED, naming the
        # key (test_acls.py lists ACLs with one).
        r = requests.get(cluster["acls"]["related"])
        assert r.status_code == 400 and "authorizer.class.name" in r.text, r.text


# -- item 3: a partition's earliest and latest offsets

def test_partition_offset_route(broker, topic_name):
    broker.create_topic(topic_name, partitions=2)
    produce(broker, topic_name, ["a", "b", "c"], partition=1)
    url = broker.v3(f"/topics/{topic_name}/partitions/1/offset")
    for params in ({}, {"offset_type": "earliest_and_latest"}):
        r = requests.get(url, params=params)
        assert r.status_code == 200, r.text
        got = r.json()
        assert got["kind"] == "KafkaPartitionWithOffsets" and got["metadata"]["self"] == url, got
        assert (got["topic_name"], got["partition_id"], got["earliest_offset"], got["latest_offset"]) == \
            (topic_name, 1, 0, 3), got
    r = requests.get(url, params={"offset_type": "latest"})
    assert r.status_code == 400 and "offset_type" in r.json()["message"], r.text
    r = requests.get(broker.v3(f"/topics/{topic_name}/partitions/2/offset"))
    assert r.status_code == 404 and r.json()["error_code"] == 40402, r.text
    r = requests.get(broker.v3("/topics/no-such-topic-offset/partitions/0/offset"))
    assert r.status_code == 404 and r.json()["error_code"] == 40401, r.text
    r = requests.get(f"{broker.url}/v3/clusters/no-such-cluster/topics/{topic_name}/partitions/0/offset")
    assert r.status_code == 404, r.text


# -- item 4 (and the empty body of every JSON-body route)

def test_create_topic_dry_run_is_200_and_body_errors(broker, topic_name):
    r = requests.post(broker.v3("/topics"), json={"topic_name": topic_name, "validate_only": True})
    assert r.status_code == 200 and r.json()["topic_name"] == topic_name, r.text
    assert requests.get(broker.v3(f"/topics/{topic_name}")).status_code == 404, "a dry run creates nothing"
    r = requests.post(broker.v3("/topics"), json={"topic_name": topic_name})
    assert r.status_code == 201, r.text
    r = requests.post(broker.v3("/topics"), data="", headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and r.json()["error_code"] == 422 and "empty" in r.json()["message"], r.text
    r = requests.post(broker.v3("/topics"), json={"partitions_count": 1})
    assert r.status_code == 400 and r.json()["error_code"] == 400 and "topic_name" in r.json()["message"], r.text
    # Siblings: every v3 route that reads a body refuses an empty one with 422.
    for method, path in [("PATCH", f"/topics/{topic_name}"), ("POST", f"/topics/{topic_name}/configs:alter"),
                         ("PUT", f"/topics/{topic_name}/configs/retention.ms"),
                         ("POST", f"/topics/{topic_name}/records")]:
        r = requests.request(method, broker.v3(path), data="", headers={"Content-Type": "application/json"})
        assert r.status_code == 422 and r.json()["error_code"] == 422, (method, path, r.text)
    r = requests.patch(broker.v3(f"/topics/{topic_name}"), json={})
    assert r.status_code == 400 and "partitions_count" in r.json()["message"], r.text


# -- item 24: one wording for the partitions_count range

def test_partitions_count_range_has_one_wording(broker, topic_name):
    messages = []
    for n in (0, 10001):
        r = requests.post(broker.v3("/topics"), json={"topic_name": topic_name, "partitions_count": n})
        assert r.status_code == 422, r.text
        messages.append(r.json()["message"])
    assert messages == [f"partitions_count is out of range [1, 10000]: {n}" for n in (0, 10001)], messages
    broker.create_topic(topic_name)
    r = requests.patch(broker.v3(f"/topics/{topic_name}"), json={"partitions_count": 10001})
    assert r.status_code == 422 and r.json()["message"] == messages[1], r.text


# -- item 5: PUT/DELETE/alter of a name that is not a topic config

def test_config_writes_of_unknown_names_are_404(broker, topic_name):
    broker.create_topic(topic_name)
    get = requests.get(broker.v3(f"/topics/{topic_name}/configs/no.such.config"))
    assert get.status_code == 404
    put = requests.put(broker.v3(f"/topics/{topic_name}/configs/no.such.config"), json={"value": "1"})
    delete = requests.delete(broker.v3(f"/topics/{topic_name}/configs/no.such.config"))
    alter = requests.post(broker.v3(f"/topics/{topic_name}/configs:alter"),
                          json={"data": [{"name": "retention.ms", "value": "5"}, {"name": "no.such.config", "value": "1"}]})
    for r in (put, delete, alter):
        assert r.status_code == 404 and r.json()["error_code"] == get.json()["error_code"], r.text
        assert "no.such.config" in r.json()["message"]
    got = requests.get(broker.v3(f"/topics/{topic_name}/configs/retention.ms")).json()
    assert got["is_default"] is True, "a 404 for one name changes none of the others"


# -- item 9: content negotiation codes

def test_negotiation_error_codes(broker, topic_name):
    broker.create_topic(topic_name)
    r = requests.get(broker.url + "/topics", headers={"Accept": "text/html"})
    assert r.status_code == 406 and r.json()["error_code"] == 406, r.text
    r = requests.get(broker.v3("/topics"), headers={"Accept": "text/html"})
    assert r.status_code == 406 and r.json()["error_code"] == 406, r.text
    r = requests.post(f"{broker.url}/topics/{topic_name}", data="{}", headers={"Content-Type": "text/plain"})
    assert r.status_code == 415 and r.json()["error_code"] == 415, r.text
    r = requests.post(broker.v3("/topics"), data="{}", headers={"Content-Type": "text/plain"})
    assert r.status_code == 415 and r.json()["error_code"] == 415, r.text
    # A consumer created with an embedded-format Accept, answered in that type.
    group = "neg-" + topic_name
    r = requests.post(f"{broker.url}/consumers/{group}", json={"format": "binary"},
                      headers={"Content-Type": V2, "Accept": BINARY})
    assert r.status_code == 200 and r.headers["Content-Type"].startswith(BINARY), r.text
    base = r.json()["base_uri"]
    assert requests.post(base + "/subscription", json={"topics": [topic_name]},
                         headers={"Content-Type": BINARY}).status_code == 204
    r = requests.get(base + "/subscription", headers={"Accept": BINARY})
    assert r.status_code == 200 and r.json()["topics"] == [topic_name], r.text
    # 40601 stays for the one case it means: the instance's format is not the records' Accept.
    r = requests.get(base + "/records", headers={"Accept": JSONV2})
    assert r.status_code == 406 and r.json()["error_code"] == 40601, r.text
    requests.delete(base)


# -- item 10: v2 produce bodies

def test_v2_produce_body_errors_are_422(broker, topic_name):
    broker.create_topic(topic_name)
    for path in (f"/topics/{topic_name}", f"/topics/{topic_name}/partitions/0"):
        for body in ("", "  ", "{}", '{"records":[]}'):
            r = requests.post(broker.url + path, data=body, headers={"Content-Type": BINARY})
            assert r.status_code == 422 and r.json()["error_code"] == 422, (path, body, r.text)
    assert end_offset(broker, topic_name) == 0


# -- items 11 and 12: direct partition reads

def test_direct_read_query_and_accept_errors(broker, topic_name):
    broker.create_topic(topic_name)
    produce(broker, topic_name, ["a"])
    base = f"{broker.url}/topics/{topic_name}/partitions/0/records"
    for params, name in [({"offset": ""}, "offset"), ({"offset": "x"}, "offset"), ({"offset": "1.5"}, "offset"),
                         ({"offset": "0", "max_bytes": ""}, "max_bytes"), ({"offset": "0", "max_bytes": "lots"}, "max_bytes"),
                         ({"offset": "0", "timeout": ""}, "timeout"), ({"offset": "0", "timeout": "soon"}, "timeout")]:
        r = requests.get(base, params=params, headers={"Accept": BINARY})
        assert r.status_code == 400 and r.json()["error_code"] == 400 and name in r.json()["message"], (params, r.text)
    # A number out of range stays 422 (it is a number, just not an allowed one).
    r = requests.get(base, params={"offset": "-1"}, headers={"Accept": BINARY})
    assert r.status_code == 422, r.text
    # Siblings: the v2 offsets route and a consumer's records read take numbers too.
    r = requests.get(f"{broker.url}/topics/{topic_name}/partitions/0/offsets", params={"timestamp": "noon"})
    assert r.status_code == 400 and "timestamp" in r.json()["message"], r.text
    r = requests.get(f"{broker.url}/consumers/g/instances/i/records", params={"max_bytes": "x"}, headers={"Accept": BINARY})
    assert r.status_code == 400 and "max_bytes" in r.json()["message"], r.text
    # The bare v2 type names no embedded format: 406, not a binary body the client did not ask for.
    r = requests.get(base, params={"offset": 0}, headers={"Accept": V2})
    assert r.status_code == 406 and r.json()["error_code"] == 406, r.text
    r = requests.get(base, params={"offset": 0}, headers={"Accept": BINARY})
    assert r.status_code == 200 and len(r.json()) == 1, r.text


# -- item 13: a record with invalid data is that record's report

def test_v3_invalid_record_is_its_own_report(broker, topic_name):
    broker.create_topic(topic_name)
    url = broker.v3(f"/topics/{topic_name}/records")
    r = requests.post(url, data='{"value":{"type":"BINARY","data":"%%%"}}', headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.json()["error_code"] == 400 and "value.data" in r.json()["message"], r.text
    body = ('{"value":{"type":"STRING","data":"a"}}'
            '{"value":{"type":"BINARY","data":5}}'
            '{"vlaue":{"type":"STRING","data":"c"}}'
            '{"value":{"type":"STRING","data":"d"}}')
    r = requests.post(url, data=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    reports = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    assert [x["error_code"] for x in reports] == [200, 400, 400, 200], reports
    assert "records[1].value.data" in reports[1]["message"] and "vlaue" in reports[2]["message"], reports
    assert end_offset(broker, topic_name) == 2

    # A chunked stream reports the same way, in band.
    def chunks():
        yield b'{"value":{"type":"STRING","data":"e"}}\n'
        yield b'{"value":{"type":"BINARY","data":"!"}}\n'
        yield b'{"value":{"type":"STRING","data":"f"}}\n'

    r = requests.post(url, data=chunks(), headers={"Content-Type": "application/json"})
    reports = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    assert r.status_code == 200 and [x["error_code"] for x in reports] == [200, 400, 200], r.text
    assert end_offset(broker, topic_name) == 4


# -- item 14: charset, and the v3 empty body (above)

def test_charsets_other_than_utf8_are_refused(broker, topic_name):
    broker.create_topic(topic_name)
    v3 = broker.v3(f"/topics/{topic_name}/records")
    body = '{"value":{"type":"STRING","data":"a"}}'
    for charset in ("utf-16", "UTF-32BE", "koi8-r"):
        r = requests.post(v3, data=body, headers={"Content-Type": f"application/json; charset={charset}"})
        assert r.status_code == 400 and charset.lower() in r.json()["message"], (charset, r.text)
        r = requests.post(f"{broker.url}/topics/{topic_name}", data='{"records":[{"value":"eA=="}]}',
                          headers={"Content-Type": f"{BINARY}; charset={charset}"})
        assert r.status_code == 400, (charset, r.text)
    assert end_offset(broker, topic_name) == 0
    for charset in ("UTF-8", "utf-8", '"utf-8"', "ISO-8859-1"):
        r = requests.post(v3, data=body, headers={"Content-Type": f"application/json; charset={charset}"})
        assert r.status_code == 200 and r.json()["error_code"] == 200, (charset, r.text)
    assert end_offset(broker, topic_name) == 4


# -- item 17: names are checked before anything else

def test_consumer_names_are_checked_first(broker, topic_name):
    broker.create_topic(topic_name)
    r = requests.post(f"{broker.url}/consumers/bad%01group", json={"format": "binary"}, headers={"Content-Type": V2})
    assert r.status_code == 400 and "control character" in r.json()["message"], r.text
    r = requests.post(f"{broker.url}/consumers/bad%01group/instances/x/subscription", json={"topics": [topic_name]},
                      headers={"Content-Type": V2})
    assert r.status_code == 400, r.text
    group = "names-" + topic_name
    base = new_consumer(broker, group)
    r = requests.post(base + "/subscription", json={"topics": [topic_name, "no good!"]}, headers={"Content-Type": V2})
    assert r.status_code == 400 and "no good!" in r.json()["message"] and "topics[1]" in r.json()["message"], r.text
    r = requests.get(base + "/subscription")
    assert r.json()["topics"] == [], "the refused subscription did not happen"
    bad = [{"topic": "no good!", "partition": 0}]
    r = requests.get(base + "/offsets", data=json.dumps({"partitions": bad}), headers={"Content-Type": V2})
    assert r.status_code == 400 and "partitions[0].topic" in r.json()["message"], r.text
    r = requests.post(base + "/offsets", json={"offsets": [bad[0] | {"offset": 1}]}, headers={"Content-Type": V2})
    assert r.status_code == 400 and "offsets[0].topic" in r.json()["message"], r.text
    for path, body in [("/assignments", {"partitions": bad}), ("/positions", {"offsets": [bad[0] | {"offset": 0}]}),
                       ("/positions/beginning", {"partitions": bad}), ("/positions/end", {"partitions": bad})]:
        r = requests.post(base + path, json=body, headers={"Content-Type": V2})
        assert r.status_code == 400 and "no good!" in r.json()["message"], (path, r.text)
    requests.delete(base)


# -- items 26 and 27: consumer settings and commit fields are named

def test_unknown_consumer_settings_and_commit_types_are_named(broker, topic_name):
    broker.create_topic(topic_name)
    group = "settings-" + topic_name
    r = requests.post(f"{broker.url}/consumers/{group}", json={"auto.offset.rest": "earliest"}, headers={"Content-Type": V2})
    assert r.status_code == 422 and "auto.offset.rest" in r.json()["message"], r.text
    r = requests.get(broker.v3(f"/consumer-groups/{group}"))
    assert r.status_code == 404, "a refused instance joins nothing"
    base = new_consumer(broker, group)
    r = requests.post(base + "/offsets", json={"offsets": [{"topic": topic_name, "partition": 0, "offset": "3"}]},
                      headers={"Content-Type": V2})
    assert r.status_code == 422, r.text
    assert "offsets[0].offset" in r.json()["message"] and "a string" in r.json()["message"], r.text
    r = requests.post(base + "/offsets", json={"offsets": [{"topic": topic_name, "partition": "0", "offset": 3}]},
                      headers={"Content-Type": V2})
    assert r.status_code == 422 and "offsets[0].partition" in r.json()["message"], r.text
    r = requests.post(base + "/offsets", json={"offsets": [{"topic": topic_name, "partition": 0}]},
                      headers={"Content-Type": V2})
    assert r.status_code == 422 and "offsets[0].offset is required" in r.json()["message"], r.text
    requests.delete(base)


# -- items 18 and 20: v3 group list entries and lags

def test_group_list_entries_and_lags_need_commits(broker, topic_name):
    broker.create_topic(topic_name, partitions=2)
    produce(broker, topic_name, ["a", "b"], partition=0)
    produce(broker, topic_name, ["c"], partition=1)
    group = "lags-" + topic_name
    base = new_consumer(broker, group)
    assert requests.post(base + "/subscription", json={"topics": [topic_name]}, headers={"Content-Type": V2}).status_code == 204
    poll_until_records(base, 3)
    single = requests.get(broker.v3(f"/consumer-groups/{group}")).json()
    listed = [g for g in requests.get(broker.v3("/consumer-groups")).json()["data"] if g["consumer_group_id"] == group]
    assert len(listed) == 1 and listed[0] == single, (listed, single)
    assert "partition_assignor" in listed[0]

    lags = broker.v3(f"/consumer-groups/{group}/lags")
    for url in (lags, lags + f"/{topic_name}/partitions/0", broker.v3(f"/consumer-groups/{group}/lag-summary")):
        r = requests.get(url)
        assert r.status_code == 404, (url, r.text)
    r = requests.post(base + "/offsets", json={"offsets": [{"topic": topic_name, "partition": 0, "offset": 0}]},
                      headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    data = requests.get(lags).json()["data"]
    assert [(x["partition_id"], x["current_offset"], x["lag"]) for x in data] == [(0, 1, 1)], data
    assert requests.get(lags + f"/{topic_name}/partitions/0").status_code == 200
    assert requests.get(lags + f"/{topic_name}/partitions/1").status_code == 404
    summary = requests.get(broker.v3(f"/consumer-groups/{group}/lag-summary")).json()
    assert summary["total_lag"] == 1 and summary["max_lag_partition_id"] == 0, summary
    requests.delete(base)


# -- item 21: HEAD on every GET route

def test_head_is_get_without_a_body(broker, topic_name):
    broker.create_topic(topic_name)
    for path in ("/topics", f"/topics/{topic_name}", "/v3/clusters", f"/v3/clusters/{broker.cluster_id()}/topics",
                 "/v1/health", "/brokers", "/console"):
        get = requests.get(broker.url + path)
        head = requests.head(broker.url + path)
        assert head.status_code == get.status_code == 200, (path, head.status_code)
        assert head.content == b"" and head.headers["Content-Length"] == str(len(get.content)), path
        assert head.headers["Content-Type"] == get.headers["Content-Type"], path
    assert requests.head(broker.url + "/topics/no-such-topic-head").status_code == 404
    r = requests.put(broker.url + "/topics")
    assert r.status_code == 405 and "HEAD" in r.headers["Allow"], r.headers
    # Record reads are not run for a HEAD: a consumer's read would move its position.
    produce(broker, topic_name, ["a"])
    r = requests.head(f"{broker.url}/topics/{topic_name}/partitions/0/records", params={"offset": 0})
    assert r.status_code == 405 and "HEAD" not in r.headers["Allow"], r.headers
    base = new_consumer(broker, "head-" + topic_name)
    assert requests.post(base + "/assignments", json={"partitions": [{"topic": topic_name, "partition": 0}]},
                         headers={"Content-Type": V2}).status_code == 204
    r = requests.head(base + "/records", headers={"Accept": BINARY})
    assert r.status_code == 405, r.headers
    assert [base64.b64decode(x["value"]).decode() for x in poll_until_records(base, 1)] == ["a"]
    requests.delete(base)


# -- item 22: a listener that cannot bind stops serve before anything is created

def test_serve_that_cannot_bind_creates_nothing(ringlog_bin, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        data = tmp_path / "never-created"
        p = subprocess.run([str(ringlog_bin), "serve", "--set", f"listeners=http://127.0.0.1:{port}",
                            "--set", f"log.dirs={data}"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "cannot listen" in p.stdout + p.stderr and str(port) in p.stdout + p.stderr
    assert not data.exists(), "log.dirs was created before the listener was bound"


# -- item 23: a produce to a partition an auto-created topic would not have creates nothing

def test_produce_to_missing_partition_of_missing_topic_creates_nothing(broker, topic_name):
    p = subprocess.run([str(binary_path()), "produce", topic_name, "--partition", "5", "--bootstrap-server", broker.url],
                       input="hello\n", capture_output=True, text=True, timeout=60)
    assert p.returncode != 0, p.stdout + p.stderr
    assert "partition 5" in p.stdout + p.stderr, p.stdout + p.stderr
    assert requests.get(broker.v3(f"/topics/{topic_name}")).status_code == 404, "the topic was left behind"
    # The REST route the CLI uses answers the same, and a partition that would exist still auto-creates.
    url = broker.v3(f"/topics/{topic_name}/records")
    r = requests.post(url, json={"partition_id": 5, "value": {"type": "STRING", "data": "x"}})
    assert r.status_code == 404 and "num.partitions" in r.json()["message"], r.text
    assert requests.get(broker.v3(f"/topics/{topic_name}")).status_code == 404
    r = requests.post(url, json={"partition_id": 0, "value": {"type": "STRING", "data": "x"}})
    assert r.status_code == 200 and r.json()["error_code"] == 200, r.text


# -- item 15: records:batch

def test_v3_records_batch(broker, topic_name):
    broker.create_topic(topic_name, partitions=2)
    url = broker.v3(f"/topics/{topic_name}/records:batch")
    body = {"entries": [{"id": "a", "value": {"type": "STRING", "data": "one"}},
                        {"id": "b", "value": {"type": "BINARY", "data": "not base64!"}},
                        {"id": "c", "partition_id": 1, "key": {"type": "STRING", "data": "k"},
                         "value": {"type": "JSON", "data": {"n": 3}}},
                        {"id": "d", "partition_id": 7, "value": {"type": "STRING", "data": "nowhere"}}]}
    r = requests.post(url, json=body)
    assert r.status_code == 207, r.text
    got = r.json()
    assert [s["id"] for s in got["successes"]] == ["a", "c"], got
    assert got["successes"][1]["partition_id"] == 1 and got["successes"][1]["topic_name"] == topic_name, got
    assert isinstance(got["successes"][0]["offset"], int) and "error_code" not in got["successes"][0], got
    failures = {f["id"]: f for f in got["failures"]}
    assert set(failures) == {"b", "d"}, got
    assert failures["b"]["error_code"] == 400 and "entries[1].value.data" in failures["b"]["message"], got
    assert failures["d"]["error_code"] == 40402, got
    assert end_offset(broker, topic_name, 0) + end_offset(broker, topic_name, 1) == 2
    r = requests.post(url, json=body | {"extra": True})
    assert r.status_code == 422 and "extra" in r.json()["message"], r.text
    r = requests.post(url, json={"entries": [{"id": "x", "value": None}, {"id": "x", "value": None}]})
    assert r.status_code == 400 and "distinct" in r.json()["message"], r.text
    r = requests.post(url, data="", headers={"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    assert end_offset(broker, topic_name, 0) + end_offset(broker, topic_name, 1) == 2, "refused batches store nothing"


# -- item 16: seek by timestamp in Confluent's shape

def test_v2_seek_by_timestamps(broker, topic_name):
    broker.create_topic(topic_name)
    url = broker.v3(f"/topics/{topic_name}/records")
    for i, ts in enumerate(["2021-01-01T00:00:00Z", "2022-01-01T00:00:00Z", "2023-01-01T00:00:00Z"]):
        r = requests.post(url, json={"value": {"type": "STRING", "data": f"v{i}"}, "timestamp": ts})
        assert r.status_code == 200 and r.json()["error_code"] == 200, r.text
    group = "seekts-" + topic_name
    base = new_consumer(broker, group)
    assert requests.post(base + "/assignments", json={"partitions": [{"topic": topic_name, "partition": 0}]},
                         headers={"Content-Type": V2}).status_code == 204
    r = requests.post(base + "/positions", headers={"Content-Type": V2},
                      json={"timestamps": [{"topic": topic_name, "partition": 0, "timestamp": "2021-06-01T00:00:00Z"}]})
    assert r.status_code == 204, r.text
    got = poll_until_records(base, 2)
    assert [base64.b64decode(x["value"]).decode() for x in got] == ["v1", "v2"], got
    r = requests.post(base + "/positions", headers={"Content-Type": V2},
                      json={"timestamps": [{"topic": topic_name, "partition": 0, "timestamp": "soon"}]})
    assert r.status_code == 422 and "timestamps[0].timestamp" in r.json()["message"], r.text
    r = requests.post(base + "/positions", headers={"Content-Type": V2},
                      json={"timestamps": [{"topic": topic_name, "partition": 0}]})
    assert r.status_code == 422 and "timestamps[0].timestamp is required" in r.json()["message"], r.text
    requests.delete(base)


# -- item 2: a broker's partition replicas

def test_broker_partition_replicas(broker, topic_name):
    broker.create_topic(topic_name, partitions=3)
    broker_id = requests.get(broker.v3("/brokers")).json()["data"][0]["broker_id"]
    url = broker.v3(f"/brokers/{broker_id}/partition-replicas")
    r = requests.get(url)
    assert r.status_code == 200 and r.json()["kind"] == "KafkaReplicaList", r.text
    mine = sorted(x["partition_id"] for x in r.json()["data"] if x["topic_name"] == topic_name)
    assert mine == [0, 1, 2], r.json()
    assert all(x["broker_id"] == broker_id and x["is_leader"] for x in r.json()["data"]), r.json()
    assert requests.get(broker.v3("/brokers/99/partition-replicas")).status_code == 404
    assert requests.get(f"{broker.url}/v3/clusters/nope/brokers/{broker_id}/partition-replicas").status_code == 404


# -- item 6: every topic's configs, and altering several topics at once

def test_all_topic_configs_and_multi_topic_alter(broker, topic_name):
    """Issue 27 item 5: topics/-/configs:alter takes Confluent's AlterMultipleTopicsConfigs body,
    {"data": [{"topic_name", "configs": [{"name", "value", "operation"}]}], "validate_only"}."""
    a, b = topic_name + "-a", topic_name + "-b"
    broker.create_topic(a)
    broker.create_topic(b)
    r = requests.get(broker.v3("/topics/-/configs"))
    assert r.status_code == 200 and r.json()["kind"] == "KafkaTopicConfigList", r.text
    names = {(x["topic_name"], x["name"]) for x in r.json()["data"]}
    assert (a, "retention.ms") in names and (b, "retention.ms") in names
    url = broker.v3("/topics/-/configs:alter")

    def config(topic, name="retention.ms"):
        return requests.get(broker.v3(f"/topics/{topic}/configs/{name}")).json()["value"]

    before = config(a)
    body = {"data": [{"topic_name": a, "configs": [{"name": "retention.ms", "value": "1234"},
                                                   {"name": "cleanup.policy", "value": "compact", "operation": "SET"}]},
                     {"topic_name": b, "configs": [{"name": "retention.ms", "value": "5678"}]}]}
    r = requests.post(url, json=body | {"validate_only": True})
    assert r.status_code == 204, r.text
    assert (config(a), config(a, "cleanup.policy")) == (before, "delete"), "validate_only changes nothing"
    for bad in ({"topic_name": "no-such-topic-multi", "configs": [{"name": "retention.ms", "value": "1"}]},
                {"topic_name": a, "configs": [{"name": "no.such.config", "value": "1"}]}):
        r = requests.post(url, json={"data": body["data"] + [bad]})
        assert r.status_code == 404, r.text
        assert config(a) == before, "a 404 changes nothing"
    assert requests.post(f"{broker.url}/v3/clusters/no-such-cluster/topics/-/configs:alter", json=body).status_code == 404
    # The flat shape ringlog took before is refused naming the one it takes.
    r = requests.post(url, json={"data": [{"topic_name": a, "name": "retention.ms", "value": "1"}]})
    assert r.status_code == 422 and "configs" in r.json()["message"], r.text
    r = requests.post(url, json={"data": [{"configs": [{"name": "retention.ms", "value": "1"}]}]})
    assert r.status_code == 400 and "topic_name" in r.json()["message"], r.text
    r = requests.post(url, json={"data": [{"topic_name": a, "configs": [{"name": "retention.ms"}]}]})
    assert r.status_code == 422 and "data[0].configs[0].value" in r.json()["message"], r.text
    r = requests.post(url, json=body)
    assert r.status_code == 204, r.text
    assert (config(a), config(a, "cleanup.policy"), config(b)) == ("1234", "compact", "5678")
    # Per-topic failures are 207 with Confluent's failures list; the other topics are applied.
    failing = {"data": [{"topic_name": a, "configs": [{"name": "retention.ms", "value": "abc"}]},
                        {"topic_name": b, "configs": [{"name": "retention.ms", "value": "999"},
                                                      {"name": "compression.type", "value": "gzip"}]}]}
    r = requests.post(url, json=failing | {"validate_only": True})
    assert r.status_code == 207, r.text
    assert [f["topic_name"] for f in r.json()["failures"]] == [a], r.json()
    assert (config(b), config(b, "compression.type")) == ("5678", "producer"), "validate_only changes nothing"
    r = requests.post(url, json=failing)
    assert r.status_code == 207, r.text
    (failure,) = r.json()["failures"]
    assert failure["topic_name"] == a and failure["error_code"] == 40002 and "retention.ms" in failure["message"], failure
    assert (config(a), config(b), config(b, "compression.type")) == ("1234", "999", "gzip")
    r = requests.post(url, json={"data": [{"topic_name": a, "configs": [{"name": "cleanup.policy", "operation": "DELETE"},
                                                                        {"name": "retention.ms", "value": None,
                                                                         "operation": "DELETE"}]}]})
    assert r.status_code == 204, r.text
    assert (config(a, "cleanup.policy"), config(a)) == ("delete", before)


def test_topic_and_broker_configs_alter_take_confluents_bodies(broker, topic_name):
    """The sibling routes take Confluent's AlterConfigBatchRequestData: {"data": [{"name",
    "value", "operation"}], "validate_only"}, DELETE without a value (or with null)."""
    broker.create_topic(topic_name)
    url = broker.v3(f"/topics/{topic_name}/configs:alter")

    def config(name):
        return requests.get(broker.v3(f"/topics/{topic_name}/configs/{name}")).json()["value"]

    body = {"data": [{"name": "cleanup.policy", "value": "compact", "operation": "SET"},
                     {"name": "compression.type", "value": "gzip"}]}
    r = requests.post(url, json=body | {"validate_only": True})
    assert r.status_code == 204 and config("compression.type") == "producer", r.text
    assert requests.post(url, json=body).status_code == 204
    assert (config("cleanup.policy"), config("compression.type")) == ("compact", "gzip")
    r = requests.post(url, json={"data": [{"name": "cleanup.policy", "operation": "DELETE"},
                                          {"name": "compression.type", "value": None, "operation": "DELETE"}]})
    assert r.status_code == 204, r.text
    assert (config("cleanup.policy"), config("compression.type")) == ("delete", "producer")
    assert requests.post(broker.v3("/topics/no-such-topic-x/configs:alter"), json=body).status_code == 404
    node = requests.get(broker.v3("/brokers")).json()["data"][0]["broker_id"]
    for path in (f"/brokers/{node}/configs:alter", "/broker-configs:alter"):
        r = requests.post(broker.v3(path), json={"data": [{"name": "log.retention.ms", "value": "7200000", "operation": "SET"}],
                                                 "validate_only": True})
        assert r.status_code == 204, r.text
        r = requests.post(broker.v3(path), json={"data": [{"name": "log.retention.ms", "value": None, "operation": "DELETE"}]})
        assert r.status_code == 204, r.text
    assert config("retention.ms") == str(7 * 24 * 3600 * 1000)


# -- item 19: a member's assignments are a link, and their routes exist

def test_consumer_assignments_routes(broker, topic_name):
    broker.create_topic(topic_name, partitions=2)
    produce(broker, topic_name, ["a"], partition=0)
    group = "asg-" + topic_name
    base = new_consumer(broker, group)
    assert requests.post(base + "/subscription", json={"topics": [topic_name]}, headers={"Content-Type": V2}).status_code == 204
    poll_until_records(base, 1)
    member = requests.get(broker.v3(f"/consumer-groups/{group}/consumers")).json()["data"][0]
    link = member["assignments"]["related"]
    assert link == member["metadata"]["self"] + "/assignments", member
    listed = requests.get(link).json()
    assert listed["kind"] == "KafkaConsumerAssignmentList"
    assert sorted(x["partition_id"] for x in listed["data"]) == [0, 1], listed
    one = requests.get(link + f"/{topic_name}/partitions/1")
    assert one.status_code == 200 and one.json()["kind"] == "KafkaConsumerAssignment", one.text
    assert one.json()["partition"]["related"].endswith(f"/topics/{topic_name}/partitions/1")
    assert requests.get(link + f"/{topic_name}/partitions/5").status_code == 404
    assert requests.get(broker.v3(f"/consumer-groups/{group}/consumers/nobody/assignments")).status_code == 404
    requests.delete(base)


# -- item 7: features not built yet were named in the refusal; log compaction now exists (issue 17)

def test_compaction_policies_are_accepted(broker, topic_name):
    r = requests.post(broker.v3("/topics"), json={"topic_name": topic_name, "configs": [{"name": "cleanup.policy", "value": "compact"}]})
    assert r.status_code == 201, r.text
    other = topic_name + "-b"
    broker.create_topic(other)
    r = requests.put(broker.v3(f"/topics/{other}/configs/cleanup.policy"), json={"value": "compact,delete"})
    assert r.status_code == 204, r.text
    r = requests.put(broker.v3(f"/topics/{other}/configs/cleanup.policy"), json={"value": "shrink"})
    assert r.status_code == 400 and "cleanup.policy" in r.json()["message"], r.text


# -- leftovers of the breaker's pass on records:batch

def test_records_batch_ids_follow_confluent_and_auto_create_fails_one_entry(broker, topic_name):
    url = broker.v3(f"/topics/{topic_name}/records:batch")
    # Confluent refuses the batch (422) for an id that is not a string of 1..80 of [0-9a-zA-Z_-]
    # (its ProduceBatchRequestEntry): ids come back byte for byte, so bytes and characters agree.
    for bad_id in (7, None, "", "x" * 81, "é" * 41, "a b"):
        r = requests.post(url, json={"entries": [{"id": "ok", "value": None}, {"id": bad_id, "value": None}]})
        assert r.status_code == 422 and "entries[1].id" in r.json()["message"], (bad_id, r.text)
    assert requests.get(broker.v3(f"/topics/{topic_name}")).status_code == 404, "refused batches create nothing"
    assert requests.post(url, json={"entries": [{"id": "x" * 80, "value": None}]}).status_code == 207
    # The first produce creates the topic with num.partitions (1): an entry naming partition 5 fails
    # alone; the others are produced.
    other = topic_name + "-auto"
    r = requests.post(broker.v3(f"/topics/{other}/records:batch"),
                      json={"entries": [{"id": "a", "value": {"type": "STRING", "data": "1"}},
                                        {"id": "b", "partition_id": 5, "value": {"type": "STRING", "data": "2"}},
                                        {"id": "c", "partition_id": 0, "value": {"type": "STRING", "data": "3"}}]})
    assert r.status_code == 207, r.text
    got = r.json()
    assert [s["id"] for s in got["successes"]] == ["a", "c"], got
    assert [(f["id"], f["error_code"]) for f in got["failures"]] == [("b", 40402)], got
    assert end_offset(broker, other, 0) == 2


# -- item 25: an instance joins its group on subscribe, not when created

def test_consumer_instance_joins_on_subscribe_not_on_create(broker, topic_name):
    broker.create_topic(topic_name, partitions=2)
    group = "g-" + topic_name
    first = new_consumer(broker, group)
    assert requests.post(first + "/subscription", json={"topics": [topic_name]}, headers={"Content-Type": V2}).status_code == 204
    poll_until_records(first, 0)
    described = requests.get(broker.v3(f"/consumer-groups/{group}")).json()
    generation = described.get("generation")
    assert requests.get(broker.v3(f"/consumer-groups/{group}/consumers")).json()["data"].__len__() == 1
    idle = new_consumer(broker, group)
    after = requests.get(broker.v3(f"/consumer-groups/{group}")).json()
    assert after.get("generation") == generation, (described, after)
    assert len(requests.get(broker.v3(f"/consumer-groups/{group}/consumers")).json()["data"]) == 1
    # It owns nothing, reads nothing and has no subscription until it subscribes.
    assert requests.get(idle + "/assignments", headers={"Accept": V2}).json() == {"partitions": []}
    assert requests.get(idle + "/subscription", headers={"Accept": V2}).json()["topics"] == []
    r = requests.get(idle + "/records", params={"timeout": 0}, headers={"Accept": BINARY})
    assert r.status_code == 200 and r.json() == [], r.text
    assert requests.post(idle + "/subscription", json={"topics": [topic_name]}, headers={"Content-Type": V2}).status_code == 204
    assert len(requests.get(broker.v3(f"/consumer-groups/{group}/consumers")).json()["data"]) == 2
    assert requests.delete(idle).status_code == 204
    assert requests.delete(first).status_code == 204


# -- item 28: an instance's settings survive a restart with its lease

def test_consumer_instance_settings_survive_a_restart(fresh_broker, topic_name):
    b = fresh_broker()
    b.create_topic(topic_name, partitions=1)
    base = new_consumer(b, "g-" + topic_name, format="json", **{"auto.commit.enable": "true",
                                                                 "consumer.request.timeout.ms": "200"})
    assert requests.post(base + "/subscription", json={"topics": [topic_name]}, headers={"Content-Type": V2}).status_code == 204
    r = requests.post(f"{b.url}/topics/{topic_name}", json={"records": [{"value": {"n": 1}}]},
                      headers={"Content-Type": JSONV2})
    assert r.status_code == 200, r.text

    def read(base):
        got = requests.get(base + "/records", headers={"Accept": JSONV2})
        assert got.status_code == 200, got.text
        return got.json()

    assert [rec["value"] for rec in wait_until(lambda: read(base), 20, "the first record")] == [{"n": 1}]
    assert b.stop() == 0
    b = fresh_broker()
    base = base.replace(base.split("/consumers")[0], b.url)
    # Still a json instance: a binary read is the format mismatch (40601), not an unknown instance.
    r = requests.get(base + "/records", headers={"Accept": BINARY})
    assert r.status_code == 406 and r.json()["error_code"] == 40601, r.text
    # auto.commit.enable survived too: the record read before the restart was committed, so the
    # next read (which joins again with its subscription) starts after it.
    r = requests.post(f"{b.url}/topics/{topic_name}", json={"records": [{"value": {"n": 2}}]},
                      headers={"Content-Type": JSONV2})
    assert r.status_code == 200, r.text
    assert [rec["value"] for rec in wait_until(lambda: read(base), 20, "the record after the restart")] == [{"n": 2}]
    assert requests.delete(base).status_code == 204
