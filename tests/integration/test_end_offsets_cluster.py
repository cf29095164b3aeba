"""A new leader does not answer a partition's end before it knows it (issue 27 item 3; KAFKA-2334,
KIP-207), on three real `ringlog serve` processes, on every door.

The state, made deterministically: a partition with replicas [A, B, C] all in sync; C is stopped
(SIGSTOP: still in the ISR, since broker.session.timeout.ms and replica.lag.time.max.ms are long),
so the high watermark stays where it was while acks=1 writes reach A and B; then A stops
(SIGTERM: a controlled shutdown) and B leads in a new epoch that starts at its log end, above its
high watermark. Until C fetches again, B cannot know the partition's end: Kafka's ListOffsets and
a Fetch at its high watermark answer OFFSET_NOT_AVAILABLE (78), the v2/v3 offsets routes 503 with
error_code 50302 and Retry-After, a long-poll read waits (and answers an empty array), the
partitions route says high_watermark_established false. Once C continues, every door answers an
end at or above every acknowledged offset.
"""
import signal
import subprocess
import struct

import pytest
import requests

import kafka_wire as kw
from conftest import binary_path, wait_until
from test_cluster import Cluster, create_topic, describe

JSONV2 = "application/vnd.kafka.json.v2+json"
API_LIST_OFFSETS = 2
OFFSET_NOT_AVAILABLE = 78
SETS = ["broker.session.timeout.ms=120000", "replica.lag.time.max.ms=600000"]
# Enough partitions that one has the shape the test needs (placement spreads leaders and orders).
PARTITIONS = 3
ROLE_ATTEMPTS_MAX = 4


@pytest.fixture
def kafka_cluster(ringlog_bin, tmp_path):
    c = Cluster(tmp_path, extra_sets=SETS, kafka=True).start()
    yield c
    for n in c.nodes:
        if n.proc is not None and n.proc.poll() is None:
            n.proc.send_signal(signal.SIGCONT)
    c.stop()


def list_offsets_v1(topic, partition, timestamp=-1):
    body = struct.pack(">i", -1) + struct.pack(">i", 1) + kw.string(topic) + struct.pack(">i", 1)
    return body + struct.pack(">iq", partition, timestamp)


def parse_list_offsets_v1(body):
    """[(partition, error_code, offset)]."""
    r = kw.Reader(body)
    out = []
    for _ in range(r.take(">i")):
        r.string()
        for _ in range(r.take(">i")):
            partition, error = r.take(">i"), r.take(">h")
            r.take(">q")  # timestamp
            out.append((partition, error, r.take(">q")))
    return out


def kafka_latest(node, topic, p):
    with kw.connect(node.bootstrap) as sock:
        _, body = kw.exchange(sock, API_LIST_OFFSETS, 1, 7, list_offsets_v1(topic, p))
    [(_, error, offset)] = parse_list_offsets_v1(body)
    return error, offset


def kafka_fetch(node, topic, p, offset):
    with kw.connect(node.bootstrap) as sock:
        _, body = kw.exchange(sock, kw.API_FETCH, 4, 8, kw.fetch_v4(topic, p, offset))
    [(_, _, error, _hw, _records)] = kw.parse_fetch_v4(body)
    return error


def figures(node, topic, p):
    r = describe(node, topic)
    return r.json()["data"][p] if r.status_code == 200 else None


def leader_of(node, topic, p):
    f = figures(node, topic, p)
    if f is None or f["leader"] is None:
        return None
    return int(f["leader"]["related"].rsplit("/", 1)[1])


def replica_order(node, topic, p):
    r = requests.get(node.v3(f"/topics/{topic}/partitions/{p}/replicas"), timeout=5)
    return [x["broker_id"] for x in r.json()["data"]], all(x["is_in_sync"] for x in r.json()["data"])


def own_log_end(node, topic, p):
    """The node's own replica's log end offset (/metrics gauges are per node)."""
    needle = f'ringlog_partition_log_end_offset{{topic="{topic}",partition="{p}"}} '
    for line in requests.get(node.url + "/metrics", timeout=5).text.splitlines():
        if line.startswith(needle):
            return int(line[len(needle):])
    return None


def produce(node, topic, p, values, acks):
    r = requests.post(f"{node.url}/topics/{topic}", params={"acks": acks},
                      json={"records": [{"value": v, "partition": p} for v in values]},
                      headers={"Content-Type": JSONV2}, timeout=40)
    assert r.status_code == 200, r.text
    return [o["offset"] for o in r.json()["offsets"]]


