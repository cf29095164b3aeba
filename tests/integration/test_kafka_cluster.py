"""Kafka clients against a three-broker ringlog cluster (issues "Cluster II" and "Kafka listener").

Metadata on any broker lists every live broker's kafka:// address and each partition's real
leader, so clients route produces to leaders themselves; FindCoordinator names the broker that
leads the group's __consumer_offsets partition. kill -9 of a partition's leader: librdkafka's
producer (acks=all, idempotence off) refreshes its metadata and carries on; every acknowledged
record is then read back by a consumer group through another broker.
"""
import contextlib
import struct
import time

import requests

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

import kafka_wire
from conftest import wait_until
from test_cluster import FAILOVER_DEADLINE_S, Cluster
from test_replication import isr_of, leader_of
from test_replication import produce as produce_http


def quiet(f):
    """f(), or None while the node answering has not applied the topic yet (404 without data)."""
    try:
        return f()
    except (KeyError, TypeError, IndexError):
        return None


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
        # A Kafka client pointed at the cluster:// (inter-broker) listener is refused: the
        # connection is closed unanswered (it was answered ApiVersions, then errors) and the node
        # logs one line naming its kafka:// listener.
        with kafka_wire.connect(f"127.0.0.1:{n1.cluster_port}") as s:
            s.sendall(kafka_wire.frame(18, 0, 1, b"", client_id="rdkafka"))
            assert s.recv(64) == b""
        wrong = AdminClient({"bootstrap.servers": f"127.0.0.1:{n1.cluster_port}"})
        try:
            wrong.list_topics(timeout=3)
            raise AssertionError("Metadata through the cluster listener answered")
        except KafkaException:
            pass
        del wrong
        refused = wait_until(lambda: [line for line in n1.log_path.read_text().splitlines()
                                      if "cluster connection refused" in line] or None, 10.0, "the refusal's log line")
        assert f"kafka://127.0.0.1:{n1.kafka_port}" in refused[0] and 'client_id="rdkafka"' in refused[0], refused[0]
        # librdkafka redialled for 3 s: one line per reason per 10 s, with a count, not one per
        # connection (a refused broker's redials flooded its peers' logs: session 32's new user).
        lines = [line for line in n1.log_path.read_text().splitlines() if "cluster connection refused" in line]
        assert len(lines) <= 3, lines
        futures = admin.create_topics([NewTopic("kc", num_partitions=3, replication_factor=3)])
        futures["kc"].result(timeout=30)
        wait_until(lambda: all(quiet(lambda: isr_of(n1, "kc", p)) == [1, 2, 3] for p in range(3)) or None, 20.0,
                   "ISRs of three")
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


# ---------------------------------------------------------------- KIP-951 by hand (flexible Produce v10)

def produce_v10(sock, topic, partition, records):
    body = (kafka_wire.uvarint(0) + struct.pack(">hi", -1, 10000) + kafka_wire.uvarint(2) + kafka_wire.compact_string(topic) + kafka_wire.uvarint(2) +
            struct.pack(">i", partition) + kafka_wire.uvarint(len(records) + 1) + records + b"\x00" + b"\x00" + b"\x00")
    header = struct.pack(">hhi", 0, 10, 7) + kafka_wire.string("ringlog-test") + b"\x00"   # header v2
    sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
    size = struct.unpack(">i", kafka_wire.read_exact(sock, 4))[0]
    r = kafka_wire.FlexReader(kafka_wire.read_exact(sock, size))
    assert r.take(">i") == 7
    r.tagged()                                   # response header v1
    assert r.uvarint() == 2 and r.compact_string() == topic and r.uvarint() == 2
    index, error = r.take(">i"), r.take(">h")
    r.take(">q"), r.take(">q"), r.take(">q")   # base offset, log append time, log start offset
    for _ in range(r.uvarint() - 1):            # record_errors
        r.take(">i"), r.compact_string(), r.tagged()
    message = r.compact_string()
    leader = kafka_wire.FlexReader(r.tagged().get(0, b""))
    current_leader = (leader.take(">i"), leader.take(">i")) if leader.data else None
    r.tagged()                                   # topic
    r.take(">i")                                 # throttle time
    endpoints = {}
    raw = r.tagged().get(0)
    if raw is not None:
        e = kafka_wire.FlexReader(raw)
        for _ in range(e.uvarint() - 1):
            node, host, port = e.take(">i"), e.compact_string(), e.take(">i")
            e.compact_string(), e.tagged()
            endpoints[node] = (host, port)
    return index, error, message, current_leader, endpoints


