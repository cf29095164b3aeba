"""Issue 31: client quotas at the HTTP doors. The v3-style routes store and describe quotas
(GET/PUT /v3/clusters/{cluster_id}/client-quotas: Kafka's DescribeClientQuotas and
AlterClientQuotas); a bad entity, key or value is a 400 naming the field. Enforcement as Kafka's
(KIP-219): the request that goes over a byte rate is answered, the client's later requests are
refused with 429 + Retry-After + 42901 while its throttle runs; a client that honours Retry-After
loses nothing; the client is told apart by X-Client-Id (else its address); /metrics shows the
sensors. `ringlog quotas list|set|remove` speaks kafka-configs.sh's words.

Throttles follow Kafka's window (11 samples of 1 s, KIP-219): a client may send 10 s of its quota
at once before it is throttled, so each test sends a little over that and the throttle times
stay within a few seconds. Nothing here sleeps to wait for a condition: the quota's visibility
is polled, and the polite client waits exactly what Retry-After tells it.
"""
import asyncio
import base64
import json
import subprocess
import time

import requests
import websockets

from conftest import wait_until

BINARY = "application/vnd.kafka.binary.v2+json"
V2_JSON_HEADERS = {"Content-Type": BINARY}
QUOTA_VISIBLE_S = 5.0   # a PUT is committed to the metadata log; this node's image has it soon after
WINDOW_S = 10           # Kafka's quota.window.num (11) - 1 samples of 1 s: what a first burst is spread over


def put_quota(b, entity, quotas, **extra):
    return requests.put(b.v3("/client-quotas"), json=dict({"entity": entity, "quotas": quotas}, **extra))


def listed(b, **query):
    r = requests.get(b.v3("/client-quotas"), params=query)
    assert r.status_code == 200, r.text
    return [(q["entity"], q["quotas"]) for q in r.json()["data"]]


def set_and_wait(b, entity, quotas):
    r = put_quota(b, entity, quotas)
    assert r.status_code == 200, r.text
    wait_until(lambda: any(e == entity and all(q.get(k) == v for k, v in quotas.items()) for e, q in listed(b)),
               QUOTA_VISIBLE_S, f"quota {entity} {quotas} visible")


def produce_v2(b, topic, value_bytes, client_id=None, tag="x"):
    """One v2 produce of one record whose value is `value_bytes` bytes (base64 in the body)."""
    value = (tag.encode() + b"-" * value_bytes)[:value_bytes]
    headers = dict(V2_JSON_HEADERS)
    if client_id:
        headers["X-Client-Id"] = client_id
    return requests.post(f"{b.url}/topics/{topic}", json={"records": [{"value": base64.b64encode(value).decode()}]},
                         headers=headers)


def is_quota_refusal(r, client_id, key):
    if r.status_code != 429:
        return False
    body = r.json()
    retry_after = r.headers.get("Retry-After", "")
    return body["error_code"] == 42901 and f"client-id={client_id}" in body["message"] and key in body["message"] \
        and retry_after.isdigit() and int(retry_after) >= 1


def test_the_routes_set_describe_filter_and_remove(broker):
    entity = {"user": "alice", "client-id": "<default>"}
    r = put_quota(broker, entity, {"producer_byte_rate": 1048576, "request_percentage": 50.5})
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["kind"] == "KafkaClientQuota"
    assert answer["entity"] == entity
    assert answer["quotas"] == {"producer_byte_rate": 1048576, "request_percentage": 50.5}
    assert "strict=true" in answer["metadata"]["self"]
    wait_until(lambda: (entity, {"producer_byte_rate": 1048576, "request_percentage": 50.5}) in listed(broker),
               QUOTA_VISIBLE_S, "the quota listed")
    whole = requests.get(broker.v3("/client-quotas")).json()
    assert whole["kind"] == "KafkaClientQuotaList" and whole["data"][0]["kind"] == "KafkaClientQuota"
    # Kafka's ClientQuotaFilter: exact, <default>, any (empty), strict.
    assert [e for e, _ in listed(broker, user="alice")] == [entity]
    assert [e for e, _ in listed(broker, **{"client-id": "<default>"})] == [entity]
    assert [e for e, _ in listed(broker, user="")] == [entity]
    assert listed(broker, user="alice", strict="true") == []
    assert [e for e, _ in listed(broker, user="alice", **{"client-id": ""}, strict="true")] == [entity]
    assert listed(broker, user="bob") == []
    # A null removes its key; the keys not named keep their values.
    r = put_quota(broker, entity, {"request_percentage": None, "consumer_byte_rate": 2048})
    assert r.status_code == 200, r.text
    assert r.json()["quotas"] == {"producer_byte_rate": 1048576, "consumer_byte_rate": 2048}
    wait_until(lambda: (entity, {"producer_byte_rate": 1048576, "consumer_byte_rate": 2048}) in listed(broker),
               QUOTA_VISIBLE_S, "the change listed")
    # validate_only answers what would be stored and stores nothing.
    r = put_quota(broker, entity, {"producer_byte_rate": 1}, validate_only=True)
    assert r.status_code == 200 and r.json()["quotas"]["producer_byte_rate"] == 1 and r.json()["validate_only"] is True
    assert (entity, {"producer_byte_rate": 1048576, "consumer_byte_rate": 2048}) in listed(broker)
    # Every key removed: the entity is gone.
    r = put_quota(broker, entity, {"producer_byte_rate": None, "consumer_byte_rate": None})
    assert r.status_code == 200 and r.json()["quotas"] == {}, r.text
    wait_until(lambda: listed(broker, user="alice") == [], QUOTA_VISIBLE_S, "the entity removed")


