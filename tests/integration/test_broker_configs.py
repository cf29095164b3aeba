"""Issue 14 item 8: broker configs (Kafka's dynamic broker configs, KIP-226) over Confluent's v3
routes: per broker, every broker, and the cluster-wide defaults; they change the broker's
behaviour and survive a restart."""
import subprocess

import requests

from conftest import binary_path


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


def test_cli_shows_only_topic_overrides_and_refuses_deleting_an_inherited_config(fresh_broker):
    """A new user (session 29): broker-level values showed as every topic's overrides in `topics
    describe`, and `--delete-config` of one said "Altered topic" while nothing changed."""
    broker = fresh_broker()
    broker.create_topic("plain", partitions=1)
    broker.create_topic("own", partitions=1, configs={"retention.bytes": "1000000"})
    r = requests.put(broker.v3("/brokers/0/configs/log.retention.ms"), json={"value": "3600000"})
    assert r.status_code == 204, r.text
    r = requests.put(broker.v3("/broker-configs/log.roll.ms"), json={"value": "86400000"})
    assert r.status_code == 204, r.text
    assert topic_config(broker, "plain", "segment.ms") == "86400000"

    def cli(*args):
        return subprocess.run([str(binary_path()), "topics", *args, "--bootstrap-server", broker.url],
                              capture_output=True, text=True, timeout=60)

    def configs_line(topic):
        out = cli("describe", topic)
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines()[0].split("Configs: ")[1]

    assert configs_line("plain") == "", "inherited broker values are not the topic's overrides"
    assert configs_line("own") == "retention.bytes=1000000"

    # Deleting what the topic does not override: refused, naming where the value comes from; nothing changes.
    out = cli("alter", "plain", "--delete-config", "segment.ms", "--config", "retention.bytes=5")
    assert out.returncode == 1 and "Altered" not in out.stdout, out
    assert "plain has no override of segment.ms (it comes from the broker config log.roll.ms=86400000 " \
           "(DYNAMIC_DEFAULT_BROKER_CONFIG))" in out.stderr, out.stderr
    out = cli("alter", "plain", "--delete-config", "retention.ms")
    assert out.returncode == 1 and "log.retention.ms=3600000 (DYNAMIC_BROKER_CONFIG)" in out.stderr, out.stderr
    out = cli("alter", "plain", "--delete-config", "max.message.bytes")
    assert out.returncode == 1 and "(it comes from the default)" in out.stderr, out.stderr
    assert configs_line("plain") == ""
    # An override is deleted as before.
    out = cli("alter", "own", "--delete-config", "retention.bytes")
    assert out.returncode == 0 and out.stdout == "Altered topic own.\n", out
    assert configs_line("own") == ""
    # Confluent's v3 DELETE of a config the topic does not override is a 204 no-op (Kafka's
    # IncrementalAlterConfigs DELETE); the value stays the inherited one.
    assert requests.delete(broker.v3("/topics/plain/configs/segment.ms")).status_code == 204
    assert topic_config(broker, "plain", "segment.ms") == "86400000"


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
    # The static key's bounds hold for the dynamic one too (the breaker of session 36 set 0 and
    # every produce failed after it).
    for value in ("0", "10", "1023", str(64 * 1024 * 1024 + 1)):
        r = requests.put(broker.v3("/broker-configs/message.max.bytes"), json={"value": value})
        assert r.status_code == 400 and "[1024, 67108864]" in r.json()["message"], (value, r.text)
    assert requests.post(url, json={"value": {"type": "STRING", "data": "x"}}).json()["error_code"] == 200


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


