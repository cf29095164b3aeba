"""Consumer groups over the REST Proxy v2 consumer API (issue 4), against the real binary.

Every wait polls with a deadline (conftest.wait_until or a records poll with a timeout); no test
sleeps for a condition.
"""
import base64
import json
import re
import threading
import time

import requests

from conftest import Broker, wait_until

V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
JSON = "application/vnd.kafka.json.v2+json"
DEADLINE_S = 20.0


def b64(text):
    return base64.b64encode(text.encode()).decode()


def unb64(text):
    return base64.b64decode(text).decode()


def produce(broker, topic, values, partition=None):
    path = f"/topics/{topic}" if partition is None else f"/topics/{topic}/partitions/{partition}"
    r = requests.post(broker.url + path, json={"records": [{"value": b64(v)} for v in values]},
                      headers={"Content-Type": BINARY})
    assert r.status_code == 200, r.text
    offsets = r.json()["offsets"]
    assert all(o["error_code"] is None for o in offsets), offsets
    return offsets


def create_consumer(broker, group, **settings):
    r = requests.post(f"{broker.url}/consumers/{group}", json=settings, headers={"Content-Type": V2})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["base_uri"].endswith(f"/consumers/{group}/instances/{body['instance_id']}")
    return body["base_uri"]


def subscribe(base, topics):
    r = requests.post(base + "/subscription", json={"topics": topics}, headers={"Content-Type": V2})
    assert r.status_code == 204, r.text


def poll(base, timeout=200, max_bytes=None, accept=BINARY):
    params = {"timeout": timeout}
    if max_bytes is not None:
        params["max_bytes"] = max_bytes
    r = requests.get(base + "/records", params=params, headers={"Accept": accept})
    assert r.status_code == 200, r.text
    return r.json()


def read_at_least(base, count, deadline_s=DEADLINE_S):
    got = []

    def enough():
        got.extend(poll(base))
        return len(got) >= count

    wait_until(enough, deadline_s, f"{count} records from {base}")
    return got


def member_that_read(broker, topic, group, count):
    """A one-partition topic with `count` records, and a member of `group` that read them all."""
    broker.create_topic(topic, partitions=1)
    produce(broker, topic, [f"v{i}" for i in range(count)], partition=0)
    base = create_consumer(broker, group, **{"auto.offset.reset": "earliest"})
    subscribe(base, [topic])
    read_at_least(base, count)
    return base


def commit(base, offsets=None):
    body = {"offsets": offsets} if offsets is not None else None
    r = requests.post(base + "/offsets", json=body, headers={"Content-Type": V2})
    assert r.status_code == 204, r.text


def committed(base, partitions=None):
    body = {"partitions": partitions} if partitions is not None else None
    r = requests.get(base + "/offsets", json=body, headers={"Accept": V2, "Content-Type": V2})
    assert r.status_code == 200, r.text
    return {(o["topic"], o["partition"]): o["offset"] for o in r.json()["offsets"]}


def owned(base):
    r = requests.get(base + "/assignments", headers={"Accept": V2})
    assert r.status_code == 200, r.text
    return {(p["topic"], p["partition"]) for p in r.json()["partitions"]}


def delete(base):
    r = requests.delete(base)
    assert r.status_code == 204, r.text


def high_watermarks(broker, topic, partitions):
    return {p: requests.get(f"{broker.url}/topics/{topic}/partitions/{p}/offsets").json()["end_offset"]
            for p in range(partitions)}


# ---- the case file: /work/shared/cases/rest-proxy-v2-commit-offsets.md

def test_commit_names_the_last_processed_offset_and_stores_n_plus_1(broker, topic_name):
    broker.create_topic(topic_name, partitions=1)
    produce(broker, topic_name, [f"v{i}" for i in range(10)], partition=0)
    group = "g-" + topic_name
    first = create_consumer(broker, group, **{"auto.offset.reset": "earliest"})
    subscribe(first, [topic_name])
    got = read_at_least(first, 10)
    assert [r["offset"] for r in got] == list(range(10))
    assert [unb64(r["value"]) for r in got] == [f"v{i}" for i in range(10)]

    commit(first, [{"topic": topic_name, "partition": 0, "offset": 9}])
    assert committed(first, [{"topic": topic_name, "partition": 0}]) == {(topic_name, 0): 10}
    delete(first)

    produce(broker, topic_name, [f"v{i}" for i in range(10, 15)], partition=0)
    second = create_consumer(broker, group, **{"auto.offset.reset": "earliest"})
    subscribe(second, [topic_name])
    got = read_at_least(second, 5)
    assert [r["offset"] for r in got] == list(range(10, 15)), "none of 0..9 is delivered again"

    # An empty commit commits everything already returned (the same N + 1 rule).
    commit(second)
    assert committed(second) == {(topic_name, 0): 15}


def test_commit_of_minus_one_stores_zero_and_below_is_refused(broker, topic_name):
    """The v2 commit names the last processed record and N + 1 is stored (as Confluent hands N + 1
    to the Java consumer's commitSync): -1 (nothing processed) stores 0; -2 and below would store
    a negative offset, which that consumer refuses, so the route does too, naming the field."""
    base = member_that_read(broker, topic_name, "g-" + topic_name, 3)
    commit(base, [{"topic": topic_name, "partition": 0, "offset": -1}])
    assert committed(base) == {(topic_name, 0): 0}
    r = requests.post(base + "/offsets", json={"offsets": [{"topic": topic_name, "partition": 0, "offset": -2}]},
                      headers={"Content-Type": V2})
    assert r.status_code == 422 and "below -1" in r.json()["message"], r.text
    assert committed(base) == {(topic_name, 0): 0}, "nothing stored by the refused commit"
    delete(base)