def test_bad_entities_keys_and_values_are_400_naming_the_field(broker):
    cases = [
        ({"quotas": {"producer_byte_rate": 1}}, "entity"),
        ({"entity": {"group": "g"}, "quotas": {"producer_byte_rate": 1}}, "entity.group"),
        ({"entity": {"user": 7}, "quotas": {"producer_byte_rate": 1}}, "entity.user"),
        ({"entity": {"user": "a"}, "quotas": {"bogus_rate": 1}}, "quotas.bogus_rate"),
        ({"entity": {"user": "a"}, "quotas": {"producer_byte_rate": -5}}, "quotas.producer_byte_rate"),
        ({"entity": {"user": "a"}, "quotas": {"producer_byte_rate": 1.5}}, "whole number"),
        ({"entity": {"user": "a"}, "quotas": {"producer_byte_rate": "fast"}}, "quotas.producer_byte_rate"),
        ({"entity": {"user": "a", "ip": "10.0.0.1"}, "quotas": {"producer_byte_rate": 1}}, "ip"),
        ({"entity": {"user": "a"}, "quotas": {"connection_creation_rate": 5}}, "quotas.connection_creation_rate"),
        ({"entity": {"user": ""}, "quotas": {"producer_byte_rate": 1}}, "quotas.producer_byte_rate"),
        ({"entity": {"user": "a"}}, "quotas"),
        ({"entity": {"user": "a"}, "quotas": {}, "extra": 1}, "extra"),
        ({"entity": {"user": "a"}, "quotas": {}, "validate_only": "yes"}, "validate_only"),
    ]
    for body, field in cases:
        r = requests.put(broker.v3("/client-quotas"), json=body)
        assert r.status_code == 400, (body, r.status_code, r.text)
        answer = r.json()
        assert set(answer) == {"error_code", "message"} and answer["error_code"] == 400, answer
        assert field in answer["message"], (body, answer)
    r = requests.put(broker.v3("/client-quotas"), data="{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error_code"] == 40001
    r = requests.get(broker.v3("/client-quotas"), params={"strict": "maybe"})
    assert r.status_code == 400 and "strict" in r.json()["message"]
    r = requests.get(broker.v3("/client-quotas"), params={"ip": "10.0.0.1", "user": "a"})
    assert r.status_code == 400 and "ip" in r.json()["message"]
    r = requests.get(f"{broker.url}/v3/clusters/no-such-cluster/client-quotas")
    assert r.status_code == 404
    # Nothing was stored by any of them.
    assert listed(broker, user="a") == []


def test_produce_over_quota_is_answered_then_429_with_retry_after_for_that_client_only(broker, topic_name):
    broker.create_topic(topic_name)
    rate = 1000
    set_and_wait(broker, {"client-id": "slow"}, {"producer_byte_rate": rate})
    # The request that goes over is answered (Kafka accepts it and throttles afterwards) ...
    first = produce_v2(broker, topic_name, int(rate * WINDOW_S * 1.2), client_id="slow")
    assert first.status_code == 200, first.text
    # ... and the client's next one is refused while the throttle runs.
    second = produce_v2(broker, topic_name, 10, client_id="slow")
    assert is_quota_refusal(second, "slow", "producer_byte_rate"), (second.status_code, second.headers, second.text)
    assert int(second.headers["Retry-After"]) <= 11   # KIP-219's throttle is capped at the whole window
    assert "Retry-After" in second.headers["Access-Control-Expose-Headers"]   # a browser's client may read it
    # Another client id, and a client without one (its address), are not slowed by it.
    assert produce_v2(broker, topic_name, 10, client_id="fast").status_code == 200
    assert produce_v2(broker, topic_name, 10).status_code == 200
    # An X-Client-Id longer than an entity name may be is refused naming the header.
    r = produce_v2(broker, topic_name, 10, client_id="c" * 1025)
    assert r.status_code == 400 and "X-Client-Id" in r.json()["message"]


