"""Delayed delivery (issue 18): deliver_at / delay_ms in v2, v3 and WebSocket produce, never early,
delay.max.ms refused with a clear error, and a kill -9 of the broker with pending delayed records
delivers each exactly once, in due order per partition, none early."""
import asyncio
import base64
import json
import time

import pytest
import requests
import websockets

from conftest import wait_until

BINARY = "application/vnd.kafka.binary.v2+json"
DEADLINE_S = 30.0


def b64(s):
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


def now_ms():
    return int(time.time() * 1000)


def read_all(broker, topic, partition):
    """Every record of a partition (several reads when needed)."""
    out = []
    while True:
        r = requests.get(f"{broker.url}/topics/{topic}/partitions/{partition}/records",
                         params={"offset": len(out) and out[-1]["offset"] + 1 or 0, "timeout": 0},
                         headers={"Accept": BINARY})
        assert r.status_code == 200, r.text
        got = r.json()
        if not got:
            return out
        out += got


def header(rec, name):
    for h in rec["headers"]:
        if h["key"] == name:
            return base64.b64decode(h["value"]).decode()
    return None


def test_delayed_record_is_not_readable_before_its_time(broker, topic_name):
    broker.create_topic(topic_name)
    due = now_ms() + 1500
    r = requests.post(broker.v3(f"/topics/{topic_name}/records"),
                      json={"key": {"type": "STRING", "data": "k"}, "value": {"type": "STRING", "data": "later"},
                            "deliver_at": due})
    assert r.status_code == 200, r.text
    assert r.json()["error_code"] == 200 and r.json()["offset"] == -1   # known once delivered
    # Before its time: the partition is empty whenever we look (each look is checked against the clock).
    looks = 0
    while now_ms() < due - 100:
        recs = read_all(broker, topic_name, 0)
        if now_ms() < due:
            assert recs == [], recs
        looks += 1
    assert looks > 0
    recs = wait_until(lambda: read_all(broker, topic_name, 0), DEADLINE_S, "the delayed record")
    assert len(recs) == 1
    rec = recs[0]
    assert base64.b64decode(rec["value"]) == b"later" and base64.b64decode(rec["key"]) == b"k"
    assert int(header(rec, "ringlog-deliver-at")) == due
    assert rec["timestamp"] >= due                    # appended at or after its time
    assert int(header(rec, "ringlog-produced-at")) <= due - 1000
    assert header(rec, "ringlog-delay-source").startswith("__delay-10s/")


def test_v2_delay_ms_and_ws_deliver_at(broker, topic_name):
    broker.create_topic(topic_name)
    before = now_ms()
    r = requests.post(f"{broker.url}/topics/{topic_name}", json={"records": [{"value": b64("v2"), "delay_ms": 700}]},
                      headers={"Content-Type": BINARY})
    assert r.status_code == 200, r.text
    assert r.json()["offsets"][0]["error_code"] is None and r.json()["offsets"][0]["offset"] == -1
    due = now_ms() + 600

    async def ws_produce():
        async with websockets.connect(f"ws://127.0.0.1:{broker.port}/v1/ws") as ws:
            await ws.send(json.dumps({"type": "produce", "id": 1, "topic": topic_name, "value": b64("ws"),
                                      "deliver_at": due}))
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

    ack = asyncio.run(ws_produce())
    assert ack.get("type") != "error", ack
    recs = wait_until(lambda: (lambda x: x if len(x) == 2 else None)(read_all(broker, topic_name, 0)), DEADLINE_S,
                      "both delayed records")
    by_value = {base64.b64decode(x["value"]): x for x in recs}
    assert by_value[b"v2"]["timestamp"] >= before + 700
    assert by_value[b"ws"]["timestamp"] >= due


