"""Kafka clients against a three-broker ringlog cluster (issues "Cluster II" and "Kafka listener").

Metadata on any broker lists every live broker's kafka:// address and each partition's real
leader, so clients route produces to leaders themselves; FindCoordinator names the broker that
leads the group's __consumer_offsets partition. kill -9 of a partition's leader: librdkafka's
producer (acks=all, idempotence off) refreshes its metadata and carries on; every acknowledged
record is then read back by a consumer group through another broker.
"""
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import wait_until
from test_cluster import FAILOVER_DEADLINE_S, Cluster
from test_replication import isr_of, leader_of


def test_kafka_clients_route_to_every_broker_and_survive_a_leader_kill(ringlog_bin, tmp_path):
    c = Cluster(tmp_path, kafka=True).start()
    try:
        wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        n1 = c.node(1)
        bootstrap = n1.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        # Every live broker, with its own kafka:// port, and the active controller.
        md = wait_until(lambda: (lambda m: m if len(m.brokers) == 3 else None)(admin.list_topics(timeout=10)),
                        FAILOVER_DEADLINE_S, "Metadata listing three brokers")
        assert {b.id: b.port for b in md.brokers.values()} == {n.node_id: n.kafka_port for n in c.nodes}
        futures = admin.create_topics([NewTopic("kc", num_partitions=3, replication_factor=3)])
        futures["kc"].result(timeout=30)
        wait_until(lambda: all(isr_of(n1, "kc", p) == [1, 2, 3] for p in range(3)) or None, 20.0, "ISRs of three")
        leaders = {p: leader_of(n1, "kc", p) for p in range(3)}
        md = admin.list_topics(topic="kc", timeout=10)
        assert {p: x.leader for p, x in md.topics["kc"].partitions.items()} == leaders

        acked, errors = [], []

        def on_delivery(err, msg):
            if err is None:
                acked.append(msg.value().decode())
            else:
                errors.append(str(err))

        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
                             "message.timeout.ms": 30000, "retries": 1000000, "retry.backoff.ms": 50})
        for i in range(300):
            producer.produce("kc", key=str(i % 3).encode(), value=f"a{i}".encode(), on_delivery=on_delivery)
        assert producer.flush(30) == 0
        assert len(acked) == 300 and not errors, errors[:3]

        # kill -9 the leader of partition 0 (not node 1: it is the bootstrap) and keep producing.
        victim = leaders[0] if leaders[0] != 1 else next(l for l in leaders.values() if l != 1)
        c.node(victim).kill()
        for i in range(300, 600):
            producer.produce("kc", key=str(i % 3).encode(), value=f"b{i}".encode(), on_delivery=on_delivery)
            producer.poll(0)
        assert producer.flush(60) == 0
        assert not errors, errors[:3]
        assert len(acked) == 600

        # A consumer group through the survivors reads every acknowledged record, once.
        survivors = ",".join(n.bootstrap for n in c.nodes if n.node_id != victim)
        consumer = Consumer({"bootstrap.servers": survivors, "group.id": "kc-readers", "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        consumer.subscribe(["kc"])
        seen = []
        deadline = time.monotonic() + 60
        while len(set(seen)) < 600 and time.monotonic() < deadline:
            m = consumer.poll(1.0)
            if m is not None and m.error() is None:
                seen.append(m.value().decode())
        consumer.commit(asynchronous=False)
        consumer.close()
        assert set(acked) <= set(seen), sorted(set(acked) - set(seen))[:10]
    finally:
        c.stop()
