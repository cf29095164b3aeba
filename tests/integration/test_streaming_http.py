"""NDJSON and SSE streaming reads (issue 5) against the real binary: records appended after the
request started arrive on the open response; SSE ids are offsets and Last-Event-ID resumes.

Reads use a socket timeout as their deadline; no test sleeps for a condition.
"""
import base64
import json

import requests

from conftest import wait_until

BINARY = "application/vnd.kafka.binary.v2+json"
V2 = "application/vnd.kafka.v2+json"
NDJSON = "application/x-ndjson"
SSE = "text/event-stream"
READ_TIMEOUT_S = 10


def b64(text):
    return base64.b64encode(text.encode()).decode()


def unb64(text):
    return base64.b64decode(text).decode()


def produce(broker, topic, values, partition=0):
    r = requests.post(f"{broker.url}/topics/{topic}/partitions/{partition}",
                      json={"records": [{"value": b64(v)} for v in values]}, headers={"Content-Type": BINARY})
    assert r.status_code == 200, r.text
    return [o["offset"] for o in r.json()["offsets"]]


def open_stream(broker, topic, accept, offset=0, headers=None, **params):
    h = {"Accept": accept, **(headers or {})}
    r = requests.get(f"{broker.url}/topics/{topic}/partitions/0/records", params={"offset": offset, **params},
                     headers=h, stream=True, timeout=READ_TIMEOUT_S)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith(accept)
    return r


def ndjson_lines(response):
    for line in response.iter_lines(chunk_size=None):
        if line:
            yield json.loads(line)


def sse_events(response):
    """Yields (id, event, data) of each SSE event (comments skipped)."""
    event = {}
    for raw in response.iter_lines(chunk_size=None):
        line = raw.decode()
        if line == "":
            if event:
                yield event.get("id"), event.get("event"), event.get("data")
            event = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            event[name] = value[1:] if value.startswith(" ") else value


def take(iterator, n):
    out = []
    for item in iterator:
        out.append(item)
        if len(out) == n:
            break
    return out


def test_ndjson_gets_records_produced_after_the_request(broker, topic_name):
    broker.create_topic(topic_name)
    produce(broker, topic_name, ["before"])
    with open_stream(broker, topic_name, NDJSON, offset=1, timeout=20000) as r:
        lines = ndjson_lines(r)
        produce(broker, topic_name, ["a", "b"])
        produce(broker, topic_name, ["c"])
        got = take(lines, 3)
    assert [(x["offset"], unb64(x["value"])) for x in got] == [(1, "a"), (2, "b"), (3, "c")]
    assert all(x["topic"] == topic_name and x["partition"] == 0 for x in got)


def test_ndjson_json_format_and_timeout_ends_the_stream(broker, topic_name):
    broker.create_topic(topic_name)
    requests.post(f"{broker.url}/topics/{topic_name}/partitions/0", json={"records": [{"value": {"n": 1}}]},
                  headers={"Content-Type": "application/vnd.kafka.json.v2+json"}).raise_for_status()
    r = requests.get(f"{broker.url}/topics/{topic_name}/partitions/0/records",
                     params={"offset": 0, "timeout": 300, "format": "json"}, headers={"Accept": NDJSON},
                     timeout=READ_TIMEOUT_S)
    assert r.status_code == 200, r.text
    lines = [json.loads(x) for x in r.text.splitlines() if x]
    assert [(x["offset"], x["value"]) for x in lines] == [(0, {"n": 1})]


def test_stream_of_unknown_topic_is_a_plain_404(broker):
    r = requests.get(f"{broker.url}/topics/no-such-topic-stream/partitions/0/records", params={"offset": 0},
                     headers={"Accept": NDJSON}, timeout=READ_TIMEOUT_S)
    assert r.status_code == 404 and r.json()["error_code"] == 40401, r.text


def test_stream_timeout_is_bounded(broker, topic_name):
    broker.create_topic(topic_name)
    r = requests.get(f"{broker.url}/topics/{topic_name}/partitions/0/records",
                     params={"offset": 0, "timeout": 10**10}, headers={"Accept": NDJSON}, timeout=READ_TIMEOUT_S)
    assert r.status_code == 422 and "http_stream_duration_ms_max" in r.json()["message"], r.text


def test_sse_ids_are_offsets(broker, topic_name):
    broker.create_topic(topic_name)
    with open_stream(broker, topic_name, SSE, offset=0, timeout=20000) as r:
        assert r.headers.get("Cache-Control") == "no-cache"
        events = sse_events(r)
        produce(broker, topic_name, ["x", "y", "z"])
        got = take(events, 3)
    assert [e[0] for e in got] == ["0", "1", "2"]
    assert all(e[1] == "record" for e in got)
    assert [unb64(json.loads(e[2])["value"]) for e in got] == ["x", "y", "z"]