def test_bad_delays_are_refused_naming_the_limit(broker, topic_name):
    broker.create_topic(topic_name)
    r = requests.post(broker.v3(f"/topics/{topic_name}/records"),
                      json={"value": {"type": "STRING", "data": "x"}, "delay_ms": 8 * 24 * 3600 * 1000})
    body = r.json()
    assert body["error_code"] != 200 and "delay.max.ms=604800000" in body["message"], body
    r = requests.post(f"{broker.url}/topics/{topic_name}",
                      json={"records": [{"value": b64("x"), "deliver_at": now_ms() + 8 * 24 * 3600 * 1000}]},
                      headers={"Content-Type": BINARY})
    assert r.status_code == 200 and "delay.max.ms" in r.json()["offsets"][0]["error"], r.text
    r = requests.post(broker.v3(f"/topics/{topic_name}/records"),
                      json={"value": {"type": "STRING", "data": "x"}, "delay_ms": -5})
    assert r.json()["error_code"] in (400, 422) and "delay_ms" in r.json()["message"], r.text
    r = requests.post(broker.v3(f"/topics/{topic_name}/records"),
                      json={"value": {"type": "STRING", "data": "x"}, "delay_ms": 5, "deliver_at": now_ms()})
    assert r.json()["error_code"] in (400, 422) and "not both" in r.json()["message"], r.text
    r = requests.post(broker.v3(f"/topics/{topic_name}/records"),
                      json={"value": {"type": "STRING", "data": "x"},
                            "headers": [{"name": "ringlog-deliver-at", "value": b64("soon")}]})
    assert r.json()["error_code"] != 200 and "ringlog-deliver-at" in r.json()["message"], r.text
    # A deliver_at in the past is delivered at once; nothing of the refused ones was stored.
    r = requests.post(broker.v3(f"/topics/{topic_name}/records"),
                      json={"value": {"type": "STRING", "data": "past"}, "deliver_at": 1000})
    assert r.json()["error_code"] == 200 and r.json()["offset"] == 0, r.text
    recs = read_all(broker, topic_name, 0)
    assert [base64.b64decode(x["value"]) for x in recs] == [b"past"]


HISTOGRAM_BOUNDS_MS = [0, 1000, 10000, 60000, 600000, 3600000, 86400000]   # broker.h delay_due_bucket_bounds_ms


def bucket_of(due, now):
    """The due_histogram bucket of a record due at `due` seen at `now`: (bound[i-1], bound[i]]."""
    for i, bound in enumerate(HISTOGRAM_BOUNDS_MS):
        if due - now <= bound:
            return i
    return len(HISTOGRAM_BOUNDS_MS)


def test_delayed_records_view_counts_pending_by_due_time_and_the_next_due(fresh_broker, topic_name):
    """GET /v3/clusters/{c}/delayed-records (the console's delayed-delivery view): pending records
    of every delay topic, their due times in the histogram, the next due time, and the counts
    moving as records are delivered."""
    b = fresh_broker()
    view = requests.get(b.v3("/delayed-records"))
    assert view.status_code == 200, view.text
    empty = view.json()
    assert empty["kind"] == "RinglogDelayedRecords"
    assert empty["pending_records"] == 0 and empty["schedulers"] == [] and empty["next_due_ms"] is None
    assert [x["records"] for x in empty["due_histogram"]] == [0] * 8
    assert empty["due_histogram"][0]["due_after_ms"] is None and empty["due_histogram"][-1]["due_within_ms"] is None
    assert abs(empty["now_ms"] - now_ms()) < 5000
    wrong = requests.get(f"{b.url}/v3/clusters/nope/delayed-records")
    assert wrong.status_code == 404 and "nope" in wrong.json()["message"], wrong.text

    b.create_topic(topic_name, partitions=2)
    start = now_ms()
    soon = [start + 4000 + i for i in range(3)]            # __delay-10s
    later = [start + 120_000, start + 150_000]              # __delay-5m
    much_later = [start + 2 * 3600 * 1000]                  # __delay-1d
    for i, due in enumerate(soon + later + much_later):
        r = requests.post(b.v3(f"/topics/{topic_name}/records"),
                          json={"partition_id": i % 2, "value": {"type": "STRING", "data": f"r{i}"}, "deliver_at": due})
        assert r.json()["error_code"] == 200, r.text
    dues = soon + later + much_later

    def all_read():
        d = requests.get(b.v3("/delayed-records")).json()
        return d if d["window_records"] == len(dues) and d["unread_records"] == 0 else None

    d = wait_until(all_read, DEADLINE_S, "the schedulers to read the 6 delayed records")
    assert d["pending_records"] == 6
    assert d["next_due_ms"] == min(soon)
    assert d["lag_ms"] == 0                                  # nothing is due yet
    expected = [0] * 8
    for due in dues:
        expected[bucket_of(due, d["now_ms"])] += 1
    assert [x["records"] for x in d["due_histogram"]] == expected, (d["now_ms"], d["due_histogram"])
    topics = {s["topic_name"] for s in d["schedulers"] if s["window_records"] > 0}
    assert topics == {"__delay-10s", "__delay-5m", "__delay-1d"}, d["schedulers"]
    assert sum(s["window_records"] for s in d["schedulers"]) == 6
    assert len({s["broker_id"] for s in d["schedulers"]}) == 1          # one broker runs them all
    assert min(s["next_due_ms"] for s in d["schedulers"] if s["next_due_ms"] is not None) == min(soon)

    # The three soon ones are delivered: the view counts them moved and the next due moves on.
    def soon_moved():
        v = requests.get(b.v3("/delayed-records")).json()
        return v if v["pending_records"] == 3 and v["moved_records"] >= 3 else None

    d = wait_until(soon_moved, DEADLINE_S, "the three soon records to be moved")
    assert now_ms() >= min(soon)
    assert d["next_due_ms"] == min(later)
    assert d["lag_ms"] == 0
    assert sum(len(read_all(b, topic_name, p)) for p in (0, 1)) == 3