@contextlib.contextmanager
def cluster_with_topic(tmp_path, topic):
    """Three brokers with Kafka listeners and `topic` (1 partition, replication factor 3), created
    through node 1 with confluent-kafka's AdminClient; stopped at the end."""
    c = Cluster(tmp_path, kafka=True).start()
    try:
        wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        admin = AdminClient({"bootstrap.servers": c.node(1).bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3)])[topic].result(timeout=30)
        yield c
    finally:
        c.stop()


def test_produce_to_a_non_leader_names_the_leader_and_its_endpoint_kip_951(ringlog_bin, tmp_path):
    """Produce v10 to a broker that does not lead the partition: NOT_LEADER_OR_FOLLOWER with the
    current leader and leader epoch (CurrentLeader, tag 0) and that broker's kafka:// endpoint
    (NodeEndpoints), so the client can retry there without a Metadata round trip."""
    with cluster_with_topic(tmp_path, "hint") as c:
        n1 = c.node(1)
        leader = wait_until(lambda: quiet(lambda: leader_of(n1, "hint", 0)), 20.0, "a leader")
        other = next(n for n in c.nodes if n.node_id != leader)
        wait_until(lambda: quiet(lambda: leader_of(other, "hint", 0)) == leader or None, 20.0,
                   "the other broker knows the leader")
        epoch = requests.get(other.v3("/topics/hint/partitions/0"), timeout=5).json()["leader_epoch"]
        records = kafka_wire.batch([(None, b"v", None, int(time.time() * 1000))])
        with kafka_wire.connect(other.bootstrap) as sock:
            index, error, message, current_leader, endpoints = produce_v10(sock, "hint", 0, records)
        assert (index, error) == (0, 6), message
        assert current_leader == (leader, epoch), (current_leader, leader, epoch)
        assert endpoints == {leader: ("127.0.0.1", c.node(leader).kafka_port)}, endpoints
        # Below v10 the answer has no room for the hints: a plain NOT_LEADER_OR_FOLLOWER, and the
        # broker lives on (an answer with hints at v3 failed to encode and aborted the broker).
        with kafka_wire.connect(other.bootstrap) as sock:
            _, body = kafka_wire.exchange(sock, kafka_wire.API_PRODUCE, 3, 8, kafka_wire.produce_v3("hint", 0, records))
        assert [(t, p, e) for t, p, e, _, _ in kafka_wire.parse_produce_v3(body)] == [("hint", 0, 6)]
        other.healthy()


# ---------------------------------------------------------------- OffsetForLeaderEpoch (KIP-320)

def offset_for_leader_epoch_v3(node, topic, current_leader_epoch, leader_epoch):
    """One OffsetForLeaderEpoch v3 (replica_id -1: a consumer) of partition 0 to `node`:
    (error_code, leader_epoch, end_offset)."""
    body = (struct.pack(">ii", -1, 1) + kafka_wire.string(topic) +
            struct.pack(">iiii", 1, 0, current_leader_epoch, leader_epoch))
    with kafka_wire.connect(node.bootstrap) as sock:
        _, answer = kafka_wire.exchange(sock, 23, 3, 23, body)
    r = kafka_wire.Reader(answer)
    r.take(">i")                       # throttle_time_ms
    assert r.take(">i") == 1 and r.string() == topic and r.take(">i") == 1
    error, partition, epoch, end_offset = r.take(">h"), r.take(">i"), r.take(">i"), r.take(">q")
    assert partition == 0
    return error, epoch, end_offset


