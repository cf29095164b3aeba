"""Retries and dead letters for consumer groups (issue 18): nack over REST and WebSocket, the
record comes back after its backoff and not before, exhausted attempts land in the group's
dead-letter topic with every reason, redrive puts them back once, a kill -9 of the broker loses
and repeats no retry copy, and bad inputs are refused naming the field."""
import asyncio
import base64
import json
import subprocess
import time

import pytest
import requests
import websockets

from conftest import binary_path, wait_until

BINARY = "application/vnd.kafka.binary.v2+json"
V2 = "application/vnd.kafka.v2+json"
DEADLINE_S = 30.0


def b64(s):
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


def now_ms():
    return int(time.time() * 1000)


def header(rec, name):
    for h in reversed(rec["headers"] or []):
        if h["key"] == name:
            return base64.b64decode(h["value"]).decode()
    return None


def headers_all(rec, name):
    return [base64.b64decode(h["value"]).decode() for h in rec["headers"] or [] if h["key"] == name]


def read_all(broker, topic, partition):
    out = []
    while True:
        r = requests.get(f"{broker.url}/topics/{topic}/partitions/{partition}/records",
                         params={"offset": out[-1]["offset"] + 1 if out else 0, "timeout": 0},
                         headers={"Accept": BINARY})
        if r.status_code == 404:
            return out   # not created yet
        assert r.status_code == 200, r.text
        got = r.json()
        if not got:
            return out
        out += got


def produce(broker, topic, records):
    r = requests.post(f"{broker.url}/topics/{topic}", headers={"Content-Type": BINARY},
                      json={"records": [{"key": b64(k), "value": b64(v)} for k, v in records]})
    assert r.status_code == 200, r.text