@pytest.mark.parametrize("how", ["kill-9", "sigterm"])
def test_restart_with_pending_delayed_records_delivers_each_once_in_due_order(fresh_broker, topic_name, how):
    b = fresh_broker()
    b.create_topic(topic_name, partitions=3)
    count = 600
    start = now_ms()
    records = []
    for i in range(count):
        # Due 1.0 .. 4.0 s from now, interleaved so that append order is not due order.
        records.append({"key": b64(f"k{i % 7}"), "value": b64(f"r{i}"), "deliver_at": start + 1000 + (i * 7919) % 3000})
    for chunk in range(0, count, 200):
        r = requests.post(f"{b.url}/topics/{topic_name}", json={"records": records[chunk:chunk + 200]},
                          headers={"Content-Type": BINARY})
        assert r.status_code == 200 and all(o["error_code"] is None for o in r.json()["offsets"]), r.text

    def delivered():
        return sum(len(read_all(b, topic_name, p)) for p in range(3))

    # Kill it while some records are delivered and others are pending.
    wait_until(lambda: delivered() >= count // 5, DEADLINE_S, "some deliveries")
    if how == "kill-9":
        b.kill()
    else:
        assert b.stop() == 0
    killed_at = now_ms()
    b.start()
    wait_until(lambda: delivered() >= count, DEADLINE_S, "every delayed record")
    # Let the scheduler run a little past the last due time: a repeat would show up.
    last_due = max(r["deliver_at"] for r in records)
    wait_until(lambda: now_ms() > max(last_due, killed_at) + 1000, DEADLINE_S, "a second past the last due time")
    seen = {}
    for p in range(3):
        recs = read_all(b, topic_name, p)
        dues = [int(header(x, "ringlog-deliver-at")) for x in recs]
        assert dues == sorted(dues), f"partition {p} not in due order: {dues}"
        for x in recs:
            value = base64.b64decode(x["value"]).decode()
            seen[value] = seen.get(value, 0) + 1
            assert x["timestamp"] >= int(header(x, "ringlog-deliver-at")), x   # never early
    repeated = {k: v for k, v in seen.items() if v != 1}
    assert not repeated, repeated
    assert len(seen) == count


def test_kafka_client_delays_with_the_header(ringlog_bin, tmp_path):
    """A Kafka client (librdkafka) sets ringlog-deliver-at / ringlog-delay-ms as a record header."""
    from confluent_kafka import Producer
    from conftest import Broker, free_port

    b = Broker(tmp_path / "ringlog-data", kafka_port=free_port()).start()
    try:
        topic = "kdelay"
        b.create_topic(topic)
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 0})
        reports = []
        # Far enough ahead that the first produce (librdkafka's metadata and connection first) lands
        # before it on a loaded machine: a record whose time has passed is written at once (offset 0,
        # seen in a full-suite run under load with 1.2 s).
        due = now_ms() + 6000
        p.produce(topic, value=b"at", headers=[("ringlog-deliver-at", str(due).encode())], partition=0,
                  on_delivery=lambda err, msg: reports.append((err, msg.offset())))
        assert p.flush(15) == 0   # one batch each: a bad record refuses its whole batch
        p.produce(topic, value=b"now", partition=0, on_delivery=lambda err, msg: reports.append((err, msg.offset())))
        assert p.flush(15) == 0
        p.produce(topic, value=b"bad", headers=[("ringlog-delay-ms", b"soon")], partition=0,
                  on_delivery=lambda err, msg: reports.append((err, msg.offset())))
        assert p.flush(15) == 0
        assert reports[0][0] is None and reports[0][1] in (None, -1)   # delayed: offset known once delivered
        assert reports[1] == (None, 0)
        assert reports[2][0] is not None   # INVALID_RECORD: not decimal ms
        recs = read_all(b, topic, 0)
        if now_ms() < due:
            assert [base64.b64decode(x["value"]) for x in recs] == [b"now"]
        recs = wait_until(lambda: (lambda x: x if len(x) == 2 else None)(read_all(b, topic, 0)), DEADLINE_S,
                          "the delayed Kafka record")
        assert base64.b64decode(recs[1]["value"]) == b"at" and recs[1]["timestamp"] >= due
    finally:
        assert b.stop() == 0