def test_fetch_min_bytes_of_an_instance_holds_a_poll_until_its_timeout(broker, topic_name):
    """An instance created with fetch.min.bytes answers a records GET once its records hold that
    many bytes, or is full (max_bytes), or at its timeout with what there is (Confluent's read
    task; the wait is a lower bound, not a timing)."""
    broker.create_topic(topic_name, partitions=1)
    produce(broker, topic_name, ["tiny"], partition=0)
    base = create_consumer(broker, "g-" + topic_name, **{"auto.offset.reset": "earliest", "fetch.min.bytes": "100000"})
    subscribe(base, [topic_name])
    start = time.monotonic()
    got = poll(base, timeout=1500)
    waited = time.monotonic() - start
    # The first round may come back empty while the subscription's assignment settles.
    if not got:
        start = time.monotonic()
        got = poll(base, timeout=1500)
        waited = time.monotonic() - start
    assert [unb64(r["value"]) for r in got] == ["tiny"]
    assert waited >= 1.2, f"answered after {waited:.2f} s: fetch.min.bytes was not waited for"
    # Full before min bytes: max_bytes answers at once with what fits.
    produce(broker, topic_name, ["x" * 1000, "y" * 1000], partition=0)
    # (an HTTP deadline below the poll's timeout: an answer by then came early)
    r = requests.get(base + "/records", params={"timeout": 60000, "max_bytes": 1500}, headers={"Accept": BINARY},
                     timeout=30)
    assert r.status_code == 200 and [x["offset"] for x in r.json()] == [1], r.text
    delete(base)


def test_fetch_min_bytes_zero_is_taken_as_kafkas_consumer_takes_it(broker, topic_name):
    """fetch.min.bytes "0" (Kafka's consumer accepts 0) creates the instance, whose polls answer
    as with 1; below 0 is refused naming the key (new user's finding: 0 was refused)."""
    broker.create_topic(topic_name, partitions=1)
    produce(broker, topic_name, ["a"], partition=0)
    base = create_consumer(broker, "g-" + topic_name, **{"auto.offset.reset": "earliest", "fetch.min.bytes": "0"})
    subscribe(base, [topic_name])
    deadline = time.monotonic() + 15
    got = []
    while not got and time.monotonic() < deadline:
        got = poll(base, timeout=500)
    assert [unb64(r["value"]) for r in got] == ["a"]
    delete(base)
    r = requests.post(f"{broker.url}/consumers/g2-{topic_name}", json={"fetch.min.bytes": "-1"},
                      headers={"Content-Type": V2})
    assert r.status_code == 422 and "fetch.min.bytes" in r.json()["message"], r.text


def test_auto_commit_commits_before_answering(broker, topic_name):
    broker.create_topic(topic_name, partitions=1)
    produce(broker, topic_name, ["a", "b", "c"], partition=0)
    base = create_consumer(broker, "g-" + topic_name, **{"auto.offset.reset": "earliest", "auto.commit.enable": "true"})
    subscribe(base, [topic_name])
    got = read_at_least(base, 3)
    assert len(got) == 3
    assert committed(base) == {(topic_name, 0): 3}


# ---- groups sharing a topic

def test_two_then_three_then_one_consumers_while_producing(broker, topic_name):
    partitions = 6
    broker.create_topic(topic_name, partitions=partitions)
    group = "g-" + topic_name
    stop = threading.Event()
    produced = [0]

    def producer():
        n = 0
        while not stop.is_set():
            produce(broker, topic_name, [f"r{n + i}" for i in range(12)])
            n += 12
            produced[0] = n
            stop.wait(0.02)

    thread = threading.Thread(target=producer)
    thread.start()
    delivered = {}          # (partition, offset) -> number of deliveries
    uncommitted_of_dead = set()
    members = {}

    def poll_member(name, do_commit=True):
        records = poll(members[name], timeout=50)
        for r in records:
            key = (r["partition"], r["offset"])
            delivered[key] = delivered.get(key, 0) + 1
        if do_commit:
            commit(members[name])
        return records

    def check_disjoint():
        seen = {}
        for name, base in members.items():
            for tp in owned(base):
                assert tp not in seen, f"{tp} owned by {seen[tp]} and {name}"
                seen[tp] = name
        return seen

    def settle(expected_members):
        def balanced():
            for name in list(members):
                poll_member(name)
            seen = check_disjoint()
            counts = [sum(1 for v in seen.values() if v == m) for m in members]
            return len(seen) == partitions and len(members) == expected_members and max(counts) - min(counts) <= 1

        wait_until(balanced, DEADLINE_S, f"{expected_members} members to own all {partitions} partitions, balanced")

    try:
        for name in ("a", "b"):
            members[name] = create_consumer(broker, group, **{"auto.offset.reset": "earliest"})
            subscribe(members[name], [topic_name])
        settle(2)
        members["c"] = create_consumer(broker, group, **{"auto.offset.reset": "earliest"})
        subscribe(members["c"], [topic_name])
        settle(3)
        # b leaves cleanly (everything it got is committed); c dies holding uncommitted records.
        commit(members["b"])
        delete(members.pop("b"))
        last = poll_member("c", do_commit=False)
        uncommitted_of_dead = {(r["partition"], r["offset"]) for r in last}
        delete(members.pop("c"))
        settle(1)
    finally:
        stop.set()
        thread.join()

    hw = high_watermarks(broker, topic_name, partitions)
    assert sum(hw.values()) == produced[0]

    def drained():
        poll_member("a")
        return all((p, o) in delivered for p in range(partitions) for o in range(hw[p]))

    wait_until(drained, DEADLINE_S, "every produced record to be delivered")
    duplicates = {k for k, n in delivered.items() if n > 1}
    assert duplicates <= uncommitted_of_dead, f"redelivered without a death: {sorted(duplicates - uncommitted_of_dead)[:10]}"


