"""CORS and Origin on every route, the streams and the WebSocket upgrade (issue 5), with
http.cors.allowed.origins empty (the default: only the server's own pages), open ("*") and
restricted to a list."""
import asyncio
import json

import pytest
import requests
import websockets

GOOD = "http://app.example.test"
OTHER = "https://evil.example.test"
NDJSON = "application/x-ndjson"
SSE = "text/event-stream"


def records_url(broker, topic):
    return f"{broker.url}/topics/{topic}/partitions/0/records"


def test_by_default_a_page_of_another_site_can_neither_read_nor_change_anything(fresh_broker, topic_name):
    """The new user of session 30: the default allowed every origin, so any web page open in an
    operator's browser read records and deleted topics of a broker bound to 127.0.0.1. The
    Confluent REST Proxy's access.control.allow.origin is empty by default too."""
    b = fresh_broker()
    b.create_topic(topic_name)
    own = f"http://127.0.0.1:{b.port}"
    r = requests.get(f"{b.url}/topics", headers={"Origin": OTHER})
    assert r.status_code == 200 and "Access-Control-Allow-Origin" not in r.headers   # the browser hides it
    pre = requests.options(b.v3(f"/topics/{topic_name}"), headers={"Origin": OTHER, "Access-Control-Request-Method": "DELETE"})
    assert "Access-Control-Allow-Origin" not in pre.headers
    # A request sent without a preflight is refused before it acts, and nothing changes.
    r = requests.delete(b.v3(f"/topics/{topic_name}"), headers={"Origin": OTHER})
    assert r.status_code == 403 and r.json()["error_code"] == 40301 and "http.cors.allowed.origins" in r.json()["message"]
    r = requests.post(f"{b.url}/topics/{topic_name}", data='{"records":[{"value":"eA=="}]}',
                      headers={"Origin": OTHER, "Content-Type": "text/plain"})
    assert r.status_code == 403, r.text
    assert requests.get(b.v3(f"/topics/{topic_name}")).status_code == 200
    assert requests.get(f"{b.url}/topics/{topic_name}/partitions/0/offsets").json()["end_offset"] == 0

    async def upgrade(origin):
        async with websockets.connect(f"ws://127.0.0.1:{b.port}/v1/ws", origin=origin) as ws:
            await ws.send(json.dumps({"type": "ping", "id": 1}))
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

    with pytest.raises(websockets.InvalidStatusCode) as refused:
        asyncio.run(upgrade(OTHER))
    assert refused.value.status_code == 403
    # The server's own pages (the console) keep working: same origin as the Host they call.
    assert asyncio.run(upgrade(own))["type"] == "pong"
    # Same origin is scheme, host and port (RFC 6454): "ftp://" or "https://" with this Host is
    # another origin (session 32: the scheme was ignored).
    for scheme in ("ftp", "https"):
        other_scheme = f"{scheme}://127.0.0.1:{b.port}"
        r = requests.delete(b.v3(f"/topics/{topic_name}"), headers={"Origin": other_scheme})
        assert r.status_code == 403 and r.json()["error_code"] == 40301, (scheme, r.text)
        with pytest.raises(websockets.InvalidStatusCode) as refused:
            asyncio.run(upgrade(other_scheme))
        assert refused.value.status_code == 403
    r = requests.delete(b.v3(f"/topics/{topic_name}"), headers={"Origin": own})
    assert r.status_code == 204, r.text


def test_streams_answer_cors_with_any_origin_when_asked(fresh_broker, topic_name):
    broker = fresh_broker(["http.cors.allowed.origins=*"])
    broker.create_topic(topic_name)
    for accept in (NDJSON, SSE):
        r = requests.get(records_url(broker, topic_name), params={"offset": 0, "timeout": 0},
                         headers={"Accept": accept, "Origin": GOOD}, timeout=10)
        assert r.status_code == 200, r.text
        assert r.headers["Access-Control-Allow-Origin"] == GOOD
        assert "Origin" in r.headers["Vary"]
    pre = requests.options(records_url(broker, topic_name), headers={
        "Origin": GOOD, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "last-event-id"})
    assert pre.status_code == 204
    assert pre.headers["Access-Control-Allow-Origin"] == GOOD
    assert pre.headers["Access-Control-Allow-Headers"] == "last-event-id"

    async def upgrade():
        async with websockets.connect(f"ws://127.0.0.1:{broker.port}/v1/ws", origin=OTHER) as ws:
            await ws.send(json.dumps({"type": "ping", "id": 1}))
            assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "pong"

    asyncio.run(upgrade())