def test_compression_type_is_a_broker_config_that_topics_inherit(ringlog_bin, tmp_path):
    """Issue 27 item 4: Kafka's broker compression.type (static in server.properties, dynamic per
    broker or cluster-wide) is the compression.type of every topic without its own; stored batches
    are recompressed to it on every append door, and a topic's own value wins."""
    import asyncio
    import base64
    import json
    import subprocess
    import websockets
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
    import kafka_wire as kw
    from conftest import Broker, free_port, wait_until

    broker = Broker(tmp_path / "ringlog-data", ["compression.type=lz4"], kafka_port=free_port()).start()
    try:
        node = str(requests.get(broker.v3("/brokers")).json()["data"][0]["broker_id"])
        own = configs_by_name(broker, f"/brokers/{node}/configs")["compression.type"]
        assert own["value"] == "lz4" and own["source"] == "STATIC_BROKER_CONFIG" and own["is_read_only"] is False, own
        assert [(s["value"], s["source"]) for s in own["synonyms"]] == [
            ("lz4", "STATIC_BROKER_CONFIG"), ("producer", "DEFAULT_CONFIG")], own

        # Cluster-wide dynamic default with Confluent's batch body, validate_only first.
        alter = {"data": [{"name": "compression.type", "value": "zstd", "operation": "SET"}]}
        r = requests.post(broker.v3("/broker-configs:alter"), json=alter | {"validate_only": True})
        assert r.status_code == 204, r.text
        assert requests.get(broker.v3("/broker-configs/compression.type")).status_code == 404
        r = requests.post(broker.v3("/broker-configs:alter"), json=alter)
        assert r.status_code == 204, r.text
        got = requests.get(broker.v3("/broker-configs/compression.type")).json()
        assert got["value"] == "zstd" and got["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG", got
        r = requests.put(broker.v3("/broker-configs/compression.type"), json={"value": "none"})
        assert r.status_code == 400 and "compression.type" in r.json()["message"], r.text   # Kafka says uncompressed

        broker.create_topic("inherits", partitions=1)
        broker.create_topic("own", partitions=1, configs={"compression.type": "snappy"})
        inherited = requests.get(broker.v3("/topics/inherits/configs/compression.type")).json()
        assert inherited["value"] == "zstd" and inherited["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG", inherited
        assert [(s["name"], s["value"], s["source"]) for s in inherited["synonyms"]] == [
            ("compression.type", "zstd", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
            ("compression.type", "lz4", "STATIC_BROKER_CONFIG"),
            ("compression.type", "producer", "DEFAULT_CONFIG")], inherited

        # Kafka DescribeConfigs (librdkafka asks for synonyms) on the BROKER and the TOPIC.
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        b_res, t_res = ConfigResource("broker", node), ConfigResource("topic", "inherits")
        b_entry = admin.describe_configs([b_res])[b_res].result(10)["compression.type"]
        assert (b_entry.value, b_entry.source) == ("zstd", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value), b_entry
        assert not b_entry.is_read_only, b_entry
        t_entry = admin.describe_configs([t_res])[t_res].result(10)["compression.type"]
        assert (t_entry.value, t_entry.source) == ("zstd", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value), t_entry
        # The synonyms, in Kafka's order (kafka-python keeps them as a list; librdkafka's is a dict by name).
        from kafka.admin import ConfigResource as KafkaConfigResource, ConfigResourceType, KafkaAdminClient
        kadmin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            (resp,) = kadmin.describe_configs([KafkaConfigResource(ConfigResourceType.TOPIC, "inherits")],
                                              include_synonyms=True)
        finally:
            kadmin.close()
        (entry,) = [e for e in resp.resources[0][4] if e[0] == "compression.type"]
        assert (entry[1], entry[3]) == ("zstd", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value), entry
        assert [(syn[0], syn[1], syn[2]) for syn in entry[5]] == [
            ("compression.type", "zstd", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value),
            ("compression.type", "lz4", ConfigSource.STATIC_BROKER_CONFIG.value),
            ("compression.type", "producer", ConfigSource.DEFAULT_CONFIG.value)], entry

        # Uncompressed batches from kcat, HTTP v3, HTTP v2 and WebSocket are stored as each topic says.
        for topic in ("inherits", "own"):
            r = subprocess.run(["kcat", "-b", broker.bootstrap, "-P", "-t", topic, "-p", "0", "-z", "none"],
                               input=b"kcat-1\nkcat-2\n", capture_output=True, timeout=30)
            assert r.returncode == 0, r.stderr
            r = requests.post(broker.v3(f"/topics/{topic}/records"), json={"value": {"type": "STRING", "data": "v3"}})
            assert r.json()["error_code"] == 200, r.text
            r = requests.post(f"{broker.url}/topics/{topic}", json={"records": [{"value": base64.b64encode(b"v2").decode()}]},
                              headers={"Content-Type": "application/vnd.kafka.binary.v2+json"})
            assert r.status_code == 200, r.text

            async def ws_produce(topic=topic):
                async with websockets.connect(f"ws://127.0.0.1:{broker.port}/v1/ws") as ws:
                    await ws.send(json.dumps({"type": "produce", "id": 1, "topic": topic, "partition": 0,
                                              "value": base64.b64encode(b"ws").decode()}))
                    ack = json.loads(await asyncio.wait_for(ws.recv(), 10))
                    assert ack["type"] == "produce_ack", ack
            asyncio.run(ws_produce())
        codecs = {}
        for topic in ("inherits", "own"):
            with kw.connect(broker.bootstrap) as s:
                _, body = kw.exchange(s, kw.API_FETCH, 4, 1, kw.fetch_v4(topic, 0, 0))
            codecs[topic] = [a & 7 for a in kw.batch_attributes(kw.parse_fetch_v4(body)[0][4])]
        assert codecs == {"inherits": [4, 4, 4, 4], "own": [2, 2, 2, 2]}, codecs   # zstd; snappy
        segment = broker.data_dir / "inherits-0" / "00000000000000000000.log"
        dumped = subprocess.run([str(ringlog_bin), "dump-log", str(segment)], capture_output=True, text=True, timeout=30)
        assert dumped.returncode == 0 and dumped.stdout.count("compresscodec: zstd") == 4, dumped.stdout + dumped.stderr
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "unused", "enable.auto.commit": False})
        c.assign([TopicPartition("inherits", 0, 0)])
        got = []

        def read():
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m.value())
            return len(got) == 5
        wait_until(read, 15, "5 records of 'inherits'")
        c.close()
        assert got == [b"kcat-1", b"kcat-2", b"v3", b"v2", b"ws"], got

        # Kafka IncrementalAlterConfigs on the cluster-wide default ("" names it), then its removal:
        # the static value applies again.
        assert kw.incremental_alter_config_v0(broker.bootstrap, kw.RESOURCE_BROKER, "", "compression.type", "gzip")[0] == 0
        assert configs_by_name(broker, f"/brokers/{node}/configs")["compression.type"]["value"] == "gzip"
        assert kw.incremental_alter_config_v0(broker.bootstrap, kw.RESOURCE_BROKER, "", "compression.type", None,
                                              operation=1)[0] == 0
        assert topic_config(broker, "inherits", "compression.type") == "lz4"
        requests.post(broker.v3("/topics/inherits/records"), json={"value": {"type": "STRING", "data": "lz4"}})
        with kw.connect(broker.bootstrap) as s:
            _, body = kw.exchange(s, kw.API_FETCH, 4, 1, kw.fetch_v4("inherits", 0, 5))
        assert [a & 7 for a in kw.batch_attributes(kw.parse_fetch_v4(body)[0][4])] == [3]   # lz4
        # The help and the shipped file name the static key.
        help_text = subprocess.run([str(ringlog_bin), "serve", "--help"], capture_output=True, text=True, timeout=20).stdout
        assert "compression.type" in help_text
    finally:
        assert broker.stop() == 0