def test_sse_reconnect_with_last_event_id_resumes_without_loss_or_duplicate(broker, topic_name):
    broker.create_topic(topic_name)
    produce(broker, topic_name, [f"v{i}" for i in range(5)])
    with open_stream(broker, topic_name, SSE, offset=0, timeout=20000) as r:
        first = take(sse_events(r), 3)
    last_id = first[-1][0]
    assert last_id == "2"
    # EventSource reconnects to the same URL (offset=0) and adds Last-Event-ID: it wins.
    with open_stream(broker, topic_name, SSE, offset=0, headers={"Last-Event-ID": last_id}, timeout=20000) as r:
        events = sse_events(r)
        second = take(events, 2)
        produce(broker, topic_name, ["v5", "v6"])
        second += take(events, 2)
    seen = first + second
    assert [int(e[0]) for e in seen] == list(range(7))
    assert [unb64(json.loads(e[2])["value"]) for e in seen] == [f"v{i}" for i in range(7)]


def test_bad_last_event_id_is_refused(broker, topic_name):
    broker.create_topic(topic_name)
    r = requests.get(f"{broker.url}/topics/{topic_name}/partitions/0/records", params={"offset": 0},
                     headers={"Accept": SSE, "Last-Event-ID": "nope"}, timeout=READ_TIMEOUT_S)
    assert r.status_code == 400, r.text


def test_client_disconnect_mid_stream_leaves_the_server_serving(broker, topic_name):
    broker.create_topic(topic_name)
    for _ in range(5):
        r = open_stream(broker, topic_name, NDJSON, offset=0, timeout=60000)
        produce(broker, topic_name, ["p"])
        assert take(ndjson_lines(r), 1)
        r.close()

    def streams_closed():
        text = requests.get(broker.url + "/metrics", headers={"Accept": "text/plain"}).text
        return requests.get(broker.url + "/v1/health").status_code == 200 and text

    wait_until(streams_closed, 10, "server answering after disconnects")
    produce(broker, topic_name, ["after"])
    with open_stream(broker, topic_name, NDJSON, offset=5, timeout=5000) as r:
        assert unb64(take(ndjson_lines(r), 1)[0]["value"]) == "after"


def test_consumer_instance_streams_ndjson(broker, topic_name):
    broker.create_topic(topic_name)
    group = "stream-" + topic_name
    created = requests.post(f"{broker.url}/consumers/{group}", json={"auto.offset.reset": "earliest"},
                            headers={"Content-Type": V2})
    assert created.status_code == 200, created.text
    base = created.json()["base_uri"]
    r = requests.post(base + "/subscription", json={"topics": [topic_name]}, headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    produce(broker, topic_name, ["one"])
    with requests.get(base + "/records", params={"timeout": 20000}, headers={"Accept": NDJSON}, stream=True,
                      timeout=READ_TIMEOUT_S) as s:
        assert s.status_code == 200, s.text
        lines = ndjson_lines(s)
        first = take(lines, 1)
        produce(broker, topic_name, ["two", "three"])
        got = first + take(lines, 2)
    assert [unb64(x["value"]) for x in got] == ["one", "two", "three"]


def test_stream_to_a_reader_that_pauses_gets_every_record_in_order(broker, topic_name):
    """The server waits for a paused reader (one chunk at a time) and loses nothing."""
    broker.create_topic(topic_name)
    with open_stream(broker, topic_name, NDJSON, offset=0, timeout=30000) as r:
        lines = ndjson_lines(r)
        value = "y" * 4000
        for batch in range(20):   # about 4 MB while the client reads nothing
            produce(broker, topic_name, [f"{batch}:{i}:{value}" for i in range(50)])
        got = take(lines, 1000)
    assert [x["offset"] for x in got] == list(range(1000))
    assert unb64(got[-1]["value"]).startswith("19:49:")


def test_json_stream_delivers_a_non_json_record_as_a_string_and_goes_on(broker, topic_name):
    """A json stream must not stop for good at a record that is not JSON (the array answer keeps
    Confluent's 406): the record arrives as a JSON string, as over WebSocket, and later ones follow."""
    broker.create_topic(topic_name)
    json_type = "application/vnd.kafka.json.v2+json"
    requests.post(f"{broker.url}/topics/{topic_name}/partitions/0", json={"records": [{"value": {"n": 1}}]},
                  headers={"Content-Type": json_type}).raise_for_status()
    produce(broker, topic_name, ["not json"])
    requests.post(f"{broker.url}/topics/{topic_name}/partitions/0", json={"records": [{"value": {"n": 3}}]},
                  headers={"Content-Type": json_type}).raise_for_status()
    r = requests.get(f"{broker.url}/topics/{topic_name}/partitions/0/records",
                     params={"offset": 0, "timeout": 300, "format": "json"}, headers={"Accept": NDJSON},
                     timeout=READ_TIMEOUT_S)
    assert r.status_code == 200, r.text
    lines = [json.loads(x) for x in r.text.splitlines() if x]
    assert [(x["offset"], x["value"]) for x in lines] == [(0, {"n": 1}), (1, "not json"), (2, {"n": 3})]
    array = requests.get(f"{broker.url}/topics/{topic_name}/partitions/0/records", params={"offset": 0},
                         headers={"Accept": json_type}, timeout=READ_TIMEOUT_S)
    assert array.status_code == 406, array.text