def _leader_epoch_of(node, topic):
    return requests.get(node.v3(f"/topics/{topic}/partitions/0"), timeout=5).json()["leader_epoch"]


def _produced(node, topic, values):
    """The values' offsets once node accepted them all with acks=all, or None (retried by the caller)."""
    try:
        r = produce_http(node, topic, 0, values)
    except requests.RequestException:
        return None
    if r.status_code != 200 or any(o.get("error") is not None for o in r.json()["offsets"]):
        return None
    return [o["offset"] for o in r.json()["offsets"]]


@contextlib.contextmanager
def _leader_killed_once(tmp_path, topic):
    """Three brokers and `topic` (1 partition, rf 3): ten records acknowledged in the first leader's
    epoch, that leader killed with -9, ten more in the next leader's. Yields a dict: the cluster
    `c`, `first`/`leader`/`follower` (nodes), `old_epoch`/`epoch` and the offsets where they end,
    `old_end`/`log_end`. (A retried produce may have stored a failed attempt's records too:
    ends are read off the answered offsets, never assumed.)"""
    with cluster_with_topic(tmp_path, topic) as c:
        n1 = c.node(1)
        wait_until(lambda: quiet(lambda: isr_of(n1, topic, 0)) == [1, 2, 3] or None, 20.0, "an ISR of three")
        first = wait_until(lambda: quiet(lambda: leader_of(n1, topic, 0)), 20.0, "a leader")
        writer = next(n for n in c.nodes if n.node_id != first)
        old_end = wait_until(lambda: _produced(writer, topic, [f"a{i}" for i in range(10)]), 30.0,
                             "ten records acknowledged")[-1] + 1
        old_epoch = _leader_epoch_of(c.node(first), topic)
        assert offset_for_leader_epoch_v3(c.node(first), topic, old_epoch, old_epoch) == (0, old_epoch, old_end)
        c.node(first).kill()
        second = wait_until(lambda: (lambda l: l if l not in (None, first) else None)(quiet(lambda: leader_of(writer, topic, 0))),
                            FAILOVER_DEADLINE_S, "a new leader")
        log_end = wait_until(lambda: _produced(writer, topic, [f"b{i}" for i in range(10)]), 30.0,
                             "ten more records acknowledged")[-1] + 1
        leader = c.node(second)
        epoch = _leader_epoch_of(leader, topic)
        assert epoch > old_epoch
        # The new leader's partition has applied its epoch once it answers it.
        assert wait_until(lambda: (lambda a: a if a[0] == 0 else None)(offset_for_leader_epoch_v3(leader, topic, epoch, epoch)),
                          10.0, "the new leader answering its epoch") == (0, epoch, log_end)
        follower = next(n for n in c.nodes if n.node_id not in (first, second))
        wait_until(lambda: _leader_epoch_of(follower, topic) == epoch or None, 10.0, "the follower learning the epoch")
        yield dict(c=c, first=c.node(first), leader=leader, follower=follower, old_epoch=old_epoch, epoch=epoch,
                   old_end=old_end, log_end=log_end)