def test_forged_source_headers_do_not_stop_a_move_after_kill_9(ringlog_bin, tmp_path):
    """The breaker's HIGH of session 23: a client that may write a topic produced records carrying
    ringlog-delay-source headers (the scheduler's dedup key, "__delay-10s/P@O") with a CreateTime
    an hour ahead; after a kill -9 the restarted scheduler looked its pending moves up in the
    target, took a forged header for its own move and never delivered the real record. A record
    in the target now counts as a move's only with the key, value and headers the move sent."""
    from confluent_kafka import Producer
    from conftest import Broker, free_port

    b = Broker(tmp_path / "ringlog-data", kafka_port=free_port()).start()
    try:
        topic = "forged"
        b.create_topic(topic, partitions=1)
        count = 300
        start = now_ms()
        records = [{"value": b64(f"r{i}"), "deliver_at": start + 2500 + (i * 7919) % 2500} for i in range(count)]
        r = requests.post(f"{b.url}/topics/{topic}/partitions/0", json={"records": records},
                          headers={"Content-Type": BINARY})
        assert r.status_code == 200 and all(o["error_code"] is None for o in r.json()["offsets"]), r.text
        delay_partitions = requests.get(b.v3("/topics/__delay-10s")).json()["partitions_count"]
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5})
        an_hour_ahead = now_ms() + 3_600_000
        for dp in range(delay_partitions):
            for o in range(count + 20):
                p.produce(topic, value=b"forged", partition=0, timestamp=an_hour_ahead,
                          headers=[("ringlog-delay-source", f"__delay-10s/{dp}@{o}".encode())])
        assert p.flush(30) == 0

        def real():
            return [x for x in read_all(b, topic, 0) if base64.b64decode(x["value"]) != b"forged"]

        # Kill it while some moves are done and others pending (their intents looked up on restart).
        wait_until(lambda: len(real()) >= count // 5, DEADLINE_S, "some deliveries")
        b.kill()
        b.start()
        wait_until(lambda: len(real()) >= count, DEADLINE_S, "every delayed record after the restart")
        last_due = max(x["deliver_at"] for x in records)
        wait_until(lambda: now_ms() > last_due + 1000, DEADLINE_S, "a second past the last due time")
        values = sorted(base64.b64decode(x["value"]).decode() for x in real())
        assert values == sorted(f"r{i}" for i in range(count)), "a delayed record lost or delivered twice"
    finally:
        b.stop()


def test_a_delayed_record_cannot_name_its_own_target_nor_ride_an_idempotent_session(ringlog_bin, tmp_path):
    """The breaker of session 29. (1) A delayed record carrying ringlog-delay-topic /
    ringlog-delay-partition (the headers the broker adds to name where the scheduler delivers it)
    was delivered to the topic the producer named, one it may not write (HIGH: an ACL bypass):
    now refused, as a record error naming the header, through every door. (2) An idempotent Kafka
    batch with a delay header was stored once per resend (the delay copy has no sequence): refused
    as the HTTP and WebSocket doors refuse it."""
    from confluent_kafka import Producer
    from conftest import Broker, free_port

    b = Broker(tmp_path / "ringlog-data", kafka_port=free_port()).start()
    try:
        b.create_topic("smug-src", partitions=1)
        b.create_topic("smug-dst", partitions=1)
        forged = [("ringlog-delay-ms", b"100"), ("ringlog-delay-topic", b"smug-dst"),
                  ("ringlog-delay-partition", b"0")]
        reports = []
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 0})
        p.produce("smug-src", value=b"smuggled", partition=0, headers=forged,
                  on_delivery=lambda err, msg: reports.append(err))
        assert p.flush(15) == 0
        assert reports[0] is not None and "INVALID_RECORD" in reports[0].name(), reports
        r = requests.post(b.v3("/topics/smug-src/records"),
                          json={"value": {"type": "STRING", "data": "smuggled"}, "delay_ms": 100,
                                "headers": [{"name": "ringlog-delay-topic", "value": b64("smug-dst")}]})
        assert r.json()["error_code"] != 200 and "ringlog-delay-topic" in r.json()["message"], r.text
        # The breaker of session 30: a delayed record carrying the scheduler's checkpoint header was
        # never delivered, and after a restart the scheduler took it for its own checkpoint.
        r = requests.post(b.v3("/topics/smug-src/records"),
                          json={"value": {"type": "STRING", "data": "garbage"}, "delay_ms": 100,
                                "headers": [{"name": "ringlog-delay-checkpoint", "value": b64("0")}]})
        assert r.json()["error_code"] != 200 and "ringlog-delay-checkpoint" in r.json()["message"], r.text

        idem_reports = []
        idem = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "linger.ms": 0})
        idem.produce("smug-src", value=b"idem", partition=0, headers=[("ringlog-delay-ms", b"100")],
                     on_delivery=lambda err, msg: idem_reports.append(err))
        idem.flush(15)
        assert idem_reports and idem_reports[0] is not None and "INVALID_RECORD" in idem_reports[0].name(), \
            idem_reports
        # A plain delayed record still goes where it was produced, and only there.
        r = requests.post(b.v3("/topics/smug-src/records"),
                          json={"value": {"type": "STRING", "data": "fine"}, "delay_ms": 100})
        assert r.json()["error_code"] == 200, r.text
        wait_until(lambda: len(read_all(b, "smug-src", 0)) == 1, DEADLINE_S, "the plain delayed record")
        assert read_all(b, "smug-dst", 0) == []
        assert base64.b64decode(read_all(b, "smug-src", 0)[0]["value"]) == b"fine"
    finally:
        assert b.stop() == 0