def test_restricted_origins(fresh_broker, topic_name):
    b = fresh_broker([f"http.cors.allowed.origins={GOOD}, http://localhost:3000"])
    b.create_topic(topic_name)
    ok = requests.get(records_url(b, topic_name), params={"offset": 0, "timeout": 0},
                      headers={"Accept": SSE, "Origin": GOOD}, timeout=10)
    assert ok.status_code == 200 and ok.headers["Access-Control-Allow-Origin"] == GOOD
    bad = requests.get(f"{b.url}/topics", headers={"Origin": OTHER})
    assert "Access-Control-Allow-Origin" not in bad.headers
    assert "Origin" in bad.headers["Vary"]
    no_origin = requests.get(f"{b.url}/topics")
    assert "Access-Control-Allow-Origin" not in no_origin.headers

    async def upgrade(origin):
        async with websockets.connect(f"ws://127.0.0.1:{b.port}/v1/ws", origin=origin) as ws:
            await ws.send(json.dumps({"type": "ping", "id": 1}))
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

    assert asyncio.run(upgrade(GOOD))["type"] == "pong"
    with pytest.raises(websockets.InvalidStatusCode) as refused:
        asyncio.run(upgrade(OTHER))
    assert refused.value.status_code == 403


def test_bad_allowed_origins_setting_is_refused(fresh_broker):
    with pytest.raises(AssertionError, match="scheme://host"):
        fresh_broker(["http.cors.allowed.origins=app.example.test/path"])


def test_a_dns_rebinding_page_is_refused_and_other_clients_are_not(fresh_broker, topic_name):
    """The breaker of session 31: a page at rebind.evil.example whose DNS name was rebound to the
    broker's address is same-origin to the browser (Origin and Host both name rebind.evil.example),
    so it created, read and deleted topics of an unauthenticated broker on 127.0.0.1. A browser's
    request (an Origin, a Sec-Fetch-* header or a Mozilla User-Agent) whose Host is not a name of
    this server gets 403 and nothing changes; a Host that is an address, localhost or a name in
    http.allowed.hosts passes, and non-browser clients are never checked."""
    b = fresh_broker(["http.allowed.hosts=broker.example.test"])
    b.create_topic(topic_name)
    evil = f"rebind.evil.example:{b.port}"
    for headers in [{"Host": evil, "Origin": f"http://{evil}"},              # a POST or a CORS fetch
                    {"Host": evil, "Sec-Fetch-Site": "same-origin"},         # a same-origin GET: no Origin
                    {"Host": evil, "User-Agent": "Mozilla/5.0 (X11; Linux x86_64)"}]:
        r = requests.get(b.v3(f"/topics/{topic_name}"), headers=headers)
        assert r.status_code == 403 and r.json()["error_code"] == 40301, (headers, r.text)
        assert "http.allowed.hosts" in r.json()["message"]
        r = requests.delete(b.v3(f"/topics/{topic_name}"), headers=headers)
        assert r.status_code == 403, (headers, r.text)
    assert requests.get(b.v3(f"/topics/{topic_name}")).status_code == 200   # still there
    # The server's own names: addresses, localhost, the configured name.
    for host in [f"127.0.0.1:{b.port}", f"localhost:{b.port}", f"broker.example.test:{b.port}"]:
        r = requests.get(b.v3(f"/topics/{topic_name}"), headers={"Host": host, "Origin": f"http://{host}",
                                                                 "Sec-Fetch-Site": "same-origin"})
        assert r.status_code == 200, (host, r.text)
    # curl, Kafka REST clients and raw sockets name whatever Host they like.
    assert requests.get(b.v3(f"/topics/{topic_name}"), headers={"Host": "x"}).status_code == 200


def test_a_page_of_another_site_cannot_consume_a_v2_instances_records(fresh_broker, topic_name):
    """The breaker of session 31: a foreign page's GET of /consumers/{g}/instances/{i}/records needs
    no preflight and moved the instance's position, so its owner read nothing."""
    b = fresh_broker()
    b.create_topic(topic_name)
    requests.post(f"{b.url}/topics/{topic_name}", json={"records": [{"value": "eA=="}, {"value": "eQ=="}]},
                  headers={"Content-Type": "application/vnd.kafka.binary.v2+json"}).raise_for_status()
    v2 = {"Content-Type": "application/vnd.kafka.v2+json"}
    inst = requests.post(f"{b.url}/consumers/g-{topic_name}", json={"auto.offset.reset": "earliest"}, headers=v2)
    base_uri = inst.json()["base_uri"]
    requests.post(base_uri + "/subscription", json={"topics": [topic_name]}, headers=v2).raise_for_status()
    accept = {"Accept": "application/vnd.kafka.binary.v2+json"}
    r = requests.get(base_uri + "/records", headers={**accept, "Origin": OTHER})
    assert r.status_code == 403 and r.json()["error_code"] == 40301, r.text
    got = []
    deadline = __import__("time").monotonic() + 30
    while len(got) < 2 and __import__("time").monotonic() < deadline:
        r = requests.get(base_uri + "/records", params={"timeout": 500}, headers=accept)
        assert r.status_code == 200, r.text
        got += r.json()
    assert [x["offset"] for x in got] == [0, 1]