def test_a_raised_or_deleted_quota_lifts_the_throttle_earned_under_the_old_one(broker, topic_name):
    """The breaker of session 38 (repro/http_quota_stuck.sh): a client throttled under
    producer_byte_rate=10 kept getting 429 Retry-After=393 after the quota was raised to 1e9,
    and after it was deleted (the gateway kept its own per-client record, and the sensor's debt
    stayed at the old bound). Kafka recomputes the throttle against the quota in force."""
    broker.create_topic(topic_name)
    client = "raise-" + topic_name
    entity = {"client-id": client}
    set_and_wait(broker, entity, {"producer_byte_rate": 10})
    assert produce_v2(broker, topic_name, 3000, client_id=client).status_code == 200
    throttled = produce_v2(broker, topic_name, 1, client_id=client)
    assert is_quota_refusal(throttled, client, "producer_byte_rate"), (throttled.status_code, throttled.text)
    assert int(throttled.headers["Retry-After"]) >= 100, throttled.headers
    set_and_wait(broker, entity, {"producer_byte_rate": 1000000000})
    raised = produce_v2(broker, topic_name, 1, client_id=client)
    assert raised.status_code == 200, (raised.status_code, raised.headers.get("Retry-After"), raised.text)
    # Lowered again: the bytes still in the window are over it.
    set_and_wait(broker, entity, {"producer_byte_rate": 10})
    produce_v2(broker, topic_name, 3000, client_id=client)
    assert produce_v2(broker, topic_name, 1, client_id=client).status_code == 429
    # Deleted: no quota applies, no throttle.
    assert put_quota(broker, entity, {"producer_byte_rate": None}).status_code == 200
    wait_until(lambda: not any(e == entity for e, _ in listed(broker)), QUOTA_VISIBLE_S, "the quota removed")
    deleted = produce_v2(broker, topic_name, 1, client_id=client)
    assert deleted.status_code == 200, (deleted.status_code, deleted.headers.get("Retry-After"), deleted.text)


def test_a_user_quota_holds_whatever_client_id_a_request_names(broker, topic_name):
    """The breaker's q_http_bypass.py: the 429 check was keyed by (user, client id) while the
    quota's sensor was the user's, so a new X-Client-Id per request passed every time."""
    broker.create_topic(topic_name)
    set_and_wait(broker, {"user": "ANONYMOUS"}, {"producer_byte_rate": 1000})
    try:
        assert produce_v2(broker, topic_name, int(1000 * WINDOW_S * 1.5), client_id="id-0").status_code == 200
        refused = [produce_v2(broker, topic_name, 10, client_id=f"id-{i}") for i in range(1, 6)]
        assert all(r.status_code == 429 and r.json()["error_code"] == 42901 for r in refused), \
            [(r.status_code, r.text[:100]) for r in refused]
        # A client's own forwarding headers (the breakers' q_fwd_header.py, t1_quota.py; here from
        # the broker's own address, naming its own node id) do not skip the quota either.
        forged = requests.post(f"{broker.url}/topics/{topic_name}",
                               json={"records": [{"value": base64.b64encode(b"x").decode()}]},
                               headers=dict(V2_JSON_HEADERS, **{"X-Ringlog-Forwarded-By": "1", "X-Client-Id": "id-9",
                                                                "X-Ringlog-Forwarded-For": "10.9.9.9"}))
        assert forged.status_code == 429, (forged.status_code, forged.text[:200])
    finally:
        assert put_quota(broker, {"user": "ANONYMOUS"}, {"producer_byte_rate": None}).status_code == 200
        wait_until(lambda: not any(e == {"user": "ANONYMOUS"} for e, _ in listed(broker)), QUOTA_VISIBLE_S,
                   "the user quota removed")


