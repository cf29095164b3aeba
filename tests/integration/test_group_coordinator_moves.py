"""A group coordinator that loses its __consumer_offsets partition while a commit is in flight.

Session 37's breaker: OffsetCommit (and TxnOffsetCommit) were answered NOT_LEADER_OR_FOLLOWER,
the partition's own append error, when the coordinator's node was paused and its leadership of
the group's __consumer_offsets partition moved; librdkafka turned that into an abortable
transaction. Kafka's GroupMetadataManager maps append errors to NOT_COORDINATOR (or
COORDINATOR_NOT_AVAILABLE) so clients find the coordinator again and retry.
"""
import collections
import signal
import threading

import requests
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from conftest import wait_until
from test_cluster import FAILOVER_DEADLINE_S, Cluster
from test_replication import leader_of

# Append errors of a partition that a group call must never pass on to its client.
PARTITION_ERRORS = ("NOT_LEADER", "NOT_ENOUGH_REPLICAS", "KAFKA_STORAGE", "UNKNOWN_TOPIC")
PAUSE_ROUNDS = 2
PAUSE_DEADLINE_S = 6.0   # paused longer than broker.session.timeout.ms: the node is fenced


def coordinator_partition(node, group):
    r = requests.get(node.v3(f"/consumer-groups/{group}"), timeout=10)
    return r.json().get("coordinator_partition") if r.status_code == 200 else None


def test_a_commit_in_flight_when_the_coordinator_moves_is_answered_not_coordinator(ringlog_bin, tmp_path):
    cluster = Cluster(tmp_path, kafka=True).start()
    try:
        wait_until(cluster.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        bootstrap = ",".join(f"127.0.0.1:{n.kafka_port}" for n in cluster.nodes)
        producer = Producer({"bootstrap.servers": bootstrap})
        producer.produce("moves", b"x")   # creates the topic (auto-create) and makes the group's offsets real
        assert producer.flush(30) == 0
        group = "coordinator-moves"
        outcomes = collections.Counter()
        stop = threading.Event()

        def commit_in_a_loop():
            consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
            offset = 0
            while not stop.is_set():
                offset += 1
                try:
                    result = consumer.commit(offsets=[TopicPartition("moves", 0, offset)], asynchronous=False)
                    e = result[0].error
                    outcomes["ok" if e is None else e.name()] += 1
                except KafkaException as ex:
                    outcomes[ex.args[0].name()] += 1
            consumer.close()

        committer = threading.Thread(target=commit_in_a_loop)
        committer.start()
        try:
            n1 = cluster.node(1)
            wait_until(lambda: outcomes["ok"] > 0, 30.0, "a first commit")
            partition = wait_until(lambda: coordinator_partition(n1, group), 30.0, "the group's coordinator")
            for _ in range(PAUSE_ROUNDS):
                victim = wait_until(lambda: leader_of(n1, "__consumer_offsets", partition), FAILOVER_DEADLINE_S,
                                    "the coordinator's node")
                others = [n for n in cluster.nodes if n.node_id != victim]
                committed_before = outcomes["ok"]
                cluster.node(victim).proc.send_signal(signal.SIGSTOP)
                try:
                    wait_until(lambda: leader_of(others[0], "__consumer_offsets", partition) not in (None, victim)
                               or None, FAILOVER_DEADLINE_S + PAUSE_DEADLINE_S, "the coordinator moved")
                finally:
                    cluster.node(victim).proc.send_signal(signal.SIGCONT)
                wait_until(lambda: outcomes["ok"] > committed_before, FAILOVER_DEADLINE_S * 2,
                           "commits through the new coordinator")
        finally:
            stop.set()
            committer.join(60)
        leaked = {k: v for k, v in outcomes.items() if any(p in k for p in PARTITION_ERRORS)}
        assert not leaked, dict(outcomes)
    finally:
        cluster.stop()