def test_offset_for_leader_epoch_answers_older_epochs_from_the_leaders_epoch_cache(ringlog_bin, tmp_path):
    """KIP-320 consumers (librdkafka >= 2.1, the Java consumer >= 2.3) validate their position
    with OffsetForLeaderEpoch after every leader change, asking the epoch of the last record they
    fetched. Kafka answers from the leader's epoch cache (LeaderEpochFileCache.endOffsetFor): the
    largest epoch <= the one asked and where it ends. An older epoch answered "undefined" (-1, -1)
    reads as log truncation and resets the consumer by auto.offset.reset (a breaker saw 200
    acknowledged records skipped with latest). A follower refuses (NOT_LEADER_OR_FOLLOWER); a
    stale or future CurrentLeaderEpoch is FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH."""
    with _leader_killed_once(tmp_path, "olfe") as k:
        leader, old_epoch, epoch, old_end = k["leader"], k["old_epoch"], k["epoch"], k["old_end"]
        # The old epoch ends where the new one's records start.
        assert offset_for_leader_epoch_v3(leader, "olfe", epoch, old_epoch) == (0, old_epoch, old_end)
        assert offset_for_leader_epoch_v3(leader, "olfe", -1, old_epoch) == (0, old_epoch, old_end)
        # An epoch between the two (no record of its own) ends where the next one with records starts.
        if epoch - old_epoch > 1:
            assert offset_for_leader_epoch_v3(leader, "olfe", -1, epoch - 1) == (0, old_epoch, old_end)
        # An epoch newer than the leader's: undefined, as Kafka's cache answers it.
        assert offset_for_leader_epoch_v3(leader, "olfe", -1, epoch + 5) == (0, -1, -1)
        # KIP-320's fence on CurrentLeaderEpoch.
        assert offset_for_leader_epoch_v3(leader, "olfe", old_epoch, old_epoch)[0] == 74
        assert offset_for_leader_epoch_v3(leader, "olfe", epoch + 1, old_epoch)[0] == 75
        # A follower does not answer for its leader: the client goes to the leader.
        assert wait_until(lambda: (lambda a: a if a[0] != 75 else None)(offset_for_leader_epoch_v3(k["follower"], "olfe", epoch, old_epoch)),
                          10.0, "the follower applying the epoch") == (6, -1, -1)
        assert offset_for_leader_epoch_v3(leader, "nosuch", -1, 0)[0] == 3
        leader.healthy()


def fetch_v11(node, topic, current_leader_epoch, fetch_offset=0):
    """One Fetch v11 of partition 0 (no session): (error_code, high_watermark)."""
    body = (struct.pack(">iiiibii", -1, 0, 0, 1 << 20, 0, 0, -1) + struct.pack(">i", 1) + kafka_wire.string(topic) +
            struct.pack(">iiiqqi", 1, 0, current_leader_epoch, fetch_offset, -1, 1 << 20) +
            struct.pack(">i", 0) + kafka_wire.string(""))
    with kafka_wire.connect(node.bootstrap) as sock:
        _, answer = kafka_wire.exchange(sock, kafka_wire.API_FETCH, 11, 5, body)
    r = kafka_wire.Reader(answer)
    r.take(">i"), r.take(">h"), r.take(">i")   # throttle_time_ms, error_code, session_id
    assert r.take(">i") == 1 and r.string() == topic and r.take(">i") == 1
    assert r.take(">i") == 0
    return r.take(">h"), r.take(">q")


def list_offsets_v5(node, topic, current_leader_epoch, timestamp):
    """One ListOffsets v5 of partition 0: (error_code, offset, leader_epoch)."""
    body = (struct.pack(">ibi", -1, 0, 1) + kafka_wire.string(topic) +
            struct.pack(">iiiq", 1, 0, current_leader_epoch, timestamp))
    with kafka_wire.connect(node.bootstrap) as sock:
        _, answer = kafka_wire.exchange(sock, 2, 5, 6, body)
    r = kafka_wire.Reader(answer)
    r.take(">i")
    assert r.take(">i") == 1 and r.string() == topic and r.take(">i") == 1
    assert r.take(">i") == 0
    error, _timestamp, offset, epoch = r.take(">h"), r.take(">q"), r.take(">q"), r.take(">i")
    return error, offset, epoch