def test_a_client_honouring_retry_after_loses_nothing(broker, topic_name):
    broker.create_topic(topic_name)
    rate, record_bytes, records = 2000, 1500, 16   # 24 KB: 4 KB over the first 10 s of quota
    set_and_wait(broker, {"client-id": "polite"}, {"producer_byte_rate": rate})
    stored, refusals = [], 0
    for i in range(records):
        tag = f"polite-{i:03d}"
        for _ in range(20):   # bounded: each 429 says how long to wait, at most the 11 s window
            r = produce_v2(broker, topic_name, record_bytes, client_id="polite", tag=tag)
            if r.status_code == 200:
                assert r.json()["offsets"][0]["error_code"] is None, r.text
                stored.append(tag)
                break
            assert is_quota_refusal(r, "polite", "producer_byte_rate"), (r.status_code, r.text)
            refusals += 1
            time.sleep(int(r.headers["Retry-After"]))   # what the server asked for: honouring it is the test
        else:
            raise AssertionError(f"record {tag} refused 20 times")
    assert refusals > 0, "the quota never throttled: the test sent too little"
    assert len(stored) == records
    # Every record told stored is there, once, in order; no refused request stored anything.
    got = []

    def read_all():
        r = requests.get(f"{broker.url}/topics/{topic_name}/partitions/0/records",
                         params={"offset": len(got), "max_bytes": 1 << 20}, headers={"Accept": BINARY})
        assert r.status_code == 200, r.text
        got.extend(base64.b64decode(rec["value"])[:len("polite-000")].decode() for rec in r.json())
        return len(got) >= records

    wait_until(read_all, 10, "every stored record read back")
    assert got == stored


def test_a_reader_told_retry_after_is_admitted_when_it_comes_back(broker, topic_name):
    """Retry-After is the first whole second at which the client is admitted, not the throttle
    rounded up: a young window's rate falls under the bound within a second and climbs back over
    it at the next sample boundary, and a reader told "1" each time came back in that phase 11
    times in a row (session 41's new user: consumer_byte_rate=20480, one 215 KB read)."""
    broker.create_topic(topic_name)
    # 104 values of 1500 bytes: a ~215 KB answer (base64 in JSON), a little over the 204,800 bytes
    # a young 10 s window admits at 20480 B/s, so the throttle is short and the rate oscillates.
    body = {"records": [{"value": base64.b64encode(b"r" * 1500).decode()}] * 104}
    r = requests.post(f"{broker.url}/topics/{topic_name}", json=body, headers=dict(V2_JSON_HEADERS), timeout=30)
    assert r.status_code == 200, r.text[:300]
    set_and_wait(broker, {"client-id": "reader-retry"}, {"consumer_byte_rate": 20480})

    def read():
        return requests.get(f"{broker.url}/topics/{topic_name}/partitions/0/records",
                            params={"offset": 0, "max_bytes": 1000000},
                            headers={"Accept": BINARY, "X-Client-Id": "reader-retry"}, timeout=30)

    first = read()
    assert first.status_code == 200 and 204800 < len(first.content) < 225280, (first.status_code, len(first.content))
    refused = read()
    assert is_quota_refusal(refused, "reader-retry", "consumer_byte_rate"), (refused.status_code, refused.text[:300])
    time.sleep(int(refused.headers["Retry-After"]))   # what the server asked for: honouring it is the test
    again = read()
    assert again.status_code == 200, f"refused again after waiting Retry-After: {again.text[:300]}"