def test_committed_offsets_survive_restarts(fresh_broker, topic_name):
    b = fresh_broker()
    b.create_topic(topic_name, partitions=2)
    produce(b, topic_name, [f"v{i}" for i in range(10)], partition=0)
    group = "g-" + topic_name
    base = create_consumer(b, group, **{"auto.offset.reset": "earliest"})
    subscribe(base, [topic_name])
    assert len(read_at_least(base, 10)) == 10
    commit(base, [{"topic": topic_name, "partition": 0, "offset": 4}])
    assert b.stop() == 0

    b = fresh_broker()
    # The same instance on the restarted broker: its lease and settings survive (issue 14 item 28);
    # its membership (a dynamic member) did not, so its first read joins again with its subscription.
    base = base.replace(base.split("/consumers")[0], b.url)
    assert committed(base)[(topic_name, 0)] == 5
    got = read_at_least(base, 5)
    assert [r["offset"] for r in got] == [5, 6, 7, 8, 9]
    commit(base, [{"topic": topic_name, "partition": 0, "offset": 7}])
    assert b.stop() == 0

    b = fresh_broker()
    base = create_consumer(b, group, **{"auto.offset.reset": "earliest"})
    subscribe(base, [topic_name])
    assert committed(base) == {(topic_name, 0): 8}
    r = requests.get(b.v3(f"/consumer-groups/{group}"))
    assert r.status_code == 200 and r.json()["member_count"] == 1


def test_a_member_that_stops_polling_expires_and_its_partitions_move(fresh_broker, topic_name):
    b = fresh_broker(["group.expiry.interval.ms=100"])
    b.create_topic(topic_name, partitions=2)
    group = "g-" + topic_name
    quiet = create_consumer(b, group, **{"consumer.instance.timeout.ms": "6000"})
    busy = create_consumer(b, group)
    subscribe(quiet, [topic_name])
    subscribe(busy, [topic_name])

    def split():
        poll(quiet, timeout=0)
        poll(busy, timeout=0)
        return len(owned(quiet)) == 1 and len(owned(busy)) == 1

    wait_until(split, DEADLINE_S, "one partition each")

    def moved():
        poll(busy, timeout=100)
        return len(owned(busy)) == 2

    wait_until(moved, DEADLINE_S, "the quiet member's partition to move after its session timeout")
    r = requests.get(quiet + "/records", headers={"Accept": BINARY})
    assert r.status_code == 404 and r.json()["error_code"] == 40403
    # The answer gives the reason, not just "not found".
    assert "expired" in r.json()["message"] and "6000 ms" in r.json()["message"], r.text
    deleted = requests.delete(busy)
    assert deleted.status_code == 204
    gone = requests.get(busy + "/records", headers={"Accept": BINARY})
    assert gone.status_code == 404 and "deleted" in gone.json()["message"], gone.text


# ---- positions

