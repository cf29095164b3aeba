"""The partition autobalancer (issue 33; partition.autobalancer.mode, Redpanda's names).

Three voters (process.roles=broker,controller) hold an rf-2 topic with data; a fourth, broker-only
node joins. With node_add it gets its share without a command; with continuous a broker killed
with -9 for longer than partition.autobalancer.node.availability.timeout.ms has its replicas
re-created on the others, and back, it gets replicas again; with off (the default) nothing moves
until the mode is set cluster-wide. Every wait polls with a deadline; the one window that shows
nothing happens is bounded and named (OFF_WINDOW_S).
"""
import re
import time

import requests

from conftest import wait_until
from test_cluster import FAILOVER_DEADLINE_S, SESSION_DEADLINE_S, Cluster, create_topic, describe
from test_cluster_balance import MOVE_DEADLINE_S, all_in_sync, cli, replica_counts, start_fourth_broker
from test_reassignment import reassignments
from test_replication import produce, read_all, replicas_of

TOPIC = "spread"
PARTITIONS = 6
RECORDS = 50
# Continuous mode's availability timeout here (Redpanda's default is 900 s; at least 1 s).
AVAILABILITY_TIMEOUT_MS = 3000
# How long mode=off is watched for a move that must not come: six of the active controller's
# 500 ms heartbeat ticks, on each of which node_add would start broker 4's share, and 30 of the
# 100 ms balance checks continuous mode would make with this cluster's tick interval.
OFF_WINDOW_S = 3.0


def set_cluster_config(node, name, value):
    return requests.put(node.v3(f"/broker-configs/{name}"), json={"value": str(value)}, timeout=40)