def test_kafka_produce_follows_dynamic_broker_defaults(ringlog_bin, tmp_path):
    """Kafka Produce reads the live broker config, as HTTP produce does: a cluster-wide
    log.cleanup.policy=compact refuses keyless batches at once (its log config came from the
    static config; message.max.bytes was already checked live before the append)."""
    import kafka_wire as kw
    from conftest import Broker, free_port

    broker = Broker(tmp_path / "ringlog-data", kafka_port=free_port()).start()
    try:
        broker.create_topic("bounded", partitions=1)

        def produce(key, value):
            with kw.connect(broker.bootstrap) as s:
                _, body = kw.exchange(s, kw.API_PRODUCE, 3, 1, kw.produce_v3("bounded", 0, kw.batch([(key, value, [], 1)])))
            return kw.parse_produce_v3(body)[0][2]

        assert produce(None, b"x" * 3000) == 0
        r = requests.post(broker.v3("/broker-configs:alter"), json={"data": [
            {"name": "message.max.bytes", "value": "2000"}, {"name": "log.cleanup.policy", "value": "compact"}]})
        assert r.status_code == 204, r.text
        assert produce(b"k", b"x" * 3000) == 10    # MESSAGE_TOO_LARGE
        assert produce(None, b"small") == 87       # INVALID_RECORD: a compacted topic's record needs a key
        assert produce(b"k", b"small") == 0
    finally:
        assert broker.stop() == 0


