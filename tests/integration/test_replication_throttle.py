"""Replication throttling (issue 33; Kafka's KIP-73 leader/follower.replication.throttled.rate).

Three real nodes (process.roles=broker,controller). A topic with one replica holds ~24 MiB; a
reassignment adds a second replica while leader.replication.throttled.rate is 2 MiB/s on the
leader: the copy cannot finish faster than the rate allows (checked by polling for most of that
time that it has not finished, and that the new replica holds no more than the rate let through),
while an acks=all producer to an in-sync rf-3 topic keeps being answered. Removing the throttle
lets the move finish. The follower side is checked the same way with
follower.replication.throttled.rate on the adding broker. Every wait polls with a deadline; the
only time bounds are the rate's own (bytes / rate x 0.6).
"""
import os
import re
import subprocess
import threading
import time

import requests

import kafka_wire as kw
from conftest import Broker, free_port, wait_until
from test_cluster import FAILOVER_DEADLINE_S, SESSION_DEADLINE_S, Cluster, create_topic
from test_replication import JSONV2, isr_of, leader_of, produce, replicas_of

MIB = 1024 * 1024
# Without a throttle the copy of these bytes takes a few seconds; generous for a loaded CI box.
MOVE_DEADLINE_S = 90.0
VALUE_BYTES = 64 * 1024   # one record's value: random hex, so no codec shrinks it