def autobalancer_of(node):
    r = requests.get(node.v3("/rebalance"), timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["autobalancer"]


def moves_started(c, reason):
    """ringlog_autobalancer_moves_started_total{reason=...} summed over the voters (only the active
    controller starts moves, and it may change)."""
    total = 0
    for n in c.nodes:
        text = requests.get(n.url + "/metrics", timeout=10).text
        m = re.search(rf'^ringlog_autobalancer_moves_started_total{{reason="{reason}"}} (\d+)$', text, re.M)
        assert m, f"no {reason} series in node {n.node_id}'s /metrics"
        total += int(m.group(1))
    return total


def topic_with_records(c, controller):
    """TOPIC with rf 2, every replica in sync, RECORDS acknowledged records in each partition."""
    r = create_topic(c.node(controller), TOPIC, partitions=PARTITIONS, replication_factor=2)
    assert r.status_code == 201, r.text
    for n in c.nodes:
        wait_until(lambda n=n: describe(n, TOPIC).status_code == 200, FAILOVER_DEADLINE_S,
                   f"node {n.node_id} to know the topic")
    wait_until(lambda: all_in_sync(c.node(1), TOPIC, PARTITIONS), SESSION_DEADLINE_S, "every ISR full")
    for p in range(PARTITIONS):
        r = produce(c.node(1), TOPIC, p, [f"v-{p}-{i}" for i in range(RECORDS)])
        assert r.status_code == 200 and all(o.get("error") is None for o in r.json()["offsets"]), r.text


def settled(node, on_4):
    """Every partition at rf 2 and in sync, no move under way, and broker 4 holding replicas of the
    topic (on_4) or none."""
    counts = replica_counts(node, TOPIC, PARTITIONS)
    return (sum(counts.values()) == 2 * PARTITIONS and (counts.get(4, 0) > 0) == on_4
            and reassignments(node) == {} and all_in_sync(node, TOPIC, PARTITIONS))


def check_every_record_readable(node):
    for p in range(PARTITIONS):
        end = int(wait_until(lambda p=p: requests.get(node.v3(f"/topics/{TOPIC}/partitions/{p}/offset"), timeout=5)
                             .json().get("latest_offset"), FAILOVER_DEADLINE_S, f"partition {p}'s latest offset"))
        values = {x["value"] for x in read_all(node, TOPIC, p, end)}
        missing = [f"v-{p}-{i}" for i in range(RECORDS) if f"v-{p}-{i}" not in values]
        assert not missing, f"partition {p}: {len(missing)} acknowledged records missing, e.g. {missing[:5]}"


def test_node_add_a_new_broker_gets_its_share_without_a_command(ringlog_bin, tmp_path):
    c = Cluster(tmp_path, extra_sets=["partition.autobalancer.mode=node_add"]).start()
    extra = None
    try:
        controller = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        topic_with_records(c, controller)
        assert autobalancer_of(c.node(2)) == {"mode": "node_add", "unavailable_brokers_draining": []}
        assert moves_started(c, "node_add") == 0

        extra = start_fourth_broker(c, tmp_path)
        wait_until(lambda: settled(c.node(1), True), MOVE_DEADLINE_S,
                   "broker 4 holding replicas of the topic, every partition at rf 2 in sync, no move under way")
        # Its share of the topic (each topic is spread: 12 replicas over 4 brokers).
        assert sorted(replica_counts(c.node(1), TOPIC, PARTITIONS).values()) == [3, 3, 3, 3]
        assert moves_started(c, "node_add") >= 3
        assert moves_started(c, "balance") == 0 and moves_started(c, "unavailable") == 0
        check_every_record_readable(c.node(1))
        check_every_record_readable(extra)
        out = cli(c.node(3), "rebalance", "--dry-run")
        assert out.returncode == 0, out.stderr
        assert "Autobalancer: partition.autobalancer.mode=node_add\n" in out.stdout, out.stdout
    finally:
        if extra is not None and extra.proc is not None:
            extra.kill()
        c.stop()


def test_continuous_a_broker_gone_past_the_timeout_has_its_replicas_recreated_and_back_gets_some_again(
        ringlog_bin, tmp_path):
    c = Cluster(tmp_path).start()
    extra = None
    try:
        controller = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        # Cluster-wide and dynamic; a bad value is refused naming the key and the allowed values.
        r = set_cluster_config(c.node(2), "partition.autobalancer.mode", "always")
        assert r.status_code == 400, r.text
        assert "partition.autobalancer.mode" in r.json()["message"] and "off, node_add, continuous" in r.json()["message"]
        r = set_cluster_config(c.node(2), "partition.autobalancer.node.availability.timeout.ms", 10)
        assert r.status_code == 400 and "[1000, " in r.json()["message"], r.text
        for name, value in (("partition.autobalancer.mode", "continuous"),
                            ("partition.autobalancer.node.availability.timeout.ms", AVAILABILITY_TIMEOUT_MS)):
            r = set_cluster_config(c.node(2), name, value)
            assert r.status_code == 204, r.text
        wait_until(lambda: all(autobalancer_of(n)["mode"] == "continuous" for n in c.nodes), SESSION_DEADLINE_S,
                   "every node in continuous mode")

        extra = start_fourth_broker(c, tmp_path)
        topic_with_records(c, controller)
        wait_until(lambda: settled(c.node(1), True), MOVE_DEADLINE_S, "broker 4 holding replicas, all in sync")

        extra.kill()
        wait_until(lambda: c.node(1).brokers()[4]["state"] == "fenced", FAILOVER_DEADLINE_S, "broker 4 fenced")
        wait_until(lambda: settled(c.node(1), False), MOVE_DEADLINE_S,
                   "broker 4's replicas re-created on 1-3: every partition at rf 2 in sync, none on broker 4")
        assert moves_started(c, "unavailable") >= 1
        assert 4 in c.node(1).brokers(), "broker 4 stays registered (it is not decommissioned)"
        check_every_record_readable(c.node(1))

        # Back, it holds nothing: node_add (part of continuous) gives it replicas again.
        extra.spawn()
        wait_until(extra.healthy, FAILOVER_DEADLINE_S, "broker 4 /v1/health")
        wait_until(lambda: settled(c.node(1), True), MOVE_DEADLINE_S, "broker 4 holding replicas again, all in sync")
        assert autobalancer_of(c.node(3))["unavailable_brokers_draining"] == []
        check_every_record_readable(c.node(1))
    finally:
        if extra is not None and extra.proc is not None:
            extra.kill()
        c.stop()


def test_off_a_new_broker_gets_nothing_until_the_mode_is_set(ringlog_bin, tmp_path):
    c = Cluster(tmp_path, extra_sets=["partition.autobalancer.tick.interval.ms=100"]).start()
    extra = None
    try:
        controller = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        topic_with_records(c, controller)
        extra = start_fourth_broker(c, tmp_path)
        plan = requests.get(c.node(2).v3("/rebalance"), timeout=60).json()
        assert plan["autobalancer"] == {"mode": "off", "unavailable_brokers_draining": []}, plan
        assert any(4 in m["adding_replicas"] for m in plan["moves"]), "a rebalance would give broker 4 replicas"
        out = cli(c.node(3), "rebalance", "--dry-run")
        assert out.returncode == 0 and "Autobalancer: partition.autobalancer.mode=off\n" in out.stdout, out.stdout

        end = time.monotonic() + OFF_WINDOW_S
        while time.monotonic() < end:
            assert replica_counts(c.node(1), TOPIC, PARTITIONS).get(4, 0) == 0 and reassignments(c.node(1)) == {}
            time.sleep(0.2)
        assert moves_started(c, "node_add") + moves_started(c, "balance") + moves_started(c, "unavailable") == 0

        # The same cluster, the mode set cluster-wide: broker 4 gets its share without a command.
        r = set_cluster_config(c.node(3), "partition.autobalancer.mode", "node_add")
        assert r.status_code == 204, r.text
        wait_until(lambda: settled(c.node(1), True), MOVE_DEADLINE_S, "broker 4 holding replicas once node_add is set")
    finally:
        if extra is not None and extra.proc is not None:
            extra.kill()
        c.stop()
