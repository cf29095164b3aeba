"""Rebalance and decommission on a running cluster (issue 33), over HTTP and the CLI.

Three voters (process.roles=broker,controller) hold an rf-2 topic with data; a fourth, broker-only
node joins. A dry run plans moves onto it and changes nothing; the rebalance moves its share of
replicas and preferred leaderships there while an acks=all producer keeps writing, and nothing
acknowledged is lost. Then broker 4 is decommissioned: its replicas move back to 1-3, it is
unregistered, and started again it is refused by name. Refusals (a voter, an unknown broker, too
few brokers for a replication factor, a manual move onto a decommissioning broker) name the
problem; a decommission that cannot finish (a partition under min.insync.replicas) is cancelled.
Every wait polls with a deadline.
"""
import subprocess

import requests

from conftest import binary_path, wait_until
from test_add_broker import start_broker_only
from test_cluster import FAILOVER_DEADLINE_S, SESSION_DEADLINE_S, Cluster, create_topic, describe
from test_reassignment import Producer, reassignments
from test_replication import isr_of, produce, read_all, replicas_of
from test_replication_throttle import fill, set_broker_config

TOPIC = "spread"
PARTITIONS = 6
RECORDS_BEFORE = 200
MOVE_DEADLINE_S = 90.0


def cli(node, *args):
    # 60 s per answer (Kafka's admin tools wait default.api.timeout.ms, 60 s): the CLI's own
    # default of 10 s was passed under a loaded machine by a cancel that commits two metadata
    # entries with a voter down (the test is about the outcome, not the time).
    return subprocess.run([str(binary_path()), "cluster", *args, "--bootstrap-server", node.url,
                           "--request-timeout-ms", "60000"],
                          capture_output=True, text=True, timeout=180)


def replica_counts(node, topic, partitions):
    counts = {}
    for p in range(partitions):
        for b in replicas_of(node, topic, p):
            counts[b] = counts.get(b, 0) + 1
    return counts


def task(node, broker_id):
    r = requests.get(node.v3(f"/brokers/{broker_id}/tasks/remove-broker"), timeout=10)
    return r.json() if r.status_code == 200 else None


def start_fourth_broker(c, tmp_path):
    """A broker-only node 4 joined to `c`, once node 1 lists it unfenced."""
    extra = start_broker_only(c, tmp_path)
    try:
        wait_until(lambda: c.node(1).brokers().get(4, {}).get("state") == "unfenced", SESSION_DEADLINE_S,
                   "broker 4 unfenced")
    except BaseException:
        extra.kill()   # the caller never holds it: it must not outlive the test
        raise
    return extra


def all_in_sync(node, topic, partitions):
    return all(sorted(isr_of(node, topic, p)) == sorted(replicas_of(node, topic, p)) for p in range(partitions))