def test_compression_levels_kip_390(ringlog_bin, tmp_path):
    """compression.{gzip,lz4,zstd}.level (KIP-390): topic configs whose broker defaults have the
    same names; the level a topic's codec recompresses at. Levels do not make a batch in the
    topic's codec recompress (as in Kafka)."""
    import base64
    import kafka_wire as kw
    from conftest import Broker, free_port

    broker = Broker(tmp_path / "ringlog-data", ["compression.zstd.level=1"], kafka_port=free_port()).start()
    try:
        words = [b"offset ", b"leader ", b"epoch ", b"batch ", b"segment ", b"replica ", b"fetch ", b"isr "]
        x, value = 12345, b""
        while len(value) < 200_000:
            x = (x * 1664525 + 1013904223) % (1 << 32)
            value += words[(x >> 16) % 8]

        def stored_size(topic):
            r = requests.post(f"{broker.url}/topics/{topic}", json={"records": [{"value": base64.b64encode(value).decode()}]},
                              headers={"Content-Type": "application/vnd.kafka.binary.v2+json"})
            assert r.status_code == 200, r.text
            with kw.connect(broker.bootstrap) as s:
                _, body = kw.exchange(s, kw.API_FETCH, 4, 1, kw.fetch_v4(topic, 0, 0))
            records = kw.parse_fetch_v4(body)[0][4]
            assert [a & 7 for a in kw.batch_attributes(records)] in ([1], [4]), records[:64]
            return len(records)

        broker.create_topic("gzip-1", configs={"compression.type": "gzip", "compression.gzip.level": "1"})
        broker.create_topic("gzip-9", configs={"compression.type": "gzip", "compression.gzip.level": "9"})
        assert stored_size("gzip-9") < stored_size("gzip-1")
        # The broker's static level, then a cluster-wide dynamic one, for topics without their own.
        broker.create_topic("zstd", configs={"compression.type": "zstd"})
        level = requests.get(broker.v3("/topics/zstd/configs/compression.zstd.level")).json()
        assert (level["value"], level["source"]) == ("1", "STATIC_BROKER_CONFIG"), level
        at_1 = stored_size("zstd")
        r = requests.put(broker.v3("/broker-configs/compression.zstd.level"), json={"value": "19"})
        assert r.status_code == 204, r.text
        broker.create_topic("zstd-19", configs={"compression.type": "zstd"})
        assert stored_size("zstd-19") < at_1
        level = requests.get(broker.v3("/topics/zstd-19/configs/compression.zstd.level")).json()
        assert (level["value"], level["source"]) == ("19", "DYNAMIC_DEFAULT_BROKER_CONFIG"), level
        # Kafka's bounds, named.
        for name, value_text in [("compression.gzip.level", "0"), ("compression.lz4.level", "18"),
                                 ("compression.zstd.level", "23")]:
            r = requests.put(broker.v3(f"/topics/zstd/configs/{name}"), json={"value": value_text})
            assert r.status_code == 400 and name in r.json()["message"], r.text
            r = requests.put(broker.v3(f"/broker-configs/{name}"), json={"value": value_text})
            assert r.status_code == 400 and name in r.json()["message"], r.text
    finally:
        assert broker.stop() == 0