def test_fetch_and_list_offsets_fence_a_stale_or_future_current_leader_epoch(ringlog_bin, tmp_path):
    """KIP-320 (Kafka's Partition.checkCurrentLeaderEpoch): Fetch v9+ and ListOffsets v4+ name the
    leader epoch the client believes current; an older one is FENCED_LEADER_EPOCH (74), a newer
    one UNKNOWN_LEADER_EPOCH (75), so a client with stale metadata refreshes it instead of reading
    on. ListOffsets answers the epoch of the offset it found (latest: the leader's current one)."""
    with _leader_killed_once(tmp_path, "fence") as k:
        leader, follower, old_epoch, epoch = k["leader"], k["follower"], k["old_epoch"], k["epoch"]
        assert fetch_v11(leader, "fence", epoch) == (0, k["log_end"])
        assert fetch_v11(leader, "fence", -1) == (0, k["log_end"])
        assert fetch_v11(leader, "fence", old_epoch)[0] == 74
        assert fetch_v11(leader, "fence", epoch + 5)[0] == 75
        assert fetch_v11(follower, "fence", old_epoch)[0] == 74   # before the follower forwards it
        assert list_offsets_v5(leader, "fence", epoch, -1) == (0, k["log_end"], epoch)
        assert list_offsets_v5(leader, "fence", -1, -2) == (0, 0, old_epoch)
        assert list_offsets_v5(leader, "fence", old_epoch, -1)[0] == 74
        assert list_offsets_v5(leader, "fence", epoch + 5, -1)[0] == 75
        # Through the follower (forwarded to the leader): the leader's epochs come back too.
        assert list_offsets_v5(follower, "fence", epoch, -1) == (0, k["log_end"], epoch)
        leader.healthy()


def _or_none(f):
    """f(), or None while a client call fails (a coordinator still being elected or loaded)."""
    try:
        return f()
    except Exception:  # noqa: BLE001 - confluent_kafka raises KafkaException for retriable states
        return None


def _offset_fetch_v3(group, topic, partition):
    return (kafka_wire.string(group) + struct.pack(">i", 1) + kafka_wire.string(topic) +
            struct.pack(">ii", 1, partition))


def _parse_offset_fetch_v3(body):
    """(top-level error, [(partition, committed_offset, partition error)]) of an OffsetFetch v3 answer."""
    r = kafka_wire.Reader(body)
    r.take(">i")                                   # throttle_time_ms
    rows = []
    for _ in range(r.take(">i")):
        r.string()
        for _ in range(r.take(">i")):
            partition, offset = r.take(">i"), r.take(">q")
            r.string()
            rows.append((partition, offset, r.take(">h")))
    return r.take(">h"), rows


def test_offset_fetch_on_a_broker_that_is_not_the_coordinator_answers_not_coordinator(ringlog_bin, tmp_path):
    """OffsetFetch reaching a broker that does not coordinate the group answers NOT_COORDINATOR
    (16), as Kafka does, so the client finds the coordinator again; "no committed offset" (-1)
    there sent a consumer back to auto.offset.reset and an exactly-once pipeline re-read its input."""
    from confluent_kafka import TopicPartition
    with cluster_with_topic(tmp_path, "of") as c:
        n1 = c.node(1)
        consumer = Consumer({"bootstrap.servers": n1.bootstrap, "group.id": "of-group", "enable.auto.commit": False})
        try:
            wait_until(lambda: _or_none(lambda: consumer.commit(offsets=[TopicPartition("of", 0, 42)], asynchronous=False)),
                       FAILOVER_DEADLINE_S, "a committed offset")
        finally:
            consumer.close()

        def answers():
            out = {}
            for n in c.nodes:
                with kafka_wire.connect(n.bootstrap) as sock:
                    _, body = kafka_wire.exchange(sock, 9, 3, 1, _offset_fetch_v3("of-group", "of", 0))
                out[n.node_id] = _parse_offset_fetch_v3(body)
            return out
        seen = wait_until(lambda: (lambda a: a if sorted(e for e, _ in a.values()) == [0, 16, 16] else None)(answers()),
                          FAILOVER_DEADLINE_S, "one coordinator answering, two refusing")
        for node_id, (error, rows) in seen.items():
            if error == 0:
                assert rows == [(0, 42, 0)], (node_id, rows)
            else:   # from v2 the group's error is the answer's own, with no partitions (getErrorResponse)
                assert rows == [], (node_id, rows)