def fill(node, topic, total_bytes):
    """Produces about `total_bytes` of incompressible values to partition 0 of `topic` via `node`
    (acks=1; rf 1). Returns the bytes of values written."""
    written = 0
    while written < total_bytes:
        values = [os.urandom(VALUE_BYTES // 2).hex() for _ in range(8)]
        r = requests.post(f"{node.url}/topics/{topic}", params={"acks": "1"},
                          json={"records": [{"value": v, "partition": 0} for v in values]},
                          headers={"Content-Type": JSONV2}, timeout=60)
        assert r.status_code == 200 and all(o.get("error") is None for o in r.json()["offsets"]), r.text[:500]
        written += sum(len(v) for v in values)
    return written


def copied_bytes(node, topic):
    """Bytes of partition 0's segment files (*.log) on `node` (0 before it has the directory)."""
    d = node.data_dir / f"{topic}-0"
    try:
        return sum(f.stat().st_size for f in d.glob("*.log"))
    except FileNotFoundError:
        return 0


def metric(node, name, side):
    text = requests.get(node.url + "/metrics", timeout=5).text
    m = re.search(rf'^{name}{{side="{side}"}} (\d+)$', text, re.M)
    assert m, f"{name}{{side={side}}} missing from /metrics"
    return int(m.group(1))


def moved(node, topic, target):
    """The partition is on `target`, all in sync, and no reassignment of it is listed."""
    r = requests.get(node.v3(f"/topics/{topic}/partitions/0/reassignment"), timeout=5)
    return (r.status_code == 404 and set(replicas_of(node, topic, 0)) == set(target)
            and isr_of(node, topic, 0) == sorted(target))


class Producer(threading.Thread):
    """acks=all writes of small records to one in-sync partition until stopped."""

    def __init__(self, node, topic):
        super().__init__(daemon=True)
        self.node, self.topic = node, topic
        self.acknowledged, self.refused = 0, 0
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            try:
                r = produce(self.node, self.topic, 0, ["x" * 100])
                ok = r.status_code == 200 and all(o.get("error") is None for o in r.json()["offsets"])
            except requests.RequestException:
                ok = False
            if ok:
                self.acknowledged += 1
            else:
                self.refused += 1

    def stop(self):
        self.stopping.set()
        self.join(timeout=60)


def set_broker_config(node, broker_id, name, value):
    path = f"/brokers/{broker_id}/configs/{name}"
    if value is None:
        r = requests.delete(node.v3(path), timeout=40)
    else:
        r = requests.put(node.v3(path), json={"value": str(value)}, timeout=40)
    assert r.status_code == 204, r.text


def throttled_move(c, topic, holder, adding, rate, side, producer):
    """Reassigns partition 0 of `topic` from [holder] to [holder, adding] under a throttle of
    `rate` bytes/s and checks that it takes at least 0.6 x bytes / rate while `producer` goes on.
    Returns (bytes, seconds it was held, what the new replica had copied by then)."""
    total = copied_bytes(holder, topic)
    started = time.monotonic()
    r = requests.patch(holder.v3(f"/topics/{topic}/partitions/0/reassignment"),
                       json={"replicas": [holder.node_id, adding.node_id]}, timeout=40)
    assert r.status_code == 200, r.text
    acked_before = producer.acknowledged
    hold_s = total / rate * 0.6
    # For the whole span the rate forbids finishing in, poll that it has not finished.
    while time.monotonic() - started < hold_s:
        assert not moved(holder, topic, [holder.node_id, adding.node_id]), (
            f"the move of {total} bytes finished after {time.monotonic() - started:.1f} s under {rate} bytes/s")
        time.sleep(0.5)
    copied = copied_bytes(adding, topic)
    elapsed = time.monotonic() - started
    # Physics of the bucket: at most rate x elapsed + one second's worth + one fetch (1 MiB).
    assert copied <= rate * elapsed + rate + MIB, (copied, elapsed)
    # Something was copied (the throttle lets the rate through), and counted where it was held.
    wait_until(lambda: copied_bytes(adding, topic) > 0, SESSION_DEADLINE_S, "the new replica to copy some bytes")
    counted_on = holder if side == "leader" else adding
    assert metric(counted_on, "ringlog_replication_throttled_bytes_total", side) > 0
    assert metric(counted_on, "ringlog_replication_throttle_time_ms_total", side) > 0
    print(f"{side} side /metrics of broker {counted_on.node_id}: throttled bytes "
          f"{metric(counted_on, 'ringlog_replication_throttled_bytes_total', side)}, throttle time ms "
          f"{metric(counted_on, 'ringlog_replication_throttle_time_ms_total', side)}")
    # The in-sync partition of another topic kept being answered all along.
    assert producer.acknowledged >= acked_before + 10, (acked_before, producer.acknowledged, producer.refused)
    return total, elapsed, copied


def test_a_throttled_reassignment_copies_at_the_rate_while_in_sync_replication_goes_on(ringlog_bin, tmp_path):
    c = Cluster(tmp_path).start()
    producer = None
    try:
        controller = wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        for name, rf in (("bulk", 1), ("bulk-follower", 1), ("live", 3)):
            r = create_topic(c.node(controller), name, partitions=1, replication_factor=rf)
            assert r.status_code == 201, r.text
        wait_until(lambda: all(leader_of(n, t, 0) is not None for n in c.nodes for t in ("bulk", "bulk-follower", "live")),
                   FAILOVER_DEADLINE_S, "every topic led, seen by every node")
        wait_until(lambda: isr_of(c.node(1), "live", 0) == [1, 2, 3], SESSION_DEADLINE_S, "a full ISR of live")
        live_leader = c.node(leader_of(c.node(1), "live", 0))
        producer = Producer(live_leader, "live")
        producer.start()
        wait_until(lambda: producer.acknowledged >= 5, FAILOVER_DEADLINE_S, "acks=all writes to live")

        # ---- leader side: 24 MiB at 2 MiB/s on the leader of bulk.
        holder = c.node(leader_of(c.node(1), "bulk", 0))
        adding = next(n for n in c.nodes if n is not holder)
        fill(holder, "bulk", 24 * MIB)
        rate = 2 * MIB
        # Bad values are refused naming the key; the value is then shown as the broker's own.
        for bad in ("-1", "fast"):
            r = requests.put(holder.v3(f"/brokers/{holder.node_id}/configs/leader.replication.throttled.rate"),
                             json={"value": bad}, timeout=40)
            assert r.status_code == 400 and "leader.replication.throttled.rate" in r.json()["message"], r.text
        set_broker_config(holder, holder.node_id, "leader.replication.throttled.rate", rate)
        shown = requests.get(holder.v3(f"/brokers/{holder.node_id}/configs/leader.replication.throttled.rate"),
                             timeout=5).json()
        assert (shown["value"], shown["source"]) == (str(rate), "DYNAMIC_BROKER_CONFIG"), shown
        total, held_s, copied = throttled_move(c, "bulk", holder, adding, rate, "leader", producer)
        print(f"leader side: {total} bytes, not done after {held_s:.1f} s, {copied} copied "
              f"({copied / held_s / MIB:.2f} MiB/s under {rate / MIB:.0f} MiB/s)")
        # Unthrottled, the move finishes.
        set_broker_config(holder, holder.node_id, "leader.replication.throttled.rate", None)
        wait_until(lambda: moved(holder, "bulk", [holder.node_id, adding.node_id]), MOVE_DEADLINE_S,
                   "the move done once the throttle is removed")

        # ---- follower side: 12 MiB at 1 MiB/s on the broker that fetches, set cluster-wide.
        holder = c.node(leader_of(c.node(1), "bulk-follower", 0))
        adding = next(n for n in c.nodes if n is not holder)
        fill(holder, "bulk-follower", 12 * MIB)
        rate = MIB
        r = requests.put(holder.v3("/broker-configs/follower.replication.throttled.rate"), json={"value": str(rate)},
                         timeout=40)
        assert r.status_code == 204, r.text
        # The adding broker applies the cluster-wide value from the metadata log at its own pace.
        wait_until(lambda: requests.get(adding.v3(f"/brokers/{adding.node_id}/configs/follower.replication.throttled.rate"),
                                        timeout=5).json()["value"] == str(rate), SESSION_DEADLINE_S,
                   "the adding broker to apply the throttle")
        total, held_s, copied = throttled_move(c, "bulk-follower", holder, adding, rate, "follower", producer)
        print(f"follower side: {total} bytes, not done after {held_s:.1f} s, {copied} copied "
              f"({copied / held_s / MIB:.2f} MiB/s under {rate / MIB:.0f} MiB/s)")
        r = requests.delete(holder.v3("/broker-configs/follower.replication.throttled.rate"), timeout=40)
        assert r.status_code == 204, r.text
        wait_until(lambda: moved(holder, "bulk-follower", [holder.node_id, adding.node_id]), MOVE_DEADLINE_S,
                   "the follower-throttled move done once the throttle is removed")
        producer.stop()
        assert producer.acknowledged > 20, (producer.acknowledged, producer.refused)
    finally:
        if producer is not None and producer.is_alive():
            producer.stop()
        c.stop()


def test_throttle_rates_are_broker_configs_with_bounds(ringlog_bin, tmp_path):
    """Static values are checked at start naming the key; serve --help lists both under
    replication; the Kafka listener's IncrementalAlterConfigs sets and refuses them like the v3
    routes."""
    for value in ("-1", "fast", "1.5"):
        out = subprocess.run([str(ringlog_bin), "serve", "--set", "listeners=http://127.0.0.1:1",
                              "--set", f"log.dirs={tmp_path / 'refused'}",
                              "--set", f"follower.replication.throttled.rate={value}"],
                             capture_output=True, text=True, timeout=20)
        assert out.returncode == 2 and f"follower.replication.throttled.rate={value}: must be an integer in [0, " \
            in out.stdout + out.stderr, (out.returncode, out.stdout, out.stderr)
    help_text = subprocess.run([str(ringlog_bin), "serve", "--help"], capture_output=True, text=True,
                               timeout=20).stdout
    section = help_text.split("\nReplication and leadership:\n", 1)[1].split("\n\n", 1)[0]
    for key in ("leader.replication.throttled.rate", "follower.replication.throttled.rate"):
        assert f"  {key} = 9223372036854775807" in section, section

    broker = Broker(tmp_path / "ringlog-data", kafka_port=free_port(),
                    extra_sets=["leader.replication.throttled.rate=1048576"]).start()
    try:
        shown = requests.get(broker.v3("/brokers/0/configs/leader.replication.throttled.rate"), timeout=5).json()
        assert (shown["value"], shown["source"]) == ("1048576", "STATIC_BROKER_CONFIG"), shown
        code, message = kw.incremental_alter_config_v0(broker.bootstrap, kw.RESOURCE_BROKER, "0",
                                                       "follower.replication.throttled.rate", "-5")
        assert code != 0 and "follower.replication.throttled.rate" in message, (code, message)
        assert kw.incremental_alter_config_v0(broker.bootstrap, kw.RESOURCE_BROKER, "",
                                              "follower.replication.throttled.rate", "0")[0] == 0
        shown = requests.get(broker.v3("/brokers/0/configs/follower.replication.throttled.rate"), timeout=5).json()
        assert (shown["value"], shown["source"]) == ("0", "DYNAMIC_DEFAULT_BROKER_CONFIG"), shown
        # A single broker has no followers: nothing is throttled or counted.
        assert metric(broker, "ringlog_replication_throttled_bytes_total", "follower") == 0
    finally:
        assert broker.stop() == 0