def test_internal_topics_keep_the_writers_compression_not_the_brokers(ringlog_bin, tmp_path):
    """Issue 27 (third pass, left open): the broker's compression.type recompressed the broker's own
    topics too (delay topics, __consumer_offsets) and a group's retry and dead-letter topics. Kafka
    creates its internal topics with compression.type=producer; so does ringlog now: the delay
    topic's and __consumer_offsets' batches stay as the broker wrote them (uncompressed), while a
    user topic inheriting zstd is still stored as zstd."""
    import pathlib
    import subprocess
    from conftest import Broker, wait_until

    def codecs(data_dir, prefix):
        out = []
        for segment in sorted(pathlib.Path(data_dir).glob(f"{prefix}*/*.log")):
            dumped = subprocess.run([str(ringlog_bin), "dump-log", str(segment)], capture_output=True, text=True,
                                    timeout=30)
            assert dumped.returncode == 0, dumped.stderr
            out += [line.split("compresscodec: ")[1].split()[0] for line in dumped.stdout.splitlines()
                    if "compresscodec: " in line]
        return out

    data = tmp_path / "ringlog-data"
    broker = Broker(data, ["compression.type=zstd"]).start()
    try:
        broker.create_topic("user")
        r = requests.post(f"{broker.url}/topics/user", json={"records": [{"value": "bm93", "partition": 0},
                                                                         {"value": "bGF0ZXI=", "partition": 0,
                                                                          "delay_ms": 3600000}]},
                          headers={"Content-Type": "application/vnd.kafka.binary.v2+json"})
        assert r.status_code == 200, r.text
        # A group commit: a record of __consumer_offsets.
        v2 = {"Content-Type": "application/vnd.kafka.v2+json"}
        base = f"{broker.url}/consumers/g/instances/c"
        assert requests.post(f"{broker.url}/consumers/g", headers=v2, json={"name": "c"}).status_code == 200
        assert requests.post(f"{base}/subscription", headers=v2, json={"topics": ["user"]}).status_code == 204
        wait_until(lambda: requests.post(f"{base}/offsets", headers=v2, json={"offsets": [
            {"topic": "user", "partition": 0, "offset": 0}]}).status_code == 204 or None, 20, "a commit")
        requests.delete(base, headers=v2)
    finally:
        broker.stop()
    assert set(codecs(data, "user-")) == {"zstd"}
    delayed = codecs(data, "__delay-")
    offsets = codecs(data, "__consumer_offsets-")
    assert delayed and set(delayed) == {"none"}, delayed
    assert offsets and set(offsets) == {"none"}, offsets


def test_incremental_alter_configs_appends_to_and_subtracts_from_cleanup_policy(ringlog_bin, tmp_path):
    """KIP-339: APPEND and SUBTRACT apply to LIST configs, and cleanup.policy is one in Kafka
    ("compact,delete"). Session 33's new user had APPEND refused as "for list configs". APPEND
    adds the items not present to the effective value (the inherited "delete" here), SUBTRACT
    removes those present; on another config both are INVALID_CONFIG naming the config."""
    import kafka_wire as kw
    from conftest import Broker, free_port
    broker = Broker(tmp_path / "ringlog-data", kafka_port=free_port()).start()
    try:
        incremental_alter_cleanup_policy(broker, kw)
    finally:
        assert broker.stop() == 0


def incremental_alter_cleanup_policy(broker, kw):
    broker.create_topic("policies", partitions=1)
    append, subtract = 2, 3
    assert kw.incremental_alter_config_v0(broker.bootstrap, kw.RESOURCE_TOPIC, "policies", "cleanup.policy",
                                          "compact", operation=append) == (0, None)
    assert topic_config(broker, "policies", "cleanup.policy") == "delete,compact"
    # Appending a present item changes nothing (Kafka filters it out).
    assert kw.incremental_alter_config_v0(broker.bootstrap, kw.RESOURCE_TOPIC, "policies", "cleanup.policy",
                                          "delete", operation=append) == (0, None)
    assert topic_config(broker, "policies", "cleanup.policy") == "delete,compact"
    assert kw.incremental_alter_config_v0(broker.bootstrap, kw.RESOURCE_TOPIC, "policies", "cleanup.policy",
                                          "delete", operation=subtract) == (0, None)
    assert topic_config(broker, "policies", "cleanup.policy") == "compact"
    code, message = kw.incremental_alter_config_v0(broker.bootstrap, kw.RESOURCE_TOPIC, "policies", "retention.ms",
                                                   "1000", operation=append)
    assert code == 40 and "retention.ms" in message and "list configs" in message, (code, message)   # INVALID_CONFIG
    assert topic_config(broker, "policies", "cleanup.policy") == "compact"