def _java_string_hash(s):
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _coordinator_partition(key, partitions):
    """Kafka's partitionFor: Utils.abs(key.hashCode) % partitions (Utils.abs(MIN_VALUE) = 0)."""
    h = _java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def test_transaction_offsets_commit_when_the_group_and_transaction_coordinators_differ(ringlog_bin, tmp_path):
    """send_offsets_to_transaction with the group's coordinator on another broker than the
    transaction's: the marker reaches the group's coordinator (WriteTxnMarkers on the cluster
    listener), which commits the pending offsets before it answers, and the transaction completes.
    (It used to stay in PrepareCommit, retrying the marker forever, with the offsets never committed.)"""
    from confluent_kafka import TopicPartition
    with cluster_with_topic(tmp_path, "split") as c:
        n1 = c.node(1)
        conf = {"bootstrap.servers": n1.bootstrap, "transaction.timeout.ms": 30000, "message.timeout.ms": 30000}
        warm = Producer({**conf, "transactional.id": "split-warmup"})
        warm.init_transactions(60)   # __transaction_state exists from here on
        group_probe = Consumer({"bootstrap.servers": n1.bootstrap, "group.id": "split-probe", "enable.auto.commit": False})
        wait_until(lambda: _or_none(lambda: group_probe.commit(offsets=[TopicPartition("split", 0, 1)], asynchronous=False)),
                   FAILOVER_DEADLINE_S, "__consumer_offsets to exist")
        group_probe.close()

        def partition_count(topic):
            r = requests.get(n1.v3(f"/topics/{topic}/partitions"), timeout=5)
            return len(r.json()["data"]) if r.status_code == 200 else None
        state_partitions = wait_until(lambda: partition_count("__transaction_state"), 20.0, "__transaction_state")
        offsets_partitions = wait_until(lambda: partition_count("__consumer_offsets"), 20.0, "__consumer_offsets")

        def split_pair():
            for i in range(200):
                tid, group = f"split-t{i}", f"split-g{i}"
                t_leader = leader_of(n1, "__transaction_state", _coordinator_partition(tid, state_partitions))
                g_leader = leader_of(n1, "__consumer_offsets", _coordinator_partition(group, offsets_partitions))
                if t_leader is not None and g_leader is not None and t_leader != g_leader:
                    return tid, group
            return None
        tid, group = wait_until(split_pair, 20.0, "a transactional id and a group coordinated by different brokers")

        p = Producer({**conf, "transactional.id": tid})
        p.init_transactions(60)
        consumer = Consumer({"bootstrap.servers": n1.bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            p.begin_transaction()
            p.produce("split", value=b"out", partition=0)
            p.send_offsets_to_transaction([TopicPartition("split", 0, 11)], consumer.consumer_group_metadata(), 30)
            p.commit_transaction(60)
            wait_until(lambda: _or_none(lambda: consumer.committed([TopicPartition("split", 0)], timeout=10)[0].offset == 11) or None,
                       FAILOVER_DEADLINE_S, "the transaction's offsets to be the group's")
            url = n1.v3(f"/transactions/{tid}")
            wait_until(lambda: requests.get(url, timeout=5).json().get("state") == "CompleteCommit" or None,
                       FAILOVER_DEADLINE_S, "the transaction to complete")
            # The next transaction of the same producer goes through (it used to get CONCURRENT_TRANSACTIONS).
            p.begin_transaction()
            p.produce("split", value=b"out2", partition=0)
            p.send_offsets_to_transaction([TopicPartition("split", 0, 12)], consumer.consumer_group_metadata(), 30)
            p.commit_transaction(60)
            wait_until(lambda: _or_none(lambda: consumer.committed([TopicPartition("split", 0)], timeout=10)[0].offset == 12) or None,
                       FAILOVER_DEADLINE_S, "the second transaction's offsets")
        finally:
            consumer.close()


def test_transactional_produce_is_verified_by_a_coordinator_on_another_broker(ringlog_bin, tmp_path):
    """KIP-890 part 1 across brokers: the partition's leader asks the transactional id's
    coordinator on another broker (AddPartitionsToTxn v4 VerifyOnly on the cluster listener).
    librdkafka's transaction (which adds the partition first) is verified and committed; a raw
    transactional Produce to a partition that was never added is INVALID_TXN_STATE (48) from
    the remote coordinator, and opens no transaction there."""
    with cluster_with_topic(tmp_path, "verified") as c:
        n1 = c.node(1)
        conf = {"bootstrap.servers": n1.bootstrap, "transaction.timeout.ms": 30000, "message.timeout.ms": 30000}
        warm = Producer({**conf, "transactional.id": "verified-warmup"})
        warm.init_transactions(60)   # __transaction_state exists from here on

        def partition_count(topic):
            r = requests.get(n1.v3(f"/topics/{topic}/partitions"), timeout=5)
            return len(r.json()["data"]) if r.status_code == 200 else None
        state_partitions = wait_until(lambda: partition_count("__transaction_state"), 20.0, "__transaction_state")
        data_leader = wait_until(lambda: leader_of(n1, "verified", 0), 20.0, "a leader of verified-0")

        def remote_tid():
            for i in range(200):
                tid = f"verified-t{i}"
                t_leader = leader_of(n1, "__transaction_state", _coordinator_partition(tid, state_partitions))
                if t_leader is not None and t_leader != data_leader:
                    return tid
            return None
        tid = wait_until(remote_tid, 20.0, "a transactional id coordinated away from verified-0's leader")
        p = Producer({**conf, "transactional.id": tid})
        p.init_transactions(60)
        p.begin_transaction()
        p.produce("verified", value=b"in", partition=0)
        p.commit_transaction(60)
        reader = Consumer({"bootstrap.servers": n1.bootstrap, "group.id": "verified-reader",
                           "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
        try:
            reader.subscribe(["verified"])
            got = []
            deadline = time.monotonic() + FAILOVER_DEADLINE_S
            while not got and time.monotonic() < deadline:
                m = reader.poll(1.0)
                if m is not None and m.error() is None:
                    got.append(m.value())
            assert got == [b"in"]
        finally:
            reader.close()
        # The producer's id and epoch from its coordinator (DescribeTransactions over HTTP).
        state = requests.get(n1.v3(f"/transactions/{tid}"), timeout=5).json()
        pid, epoch = state["producer_id"], state["producer_epoch"]
        leader = c.node(data_leader)
        records = kafka_wire.batch([(None, b"stray", [], int(time.time() * 1000))], producer=(pid, epoch, 1),
                                   transactional=True)
        with kafka_wire.connect(leader.bootstrap) as s:
            _, body = kafka_wire.exchange(s, 0, 3, 7, kafka_wire.produce_v3("verified", 0, records, transactional_id=tid))
        [(_, _, error, _, _)] = kafka_wire.parse_produce_v3(body)
        assert error == 48   # INVALID_TXN_STATE: no ongoing transaction holds verified-0
        # Nothing hangs: a record produced after it is read by a read_committed reader (an open
        # transaction at the stray batch would hold the reader below it).
        r = requests.post(leader.url + "/topics/verified", json={"records": [{"partition": 0, "value": "after"}]},
                          headers={"Content-Type": "application/vnd.kafka.json.v2+json"}, timeout=10)
        assert r.status_code == 200, r.text
        after = r.json()["offsets"][0]["offset"]
        r = requests.get(leader.url + "/topics/verified/partitions/0/records",
                         params={"offset": after, "isolation_level": "read_committed"},
                         headers={"Accept": "application/vnd.kafka.json.v2+json"}, timeout=10)
        assert r.status_code == 200 and [x["value"] for x in r.json()] == ["after"], r.text