def test_reads_over_consumer_byte_rate_and_the_metrics(broker, topic_name):
    broker.create_topic(topic_name)
    for i in range(12):
        assert produce_v2(broker, topic_name, 1000, tag=f"r{i}").status_code == 200
    set_and_wait(broker, {"client-id": "reader-slow"}, {"consumer_byte_rate": 1000})

    def read(client_id):
        return requests.get(f"{broker.url}/topics/{topic_name}/partitions/0/records", params={"offset": 0},
                            headers={"Accept": BINARY, "X-Client-Id": client_id})

    # One read takes at most a quota window's worth (1000 B/s x 10 s: Kafka's cap of a fetch,
    # the breaker's q_http_read.py took 114 MB in one read), and the reads after it are refused.
    first = read("reader-slow")
    assert first.status_code == 200 and 1 <= len(first.json()) <= 10, (first.status_code, len(first.text))
    answers = [read("reader-slow") for _ in range(3)]
    assert any(is_quota_refusal(r, "reader-slow", "consumer_byte_rate") for r in answers), \
        [(r.status_code, r.text[:100]) for r in answers]
    assert read("reader-fast").status_code == 200 and len(read("reader-fast").json()) == 12
    # A stream under the quota is slowed, not closed: it ends at its own timeout with every record.
    r = requests.get(f"{broker.url}/topics/{topic_name}/partitions/0/records", params={"offset": 0, "timeout": 1500},
                     headers={"Accept": "application/x-ndjson", "X-Client-Id": "stream-slow"}, timeout=30)
    assert r.status_code == 200, r.text
    lines = [json.loads(line) for line in r.text.splitlines() if line]
    assert len(lines) == 12 and all("error_code" not in line for line in lines), r.text[:500]
    metrics = requests.get(f"{broker.url}/metrics").text
    assert "# TYPE ringlog_client_quota_throttle_time_ms_total counter" in metrics

    def sample(name, key, entity):
        prefix = f'{name}{{quota="{key}",entity="{entity}"}} '
        values = [float(line[len(prefix):]) for line in metrics.splitlines() if line.startswith(prefix)]
        return values[0] if values else None

    assert sample("ringlog_client_quota_throttle_time_ms_total", "consumer_byte_rate", "client-id=reader-slow") > 0
    assert sample("ringlog_client_quota_throttled_total", "consumer_byte_rate", "client-id=reader-slow") >= 1
    assert sample("ringlog_client_quota_value_total", "consumer_byte_rate", "client-id=reader-slow") >= 12000
    assert sample("ringlog_client_quota_bound", "consumer_byte_rate", "client-id=reader-slow") == 1000


def metric_sample(b, name, key, entity):
    prefix = f'{name}{{quota="{key}",entity="{entity}"}} '
    values = [float(line[len(prefix):]) for line in requests.get(f"{b.url}/metrics").text.splitlines()
              if line.startswith(prefix)]
    return values[0] if values else None


def test_a_websocket_reader_over_its_quota_is_slowed_not_closed(broker, topic_name):
    broker.create_topic(topic_name)
    for i in range(24):
        assert produce_v2(broker, topic_name, 1000, tag=f"w{i:02d}").status_code == 200
    set_and_wait(broker, {"client-id": "ws-slow"}, {"consumer_byte_rate": 1000})

    async def recv(ws):
        return json.loads(await asyncio.wait_for(ws.recv(), 30))   # past the longest throttle (11 s)

    async def run():
        async with websockets.connect(f"ws://127.0.0.1:{broker.port}/v1/ws",
                                      extra_headers={"X-Client-Id": "ws-slow"}) as ws:
            await ws.send(json.dumps({"type": "subscribe", "id": 1, "topic": topic_name, "partition": 0, "offset": 0}))
            assert (await recv(ws))["type"] == "subscribed"
            # 12 KB at once: over the first 10 s of a 1000 B/s quota, so the session is throttled ...
            await ws.send(json.dumps({"type": "credit", "records": 12}))
            got = [await recv(ws) for _ in range(12)]
            # ... and the next records still come (after the throttle time), on the same session.
            await ws.send(json.dumps({"type": "credit", "records": 12}))
            got += [await recv(ws) for _ in range(12)]
            await ws.send(json.dumps({"type": "ping", "id": "p"}))
            assert await recv(ws) == {"type": "pong", "id": "p"}
            return got

    got = asyncio.run(run())
    assert [m["type"] for m in got] == ["record"] * 24
    assert [m["offset"] for m in got] == list(range(24))
    assert metric_sample(broker, "ringlog_client_quota_throttled_total", "consumer_byte_rate", "client-id=ws-slow") >= 1


def test_a_chunked_produce_stream_over_its_quota_is_slowed_not_closed(broker, topic_name):
    broker.create_topic(topic_name)
    set_and_wait(broker, {"client-id": "stream-producer"}, {"producer_byte_rate": 1000})
    big = "b" * 12000   # over the first 10 s of the quota: the body is read on after the throttle time

    def chunks():
        yield (json.dumps({"value": {"type": "STRING", "data": big}}) + "\n").encode()
        for i in range(3):
            yield (json.dumps({"value": {"type": "STRING", "data": f"after-{i}"}}) + "\n").encode()

    r = requests.post(broker.v3(f"/topics/{topic_name}/records"), data=chunks(), timeout=60,
                      headers={"Content-Type": "application/json", "X-Client-Id": "stream-producer"})
    assert r.status_code == 200, r.text
    reports = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    assert [x["error_code"] for x in reports] == [200] * 4, r.text[:500]
    assert [x["offset"] for x in reports] == [0, 1, 2, 3]
    assert metric_sample(broker, "ringlog_client_quota_throttled_total", "producer_byte_rate",
                         "client-id=stream-producer") >= 1