def pick_roles(c, n1):
    """(p, A, B, C): a partition p whose leader A is followed, in replica order, by the active
    controller B; C is the third replica. A's controlled shutdown then moves the leadership to B
    (the first usable in-sync replica), and B, leading the quorum, applies that change before A is
    gone. When the controller is no partition's next leader, it is restarted (another node then
    leads the quorum) and the roles are looked for again."""
    for _ in range(ROLE_ATTEMPTS_MAX):
        q = wait_until(c.controller, 30.0, "one quorum leader")
        orders = {}
        for i in range(PARTITIONS):
            leader = wait_until(lambda: leader_of(n1, "ends", i), 30.0, "a leader")
            order, _ = wait_until(lambda: (lambda o: o if o[1] else None)(replica_order(n1, "ends", i)), 30.0,
                                  "ISR of three")
            orders[i] = order
            nxt = [x for x in order if x != leader][0]
            if leader != q and nxt == q:
                return i, leader, q, next(x for x in order if x not in (leader, q))
        node = c.node(q)
        node.stop()
        node.spawn()
        wait_until(node.healthy, 60.0, f"node {q} back")
    raise AssertionError(f"no partition whose leader is followed by the controller in replica order: {orders}")


def test_a_new_leader_answers_no_end_until_its_high_watermark_is_established(kafka_cluster):
    c = kafka_cluster
    wait_until(c.controller, 20.0, "one quorum leader")
    n1 = c.node(1)
    assert create_topic(n1, "ends", partitions=PARTITIONS, replication_factor=3,
                        configs=[{"name": "min.insync.replicas", "value": "2"}]).status_code == 201
    p, a_id, b_id, c_id = pick_roles(c, n1)
    a, b, c_node = c.node(a_id), c.node(b_id), c.node(c_id)
    for n in (a, b, c_node):
        wait_until(lambda: leader_of(n, "ends", p) == a_id or None, 20.0, f"node {n.node_id} knows the topic")
    acked = produce(a, "ends", p, [f"v{i}" for i in range(10)], acks="all")
    committed_end = acked[-1] + 1
    # C stops (in the ISR still): acks=1 writes reach A and B, the high watermark stays.
    c_node.proc.send_signal(signal.SIGSTOP)
    more = produce(a, "ends", p, [f"w{i}" for i in range(10)], acks="1")
    log_end = more[-1] + 1
    wait_until(lambda: own_log_end(b, "ends", p) == log_end, 20.0, "B has every record")
    # A stops: a controlled shutdown moves the leadership to B.
    a.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: a.proc.poll() is not None or None, 60.0, "A stopped")
    a.proc = None
    wait_until(lambda: leader_of(b, "ends", p) == b_id or None, 30.0, "B leads")
    f = figures(b, "ends", p)
    assert f["high_watermark"] < log_end and f["high_watermark_established"] is False, f

    # Kafka: ListOffsets latest and a Fetch at the high watermark answer OFFSET_NOT_AVAILABLE.
    assert kafka_latest(b, "ends", p)[0] == OFFSET_NOT_AVAILABLE
    assert kafka_fetch(b, "ends", p, f["high_watermark"]) == OFFSET_NOT_AVAILABLE
    # ... and so does a Fetch below it: its records are committed, but its answer would carry the
    # high watermark not yet established, below what was acknowledged (KAFKA-2334; breaker finding:
    # 905 such answers in one isolate-leader run). Only while establishing, never for a lapsed lease.
    assert kafka_fetch(b, "ends", p, 0) == OFFSET_NOT_AVAILABLE
    # HTTP: the offsets routes answer 503/50302 with Retry-After, never a smaller end.
    r = requests.get(f"{b.url}/topics/ends/partitions/{p}/offsets", timeout=5)
    assert r.status_code == 503 and r.json()["error_code"] == 50302, r.text
    assert r.headers.get("Retry-After") == "1"
    r = requests.get(b.v3(f"/topics/ends/partitions/{p}/offset"), timeout=5)
    assert r.status_code == 503 and r.json()["error_code"] == 50302, r.text
    # The CLI marks the figures the leader has not established (new user's finding: they looked normal).
    described = subprocess.run([str(binary_path()), "topics", "describe", "ends", "--bootstrap-server", b.url],
                               capture_output=True, text=True, timeout=60)
    assert described.returncode == 0, described.stderr
    line = next(x for x in described.stdout.splitlines() if f"\tPartition: {p}\t" in x)
    assert "(figures not established by the leader)" in line, described.stdout
    # A long-poll read at the end waits its time and answers nothing (not 503, not out of range).
    r = requests.get(f"{b.url}/topics/ends/partitions/{p}/records", params={"offset": f["high_watermark"], "timeout": 300},
                     headers={"Accept": JSONV2}, timeout=10)
    assert r.status_code == 200 and r.json() == [], r.text

    # C continues: it fetches from B, the high watermark reaches the epoch's start, ends are answered.
    c_node.proc.send_signal(signal.SIGCONT)
    wait_until(lambda: kafka_latest(b, "ends", p)[0] == 0 or None, 30.0, "ListOffsets answered")
    error, latest = kafka_latest(b, "ends", p)
    assert error == 0 and latest >= log_end >= committed_end
    r = requests.get(f"{b.url}/topics/ends/partitions/{p}/offsets", timeout=5)
    assert r.status_code == 200 and r.json()["end_offset"] >= log_end, r.text
    assert figures(b, "ends", p)["high_watermark_established"] is True
    assert kafka_fetch(b, "ends", p, 0) == 0