def test_a_delayed_record_carrying_the_source_header_is_refused_through_every_door(ringlog_bin, tmp_path):
    """Tester's finding (session 30): a delayed record (delay_ms or deliver_at) that also carried
    ringlog-delay-source, the header that marks a record a scheduler moved (never delayed again),
    was stored at once: its delay silently cancelled. Now refused like the other broker-owned
    headers, naming it (invalid_record; the Kafka door's INVALID_RECORD, idempotent producers too).
    REST v2 takes no record headers at all, so it cannot carry one. A due record with the header (a
    mirror of a delivered record) is still stored at once."""
    from confluent_kafka import Producer
    from conftest import Broker, free_port

    b = Broker(tmp_path / "ringlog-data", kafka_port=free_port()).start()
    try:
        topic = "srcdelay"
        b.create_topic(topic, partitions=1)
        source = {"name": "ringlog-delay-source", "value": b64("__delay-1h/0@7")}
        for delay in ({"delay_ms": 60_000}, {"deliver_at": now_ms() + 60_000}):
            r = requests.post(b.v3(f"/topics/{topic}/records"),
                              json={"value": {"type": "STRING", "data": "v3"}, "headers": [source], **delay})
            assert r.json()["error_code"] == 422 and "ringlog-delay-source" in r.json()["message"], r.text
        r = requests.post(b.v3(f"/topics/{topic}/records"),
                          json={"value": {"type": "STRING", "data": "v3"}, "delay_ms": 60_000,
                                "headers": [{"name": "ringlog-delay-source", "value": None}]})
        assert r.json()["error_code"] == 422 and "ringlog-delay-source" in r.json()["message"], r.text
        r = requests.post(f"{b.url}/topics/{topic}",
                          json={"records": [{"value": b64("v2"), "delay_ms": 60_000,
                                             "headers": [{"key": "ringlog-delay-source", "value": b64("x")}]}]},
                          headers={"Content-Type": BINARY})
        assert r.status_code == 422 and "headers" in r.text, r.text

        async def ws_produce():
            async with websockets.connect(f"ws://127.0.0.1:{b.port}/v1/ws") as ws:
                await ws.send(json.dumps({"type": "produce", "id": 1, "topic": topic, "value": b64("ws"),
                                          "delay_ms": 60_000,
                                          "headers": [{"key": "ringlog-delay-source", "value": b64("x")}]}))
                return json.loads(await asyncio.wait_for(ws.recv(), 10))

        ack = asyncio.run(ws_produce())
        assert "ringlog-delay-source" in json.dumps(ack), ack

        reports = []
        plain = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 0})
        idem = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "linger.ms": 0})
        for p, headers in ((plain, [("ringlog-delay-ms", b"60000")]),
                           (plain, [("ringlog-deliver-at", str(now_ms() + 60_000).encode())]),
                           (idem, [("ringlog-delay-ms", b"60000")])):
            p.produce(topic, value=b"kafka", partition=0, headers=headers + [("ringlog-delay-source", b"x")],
                      on_delivery=lambda err, msg: reports.append(err))
            p.flush(15)
        assert len(reports) == 3 and all(e is not None and "INVALID_RECORD" in e.name() for e in reports), reports

        # Due already (a mirrored delivered record): stored at once, header and all, by both doors.
        r = requests.post(b.v3(f"/topics/{topic}/records"),
                          json={"value": {"type": "STRING", "data": "due"}, "deliver_at": 1000, "headers": [source]})
        assert r.json()["error_code"] == 200, r.text
        done = []
        plain.produce(topic, value=b"due", partition=0,
                      headers=[("ringlog-deliver-at", b"1000"), ("ringlog-delay-source", b"x")],
                      on_delivery=lambda err, msg: done.append(err))
        plain.flush(15)
        assert done == [None], done
        assert [base64.b64decode(x["value"]) for x in read_all(b, topic, 0)] == [b"due", b"due"]
        assert requests.get(b.v3("/topics/__delay-5m")).status_code == 404   # nothing was delayed
    finally:
        assert b.stop() == 0