def run_cli(ringlog_bin, b, *args):
    return subprocess.run([str(ringlog_bin), "quotas", *args, "--bootstrap-server", b.url],
                          capture_output=True, text=True, timeout=60)


def test_the_quotas_cli_sets_lists_and_removes_with_kafka_configs_words(broker, ringlog_bin):
    out = subprocess.run([str(ringlog_bin), "quotas", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "--entity-default" in out.stdout and "--add-config" in out.stdout
    r = run_cli(ringlog_bin, broker, "set", "--entity-type", "users", "--entity-name", "carol", "--entity-type", "clients",
                "--entity-default", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2048")
    assert r.returncode == 0, r.stderr
    assert "user=carol,client-id=<default>\tproducer_byte_rate\t1048576" in r.stdout, r.stdout

    def carol():
        r = run_cli(ringlog_bin, broker, "list", "--entity-type", "users", "--entity-name", "carol")
        assert r.returncode == 0, r.stderr
        return r.stdout

    wait_until(lambda: "user=carol,client-id=<default>\tconsumer_byte_rate\t2048" in carol(), QUOTA_VISIBLE_S,
               "the CLI's quota listed")
    assert carol().splitlines()[0] == "ENTITY\tQUOTA\tVALUE"
    r = run_cli(ringlog_bin, broker, "remove", "--entity-type", "users", "--entity-name", "carol", "--entity-type",
                "clients", "--entity-default", "--delete-config", "consumer_byte_rate")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Removed 1 quota;"), r.stdout   # was "Removed 0" (freed memory read)
    wait_until(lambda: "consumer_byte_rate" not in carol(), QUOTA_VISIBLE_S, "the key removed")
    assert "producer_byte_rate\t1048576" in carol()
    r = run_cli(ringlog_bin, broker, "set", "--entity-type", "clients", "--entity-name", "x", "--add-config", "bogus=1")
    assert r.returncode == 1 and "quotas.bogus" in r.stderr, r.stderr
    # The breaker of session 31: inf / nan / 1e400 went out as JSON null, which removed carol's
    # producer quota while the CLI printed "Set 1 quota".
    for bad in ["inf", "nan", "1e400", "-inf"]:
        r = run_cli(ringlog_bin, broker, "set", "--entity-type", "users", "--entity-name", "carol", "--entity-type",
                    "clients", "--entity-default", "--add-config", "producer_byte_rate=" + bad)
        assert r.returncode == 2 and "finite number" in r.stderr, (bad, r.returncode, r.stderr)
    assert "producer_byte_rate\t1048576" in carol()
    r = run_cli(ringlog_bin, broker, "set", "--entity-type", "groups", "--entity-name", "x", "--add-config", "bogus=1")
    assert r.returncode == 2 and "users, clients or ips" in r.stderr, r.stderr
    r = run_cli(ringlog_bin, broker, "set", "--entity-type", "users", "--add-config", "producer_byte_rate=1")
    assert r.returncode == 2 and "--entity-name or --entity-default" in r.stderr, r.stderr



def test_a_removed_quota_leaves_no_bound_in_the_metrics(broker, topic_name):
    """ringlog_client_quota_bound is the quota bounding the client now: once removed there is none
    (it kept the removed value, session 41's new user); the totals since start stay."""
    broker.create_topic(topic_name)
    set_and_wait(broker, {"client-id": "gone-later"}, {"producer_byte_rate": 4096})
    assert produce_v2(broker, topic_name, 100, client_id="gone-later").status_code == 200
    bound = 'ringlog_client_quota_bound{quota="producer_byte_rate",entity="client-id=gone-later"} 4096'
    assert bound in requests.get(f"{broker.url}/metrics").text
    r = put_quota(broker, {"client-id": "gone-later"}, {"producer_byte_rate": None})
    assert r.status_code == 200, r.text
    wait_until(lambda: 'entity="client-id=gone-later"} 4096' not in requests.get(f"{broker.url}/metrics").text,
               QUOTA_VISIBLE_S, "the removed quota's bound gone from /metrics")
    metrics = requests.get(f"{broker.url}/metrics").text
    assert 'ringlog_client_quota_bound{quota="producer_byte_rate",entity="client-id=gone-later"}' not in metrics
    assert 'ringlog_client_quota_value_total{quota="producer_byte_rate",entity="client-id=gone-later"}' in metrics