def test_incremental_alter_configs_trims_list_items_as_the_parser_does(ringlog_bin, tmp_path):
    """APPEND and SUBTRACT items are trimmed of blanks, as the cleanup.policy parser trims them
    (Kafka's ConfigDef LIST type splits on "\\s*,\\s*"). SUBTRACT " delete" answered 0 and changed
    nothing, and APPEND " compact" stored "delete, compact" beside an existing "compact"."""
    import kafka_wire as kw
    from conftest import Broker, free_port
    broker = Broker(tmp_path / "ringlog-data", kafka_port=free_port()).start()
    try:
        append, subtract = 2, 3

        def alter(value, operation):
            assert kw.incremental_alter_config_v0(broker.bootstrap, kw.RESOURCE_TOPIC, "trimmed", "cleanup.policy",
                                                  value, operation=operation) == (0, None)
            return topic_config(broker, "trimmed", "cleanup.policy")

        broker.create_topic("trimmed", partitions=1, configs={"cleanup.policy": "delete,compact"})
        assert alter(" delete", subtract) == "compact"
        assert alter("compact ", append) == "compact", "a present item, blanks aside, is not appended again"
        assert alter(" delete , compact", append) == "compact,delete"
        assert alter("\tcompact ,", subtract) == "delete"
    finally:
        assert broker.stop() == 0


def test_kafkas_static_broker_configs_are_described_and_replication_factor_is_a_number(ringlog_bin, tmp_path):
    """Kafka's DescribeConfigs shows every broker config it defines; ringlog left out the Kafka keys
    it takes in its properties file but had no DescribeConfigs entry for, so REST v3 answered 404
    for auto.leader.rebalance.enable (session 33). Both doors list the same configs, each one GET
    by name finds. default.replication.factor's -1 ("automatic") is shown as the factor a new topic
    gets (1 on one broker), as Kafka shows its default 1, never -1."""
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
    from conftest import Broker, free_port
    broker = Broker(tmp_path / "ringlog-data", ["leader.imbalance.check.interval.seconds=60"],
                    kafka_port=free_port()).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        resource = ConfigResource("broker", "0")
        described = admin.describe_configs([resource])[resource].result(10)
        v3 = configs_by_name(broker, "/brokers/0/configs")
        assert set(described) == set(v3)
        for name in ("auto.leader.rebalance.enable", "unclean.leader.election.enable", "replica.lag.time.max.ms",
                     "listeners", "process.roles", "leader.imbalance.check.interval.seconds"):
            assert name in described, name
            r = requests.get(broker.v3(f"/brokers/0/configs/{name}"))
            assert r.status_code == 200 and r.json()["is_read_only"] is True, r.text
        rebalance = described["auto.leader.rebalance.enable"]
        assert (rebalance.value, rebalance.source, rebalance.is_read_only) == (
            "true", ConfigSource.DEFAULT_CONFIG.value, True), rebalance
        interval = v3["leader.imbalance.check.interval.seconds"]
        assert (interval["value"], interval["source"]) == ("60", "STATIC_BROKER_CONFIG"), interval
        assert [(s["value"], s["source"]) for s in interval["synonyms"]] == [
            ("60", "STATIC_BROKER_CONFIG"), ("30", "DEFAULT_CONFIG")], interval
        factor = described["default.replication.factor"]
        assert (factor.value, factor.source) == ("1", ConfigSource.DEFAULT_CONFIG.value), factor
        assert v3["default.replication.factor"]["value"] == "1"
        # Read-only: a change is refused naming it, not "not found".
        r = requests.put(broker.v3("/brokers/0/configs/auto.leader.rebalance.enable"), json={"value": "false"})
        assert r.status_code == 400 and "read-only" in r.json()["message"], r.text
        # Secrets are not among them.
        assert "ssl.key.password" not in described and "ssl.keystore.key" not in described
    finally:
        assert broker.stop() == 0