def test_a_delayed_record_is_never_delivered_into_a_re_created_topic_of_its_name(fresh_broker):
    """The new user of session 30: a record delayed for `dz`, then `dz` deleted and created again
    (another topic id), was delivered into the new `dz`. It is dropped (Kafka's topic ids, KIP-516)."""
    b = fresh_broker()
    b.create_topic("dz")
    r = requests.post(b.v3("/topics/dz/records"),
                      json={"value": {"type": "STRING", "data": "for-old-dz"}, "delay_ms": 1500})
    assert r.json()["error_code"] == 200, r.text
    assert requests.delete(b.v3("/topics/dz")).status_code == 204
    wait_until(lambda: requests.get(b.v3("/topics/dz")).status_code == 404, DEADLINE_S, "dz deleted")
    b.create_topic("dz")
    wait_until(lambda: requests.get(b.v3("/delayed-records")).json()["dropped_records"] >= 1, DEADLINE_S,
               "the record dropped at its due time")
    assert read_all(b, "dz", 0) == []
    assert "deleted and created again" in b.log_path.read_text()


def test_a_delayed_record_too_large_for_its_target_is_refused_when_produced(fresh_broker):
    """The new user of session 30: a delayed record larger than the target's max.message.bytes was
    acknowledged over HTTP and WebSocket, then dropped when due. It is refused at produce time, as
    an immediate one (and a Kafka client's batch) is."""
    b = fresh_broker()
    b.create_topic("small", configs={"max.message.bytes": "1000"})
    big = "x" * 5000
    r = requests.post(b.v3("/topics/small/records"), json={"value": {"type": "STRING", "data": big}, "delay_ms": 500})
    assert r.json()["error_code"] != 200 and "max.message.bytes" in r.json()["message"], r.text
    r = requests.post(f"{b.url}/topics/small", json={"records": [{"value": b64(big), "delay_ms": 500}]},
                      headers={"Content-Type": BINARY})
    assert "max.message.bytes" in (r.json()["offsets"][0]["error"] or ""), r.text

    async def ws_produce():
        async with websockets.connect(f"ws://127.0.0.1:{b.port}/v1/ws") as ws:
            await ws.send(json.dumps({"type": "produce", "id": 1, "topic": "small", "partition": 0,
                                      "value": b64(big), "delay_ms": 500}))
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

    answer = asyncio.run(ws_produce())
    assert "max.message.bytes" in json.dumps(answer), answer   # an error, or an ack whose record failed
    # A small delayed record still goes, and nothing was dropped.
    r = requests.post(b.v3("/topics/small/records"), json={"value": {"type": "STRING", "data": "ok"}, "delay_ms": 200})
    assert r.json()["error_code"] == 200, r.text
    wait_until(lambda: len(read_all(b, "small", 0)) == 1, DEADLINE_S, "the small delayed record")
    assert requests.get(b.v3("/delayed-records")).json()["dropped_records"] == 0


