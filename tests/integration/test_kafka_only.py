"""A broker with only Kafka listeners (no http:// or https://), as Kafka and Redpanda run without
their HTTP proxy.

Before session 35 `listeners=kafka://...` alone was refused at start ("an http:// or https://
listener is required"). Now the HTTP doors (REST, WebSocket, console, /metrics) are simply off,
one start-up line says so, and Kafka clients are served as usual. In a cluster where one node has
no HTTP listener, the others show its HTTP address as null, name it in unanswered_brokers of the
answers they gather from every broker, and refuse the HTTP calls of the groups it coordinates
naming why (Kafka clients use every broker).
"""
import subprocess
import uuid

import requests

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import binary_path, free_port, wait_until
from test_cluster import FAILOVER_DEADLINE_S, Cluster, Node, kill_nodes

NO_HTTP_LINE = "no http:// or https:// listener"


def served_line(log_path):
    """The start-up line saying the HTTP doors are off, once the node serves (None before)."""
    text = log_path.read_text() if log_path.exists() else ""
    if 'msg="serving"' not in text:
        return None
    return [line for line in text.splitlines() if NO_HTTP_LINE in line] or ["<missing>"]


def produce_and_consume(bootstrap, topic, count, replication_factor=1, partitions=2):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor)])[
        topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 30000})
    acked = []
    for i in range(count):
        producer.produce(topic, key=str(i).encode(), value=f"v{i}".encode(),
                         on_delivery=lambda err, msg: acked.append(err is None))
    assert producer.flush(30) == 0
    assert acked == [True] * count, acked
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g-" + topic, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    got = []
    try:
        def more():
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value().decode())
            return len(got) >= count
        wait_until(more, 60.0, f"{count} records of {topic}")
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert sorted(got) == sorted(f"v{i}" for i in range(count))


def test_a_kafka_only_broker_serves_kafka_clients(ringlog_bin, tmp_path):
    kafka_port = free_port()
    log_path = tmp_path / "ringlog.log"
    with open(log_path, "ab") as log:
        proc = subprocess.Popen([str(binary_path()), "serve", "--set", f"listeners=kafka://127.0.0.1:{kafka_port}",
                                 "--set", f"log.dirs={tmp_path / 'data'}", "--set", "num.shards=2"],
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            def started():
                if proc.poll() is not None:
                    raise AssertionError(f"ringlog exited with {proc.returncode}: {log_path.read_text()[-2000:]}")
                return served_line(log_path)
            lines = wait_until(started, 30.0, "the serving line")
            assert lines != ["<missing>"], log_path.read_text()[-2000:]
            assert "REST API, WebSocket, console and /metrics are off" in lines[0], lines
            serving = [line for line in log_path.read_text().splitlines() if 'msg="serving"' in line][0]
            assert "http://" not in serving, serving
            # Session 36's breaker: a Kafka-only broker's serving line said "listeners= cluster.id=...".
            assert f"listeners=kafka://127.0.0.1:{kafka_port} " in serving, serving
            produce_and_consume(f"127.0.0.1:{kafka_port}", "kafka-only", 20)
        finally:
            proc.terminate()
            assert proc.wait(timeout=30) == 0, log_path.read_text()[-2000:]


class KafkaOnlyNode(Node):
    """A cluster node whose listeners are kafka:// and cluster:// only."""

    def listeners(self):
        return f"kafka://127.0.0.1:{self.kafka_port},cluster://127.0.0.1:{self.cluster_port}"

    def healthy(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"node {self.node_id} exited with {self.proc.returncode}: "
                                 f"{self.log_path.read_text()[-2000:]}")
        return served_line(self.log_path) is not None


def test_a_cluster_with_a_kafka_only_node(ringlog_bin, tmp_path):
    c = Cluster(tmp_path, size=2, kafka=True)
    plain = c.nodes[1]
    c.nodes[1] = KafkaOnlyNode(plain.data_dir, 2, plain.cluster_port,
                               [s for s in plain.extra_sets if s.startswith("controller.quorum.voters=")][0].split(
                                   "=", 1)[1], ["num.shards=1"], kafka_port=plain.kafka_port)
    c.nodes[1].log_path = plain.log_path
    n1, n2 = c.nodes
    try:
        for n in c.nodes:
            n.spawn()
        wait_until(n1.healthy, 60.0, "node 1 /v1/health")
        wait_until(n2.healthy, 60.0, "node 2 serving")
        assert served_line(n2.log_path) != ["<missing>"]
        # Node 2 is registered with no HTTP address: host, port and scheme are null, not "" and 0.
        brokers = wait_until(lambda: (lambda b: b if len(b) == 2 else None)(n1.brokers()), FAILOVER_DEADLINE_S,
                             "two registered brokers")
        assert (brokers[2]["host"], brokers[2]["port"], brokers[2]["scheme"]) == (None, None, None), brokers[2]
        assert (brokers[1]["host"], brokers[1]["port"]) == ("127.0.0.1", n1.port), brokers[1]
        # Kafka clients through the Kafka-only node: replicated produce and a consumer group.
        produce_and_consume(n2.bootstrap, "ko", 20, replication_factor=2)
        # The group list gathered over HTTP names node 2 as unanswered (its groups cannot be asked).
        r = requests.get(n1.v3("/consumer-groups"), timeout=10)
        assert r.status_code == 200 and r.json()["metadata"].get("unanswered_brokers") == ["2"], r.text
        # A group coordinated by node 2: its HTTP calls through node 1 are refused, naming why.
        def refused_for_no_http():
            group = "h-" + uuid.uuid4().hex[:8]
            r = requests.post(f"{n1.url}/consumers/{group}", json={"format": "binary"},
                              headers={"Content-Type": "application/vnd.kafka.v2+json"}, timeout=10)
            # (a Response is falsy for a 503: wait_until gets its body)
            return r.json() if r.status_code == 503 and "no HTTP listener" in r.text else None
        refusal = wait_until(refused_for_no_http, 60.0, "a group of node 2 refused over HTTP")
        assert refusal["error_code"] == 50301 and "broker 2" in refusal["message"], refusal
    finally:
        kill_nodes(c.nodes)