def consumer(broker, group, topic, **settings):
    body = {"format": "binary", "auto.offset.reset": "earliest", **settings}
    r = requests.post(f"{broker.url}/consumers/{group}", json=body, headers={"Content-Type": V2})
    assert r.status_code == 200, r.text
    base = r.json()["base_uri"]
    r = requests.post(base + "/subscription", json={"topics": [topic]}, headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    return base


def poll(base, timeout_ms=200):
    r = requests.get(base + "/records", params={"timeout": timeout_ms}, headers={"Accept": BINARY})
    assert r.status_code == 200, r.text
    return r.json()


def nack(base, records, reason):
    return requests.post(base + "/nacks", headers={"Content-Type": V2},
                         json={"offsets": [{"topic": r["topic"], "partition": r["partition"], "offset": r["offset"],
                                            "reason": reason} for r in records]})


def test_poison_record_reaches_dead_letters_after_exactly_max_attempts_others_once(broker, topic_name):
    topic = topic_name
    group = "g-" + topic
    broker.create_topic(topic, partitions=2)
    records = [(f"k{i % 5}", f"v{i}") for i in range(40)]   # key k0 is poison: 8 records
    produce(broker, topic, records)
    backoff, multiplier, cap, attempts = 300, 2, 700, 3
    base = consumer(broker, group, topic, **{"max.delivery.attempts": attempts, "retry.backoff.ms": backoff,
                                             "retry.backoff.multiplier": multiplier, "retry.backoff.max.ms": cap})
    processed = []          # values processed successfully
    deliveries = {}         # value -> [(received ms, attempt header, topic)]
    nacked_at = {}          # value -> ms of its last nack

    def round_():
        for rec in poll(base):
            value = base64.b64decode(rec["value"]).decode()
            key = base64.b64decode(rec["key"]).decode()
            got = now_ms()
            deliveries.setdefault(value, []).append((got, header(rec, "ringlog-delivery-attempt"), rec["topic"]))
            if key == "k0":
                n = len(deliveries[value])
                if n > 1:
                    # Back after its backoff, never before: (attempt n-1 failed) -> backoff * 2^(n-2), capped.
                    wait = min(cap, backoff * multiplier ** (n - 2))
                    assert got >= nacked_at[value] + wait, (value, n, got - nacked_at[value], wait)
                    assert int(header(rec, "ringlog-deliver-at")) >= nacked_at[value] + wait
                nacked_at[value] = now_ms()
                r = nack(base, [rec], f"boom {len(deliveries[value])}")
                assert r.status_code == 204, r.text
            else:
                processed.append(value)
        r = requests.post(base + "/offsets", headers={"Content-Type": V2})
        assert r.status_code == 204, r.text
        dlq = sum(len(read_all(broker, f"{topic}.{group}.dlq", p)) for p in range(2))
        return dlq == 8 and len(processed) == 32

    wait_until(round_, DEADLINE_S, "every poison record dead-lettered and every other record processed")
    assert sorted(processed) == sorted(v for k, v in records if k != "k0")   # each once
    for value in (v for k, v in records if k == "k0"):
        ds = deliveries[value]
        assert len(ds) == attempts, (value, ds)                       # exactly max.delivery.attempts
        assert [d[1] for d in ds] == [None, "2", "3"]
        assert ds[0][2] == topic and ds[1][2] == ds[2][2] == f"{topic}.{group}.retry"
    letters = [r for p in range(2) for r in read_all(broker, f"{topic}.{group}.dlq", p)]
    assert len(letters) == 8
    for letter in letters:
        assert headers_all(letter, "ringlog-nack-reason") == ["boom 1", "boom 2", "boom 3"]
        assert header(letter, "ringlog-original-topic") == topic
        assert header(letter, "ringlog-delivery-attempt") == "3"
        assert header(letter, "ringlog-group") == group
        assert base64.b64decode(letter["key"]) == b"k0"
        original = int(header(letter, "ringlog-original-offset"))
        assert letter["partition"] == int(header(letter, "ringlog-original-partition"))
        assert original >= 0
    # The client's subscription is what it asked for; the retry topic is the broker's.
    r = requests.get(base + "/subscription", headers={"Accept": V2})
    assert r.json()["topics"] == [topic]
    # A repeated nack of a processed (committed) offset writes nothing more.
    originals = [r for p in range(2) for r in read_all(broker, topic, p)]
    poisoned = next(r for r in originals if base64.b64decode(r["key"]) == b"k0")
    r = nack(base, [{"topic": topic, "partition": poisoned["partition"], "offset": poisoned["offset"]}], "again")
    assert r.status_code == 204, r.text
    # A first nack of an offset a commit already passed is refused, naming why (the new user of
    # session 30: it answered 204 and wrote nothing, so the record's retry was lost silently).
    fine = next(r for r in originals if base64.b64decode(r["key"]) != b"k0")
    r = nack(base, [{"topic": topic, "partition": fine["partition"], "offset": fine["offset"]}], "late")
    assert r.status_code != 204 and "already committed" in r.json()["message"], r.text
    assert sum(len(read_all(broker, f"{topic}.{group}.dlq", p)) for p in range(2)) == 8

    # ---- console view and redrive
    listing = requests.get(broker.v3(f"/consumer-groups/{group}/dead-letters")).json()
    assert listing["data"] == [{"kind": "RinglogDeadLetterTopic", "topic_name": f"{topic}.{group}.dlq",
                                "original_topic_name": topic, "partitions_count": 2, "dead_letters": 8,
                                "redriven": 0, "pending": 8}]
    browse = requests.get(broker.v3(f"/consumer-groups/{group}/dead-letters/{topic}.{group}.dlq/records"),
                          params={"limit": 3, "filter": "boom 3"}).json()["data"]
    assert len(browse) == 3 and all(d["attempts"] == 3 and d["reasons"] == ["boom 1", "boom 2", "boom 3"] for d in browse)
    assert all(d["original_topic"] == topic and d["value_text"].startswith("v") for d in browse)
    before = sum(len(read_all(broker, topic, p)) for p in range(2))
    chosen = [{"partition": browse[0]["partition_id"], "offset": browse[0]["offset"]}]
    url = broker.v3(f"/consumer-groups/{group}/dead-letters/{topic}.{group}.dlq/redrive")
    r = requests.post(url, json={"to": "original", "offsets": chosen})
    assert r.status_code == 200, r.text
    assert r.json()["redriven"] == 1 and r.json()["already_redriven"] == 0 and r.json()["failures"] == []
    r = requests.post(url, json={"to": "original", "offsets": chosen})   # once each
    assert r.json()["redriven"] == 0 and r.json()["already_redriven"] == 1
    r = requests.post(url, json={})                                       # all the rest
    assert r.json()["redriven"] == 7 and r.json()["already_redriven"] == 1, r.text
    r = requests.post(url, json={})
    assert r.json()["redriven"] == 0 and r.json()["already_redriven"] == 8
    after = [r for p in range(2) for r in read_all(broker, topic, p)]
    assert len(after) == before + 8
    redriven = [r for r in after if header(r, "ringlog-redrive-source")]
    assert sorted(base64.b64decode(r["value"]).decode() for r in redriven) == sorted(v for k, v in records if k == "k0")
    assert all(header(r, "ringlog-delivery-attempt") is None for r in redriven)   # a fresh count
    listing = requests.get(broker.v3(f"/consumer-groups/{group}/dead-letters")).json()
    assert listing["data"][0]["redriven"] == 8 and listing["data"][0]["pending"] == 0
    # The CLI says the same and redrives nothing twice.
    cli = [str(binary_path()), "groups", "--bootstrap-server", broker.url]
    out = subprocess.run(cli + ["dead-letters", group], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and f"{topic}.{group}.dlq\t{topic}\t8\t8\t0" in out.stdout, out
    out = subprocess.run(cli + ["redrive", group, "--topic", f"{topic}.{group}.dlq", "--offset", f"{browse[0]['partition_id']}@{browse[0]['offset']}"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "redriven 0, already redriven 1" in out.stdout, out
    out = subprocess.run(cli + ["redrive", group, "--topic", f"{topic}.{group}.dlq", "--offset", "zero"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "PARTITION@OFFSET" in out.stderr, out
    # Redriven records come back to the group like any new record.
    got = wait_until(lambda: [r for r in poll(base) if header(r, "ringlog-redrive-source")] or None, DEADLINE_S,
                     "a redriven record delivered to the group")
    assert got


def test_nack_over_websocket(broker, topic_name):
    topic = topic_name
    group = "ws-" + topic
    broker.create_topic(topic)
    produce(broker, topic, [("p", "poison"), ("q", "fine")])

    async def run():
        async with websockets.connect(f"ws://127.0.0.1:{broker.port}/v1/ws") as ws:
            await ws.send(json.dumps({"type": "join", "id": 1, "group": group, "topics": [topic], "position": "earliest",
                                      "max.delivery.attempts": 2, "retry.backoff.ms": 200}))
            await ws.send(json.dumps({"type": "credit", "records": 100, "bytes": 1 << 20}))
            seen = []
            queued = []   # messages read while waiting for a nack's answer
            assigned = set()   # as the last `assignment` told
            end = time.monotonic() + DEADLINE_S
            while time.monotonic() < end:
                m = queued.pop(0) if queued else json.loads(await asyncio.wait_for(ws.recv(), timeout=DEADLINE_S))
                if m["type"] == "error":
                    raise AssertionError(m)
                if m["type"] == "assignment":
                    assigned = {(p["topic"], p["partition"]) for p in m["partitions"]}
                if m["type"] != "record":
                    continue
                # A Kafka consumer reads a partition only after on_assign named it (the new user of
                # session 36: the retry topic's record came before the assignment adding it, 3 of 3).
                assert (m["topic"], m["partition"]) in assigned, (m["topic"], m["partition"], assigned)
                value = base64.b64decode(m["value"]).decode()
                seen.append((value, m["topic"], header(m, "ringlog-delivery-attempt")))
                if value == "poison":
                    await ws.send(json.dumps({"type": "nack", "id": len(seen) + 10, "topic": m["topic"],
                                              "partition": m["partition"], "offset": m["offset"],
                                              "reason": f"ws fail {len(seen)}"}))
                    while True:
                        a = json.loads(await asyncio.wait_for(ws.recv(), timeout=DEADLINE_S))
                        if a.get("id") == len(seen) + 10:
                            assert a["type"] == "nacked", a
                            break
                        queued.append(a)
                if len(read_all(broker, f"{topic}.{group}.dlq", 0)) == 1:
                    return seen
            raise AssertionError(f"no dead letter: {seen}")

    seen = asyncio.run(run())
    assert [s for s in seen if s[0] == "poison"] == [("poison", topic, None), ("poison", f"{topic}.{group}.retry", "2")]
    assert [s for s in seen if s[0] == "fine"] == [("fine", topic, None)]
    letter = read_all(broker, f"{topic}.{group}.dlq", 0)[0]
    assert len(headers_all(letter, "ringlog-nack-reason")) == 2

    async def bad_join():
        async with websockets.connect(f"ws://127.0.0.1:{broker.port}/v1/ws") as ws:
            await ws.send(json.dumps({"type": "join", "id": 1, "group": group, "topics": [topic],
                                      "retry.backoff.multiplier": 0.5}))
            m = json.loads(await asyncio.wait_for(ws.recv(), timeout=DEADLINE_S))
            assert m["type"] == "error" and "retry.backoff.multiplier" in m["message"], m
            await ws.send(json.dumps({"type": "nack", "id": 2, "topic": topic, "partition": 0, "offset": 0}))
            m = json.loads(await asyncio.wait_for(ws.recv(), timeout=DEADLINE_S))
            assert m["type"] == "error" and "joined group" in m["message"], m

    asyncio.run(bad_join())


def test_bad_nacks_and_settings_are_refused_naming_the_field(broker, topic_name):
    topic = topic_name
    group = "bad-" + topic
    broker.create_topic(topic, partitions=2)
    produce(broker, topic, [("a", "1")])
    for settings, key in [({"max.delivery.attempts": 0}, "max.delivery.attempts"),
                          ({"max.delivery.attempts": "many"}, "max.delivery.attempts"),
                          ({"retry.backoff.ms": -5}, "retry.backoff.ms"),
                          ({"retry.backoff.ms": 5000, "retry.backoff.max.ms": 10}, "retry.backoff.max.ms"),
                          ({"retry.backoff.multiplier": 11}, "retry.backoff.multiplier"),
                          ({"retry.backof.ms": 1}, "retry.backof.ms")]:
        r = requests.post(f"{broker.url}/consumers/{group}", json=settings, headers={"Content-Type": V2})
        assert r.status_code == 422 and key in r.json()["message"], (settings, r.text)
    base = consumer(broker, group, topic)
    got = wait_until(lambda: poll(base), DEADLINE_S, "the record")
    rec = got[0]
    # Unknown instance: 404.
    r = requests.post(f"{broker.url}/consumers/{group}/instances/nobody/nacks", headers={"Content-Type": V2},
                      json={"offsets": [{"topic": topic, "partition": 0, "offset": 0}]})
    assert r.status_code == 404, r.text
    # Bodies: malformed JSON 400; wrong shapes 422 naming the field.
    r = requests.post(base + "/nacks", data="{", headers={"Content-Type": V2})
    assert r.status_code == 400, r.text
    for body, field in [({}, "offsets"), ({"offsets": []}, "offsets"),
                        ({"offsets": [{"topic": topic, "partition": 0}]}, "offsets[0].offset"),
                        ({"offsets": [{"topic": topic, "partition": 0, "offset": -1}]}, "offsets[0].offset"),
                        ({"offsets": [{"topic": topic, "partition": 0, "offset": 0, "reason": 5}]}, "offsets[0].reason")]:
        r = requests.post(base + "/nacks", json=body, headers={"Content-Type": V2})
        assert r.status_code == 422 and field in r.json()["message"], (body, r.text)
    # An offset not handed to it yet, and a partition it does not hold: refused, nothing written.
    r = nack(base, [{"topic": topic, "partition": rec["partition"], "offset": rec["offset"] + 5}], "x")
    assert 400 <= r.status_code < 500 and "was not handed" in r.json()["message"], r.text
    r = nack(base, [{"topic": "no-such-topic", "partition": 0, "offset": 0}], "x")
    assert 400 <= r.status_code < 500 and "does not hold" in r.json()["message"], r.text
    assert read_all(broker, f"{topic}.{group}.retry", 0) == []
    # A dead-letter topic of another group, and a redrive body of the wrong shape.
    r = requests.get(broker.v3(f"/consumer-groups/{group}/dead-letters/{topic}/records"))
    assert r.status_code == 404 and "not a dead-letter topic" in r.json()["message"], r.text
    r = requests.post(broker.v3(f"/consumer-groups/{group}/dead-letters/{topic}.{group}.dlq/redrive"),
                      json={"to": "elsewhere"})
    assert r.status_code == 422 and "to must be" in r.json()["message"], r.text
    r = requests.post(broker.v3(f"/consumer-groups/{group}/dead-letters/{topic}.{group}.dlq/redrive"),
                      json={"ranges": [{"partition": 0, "from_offset": 5, "to_offset": 2}]})
    assert r.status_code == 422 and "ranges[0].to_offset" in r.json()["message"], r.text
    # The record itself was not lost by any of it.
    assert len(read_all(broker, topic, rec["partition"])) == 1


@pytest.mark.parametrize("how", ["kill-9", "sigterm"])
def test_broker_restart_with_pending_retries_loses_and_repeats_nothing(fresh_broker, topic_name, how):
    b = fresh_broker()
    topic = topic_name
    group = "r-" + topic
    b.create_topic(topic, partitions=2)
    n = 200
    produce(b, topic, [(f"k{i}", f"v{i}") for i in range(n)])
    base = consumer(b, group, topic, **{"retry.backoff.ms": 3000, "max.delivery.attempts": 5})
    seen = {}

    def take_all():
        for rec in poll(base, 100):
            seen[base64.b64decode(rec["value"]).decode()] = rec
        return len(seen) == n

    wait_until(take_all, DEADLINE_S, "every record polled")
    nacked_at = now_ms()
    recs = list(seen.values())
    for i in range(0, n, 50):
        r = nack(base, recs[i:i + 50], "restart test")
        assert r.status_code == 204, r.text
    r = requests.post(base + "/offsets", headers={"Content-Type": V2})
    assert r.status_code == 204
    if how == "kill-9":
        b.kill()
    else:
        assert b.stop() == 0
    b.start()
    retry_topic = f"{topic}.{group}.retry"

    def delivered():
        got = [r for p in range(2) for r in read_all(b, retry_topic, p)]
        return got if len(got) >= n else None

    got = wait_until(delivered, DEADLINE_S, "every retry copy moved into the retry topic")
    # Give a repeat (there must be none) the chance to show: past every due time, read again.
    wait_until(lambda: now_ms() > nacked_at + 3000 + 1000, DEADLINE_S, "a second past the due time")
    got = [r for p in range(2) for r in read_all(b, retry_topic, p)]
    values = sorted(base64.b64decode(r["value"]).decode() for r in got)
    assert values == sorted(f"v{i}" for i in range(n)), "each retry copy exactly once"
    for r in got:
        assert r["timestamp"] >= int(header(r, "ringlog-deliver-at")) >= nacked_at + 3000   # none early
        assert header(r, "ringlog-delivery-attempt") == "2"
    # The original topic's records were committed as processed: the group reads the retries only.
    assert requests.delete(base, headers={"Content-Type": V2}).status_code == 204
    base2 = consumer(b, group, topic)
    again = []
    wait_until(lambda: again.extend(poll(base2, 100)) or len(again) >= n, DEADLINE_S, "the retries delivered to the group")
    assert all(r["topic"] == retry_topic for r in again)
    assert len(again) == n


def test_redrive_of_more_dead_letters_than_one_produce_request_takes(broker, topic_name):
    """The breaker's finding: a redrive of more than produce.records.max (10,000) dead letters was
    one produce and failed whole. Redrive copies in chunks, marks each chunk, and a second redrive
    finds every letter marked."""
    topic = topic_name
    group = "big-" + topic
    n = 10_200
    broker.create_topic(topic, partitions=1)
    for i in range(0, n, 1000):
        produce(broker, topic, [(f"k{j}", f"v{j}") for j in range(i, min(n, i + 1000))])
    base = consumer(broker, group, topic, **{"max.delivery.attempts": 1})
    taken = []

    def take():
        r = requests.get(base + "/records", params={"timeout": 200, "max_bytes": 4 << 20}, headers={"Accept": BINARY})
        assert r.status_code == 200, r.text
        taken.extend(r.json())
        return len(taken) >= n

    wait_until(take, 120, "every record polled")
    for i in range(0, n, 1000):
        r = nack(base, taken[i:i + 1000], "always")
        assert r.status_code == 204, r.text
    dlq = f"{topic}.{group}.dlq"
    assert len(read_all(broker, dlq, 0)) == n   # max.delivery.attempts=1: straight to the dead letters
    url = broker.v3(f"/consumer-groups/{group}/dead-letters/{dlq}/redrive")
    r = requests.post(url, json={"to": "original"}, timeout=120)
    assert r.status_code == 200, r.text
    assert r.json()["redriven"] == n and r.json()["failures"] == [], r.text[:500]
    r = requests.post(url, json={"to": "original"}, timeout=120)
    assert r.status_code == 200 and r.json()["redriven"] == 0 and r.json()["already_redriven"] == n, r.text[:500]
    after = read_all(broker, topic, 0)
    copies = [base64.b64decode(rec["value"]).decode() for rec in after if header(rec, "ringlog-redrive-source")]
    assert len(after) == 2 * n
    assert sorted(copies) == sorted(f"v{j}" for j in range(n))   # each letter once


def test_a_forged_redrive_marker_marks_nothing(broker, topic_name):
    """The breaker of session 31: anyone with WRITE on a dead-letter topic (every member of the
    group has it, for nacks) produced a record with the ringlog-redriven header and value "0@0"
    into it; the genuine letter at 0@0 then read as redriven and "redrive all" skipped it forever.
    A marker counts only with the broker's proof (ringlog-redriven-proof, an HMAC with the
    cluster's secret over the topic, the partition and the value)."""
    topic = topic_name
    group = "forged-" + topic
    broker.create_topic(topic, partitions=1)
    produce(broker, topic, [("k", "poison")])
    base = consumer(broker, group, topic, **{"max.delivery.attempts": 1})
    taken = []

    def take():
        r = requests.get(base + "/records", params={"timeout": 200}, headers={"Accept": BINARY})
        assert r.status_code == 200, r.text
        taken.extend(r.json())
        return len(taken) >= 1

    wait_until(take, DEADLINE_S, "the record polled")
    assert nack(base, taken[:1], "poison").status_code == 204
    dlq = f"{topic}.{group}.dlq"
    wait_until(lambda: len(read_all(broker, dlq, 0)) == 1, DEADLINE_S, "the dead letter")
    for proof in [None, "00" * 32, "not hex"]:
        headers = [{"name": "ringlog-redriven", "value": b64("1")}]
        if proof is not None:
            headers.append({"name": "ringlog-redriven-proof", "value": b64(proof)})
        r = requests.post(broker.v3(f"/topics/{dlq}/records"),
                          json={"partition_id": 0, "value": {"type": "BINARY", "data": b64("0@0")}, "headers": headers})
        assert r.status_code == 200, r.text
    letters = requests.get(broker.v3(f"/consumer-groups/{group}/dead-letters/{dlq}/records")).json()["data"]
    assert [(x["offset"], x["redriven"]) for x in letters] == [(0, False)], letters
    url = broker.v3(f"/consumer-groups/{group}/dead-letters/{dlq}/redrive")
    r = requests.post(url, json={"to": "original"}, timeout=60)
    assert r.status_code == 200 and r.json()["redriven"] == 1, r.text
    # The broker's own marker still counts.
    r = requests.post(url, json={"to": "original"}, timeout=60)
    assert r.status_code == 200 and r.json()["redriven"] == 0 and r.json()["already_redriven"] == 1, r.text