def test_auto_offset_reset_earliest_latest_none(broker, topic_name):
    broker.create_topic(topic_name, partitions=1)
    produce(broker, topic_name, ["old0", "old1"], partition=0)

    earliest = create_consumer(broker, "e-" + topic_name, **{"auto.offset.reset": "earliest"})
    subscribe(earliest, [topic_name])
    assert [r["offset"] for r in read_at_least(earliest, 2)] == [0, 1]

    latest = create_consumer(broker, "l-" + topic_name, **{"auto.offset.reset": "latest"})
    subscribe(latest, [topic_name])
    assert poll(latest, timeout=0) == []
    produce(broker, topic_name, ["new2"], partition=0)
    assert [r["offset"] for r in read_at_least(latest, 1)] == [2]

    none = create_consumer(broker, "n-" + topic_name, **{"auto.offset.reset": "none"})
    subscribe(none, [topic_name])
    r = requests.get(none + "/records", params={"timeout": 0}, headers={"Accept": BINARY})
    assert r.status_code == 422 and r.json()["error_code"] == 42202, r.text
    # Never stuck: a seek gives it a position.
    r = requests.post(none + "/positions/beginning", json={"partitions": [{"topic": topic_name, "partition": 0}]},
                      headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    assert [r["offset"] for r in read_at_least(none, 3)] == [0, 1, 2]
    r = requests.post(none + "/positions", json={"offsets": [{"topic": topic_name, "partition": 0, "offset": 1}]},
                      headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    assert [r["offset"] for r in read_at_least(none, 2)] == [1, 2]


def test_max_bytes_smaller_than_one_record_still_returns_one(broker, topic_name):
    broker.create_topic(topic_name, partitions=1)
    produce(broker, topic_name, ["x" * 100, "y" * 100, "z" * 100], partition=0)
    base = create_consumer(broker, "g-" + topic_name, **{"auto.offset.reset": "earliest"})
    subscribe(base, [topic_name])
    offsets = []

    def step():
        got = poll(base, timeout=100, max_bytes=10)
        assert len(got) <= 1
        offsets.extend(r["offset"] for r in got)
        return len(offsets) == 3

    wait_until(step, DEADLINE_S, "three single-record polls")
    assert offsets == [0, 1, 2]


def test_json_format_and_headers_and_timestamps(broker, topic_name):
    broker.create_topic(topic_name, partitions=1)
    r = requests.post(broker.url + f"/topics/{topic_name}/partitions/0", json={"records": [{"value": {"n": 1}}]},
                      headers={"Content-Type": JSON})
    assert r.status_code == 200, r.text
    base = create_consumer(broker, "g-" + topic_name, format="json", **{"auto.offset.reset": "earliest"})
    subscribe(base, [topic_name])
    got = []
    wait_until(lambda: got.extend(poll(base, accept=JSON)) or got, DEADLINE_S, "a json record")
    assert got[0]["value"] == {"n": 1}
    assert got[0]["timestamp"] > 0 and got[0]["headers"] == []


# ---- bad input

def test_bad_input_gives_the_documented_errors(broker, topic_name):
    broker.create_topic(topic_name, partitions=1)
    group = "g-" + topic_name
    r = requests.get(f"{broker.url}/consumers/{group}/instances/nobody/records", headers={"Accept": BINARY})
    assert r.status_code == 404 and r.json()["error_code"] == 40403
    r = requests.post(f"{broker.url}/consumers/{group}/instances/nobody/offsets", json=None)
    assert r.status_code == 404 and r.json()["error_code"] == 40403

    r = requests.post(f"{broker.url}/consumers/{group}", json={"format": "avro"}, headers={"Content-Type": V2})
    assert r.status_code == 422 and r.json()["error_code"] == 42204
    r = requests.post(f"{broker.url}/consumers/{group}", json={"auto.offset.reset": "sometimes"},
                      headers={"Content-Type": V2})
    assert r.status_code == 422 and r.json()["error_code"] == 42204

    base = create_consumer(broker, group)
    subscribe(base, [topic_name])
    r = requests.post(base + "/assignments", json={"partitions": [{"topic": topic_name, "partition": 0}]},
                      headers={"Content-Type": V2})
    assert r.status_code == 409 and r.json()["error_code"] == 40903
    r = requests.post(base + "/subscription", json={"topics": [topic_name], "topic_pattern": "t.*"},
                      headers={"Content-Type": V2})
    assert r.status_code == 409 and r.json()["error_code"] == 40903
    assert owned(base) == {(topic_name, 0)}, "nothing changed"

    r = requests.get(base + "/records", headers={"Accept": JSON})
    assert r.status_code == 406 and r.json()["error_code"] == 40601

    other = create_consumer(broker, "o-" + topic_name)
    r = requests.post(other + "/assignments", json={"partitions": [{"topic": topic_name, "partition": 0}]},
                      headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    r = requests.post(other + "/subscription", json={"topics": [topic_name]}, headers={"Content-Type": V2})
    assert r.status_code == 409 and r.json()["error_code"] == 40903
    # Committing a partition it does not own is refused and nothing is applied.
    r = requests.post(base + "/offsets", json={"offsets": [{"topic": topic_name, "partition": 5, "offset": 1}]},
                      headers={"Content-Type": V2})
    assert r.status_code == 409 and r.json()["error_code"] == 40903
    assert committed(base) == {}


def test_a_manual_assignment_reads_beside_the_subscribed_owner(broker, topic_name):
    """Kafka's and Confluent's assign() is outside the group's membership: a subscribed member keeps
    its partition and an instance of the same group that assigns it manually reads it too. ringlog
    took it away from the subscribed member at its next poll (session 33's
    /work/nu33-run/rest_v2_assign_vs_sub.sh). Two manual instances still cannot share a partition
    (the documented 409)."""
    group = "manual-" + topic_name
    s = member_that_read(broker, topic_name, group, 2)
    m = create_consumer(broker, group, **{"auto.offset.reset": "earliest"})
    r = requests.post(m + "/assignments", json={"partitions": [{"topic": topic_name, "partition": 0}]},
                      headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    assert owned(m) == {(topic_name, 0)}, "the manual instance owns it at once"
    assert [unb64(rec["value"]) for rec in read_at_least(m, 2)] == ["v0", "v1"]
    produce(broker, topic_name, ["v2"], partition=0)
    assert [unb64(rec["value"]) for rec in read_at_least(s, 1)] == ["v2"], "the subscribed member still reads it"
    assert owned(s) == {(topic_name, 0)}
    assert owned(m) == {(topic_name, 0)}
    other = create_consumer(broker, group)
    r = requests.post(other + "/assignments", json={"partitions": [{"topic": topic_name, "partition": 0}]},
                      headers={"Content-Type": V2})
    assert r.status_code == 409 and r.json()["error_code"] == 40903 and "manually assigned" in r.json()["message"], r.text
    for base in (s, m, other):
        requests.delete(base, headers={"Content-Type": V2})


# ---- admin and the internal topic

def test_lag_of_a_live_group_that_committed_nothing_yet(broker, topic_name, ringlog_bin):
    """A group with a member and no committed offset: the lag routes answer Confluent's 404 (error
    code 404; an unknown group is 40404), and `ringlog groups lag` says so and exits 0 instead of
    failing (the new-user finding of session 11; the console shows an empty lag table)."""
    import subprocess
    group = "nocommit-" + topic_name
    member_that_read(broker, topic_name, group, 2)
    r = requests.get(broker.v3(f"/consumer-groups/{group}/lags"))
    assert r.status_code == 404 and r.json()["error_code"] == 404, r.text
    out = subprocess.run([str(ringlog_bin), "groups", "lag", group, "--bootstrap-server", broker.url],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert "committed no offsets yet" in out.stdout, out.stdout
    missing = subprocess.run([str(ringlog_bin), "groups", "lag", "no-such-" + group, "--bootstrap-server", broker.url],
                             capture_output=True, text=True, timeout=30)
    assert missing.returncode != 0 and "40404" in missing.stderr + missing.stdout


def test_lag_history_samples_total_lag_over_time(broker, topic_name):
    """The broker samples a group's total lag every interval_ms (the console's lag chart); a
    commit shows in the next samples, oldest first."""
    group = "h-" + topic_name
    base = member_that_read(broker, topic_name, group, 5)
    commit(base, [{"topic": topic_name, "partition": 0, "offset": 1}])   # stores 2: lag 3
    url = broker.v3(f"/consumer-groups/{group}/lag-history")

    def history():
        r = requests.get(url)
        assert r.status_code == 200, r.text
        return r.json()

    first = history()
    assert first["interval_ms"] == 5000 and first["samples_max"] == 720
    assert first["kind"] == "KafkaConsumerGroupLagHistory" and first["consumer_group_id"] == group
    # Two sampling rounds at most: 2 x interval_ms plus slack.
    wait_until(lambda: any(s["total_lag"] == 3 for s in history()["data"]), 15.0, "a sample with lag 3")
    commit(base, [{"topic": topic_name, "partition": 0, "offset": 4}])   # stores 5: lag 0
    wait_until(lambda: history()["data"][-1]["total_lag"] == 0, 15.0, "a sample with lag 0")
    samples = history()["data"]
    times = [s["timestamp"] for s in samples]
    assert times == sorted(times) and len(set(times)) == len(times)
    lags = [s["total_lag"] for s in samples]
    assert lags.index(0) > lags.index(3), lags

    r = requests.get(broker.v3("/consumer-groups/no-such-group/lag-history"))
    assert r.status_code == 404 and r.json()["error_code"] == 40404


def test_a_group_deleted_and_re_created_starts_with_an_empty_lag_history(broker, topic_name):
    """A group deleted and re-created between two sampling rounds used to show the old group's
    samples (kept by group id until a round found the id gone)."""
    group = "rh-" + topic_name
    base = member_that_read(broker, topic_name, group, 5)
    commit(base, [{"topic": topic_name, "partition": 0, "offset": 1}])   # stores 2: lag 3
    delete(base)   # an empty group keeps its offsets (and lag), and may be deleted
    url = broker.v3(f"/consumer-groups/{group}/lag-history")

    def samples():
        r = requests.get(url)
        return r.json()["data"] if r.status_code == 200 else None

    seen = len(wait_until(samples, 15.0, "a first sample"))
    # Act right after a round (the next starts interval_ms after it ended): delete and re-create.
    old = wait_until(lambda: (lambda s: s if s and len(s) > seen else None)(samples()), 15.0, "a fresh sample")
    r = requests.delete(broker.v3(f"/consumer-groups/{group}"))
    assert r.status_code == 204, r.text
    base = create_consumer(broker, group, **{"auto.offset.reset": "earliest", "auto.commit.enable": "false"})
    subscribe(base, [topic_name])

    def recreated():
        poll(base, timeout=0)   # joins the group
        s = samples()
        return None if s is None else (s,)

    (fresh,) = wait_until(recreated, 10.0, "the re-created group's lag history")
    assert not [s for s in fresh if s["timestamp"] <= old[-1]["timestamp"]], (old, fresh)
    delete(base)


def test_group_admin_lag_reset_delete(broker, topic_name):
    group = "g-" + topic_name
    base = member_that_read(broker, topic_name, group, 10)
    commit(base, [{"topic": topic_name, "partition": 0, "offset": 5}])

    listed = requests.get(broker.v3("/consumer-groups")).json()["data"]
    assert group in [g["consumer_group_id"] for g in listed]
    described = requests.get(broker.v3(f"/consumer-groups/{group}")).json()
    assert described["state"] == "STABLE" and described["member_count"] == 1
    consumers = requests.get(broker.v3(f"/consumer-groups/{group}/consumers")).json()["data"]
    # Issue 14 item 19: assignments is a link, as Confluent's; assigned_partitions keeps them inline.
    assert consumers[0]["assigned_partitions"] == [{"topic_name": topic_name, "partition_id": 0}]
    assignments = requests.get(consumers[0]["assignments"]["related"]).json()["data"]
    assert [(a["topic_name"], a["partition_id"]) for a in assignments] == [(topic_name, 0)], assignments
    summary = requests.get(broker.v3(f"/consumer-groups/{group}/lag-summary")).json()
    assert summary["total_lag"] == 4 and summary["max_lag_partition_id"] == 0
    lags = requests.get(broker.v3(f"/consumer-groups/{group}/lags")).json()["data"]
    assert [(l["current_offset"], l["log_end_offset"], l["lag"]) for l in lags] == [(6, 10, 4)]

    r = requests.delete(broker.v3(f"/consumer-groups/{group}"))
    assert r.status_code == 409 and r.json()["error_code"] == 40904
    r = requests.post(broker.v3(f"/consumer-groups/{group}/offsets:reset"), json={"to": "earliest"})
    assert r.status_code == 409 and r.json()["error_code"] == 40904
    delete(base)

    r = requests.post(broker.v3(f"/consumer-groups/{group}/offsets:reset"), json={"to": "shift", "value": -2})
    assert r.status_code == 200 and r.json()["dry_run"] is True, r.text
    assert r.json()["offsets"] == [{"topic_name": topic_name, "partition_id": 0, "offset": 4}]
    lags = requests.get(broker.v3(f"/consumer-groups/{group}/lags")).json()["data"]
    assert lags[0]["current_offset"] == 6, "a dry run changes nothing"
    r = requests.post(broker.v3(f"/consumer-groups/{group}/offsets:reset"),
                      json={"to": "earliest", "topics": [topic_name], "dry_run": False})
    assert r.status_code == 200 and r.json()["offsets"][0]["offset"] == 0, r.text
    assert requests.get(broker.v3(f"/consumer-groups/{group}/lags")).json()["data"][0]["current_offset"] == 0

    r = requests.delete(broker.v3(f"/consumer-groups/{group}"))
    assert r.status_code == 204, r.text
    r = requests.get(broker.v3(f"/consumer-groups/{group}"))
    assert r.status_code == 404 and r.json()["error_code"] == 40404


def test_every_malformed_reset_topic_entry_is_422_naming_it(broker, topic_name):
    """offsets:reset's "topics" entries ("T" or Kafka's "T:0,1"): ":0" (no topic) was 400 while
    "T:x" was 422, and an illegal name without ':' reached the broker. Every malformed value of
    this body is 422 naming the entry, as the route's other fields and the API's invalid fields."""
    broker.create_topic(topic_name)
    url = broker.v3(f"/consumer-groups/reset-{topic_name}/offsets:reset")
    for entry in (":0", ":", f"{topic_name}:", f"{topic_name}:x", f"{topic_name}:-1", f"{topic_name}:0,,1",
                  "bad name!:0", "bad name!", "", "a" * 250 + ":0"):
        r = requests.post(url, json={"to": "earliest", "topics": [topic_name, entry]})
        assert r.status_code == 422 and r.json()["error_code"] == 422, (entry, r.text)
        assert r.json()["message"].startswith(f'topics[1] "{entry}"'), (entry, r.text)


def test_consumer_offsets_is_internal(broker):
    assert "__consumer_offsets" not in requests.get(broker.url + "/topics").json()
    r = requests.post(broker.url + "/topics/__consumer_offsets", json={"records": [{"value": b64("x")}]},
                      headers={"Content-Type": BINARY})
    # Kafka's INVALID_TOPIC_EXCEPTION "Cannot append to internal topic" (not an authorization failure)
    assert r.status_code == 400 and "internal topic '__consumer_offsets'" in r.json()["message"], r.text
    r = requests.get(broker.v3("/topics/__consumer_offsets"))
    assert r.status_code == 200 and r.json()["is_internal"] is True
    assert r.json()["partitions_count"] == 8
    listed = {t["topic_name"]: t["is_internal"] for t in requests.get(broker.v3("/topics")).json()["data"]}
    assert listed.get("__consumer_offsets") is True, "v3 lists internal topics, as Confluent's does"


def test_deleted_topic_takes_its_committed_offsets(broker, topic_name):
    broker.create_topic(topic_name, partitions=1)
    produce(broker, topic_name, ["a", "b"], partition=0)
    group = "g-" + topic_name
    base = create_consumer(broker, group, **{"auto.offset.reset": "earliest"})
    subscribe(base, [topic_name])
    read_at_least(base, 2)
    commit(base)
    assert committed(base) == {(topic_name, 0): 2}
    r = requests.delete(broker.v3(f"/topics/{topic_name}"))
    assert r.status_code == 204, r.text
    wait_until(lambda: committed(base) == {}, DEADLINE_S, "the deleted topic's offsets to go")


def test_instance_name_is_the_instance_id_and_a_taken_name_conflicts(broker, topic_name):
    # REST Proxy v2: `name` is used as the instance id, so clients can build the base URI from it;
    # a second instance of the same name in the group is 409 / 40902.
    group = f"g-{topic_name}"
    r = requests.post(f"{broker.url}/consumers/{group}", json={"name": "worker-1", "format": "binary"},
                      headers={"Content-Type": V2})
    assert r.status_code == 200, r.text
    assert r.json()["instance_id"] == "worker-1"
    assert r.json()["base_uri"].endswith(f"/consumers/{group}/instances/worker-1")
    again = requests.post(f"{broker.url}/consumers/{group}", json={"name": "worker-1", "format": "binary"},
                          headers={"Content-Type": V2})
    assert again.status_code == 409 and again.json()["error_code"] == 40902, again.text
    bad = requests.post(f"{broker.url}/consumers/{group}", json={"name": "bad name/x", "format": "binary"},
                        headers={"Content-Type": V2})
    assert 400 <= bad.status_code < 500 and "worker" not in bad.text, bad.text
    delete(r.json()["base_uri"])


def test_static_membership_and_assignor_choice_over_http(broker, topic_name):
    # group.instance.id (KIP-345): re-creating the instance with the same id before its session
    # ends keeps its partitions and the generation; partition.assignment.strategy picks the assignor.
    broker.create_topic(topic_name, partitions=4)
    group = f"g-{topic_name}"

    def make(name, **extra):
        r = requests.post(f"{broker.url}/consumers/{group}", headers={"Content-Type": V2},
                          json={"name": name, "format": "binary", "auto.offset.reset": "earliest", **extra})
        return r

    a = make("a", **{"group.instance.id": "host-a", "partition.assignment.strategy": "range"})
    assert a.status_code == 200, a.text
    base_a = a.json()["base_uri"]
    subscribe(base_a, [topic_name])
    wait_until(lambda: len(owned(base_a)) == 4, DEADLINE_S, "a owns every partition")
    described = requests.get(broker.v3(f"/consumer-groups/{group}")).json()
    generation = described["generation"]
    assert "range" in json.dumps(described).lower(), described
    # The client "restarts": same group.instance.id, no delete of the old instance.
    again = make("a2", **{"group.instance.id": "host-a"})
    assert again.status_code == 200, again.text
    base_again = again.json()["base_uri"]
    assert len(owned(base_again)) == 4
    after = requests.get(broker.v3(f"/consumer-groups/{group}")).json()
    assert after["generation"] == generation, (described, after)
    wrong = make("b", **{"partition.assignment.strategy": "roundrobin"})
    assert wrong.status_code >= 400 and "assignor" in wrong.json()["message"], wrong.text
    bad = make("c", **{"partition.assignment.strategy": "fastest"})
    assert bad.status_code == 422 and "partition.assignment.strategy" in bad.json()["message"], bad.text


def test_a_pattern_that_backtracks_exponentially_is_refused(broker, topic_name):
    """A subscription pattern is matched on a shard thread by a backtracking regex: the breaker
    hung a shard (health stopped answering) with `((a|aa)*)*c` and a 249-character topic name.
    Such patterns are refused by name and the broker keeps answering."""
    base = create_consumer(broker, "g-" + topic_name)
    r = requests.post(base + "/subscription", json={"topic_pattern": "((a|aa)*)*c"},
                      headers={"Content-Type": V2}, timeout=10)
    assert 400 <= r.status_code < 500, r.text
    assert "exponential time" in r.json()["message"]
    assert requests.get(broker.url + "/v1/health", timeout=5).status_code == 200


def test_a_pattern_subscription_lists_the_topics_it_matches(broker, topic_name):
    """GET subscription of a pattern subscriber lists the topics the pattern matches, beside the
    pattern (the Confluent REST Proxy answers with the consumer's subscription, its matched topics;
    ringlog answered an empty list, the new user's LOW of session 23)."""
    first, second, other = topic_name + "-a", topic_name + "-b", "x" + topic_name
    for t in (first, second, other):
        broker.create_topic(t, partitions=1)
    base = create_consumer(broker, "g-" + topic_name)
    r = requests.post(base + "/subscription", json={"topic_pattern": re.escape(topic_name) + "-.*"},
                      headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    poll(base)

    def lists_both():
        r = requests.get(base + "/subscription", headers={"Accept": V2})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["topic_pattern"] == re.escape(topic_name) + "-.*", body
        return sorted(body["topics"]) == [first, second]

    wait_until(lists_both, DEADLINE_S, "the pattern's two topics in GET subscription")


def test_a_commit_counts_partitions_not_entries_and_the_cli_commits_a_large_backlog(broker, topic_name, ringlog_bin):
    """`ringlog consume --group` committed one entry per record printed, and a poll of more than
    10,000 records was refused with 429 and the quota code (the new user's HIGH of session 24):
    nothing was ever committed. A commit's bound counts distinct partitions (the last entry of a
    partition wins), the CLI commits one entry per partition, and a commit past the bound is the
    request's fault (422) naming the limit."""
    import subprocess
    base = member_that_read(broker, topic_name, "g-" + topic_name, 5)
    repeated = [{"topic": topic_name, "partition": 0, "offset": 2}] * 10_000 + [{"topic": topic_name, "partition": 0, "offset": 3}]
    r = requests.post(base + "/offsets", json={"offsets": repeated}, headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    assert committed(base) == {(topic_name, 0): 4}
    too_many = [{"topic": f"{topic_name}-{i}", "partition": 0, "offset": 1} for i in range(10_001)]
    r = requests.post(base + "/offsets", json={"offsets": too_many}, headers={"Content-Type": V2})
    assert r.status_code == 422 and "limits::commit_partitions_max" in r.json()["message"], r.text
    delete(base)

    backlog = topic_name + "-backlog"
    broker.create_topic(backlog, partitions=2)
    for chunk in range(12):
        produce(broker, backlog, [f"r{chunk}-{i}" for i in range(1000)])
    run = subprocess.run([ringlog_bin, "consume", backlog, "--group", "cli-" + topic_name, "--bootstrap-server", broker.url],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.splitlines()) == 12_000, run.stderr
    lags = requests.get(broker.v3(f"/consumer-groups/cli-{topic_name}/lags")).json()["data"]
    assert sum(x["lag"] for x in lags) == 0 and sum(x["current_offset"] for x in lags) == 12_000, lags


def test_cli_group_consumer_leaves_its_group_on_ctrl_c(broker, topic_name, ringlog_bin):
    """`ringlog consume T --group G --follow` stopped with Ctrl-C left its member (always named
    "ringlog-cli") holding every partition until the 5-minute lease ran out, and every later run in
    the group heard 409 40902 (new user, session 28). It now leaves the group on SIGINT/SIGTERM,
    and each run has a name of its own, so two CLI consumers share a group."""
    import signal
    import subprocess
    broker.create_topic(topic_name, partitions=2)
    produce(broker, topic_name, ["a", "b", "c"])
    group = "cli-follow-" + topic_name
    cmd = [ringlog_bin, "consume", topic_name, "--group", group, "--bootstrap-server", broker.url]
    follower = subprocess.Popen(cmd + ["--follow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [follower.stdout.readline() for _ in range(3)]
        assert sorted(x.strip() for x in lines) == ["a", "b", "c"], lines
        # A second CLI consumer joins the same group beside it (it was a 409 for the fixed name).
        beside = subprocess.run(cmd + ["--max-records", "1"], capture_output=True, text=True, timeout=60)
        assert beside.returncode == 0, beside.stderr
    finally:
        follower.send_signal(signal.SIGINT)
        follower.wait(30)
    assert follower.returncode == 0, follower.stderr.read()

    def members():
        r = requests.get(broker.v3(f"/consumer-groups/{group}/consumers"))
        return r.json()["data"] if r.status_code == 200 else [] if r.status_code == 404 else None
    wait_until(lambda: members() == [], 10, "the interrupted member to leave its group")
    produce(broker, topic_name, ["d"])
    again = subprocess.run(cmd + ["--max-records", "1"], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stdout.strip() == "d", (again.returncode, again.stdout, again.stderr)


def test_a_json_instance_stops_at_a_record_that_is_not_json_and_skips_nothing(broker, topic_name):
    """A json consumer instance meeting a value that is not JSON (new user, session 29: the poll
    answered 406 but its position had moved past every record it fetched, the next polls answered
    [] and an auto-commit stored them as read): the records before it are answered, the bad one is
    a 406 naming its offset, the position and the auto-committed offset stay at it, and seeking past
    it delivers the rest."""
    broker.create_topic(topic_name, partitions=1)
    produce(broker, topic_name, ['{"ok":0}', '{"ok":1}', "bad2", '{"ok":3}'], partition=0)
    base = create_consumer(broker, "j-" + topic_name, format="json",
                           **{"auto.offset.reset": "earliest", "auto.commit.enable": "true"})
    subscribe(base, [topic_name])
    got = []
    refusal = None

    def until_refused():
        nonlocal refusal
        r = requests.get(base + "/records", params={"timeout": 200}, headers={"Accept": JSON})
        if r.status_code == 406:
            refusal = r.json()
            return True
        assert r.status_code == 200, r.text
        got.extend(rec["value"] for rec in r.json())
        return False

    wait_until(until_refused, DEADLINE_S, "the poll that meets the record that is not JSON")
    assert got == [{"ok": 0}, {"ok": 1}]
    assert refusal["error_code"] == 406
    assert f"offset 2 of {topic_name}-0 is not JSON" in refusal["message"], refusal
    # It stays there: another poll says the same, and the committed offset is the bad record's.
    r = requests.get(base + "/records", params={"timeout": 200}, headers={"Accept": JSON})
    assert r.status_code == 406 and f"offset 2 of {topic_name}-0" in r.json()["message"], r.text
    assert committed(base, [{"topic": topic_name, "partition": 0}]) == {(topic_name, 0): 2}
    # Past it, the rest.
    r = requests.post(base + "/positions", json={"offsets": [{"topic": topic_name, "partition": 0, "offset": 3}]},
                      headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    rest = []
    wait_until(lambda: rest.extend(rec["value"] for rec in poll(base, accept=JSON)) or rest, DEADLINE_S, "the record after it")
    assert rest == [{"ok": 3}]


# ---- offsets.retention.minutes (KIP-211)

RETENTION_SETS = ["offsets.retention.minutes=1", "offsets.retention.check.interval.ms=500"]


def group_status(broker, group):
    return requests.get(broker.v3(f"/consumer-groups/{group}")).status_code


def committed_lags(broker, group):
    r = requests.get(broker.v3(f"/consumer-groups/{group}/lags"))
    assert r.status_code == 200, r.text
    return [(l["partition_id"], l["current_offset"]) for l in r.json()["data"]]


def poll_until_gone(broker, group, deadline_s=90.0):
    """Polls the group every second until its describe answers 404; returns when (monotonic)."""
    end = time.monotonic() + deadline_s
    while True:
        status = group_status(broker, group)
        if status == 404:
            return time.monotonic()
        assert status == 200, status
        assert time.monotonic() < end, f"group {group} still there after {deadline_s} s"
        time.sleep(1.0)


def group_that_committed_and_left(broker, topic, group):
    """A one-partition topic of 5 records; an instance of `group` read them, committed offset 4
    (stored 5) and was deleted: the group has offsets and no member."""
    broker.create_topic(topic, partitions=1)
    produce(broker, topic, [f"v{i}" for i in range(5)], partition=0)
    base = create_consumer(broker, group, **{"auto.offset.reset": "earliest"})
    subscribe(base, [topic])
    assert len(read_at_least(base, 5)) == 5
    commit(base, [{"topic": topic, "partition": 0, "offset": 4}])
    delete(base)


def test_offsets_of_a_group_without_members_expire_after_offsets_retention_minutes(fresh_broker, topic_name):
    """Kafka's offsets.retention.minutes (KIP-211): the committed offsets of a group nobody uses are
    deleted once the retention has passed since it became empty; the group goes with them."""
    b = fresh_broker(RETENTION_SETS)
    group = "g-" + topic_name
    group_that_committed_and_left(b, topic_name, group)
    emptied = time.monotonic()
    assert group_status(b, group) == 200
    assert committed_lags(b, group) == [(0, 5)], "kept right after the last member left"

    gone_at = poll_until_gone(b, group)
    waited = gone_at - emptied
    assert 55 <= waited <= 90, f"expired {waited:.0f} s after the group became empty (retention 60 s)"
    r = requests.get(b.v3(f"/consumer-groups/{group}/lags"))
    assert r.status_code == 404, r.text
    listed = requests.get(b.v3("/consumer-groups")).json()["data"]
    assert group not in [g["consumer_group_id"] for g in listed]
    log = b.log_path.read_text()
    assert (f"expired the committed offsets of group '{group}' (1 partition): no member and no commit for "
            "offsets.retention.minutes=1; the group is removed") in log, log[-2000:]

    # A new member of the same group starts where auto.offset.reset says, not at the old commit.
    base = create_consumer(b, group, **{"auto.offset.reset": "earliest"})
    subscribe(base, [topic_name])
    assert [r["offset"] for r in read_at_least(base, 5)] == [0, 1, 2, 3, 4]
    delete(base)


def test_a_restart_does_not_expire_offsets_early(fresh_broker, topic_name):
    """When the group became empty is not stored: after a restart the loaded group counts as empty
    since then, so its offsets live at least a whole retention more (never less)."""
    b = fresh_broker(RETENTION_SETS)
    group = "g-" + topic_name
    group_that_committed_and_left(b, topic_name, group)
    emptied = time.monotonic()
    # 40 s of the 60 s pass, the group there at every look.
    while time.monotonic() - emptied < 40:
        assert committed_lags(b, group) == [(0, 5)]
        time.sleep(1.0)
    assert b.stop() == 0
    b = fresh_broker(RETENTION_SETS)
    restarted = time.monotonic()
    wait_until(lambda: group_status(b, group) == 200, DEADLINE_S, "the group loaded after the restart")
    assert committed_lags(b, group) == [(0, 5)], "the restart kept the offsets"
    gone_at = poll_until_gone(b, group)
    assert gone_at - restarted >= 55, (f"expired {gone_at - restarted:.0f} s after the restart, "
                                       f"{gone_at - emptied:.0f} s after the group became empty")


def test_a_group_holds_at_most_group_members_max_instances_subscribed_or_not(fresh_broker):
    """Instances count against the group's member bound from their creation: 1,100 instances of one
    group that never subscribed were all accepted (session 41's breaker, with 60,000 instances
    from one client growing the broker by 340 MB)."""
    b = fresh_broker()
    session = requests.Session()
    answers = []
    for i in range(1001):
        r = session.post(f"{b.url}/consumers/crowd", json={"name": f"c{i:04d}", "format": "binary"},
                         headers={"Content-Type": V2})
        answers.append(r.status_code)
        if r.status_code != 200:
            break
    assert answers[:1000] == [200] * 1000, [a for a in answers if a != 200][:5]
    assert answers[1000] == 429 and "limits::group_members_max" in r.json()["message"], r.text
    # Another group is not held back by it.
    assert session.post(f"{b.url}/consumers/crowd-other", json={"name": "one", "format": "binary"},
                        headers={"Content-Type": V2}).status_code == 200