def test_a_new_broker_gets_its_share_then_is_decommissioned_and_refused(ringlog_bin, tmp_path):
    c = Cluster(tmp_path).start()
    extra = None
    producer = None
    try:
        controller = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        r = create_topic(c.node(controller), TOPIC, partitions=PARTITIONS, replication_factor=2)
        assert r.status_code == 201, r.text
        for n in c.nodes:
            wait_until(lambda n=n: describe(n, TOPIC).status_code == 200, FAILOVER_DEADLINE_S, "the topic everywhere")
        wait_until(lambda: all_in_sync(c.node(1), TOPIC, PARTITIONS), SESSION_DEADLINE_S, "every ISR full")
        for p in range(PARTITIONS):
            r = produce(c.node(1), TOPIC, p, [f"before-{p}-{i}" for i in range(RECORDS_BEFORE)])
            assert r.status_code == 200 and all(o.get("error") is None for o in r.json()["offsets"]), r.text

        extra = start_fourth_broker(c, tmp_path)

        # A dry run: moves onto broker 4, sizes from the replicas, nothing changes.
        r = requests.get(c.node(2).v3("/rebalance"), timeout=60)
        assert r.status_code == 200, r.text
        plan = r.json()
        assert plan["kind"] == "KafkaRebalancePlan" and plan["dry_run"] is True and plan["started"] == 0, plan
        assert plan["moves"] and plan["balanced"] is True, plan
        b4 = next(b for b in plan["brokers"] if b["broker_id"] == 4)
        afters = [b["replicas"]["after"] for b in plan["brokers"]]
        assert b4["replicas"]["before"] == 0 and max(afters) - min(afters) <= 1, plan["brokers"]
        # Each topic spreads too (the internal topics are planned as well): 3 of the 12 replicas
        # of TOPIC go to broker 4.
        assert sum(1 for m in plan["moves"] if m["topic_name"] == TOPIC and 4 in m["adding_replicas"]) == 3, plan["moves"]
        assert b4["leaders"]["after"] >= 1 and b4["size_bytes"]["after"] > 0, b4
        assert all(m["size_bytes"] > 0 for m in plan["moves"] if m["topic_name"] == TOPIC), plan["moves"]
        assert plan["bytes_to_move"] == sum(m["size_bytes"] * len(m["adding_replicas"]) for m in plan["moves"])
        assert replica_counts(c.node(1), TOPIC, PARTITIONS).get(4, 0) == 0
        assert reassignments(c.node(1)) == {}
        out = cli(c.node(3), "rebalance", "--dry-run")
        assert out.returncode == 0, out.stderr
        assert "BROKER\tRACK\tREPLICAS" in out.stdout and "\n4\t-\t0 -> " in out.stdout, out.stdout
        assert "Started" not in out.stdout
        # Bad input is named.
        r = requests.get(c.node(2).v3("/rebalance?tolerance=2"), timeout=10)
        assert r.status_code == 400 and "tolerance" in r.json()["message"], r.text
        r = requests.post(c.node(2).v3("/rebalance"), json={"tolerence": 0.1}, timeout=10)
        assert r.status_code == 400 and "tolerence: unknown field" in r.json()["message"], r.text

        # The rebalance, with acks=all writes going on through a node that keeps its replicas.
        producer = Producer(c.node(1), TOPIC, 0)
        producer.start()
        wait_until(lambda: len(producer.acknowledged) >= 10, FAILOVER_DEADLINE_S, "writes before the rebalance")
        out = cli(c.node(1), "rebalance")
        assert out.returncode == 0, out.stderr
        assert "Started" in out.stdout, out.stdout

        def balanced():
            counts = replica_counts(c.node(1), TOPIC, PARTITIONS)
            return (sorted(counts.values()) == [3, 3, 3, 3] and reassignments(c.node(1)) == {}
                    and all_in_sync(c.node(1), TOPIC, PARTITIONS))
        wait_until(balanced, MOVE_DEADLINE_S, "3 replicas of the topic on every broker, every move done")
        count = len(producer.acknowledged)
        wait_until(lambda: len(producer.acknowledged) >= count + 10, FAILOVER_DEADLINE_S, "writes after the rebalance")
        producer.stop()
        # A second plan has nothing to do.
        again = requests.post(c.node(3).v3("/rebalance"), json={}, timeout=60)
        assert again.status_code == 200 and again.json()["moves"] == [] and again.json()["balanced"], again.text

        # Refusals, nothing changed by them.
        r = requests.delete(c.node(2).v3("/brokers/9"), timeout=40)
        assert r.status_code == 404 and "no broker 9 is registered" in r.json()["message"], r.text
        r = requests.delete(c.node(2).v3("/brokers/1"), timeout=40)
        assert r.status_code == 400 and "controller quorum voter" in r.json()["message"], r.text
        assert requests.get(c.node(2).v3("/brokers/-/tasks"), timeout=10).json()["data"] == []

        # Decommission broker 4 (CLI): its replicas go back to 1-3, then it is unregistered.
        out = cli(c.node(2), "decommission", "4")
        assert out.returncode == 0, out.stderr
        assert "Decommissioning broker 4" in out.stdout or "is decommissioned" in out.stdout, out.stdout
        b = c.node(3).brokers().get(4)
        assert b is None or b["decommission"] == "DECOMMISSIONING", b
        # No manual move may add it back meanwhile (or after).
        without_4 = next(p for p in range(PARTITIONS) if 4 not in replicas_of(c.node(2), TOPIC, p))
        r = requests.patch(c.node(2).v3(f"/topics/{TOPIC}/partitions/{without_4}/reassignment"), json={"replicas": [4, 1]},
                           timeout=40)
        assert r.status_code == 400 and ("being decommissioned" in r.json()["message"]
                                         or "not registered" in r.json()["message"]), r.text
        done = wait_until(lambda: (t := task(c.node(1), 4)) and t["task_status"] == "SUCCESS" and t, MOVE_DEADLINE_S,
                          "the decommission of broker 4 to finish")
        assert done["partitions_remaining"] == 0, done
        wait_until(lambda: 4 not in c.node(1).brokers(), SESSION_DEADLINE_S, "broker 4 unregistered")
        assert replica_counts(c.node(1), TOPIC, PARTITIONS).get(4, 0) == 0
        wait_until(lambda: all_in_sync(c.node(1), TOPIC, PARTITIONS), SESSION_DEADLINE_S, "every ISR full again")
        out = cli(c.node(1), "decommission", "--status")
        assert out.returncode == 0 and "Broker 4 is decommissioned" in out.stdout, out.stdout + out.stderr

        # Every acknowledged record is still there.
        expected = [f"before-0-{i}" for i in range(RECORDS_BEFORE)] + producer.acknowledged
        end = int(wait_until(lambda: requests.get(c.node(1).v3(f"/topics/{TOPIC}/partitions/0/offset"), timeout=5)
                             .json().get("latest_offset"), FAILOVER_DEADLINE_S, "partition 0's latest offset"))
        values = {x["value"] for x in read_all(c.node(1), TOPIC, 0, end)}
        missing = [v for v in expected if v not in values]
        assert not missing, f"{len(missing)} acknowledged records missing, e.g. {missing[:5]}"

        # Still running, it tells a load balancer to stop sending it clients; the others are fine.
        health = wait_until(lambda: (h := requests.get(extra.url + "/v1/health", timeout=5)).status_code == 503 and h.json(),
                            SESSION_DEADLINE_S, "broker 4's health to say it was decommissioned")
        assert health["status"] == "decommissioned" and "stop it" in health["message"], health
        assert requests.get(c.node(1).url + "/v1/health", timeout=5).status_code == 200
        # Nor is it listed as a quorum observer (it may still fetch the metadata until stopped).
        quorum = requests.get(c.node(wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")).v3("/quorum"), timeout=5).json()
        assert 4 not in [o["replica_id"] for o in quorum["observers"]], quorum

        # Started again, the decommissioned broker is refused by name.
        extra.kill()
        restarted = subprocess.run(
            [str(binary_path()), "serve", "--set", f"listeners=http://127.0.0.1:{extra.port},cluster://127.0.0.1:{extra.cluster_port}",
             "--set", f"log.dirs={extra.data_dir}", *sum((["--set", s] for s in extra.extra_sets), [])],
            capture_output=True, text=True, timeout=120)
        assert restarted.returncode != 0
        assert "node 4 was decommissioned" in restarted.stdout + restarted.stderr, restarted.stdout + restarted.stderr
        # With an empty log.dirs it reads the whole metadata log first, then is refused: an exit,
        # not an abort with the log's fdatasync in flight (a breaker's find: SIGABRT 4 times in 5).
        empty = tmp_path / "node4-empty"
        empty.mkdir()
        restarted = subprocess.run(
            [str(binary_path()), "serve", "--set", f"listeners=http://127.0.0.1:{extra.port},cluster://127.0.0.1:{extra.cluster_port}",
             "--set", f"log.dirs={empty}", *sum((["--set", s] for s in extra.extra_sets), [])],
            capture_output=True, text=True, timeout=120)
        assert restarted.returncode == 1, (restarted.returncode, restarted.stdout[-2000:] + restarted.stderr[-2000:])
        assert "node 4 was decommissioned" in restarted.stdout + restarted.stderr, restarted.stdout + restarted.stderr
        assert 4 not in c.node(1).brokers()
    finally:
        if producer is not None and producer.is_alive():
            producer.stop()
        if extra is not None and extra.proc is not None:
            extra.kill()
        c.stop()


def test_a_decommission_that_cannot_finish_is_cancelled_and_refusals_name_the_replication_factor(ringlog_bin, tmp_path):
    c = Cluster(tmp_path).start()
    extra = None
    try:
        controller = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        extra = start_fourth_broker(c, tmp_path)
        # rf 4 over 4 brokers: broker 4 cannot leave.
        r = create_topic(c.node(controller), "wide", partitions=1, replication_factor=4)
        assert r.status_code == 201, r.text
        r = requests.delete(c.node(2).v3("/brokers/4"), timeout=40)
        assert r.status_code == 400 and "topic 'wide' has replication factor 4 and 3 other broker(s)" in r.json()["message"], r.text
        r = requests.delete(c.node(2).v3("/topics/wide"), timeout=40)
        assert r.status_code == 204, r.text

        # A partition on brokers 4 and 3 with min.insync.replicas=2, and broker 3 stopped: its ISR
        # is [4], below min.insync, so it is not safe to move and the decommission waits.
        r = create_topic(c.node(controller), "stuck", partitions=1, replication_factor=2,
                         configs=[{"name": "min.insync.replicas", "value": "2"}])
        assert r.status_code == 201, r.text
        r = requests.patch(c.node(1).v3("/topics/stuck/partitions/0/reassignment"), json={"replicas": [4, 3]}, timeout=40)
        assert r.status_code == 200, r.text
        wait_until(lambda: isr_of(c.node(1), "stuck", 0) == [3, 4] and set(replicas_of(c.node(1), "stuck", 0)) == {3, 4}
                   and reassignments(c.node(1)) == {}, MOVE_DEADLINE_S, "partition 0 of stuck on brokers 4 and 3, in sync")
        # A partition only on broker 4 holding 3 MiB, copied off at 8 KiB/s: the decommission's
        # move of it is still under way when the cancels come. The throttle's bucket lets one fetch
        # (replica.fetch.max.bytes, 1 MiB) through at once and holds the next for its debt, so the
        # partition must hold more than one fetch (with 512 KiB the copy ended within a second on a
        # loaded machine, before the decommission's cancel).
        r = create_topic(c.node(controller), "drained", partitions=1, replication_factor=1)
        assert r.status_code == 201, r.text
        r = requests.patch(c.node(1).v3("/topics/drained/partitions/0/reassignment"), json={"replicas": [4]}, timeout=40)
        assert r.status_code == 200, r.text
        wait_until(lambda: set(replicas_of(c.node(1), "drained", 0)) == {4} and reassignments(c.node(1)) == {},
                   MOVE_DEADLINE_S, "partition 0 of drained on broker 4 alone")
        fill(c.node(1), "drained", 3 * 1024 * 1024)
        # Broker 4's own config, set and read through broker 1 (passed on to broker 4, as Kafka's
        # admin client sends a broker's configs to that broker).
        set_broker_config(c.node(1), 4, "leader.replication.throttled.rate", 8192)
        shown = requests.get(c.node(1).v3("/brokers/4/configs/leader.replication.throttled.rate"), timeout=10)
        assert shown.status_code == 200 and shown.json()["value"] == "8192", shown.text
        assert shown.headers.get("X-Ringlog-Served-By") == "4", shown.headers
        c.node(3).kill()
        wait_until(lambda: isr_of(c.node(1), "stuck", 0) == [4], FAILOVER_DEADLINE_S, "broker 3 out of the ISR")
        r = requests.delete(c.node(1).v3("/brokers/4"), timeout=40)
        assert r.status_code == 202, r.text
        t = r.json()
        assert t["kind"] == "KafkaBrokerTask" and t["task_type"] == "remove-broker" and t["task_status"] == "IN_PROGRESS", t
        assert t["partitions_remaining"] >= 1, t
        wait_until(lambda: ("drained", 0) in reassignments(c.node(1)), MOVE_DEADLINE_S, "the drain of drained under way")
        # Cancelling the rebalance leaves the decommission's move alone (its tick would only start it again).
        r = requests.delete(c.node(1).v3("/rebalance"), timeout=40)
        assert r.status_code == 200 and r.json()["cancelled"] == 0, r.text
        assert ("drained", 0) in reassignments(c.node(1))
        plan = requests.get(c.node(1).v3("/rebalance"), timeout=60).json()
        assert any(s["topic_name"] == "stuck" and "below min.insync.replicas=2" in s["reason"] for s in plan["skipped"]), plan
        assert next(b for b in plan["brokers"] if b["broker_id"] == 4)["excluded"] is True
        wait_until(lambda: c.node(2).brokers()[4]["decommission"] == "DECOMMISSIONING", SESSION_DEADLINE_S,
                   "every node to know broker 4 is leaving")
        # New topics avoid it.
        r = create_topic(c.node(1), "fresh", partitions=4, replication_factor=1)
        assert r.status_code == 201, r.text
        assert all(4 not in replicas_of(c.node(1), "fresh", p) for p in range(4))

        out = cli(c.node(2), "decommission", "4", "--cancel")
        assert out.returncode == 0 and "Decommission of broker 4 cancelled" in out.stdout, out.stdout + out.stderr
        wait_until(lambda: c.node(1).brokers()[4]["decommission"] is None, SESSION_DEADLINE_S, "broker 4 no longer leaving")
        assert requests.get(c.node(1).v3("/brokers/-/tasks"), timeout=10).json()["data"] == []
        r = requests.delete(c.node(1).v3("/brokers/4/tasks/remove-broker"), timeout=40)
        assert r.status_code == 400 and "is not being decommissioned" in r.json()["message"], r.text
        assert set(replicas_of(c.node(1), "stuck", 0)) == {3, 4}
        # The decommission's cancel took its move of drained back.
        wait_until(lambda: set(replicas_of(c.node(1), "drained", 0)) == {4} and ("drained", 0) not in reassignments(c.node(1)),
                   MOVE_DEADLINE_S, "drained back on broker 4 alone")
        # Two route patterns matching one path list a method once; "04" is not broker 4.
        r = requests.post(c.node(1).v3("/brokers/-/tasks"), timeout=10)
        assert r.status_code == 405 and r.headers["Allow"] == "GET, HEAD, OPTIONS", (r.status_code, r.headers.get("Allow"))
        r = requests.get(c.node(1).v3("/brokers/04/tasks"), timeout=10)
        assert r.status_code == 404 and "is not a broker id" in r.json()["message"], r.text
    finally:
        if extra is not None and extra.proc is not None:
            extra.kill()
        c.stop()


def test_a_broker_that_is_down_is_decommissioned_and_its_partitions_get_their_replicas_back(ringlog_bin, tmp_path):
    """A new user's and a breaker's HIGH find: the killed broker stayed 'caught up' in its leaders'
    eyes (no appends since), so each leader proposed it for the ISR, was refused INELIGIBLE_REPLICA
    (it is fenced) and kept proposing it, and the moves' new replicas never joined: the decommission
    never finished (KIP-841: the leader leaves fenced brokers out of its proposals)."""
    c = Cluster(tmp_path).start()
    extra = None
    try:
        controller = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        extra = start_fourth_broker(c, tmp_path)
        r = create_topic(c.node(controller), TOPIC, partitions=PARTITIONS, replication_factor=2)
        assert r.status_code == 201, r.text
        wait_until(lambda: all_in_sync(c.node(1), TOPIC, PARTITIONS), SESSION_DEADLINE_S, "every ISR full")
        for p in range(PARTITIONS):
            assert produce(c.node(1), TOPIC, p, [f"v-{p}-{i}" for i in range(50)]).status_code == 200
        wait_until(lambda: replica_counts(c.node(1), TOPIC, PARTITIONS).get(4, 0) > 0, SESSION_DEADLINE_S,
                   "broker 4 holding replicas of the topic")
        extra.kill()
        wait_until(lambda: c.node(1).brokers()[4]["state"] == "fenced", FAILOVER_DEADLINE_S, "broker 4 fenced")
        # A dry run while broker 4 is fenced: nothing goes to it, it says why, and what it holds is
        # left out of the averages (they once counted it and gave a verdict no plan could meet).
        out = cli(c.node(3), "rebalance", "--dry-run")
        assert out.returncode == 0, out.stdout + out.stderr
        assert "4 (excluded: fenced)" in out.stdout and "balanced after the plan: yes" in out.stdout, out.stdout
        plan = requests.get(c.node(1).v3("/rebalance"), timeout=60).json()
        assert next(b for b in plan["brokers"] if b["broker_id"] == 4)["excluded_reason"] == "fenced", plan
        assert all(4 not in m["adding_replicas"] for m in plan["moves"]), plan
        assert plan["balanced"] is True and plan["imbalances"] == [], plan
        r = requests.delete(c.node(2).v3("/brokers/4"), timeout=40)
        assert r.status_code in (200, 202), r.text
        wait_until(lambda: (t := task(c.node(1), 4)) is not None and t["task_status"] == "SUCCESS", MOVE_DEADLINE_S,
                   "the decommission of the stopped broker 4 to finish")
        wait_until(lambda: replica_counts(c.node(1), TOPIC, PARTITIONS).get(4, 0) == 0
                   and sum(replica_counts(c.node(1), TOPIC, PARTITIONS).values()) == 2 * PARTITIONS
                   and all_in_sync(c.node(1), TOPIC, PARTITIONS), SESSION_DEADLINE_S,
                   "every partition back at 2 in-sync replicas, none on broker 4")
    finally:
        if extra is not None and extra.proc is not None:
            extra.kill()
        c.stop()