def test_every_invalid_delivery_time_is_422_and_malformed_json_400(broker, topic_name):
    """Confluent's rule, which ringlog's HTTP API follows: 400 for a body that is not JSON, 422 for
    well-formed JSON with an invalid value. A delivery time out of range used to be 400 or 422 by
    which bound it broke: v3 answered delay_ms -1, a wrong type, an unreadable deliver_at or both
    fields with the record's error_code 400, while delay_ms over delay.max.ms and an unreadable
    delay header were 422. Now every invalid delivery time is 422, in v2 and v3, single, several
    and batch records; malformed JSON stays 400 (40001)."""
    topic = topic_name
    broker.create_topic(topic, partitions=1)
    v3 = broker.v3(f"/topics/{topic}/records")
    value = {"type": "STRING", "data": "x"}
    invalid = [({"delay_ms": -1}, "delay_ms"), ({"delay_ms": "soon"}, "delay_ms"),
               ({"deliver_at": "tomorrow"}, "deliver_at"), ({"deliver_at": now_ms(), "delay_ms": 5}, "delay_ms"),
               ({"delay_ms": 10 ** 12}, "delay.max.ms"),
               ({"headers": [{"name": "ringlog-delay-ms", "value": b64("soon")}]}, "ringlog-delay-ms")]
    for fields, named in invalid:
        r = requests.post(v3, json={"value": value, **fields})
        assert r.json()["error_code"] == 422 and named in r.json()["message"], (fields, r.status_code, r.text)
        # Two records in one body: each answered alone, the invalid one 422.
        r = requests.post(v3, data=json.dumps({"value": value}) + json.dumps({"value": value, **fields}),
                          headers={"Content-Type": "application/json"})
        reports = [json.loads(line) for line in r.text.splitlines() if line.strip()]
        assert [x["error_code"] for x in reports] == [200, 422], (fields, r.text)
        r = requests.post(broker.v3(f"/topics/{topic}/records:batch"),
                          json={"entries": [{"id": "a", "value": value, **fields}]})
        assert [f["error_code"] for f in r.json()["failures"]] == [422], (fields, r.text)
        v2_fields = {k: v for k, v in fields.items() if k != "headers"}
        if v2_fields:
            r = requests.post(f"{broker.url}/topics/{topic}", json={"records": [{"value": b64("x"), **v2_fields}]},
                              headers={"Content-Type": BINARY})
            # v2: a field the gateway reads refuses the request (422); the broker's refusal is the
            # record's offsets entry, error_code 1 (Confluent v2's non-retriable), never 400.
            offsets = r.json().get("offsets", [])
            assert (r.status_code, r.json().get("error_code")) == (422, 422) or (
                r.status_code == 200 and [o.get("error_code") for o in offsets] == [1]), (fields, r.text)
    r = requests.post(v3, data='{"value": {"type": "STRING", "data": "x"}, "delay_ms": ',
                      headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()["error_code"]) == (400, 40001), r.text
    r = requests.post(f"{broker.url}/topics/{topic}", data='{"records": [{"delay_ms": ',
                      headers={"Content-Type": BINARY})
    assert (r.status_code, r.json()["error_code"]) == (400, 40001), r.text
    assert read_all(broker, topic, 0) == [] or all(not header(rec, "ringlog-delay-ms") for rec in read_all(broker, topic, 0))
