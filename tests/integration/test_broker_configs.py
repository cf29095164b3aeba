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


def test_compaction_configs_have_kafkas_broker_level_defaults(fresh_broker):
    # log.cleanup.policy, log.cleaner.min.cleanable.ratio, log.cleaner.delete.retention.ms and
    # log.cleaner.{min,max}.compaction.lag.ms default the topic configs, as log.retention.ms does.
    broker = fresh_broker(["log.cleanup.policy=compact", "log.cleaner.min.cleanable.ratio=0.1",
                           "log.cleaner.delete.retention.ms=1000", "log.cleaner.min.compaction.lag.ms=5",
                           "log.cleaner.max.compaction.lag.ms=60000"])
    broker.create_topic("table", partitions=1)
    expected = {"cleanup.policy": ("log.cleanup.policy", "compact"),
                "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio", "0.1"),
                "delete.retention.ms": ("log.cleaner.delete.retention.ms", "1000"),
                "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms", "5"),
                "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms", "60000")}
    topic = configs_by_name(broker, "/topics/table/configs")
    own = configs_by_name(broker, "/brokers/0/configs")
    for name, (broker_name, value) in expected.items():
        c = topic[name]
        assert c["value"] == value and c["source"] == "STATIC_BROKER_CONFIG", c
        assert [(s["name"], s["source"]) for s in c["synonyms"]] == [
            (broker_name, "STATIC_BROKER_CONFIG"), (broker_name, "DEFAULT_CONFIG")], c
        b = own[broker_name]
        assert b["value"] == value and b["source"] == "STATIC_BROKER_CONFIG" and b["is_read_only"] is False, b
    # The topic is compacted: a record without a key is refused.
    r = requests.post(broker.v3("/topics/table/records"), json={"value": {"type": "STRING", "data": "x"}})
    assert r.json()["error_code"] == 422 and "cleanup.policy=compact" in r.json()["message"], r.text
    # A topic's own value wins.
    broker.create_topic("events", partitions=1, configs={"cleanup.policy": "delete"})
    r = requests.post(broker.v3("/topics/events/records"), json={"value": {"type": "STRING", "data": "x"}})
    assert r.json()["error_code"] == 200, r.text
    # A topic's min.compaction.lag.ms is checked against the broker default max (Kafka's rule).
    r = requests.post(broker.v3("/topics"), json={"topic_name": "lagged", "configs": [
        {"name": "min.compaction.lag.ms", "value": "70000"}]})
    assert r.status_code == 400 and "min.compaction.lag.ms (70000) > max.compaction.lag.ms (60000)" in r.text, r.text
    # Cluster-wide dynamic default (KIP-226), then back to the static one.
    r = requests.put(broker.v3("/broker-configs/log.cleaner.min.cleanable.ratio"), json={"value": "0.75"})
    assert r.status_code == 204, r.text
    assert topic_config(broker, "table", "min.cleanable.dirty.ratio") == "0.75"
    r = requests.put(broker.v3("/broker-configs/log.cleaner.min.cleanable.ratio"), json={"value": "2"})
    assert r.status_code == 400 and "min.cleanable.dirty.ratio" in r.json()["message"], r.text
    assert requests.delete(broker.v3("/broker-configs/log.cleaner.min.cleanable.ratio")).status_code == 204
    assert topic_config(broker, "table", "min.cleanable.dirty.ratio") == "0.1"


def test_compaction_broker_defaults_are_refused_naming_the_key(ringlog_bin, tmp_path):
    import subprocess
    for sets, message in [(["log.cleanup.policy=shrink"], "log.cleanup.policy=shrink: must be delete, compact or"),
                          (["log.cleaner.min.cleanable.ratio=1.5"],
                           "log.cleaner.min.cleanable.ratio=1.5: must be a number in [0, 1]"),
                          (["log.cleaner.min.compaction.lag.ms=10", "log.cleaner.max.compaction.lag.ms=5"],
                           "log.cleaner.min.compaction.lag.ms=10: must be at most log.cleaner.max.compaction.lag.ms=5")]:
        args = [str(ringlog_bin), "serve", "--set", "listeners=http://127.0.0.1:1", "--set", f"log.dirs={tmp_path}"]
        for s in sets:
            args += ["--set", s]
        out = subprocess.run(args, capture_output=True, text=True, timeout=20)
        assert out.returncode == 2 and message in out.stdout + out.stderr, (out.returncode, out.stdout, out.stderr)
    help_text = subprocess.run([str(ringlog_bin), "serve", "--help"], capture_output=True, text=True, timeout=20).stdout
    for key in ("log.cleanup.policy", "log.cleaner.min.cleanable.ratio", "log.cleaner.delete.retention.ms",
                "log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"):
        assert key in help_text, key


def test_a_dynamic_message_max_bytes_bounds_kafka_batches_as_http_records(ringlog_bin, tmp_path):
    # One append pipeline (issue 28): a Kafka producer's batches are checked against the same
    # live broker config as HTTP records, dynamic broker configs included (the Kafka path read the
    # static one before, so a raised message.max.bytes let HTTP records through but not batches).
    from confluent_kafka import KafkaError, Producer
    from conftest import Broker, free_port
    broker = Broker(tmp_path / "ringlog-data", ["message.max.bytes=2000"], kafka_port=free_port()).start()
    try:
        broker.create_topic("big", partitions=1)

        def send(value):
            outcome = []
            p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0,
                          "enable.idempotence": False, "retries": 0})
            p.produce("big", value=value, partition=0, on_delivery=lambda err, _m: outcome.append(err))
            assert p.flush(30) == 0 and len(outcome) == 1
            return outcome[0]

        refused = send(b"x" * 3000)
        assert refused is not None and refused.code() == KafkaError.MSG_SIZE_TOO_LARGE, refused
        r = requests.put(broker.v3("/broker-configs/message.max.bytes"), json={"value": "10000"})
        assert r.status_code == 204, r.text
        assert send(b"x" * 3000) is None
        assert requests.delete(broker.v3("/broker-configs/message.max.bytes")).status_code == 204
        again = send(b"x" * 3000)
        assert again is not None and again.code() == KafkaError.MSG_SIZE_TOO_LARGE, again
    finally:
        broker.stop()
