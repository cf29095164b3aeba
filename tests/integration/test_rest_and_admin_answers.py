"""Answers a new user (session 36, an application moving off Kafka and Confluent's REST Proxy)
found wrong, each against what Kafka or Confluent answers. Each test failed before its fix.
"""
import socket
import struct

import pytest
import requests

from conftest import Broker, free_port

V2 = "application/vnd.kafka.v2+json"


@pytest.fixture(scope="module")
def kbroker(ringlog_bin, tmp_path_factory):
    b = Broker(tmp_path_factory.mktemp("data") / "ringlog-data", kafka_port=free_port()).start()
    yield b
    assert b.stop() == 0


def cluster_id(b):
    return requests.get(f"{b.url}/v3/clusters", timeout=10).json()["data"][0]["cluster_id"]


def test_a_v3_produce_numbered_by_sequence_without_a_producer_id_is_refused(kbroker, topic_name):
    """ws-protocol.md: "sequence without producer_id is 422. The same rules hold for the HTTP v3
    produce". v3 stored such a record as an ordinary one, so a resend was stored twice."""
    kbroker.create_topic(topic_name)
    base = f"{kbroker.url}/v3/clusters/{cluster_id(kbroker)}/topics/{topic_name}"
    record = {"partition_id": 0, "sequence": 0, "value": {"type": "STRING", "data": "v"}}
    one = requests.post(f"{base}/records", json=record, timeout=10)
    assert one.status_code == 200 and one.json()["error_code"] == 422, one.text   # v3: the record's report
    assert "producer_id" in one.json()["message"], one.text
    batch = requests.post(f"{base}/records:batch", json={"entries": [dict(record, id="a"),
                                                                     {"id": "b", "value": {"type": "STRING", "data": "w"}}]},
                          timeout=10)
    assert batch.status_code == 207, batch.text
    body = batch.json()
    assert [f["id"] for f in body["failures"]] == ["a"] and body["failures"][0]["error_code"] == 422, body
    assert [s["id"] for s in body["successes"]] == ["b"], body
    # Only the record without a sequence was stored.
    offsets = requests.get(f"{kbroker.url}/topics/{topic_name}/partitions/0/offsets", timeout=10).json()
    assert offsets["end_offset"] == 1, offsets


def test_a_transactions_state_filter_names_the_bad_value(kbroker):
    """The 400's message ended in C++ source text (`got  + s->second + `)."""
    r = requests.get(f"{kbroker.url}/v3/clusters/{cluster_id(kbroker)}/transactions?state=Nope", timeout=10)
    assert r.status_code == 400 and r.json()["message"].endswith('got "Nope"'), r.text


def test_a_reset_naming_a_partition_the_topic_lacks_is_partition_not_found(kbroker, topic_name):
    """Confluent's 40402 (partition not found) for a partition of an existing topic, not 40401."""
    kbroker.create_topic(topic_name, partitions=1)
    url = f"{kbroker.url}/v3/clusters/{cluster_id(kbroker)}/consumer-groups/g-{topic_name}/offsets:reset"
    r = requests.post(url, json={"to": "earliest", "topics": [f"{topic_name}:0,5"], "dry_run": False}, timeout=10)
    assert r.status_code == 404 and r.json()["error_code"] == 40402, r.text
    r = requests.post(url, json={"to": "earliest", "topics": ["no-such-topic:0"], "dry_run": False}, timeout=10)
    assert r.status_code == 404 and r.json()["error_code"] == 40401, r.text


def test_a_consumer_format_is_read_in_any_case(kbroker):
    """Confluent reads "format" as EmbeddedFormat of its upper case: "BINARY" and "Json" are formats."""
    for fmt in ("BINARY", "Json"):
        r = requests.post(f"{kbroker.url}/consumers/g-format-{fmt}", headers={"Content-Type": V2},
                          json={"name": "c", "format": fmt}, timeout=10)
        assert r.status_code == 200, (fmt, r.text)
        requests.delete(r.json()["base_uri"], headers={"Content-Type": V2}, timeout=10)
    r = requests.post(f"{kbroker.url}/consumers/g-format-bad", headers={"Content-Type": V2},
                      json={"name": "c", "format": "xml"}, timeout=10)
    assert r.status_code == 422 and "format" in r.json()["message"], r.text


def _string(text):
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _configs_request(api_key, resources, with_ops):
    """AlterConfigs (33) or IncrementalAlterConfigs (44) v0: [(type, name, [(key, op, value)])]."""
    body = struct.pack(">i", len(resources))
    for resource_type, name, configs in resources:
        body += struct.pack(">b", resource_type) + _string(name) + struct.pack(">i", len(configs))
        for key, op, value in configs:
            body += _string(key) + (struct.pack(">b", op) if with_ops else b"") + _string(value)
    body += struct.pack(">?", False)
    return struct.pack(">hhi", api_key, 0, 7) + _string("dup-test") + body


def _first_resource_error(b, payload):
    with socket.create_connection(("127.0.0.1", b.kafka_port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", s.recv(4))[0]
        data = b""
        while len(data) < size:
            data += s.recv(size - len(data))
    pos = 4 + 4 + 4   # correlation id, throttle time, resource count
    code, length = struct.unpack_from(">hh", data, pos)
    message = data[pos + 4:pos + 4 + length].decode() if length >= 0 else None
    return code, message


def test_a_config_key_named_twice_in_one_resource_is_an_invalid_request(kbroker, topic_name):
    """Kafka refuses it ("Error due to duplicate config keys", INVALID_REQUEST 42); ringlog let the
    last one win."""
    kbroker.create_topic(topic_name)
    twice = [("retention.ms", 0, "1000"), ("retention.ms", 1, "2000")]
    for api_key, with_ops in ((44, True), (33, False)):
        code, message = _first_resource_error(kbroker, _configs_request(api_key, [(2, topic_name, twice)], with_ops))
        assert code == 42 and "duplicate config keys" in message and "retention.ms" in message, (api_key, code, message)
    once = [("retention.ms", 0, "1000")]
    assert _first_resource_error(kbroker, _configs_request(44, [(2, topic_name, once)], True))[0] == 0
