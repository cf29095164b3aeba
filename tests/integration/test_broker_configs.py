"""Issue 14 item 8: broker configs (Kafka's dynamic broker configs, KIP-226) over Confluent's v3
routes: per broker, every broker, and the cluster-wide defaults; they change the broker's
behaviour and survive a restart."""
import requests


def configs_by_name(broker, path):
    r = requests.get(broker.v3(path))
    assert r.status_code == 200, r.text
    return {c["name"]: c for c in r.json()["data"]}


def topic_config(broker, topic, name):
    r = requests.get(broker.v3(f"/topics/{topic}/configs/{name}"))
    assert r.status_code == 200, r.text
    return r.json()["value"]


def test_broker_configs_routes_precedence_behaviour_and_restart(fresh_broker):
    broker = fresh_broker(["log.retention.ms=1000"])
    broker.create_topic("orders", partitions=1)
    configs = configs_by_name(broker, "/brokers/0/configs")
    retention = configs["log.retention.ms"]
    assert retention["kind"] == "KafkaBrokerConfig" and retention["broker_id"] == 0, retention
    assert retention["value"] == "1000" and retention["source"] == "STATIC_BROKER_CONFIG", retention
    assert retention["is_read_only"] is False and retention["is_default"] is False, retention
    assert [s["source"] for s in retention["synonyms"]] == ["STATIC_BROKER_CONFIG", "DEFAULT_CONFIG"], retention
    assert configs["log.dirs"]["is_read_only"] is True
    assert configs["min.insync.replicas"]["is_default"] is True
    assert retention["metadata"]["self"] == broker.v3("/brokers/0/configs/log.retention.ms")
    assert requests.get(retention["metadata"]["self"]).json()["value"] == "1000"
    every = requests.get(broker.v3("/brokers/-/configs")).json()["data"]
    assert {(c["broker_id"], c["name"]) for c in every} == {(0, name) for name in configs}

    # Cluster-wide: 404 until set, then every broker without its own value reads it.
    assert requests.get(broker.v3("/broker-configs")).json()["data"] == []
    assert requests.get(broker.v3("/broker-configs/log.retention.ms")).status_code == 404
    r = requests.put(broker.v3("/broker-configs/log.retention.ms"), json={"value": "2000"})
    assert r.status_code == 204, r.text
    got = requests.get(broker.v3("/broker-configs/log.retention.ms")).json()
    assert got["kind"] == "KafkaClusterConfig" and got["value"] == "2000", got
    assert got["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG" and got["config_type"] == "BROKER", got
    assert configs_by_name(broker, "/brokers/0/configs")["log.retention.ms"]["value"] == "2000"
    assert topic_config(broker, "orders", "retention.ms") == "2000"
    # The topic config names where its value comes from (Kafka's DescribeConfigs sources and synonyms).
    inherited = requests.get(broker.v3("/topics/orders/configs/retention.ms")).json()
    # Kafka's isDefault (which Confluent's is_default reports) holds only for DEFAULT_CONFIG values.
    assert inherited["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG" and inherited["is_default"] is False, inherited
    assert [(x["name"], x["source"]) for x in inherited["synonyms"]] == [
        ("log.retention.ms", "DYNAMIC_DEFAULT_BROKER_CONFIG"), ("log.retention.ms", "STATIC_BROKER_CONFIG"),
        ("log.retention.ms", "DEFAULT_CONFIG")], inherited
    r = requests.put(broker.v3("/topics/orders/configs/retention.bytes"), json={"value": "1000000"})
    assert r.status_code == 204, r.text
    own = requests.get(broker.v3("/topics/orders/configs/retention.bytes")).json()
    assert own["source"] == "DYNAMIC_TOPIC_CONFIG" and own["synonyms"][0] == {
        "name": "retention.bytes", "value": "1000000", "source": "DYNAMIC_TOPIC_CONFIG"}, own
    assert own["synonyms"][1]["name"] == "log.retention.bytes", own

    # The broker's own value wins; min.insync.replicas=2 on one node refuses acks=all produce.
    r = requests.post(broker.v3("/brokers/0/configs:alter"),
                      json={"data": [{"name": "log.retention.ms", "value": "3000"},
                                     {"name": "min.insync.replicas", "value": "2"}]})
    assert r.status_code == 204, r.text
    retention = configs_by_name(broker, "/brokers/0/configs")["log.retention.ms"]
    assert retention["value"] == "3000" and retention["source"] == "DYNAMIC_BROKER_CONFIG", retention
    assert [s["value"] for s in retention["synonyms"]] == ["3000", "2000", "1000", str(7 * 24 * 3600 * 1000)]
    assert topic_config(broker, "orders", "retention.ms") == "3000"
    produced = requests.post(broker.v3("/topics/orders/records"), json={"value": {"type": "STRING", "data": "x"}})
    assert produced.json()["error_code"] != 200 and "min.insync.replicas" in produced.json()["message"], produced.text

    # Refusals: name them, change nothing.
    r = requests.put(broker.v3("/brokers/0/configs/log.dirs"), json={"value": "/elsewhere"})
    assert r.status_code == 400 and "read-only" in r.json()["message"], r.text
    r = requests.put(broker.v3("/brokers/0/configs/log.retention.ms"), json={"value": "soon"})
    assert r.status_code == 400 and "log.retention.ms" in r.json()["message"], r.text
    r = requests.put(broker.v3("/brokers/0/configs/no.such.config"), json={"value": "1"})
    assert r.status_code == 404, r.text
    assert requests.get(broker.v3("/brokers/0/configs/no.such.config")).status_code == 404
    assert requests.delete(broker.v3("/broker-configs/no.such.config")).status_code == 404
    assert requests.get(broker.v3("/brokers/7/configs")).status_code == 404
    assert requests.put(broker.v3("/brokers/7/configs/log.retention.ms"), json={"value": "1"}).status_code == 404
    r = requests.post(broker.v3("/broker-configs:alter"),
                      json={"data": [{"name": "log.retention.ms", "value": "5"}], "validate_only": True})
    assert r.status_code == 204, r.text
    r = requests.put(broker.v3("/broker-configs/log.retention.ms"), json={"wrong": "1"})
    assert r.status_code == 422, r.text
    assert requests.get(broker.v3("/broker-configs/log.retention.ms")).json()["value"] == "2000"

    # A restart keeps every dynamic value.
    assert broker.stop() == 0
    broker.start()
    configs = configs_by_name(broker, "/brokers/0/configs")
    assert configs["log.retention.ms"]["value"] == "3000"
    assert configs["min.insync.replicas"]["value"] == "2"
    assert requests.get(broker.v3("/broker-configs/log.retention.ms")).json()["value"] == "2000"
    assert topic_config(broker, "orders", "retention.ms") == "3000"

    # Removing them falls back: broker -> cluster-wide -> static.
    assert requests.delete(broker.v3("/brokers/0/configs/log.retention.ms")).status_code == 204
    assert requests.delete(broker.v3("/brokers/0/configs/min.insync.replicas")).status_code == 204
    assert topic_config(broker, "orders", "retention.ms") == "2000"
    produced = requests.post(broker.v3("/topics/orders/records"), json={"value": {"type": "STRING", "data": "x"}})
    assert produced.status_code == 200 and produced.json()["error_code"] == 200, produced.text
    r = requests.post(broker.v3("/broker-configs:alter"), json={"data": [{"name": "log.retention.ms", "operation": "DELETE"}]})
    assert r.status_code == 204, r.text
    assert topic_config(broker, "orders", "retention.ms") == "1000"
    assert requests.get(broker.v3("/broker-configs")).json()["data"] == []


def test_a_dynamic_message_max_bytes_bounds_http_records(fresh_broker):
    broker = fresh_broker(["message.max.bytes=2000"])
    broker.create_topic("big", partitions=1)
    url = broker.v3("/topics/big/records")
    record = {"value": {"type": "STRING", "data": "x" * 3000}}
    refused = requests.post(url, json=record)
    assert refused.status_code == 200 and refused.json()["error_code"] == 42201, refused.text
    assert "message.max.bytes=2000" in refused.json()["message"], refused.text
    r = requests.put(broker.v3("/broker-configs/message.max.bytes"), json={"value": "10000"})
    assert r.status_code == 204, r.text
    stored = requests.post(url, json=record)
    assert stored.status_code == 200 and stored.json()["error_code"] == 200, stored.text
    assert requests.delete(broker.v3("/broker-configs/message.max.bytes")).status_code == 204
    again = requests.post(url, json=record)
    assert again.json()["error_code"] == 42201, again.text
