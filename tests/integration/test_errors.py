"""Every error path of issue 3: content negotiation, limits, malformed input. The server keeps
serving and nothing stored changes."""
import base64
import os
import socket
import subprocess

import pytest
import requests

BINARY = "application/vnd.kafka.binary.v2+json"
V2 = "application/vnd.kafka.v2+json"


def b64(s):
    return base64.b64encode(s.encode()).decode()


def end_offset(broker, topic):
    return requests.get(f"{broker.url}/topics/{topic}/partitions/0/offsets").json()["end_offset"]


def produce_v2(broker, topic, body, content_type=BINARY, **kw):
    return requests.post(f"{broker.url}/topics/{topic}", data=body, headers={"Content-Type": content_type, **kw})


def test_unknown_route_and_method(broker):
    r = requests.get(broker.url + "/no/such/route")
    assert r.status_code == 404 and r.json()["error_code"] == 404
    r = requests.put(broker.url + "/topics")
    assert r.status_code == 405 and r.json()["error_code"] == 405 and "GET" in r.headers["Allow"]
    # The WebSocket endpoint asked without Upgrade says so (it said "no route"; breaker, session 28).
    r = requests.get(broker.url + "/v1/ws")
    assert r.status_code == 426 and r.json()["error_code"] == 426 and r.headers["Upgrade"] == "websocket", r.text
    assert "Upgrade: websocket" in r.json()["message"], r.text


def test_406_on_unservable_accept(broker):
    r = requests.get(broker.url + "/topics", headers={"Accept": "text/html"})
    assert r.status_code == 406 and r.json()["error_code"] == 406   # issue 14 item 9: 40601 is only a consumer's format
    r = requests.get(broker.url + "/v3/clusters", headers={"Accept": "application/xml"})
    assert r.status_code == 406


def test_415_on_unreadable_content_type(broker, topic_name):
    broker.create_topic(topic_name)
    r = produce_v2(broker, topic_name, '{"records":[{"value":"eA=="}]}', content_type="text/plain")
    assert r.status_code == 415 and r.json()["error_code"] == 415   # issue 14 item 9
    r = produce_v2(broker, topic_name, '{"records":[{"value":"eA=="}]}', content_type="application/vnd.kafka.avro.v2+json")
    assert r.status_code == 415
    r = requests.post(broker.v3("/topics"), data='{"topic_name":"x"}', headers={"Content-Type": "text/plain"})
    assert r.status_code == 415
    assert end_offset(broker, topic_name) == 0
    # v2 consumer routes too (they answered 200/204 to any type): no instance is created.
    group = "g415-" + topic_name
    r = requests.post(f"{broker.url}/consumers/{group}", data='{"name":"w"}', headers={"Content-Type": "text/plain"})
    assert r.status_code == 415 and r.json()["error_code"] == 415, r.text
    r = requests.post(f"{broker.url}/consumers/{group}", data='{"name":"w"}',
                      headers={"Content-Type": "application/vnd.kafka.v2+json"})
    assert r.status_code == 200, r.text
    base = f"{broker.url}/consumers/{group}/instances/w"
    r = requests.post(base + "/subscription", data='{"topics":["%s"]}' % topic_name, headers={"Content-Type": "text/xml"})
    assert r.status_code == 415, r.text
    r = requests.post(base + "/offsets", headers={"Content-Type": "application/vnd.kafka.v2+json"})   # empty: no type needed
    assert r.status_code == 204, r.text
    requests.delete(base)


def test_a_v2_body_of_application_json_is_415_as_in_confluents_rest_proxy(broker, topic_name):
    """Confluent's REST Proxy v2 produce (topics and partitions) and consumer resources consume
    only the application/vnd.kafka[.{format}].v2+json types (kafka-rest's ProduceToTopicAction,
    ProduceToPartitionAction and ConsumersResource @Consumes): application/json is 415 there,
    {error_code: 415, message}. A v2 produce of application/json was read as the json embedded
    format (a client meaning binary stored its base64 as quoted text) and the consumer routes
    took it; v3 reads application/json and still does."""
    broker.create_topic(topic_name)
    body = '{"records":[{"value":"eA=="}]}'
    for path in (f"/topics/{topic_name}", f"/topics/{topic_name}/partitions/0"):
        r = requests.post(broker.url + path, data=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 415 and r.json()["error_code"] == 415, (path, r.text)
        assert "application/vnd.kafka.binary.v2+json" in r.json()["message"], r.text
    assert end_offset(broker, topic_name) == 0
    group = "gjson-" + topic_name
    r = requests.post(f"{broker.url}/consumers/{group}", data='{"name":"w"}',
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 415 and r.json()["error_code"] == 415, r.text
    r = requests.post(f"{broker.url}/consumers/{group}", data='{"name":"w"}', headers={"Content-Type": V2})
    assert r.status_code == 200, r.text
    base = f"{broker.url}/consumers/{group}/instances/w"
    for path, sent in (("/subscription", {"topics": [topic_name]}),
                       ("/assignments", {"partitions": [{"topic": topic_name, "partition": 0}]}),
                       ("/positions", {"offsets": [{"topic": topic_name, "partition": 0, "offset": 0}]}),
                       ("/offsets", {"offsets": [{"topic": topic_name, "partition": 0, "offset": 0}]})):
        r = requests.post(base + path, json=sent)   # requests sends application/json
        assert r.status_code == 415 and r.json()["error_code"] == 415, (path, r.text)
    r = requests.get(base + "/assignments", headers={"Accept": V2})
    assert r.status_code == 200 and r.json()["partitions"] == [], r.text   # nothing was applied
    requests.delete(base, headers={"Content-Type": V2})
    # v3 produce takes application/json.
    r = requests.post(broker.v3(f"/topics/{topic_name}/records"), data='{"value":{"type":"STRING","data":"v"}}',
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.json()["error_code"] == 200, r.text


@pytest.mark.parametrize("body,field", [
    ("{", "malformed JSON"),
    ('{"records":[{"value":"!!!"}]}', "records[0].value"),
    ('{"records":[{"value":5}]}', "records[0].value"),
    ('{"records":"x"}', "records"),
    ('{"records":[]}', "records"),
    ('{"records":[{"value":"eA==","partition":-1}]}', "records[0].partition"),
    ('{"records":[{"value":"eA==","partition":99999999999}]}', "records[0].partition"),
    ('{"records":[{"value":"eA==","partition":1.5}]}', "records[0].partition"),
    ('{"records":[{"vlaue":"eA=="}]}', "vlaue"),
    ('{"records":[{"value":"eA==","partition":123456789012345678901234567890}]}', "out of range"),
])
def test_malformed_v2_bodies_name_the_field(broker, topic_name, body, field):
    broker.create_topic(topic_name)
    r = produce_v2(broker, topic_name, body)
    assert 400 <= r.status_code < 500, r.text
    assert field in r.json()["message"]
    assert end_offset(broker, topic_name) == 0
    assert requests.get(broker.url + "/v1/health").status_code == 200


@pytest.mark.parametrize("body,field", [
    ('{"value":{"type":"BINARY","data":"%%%"}}', "value.data"),
    ('{"value":{"type":"TEXT","data":"x"}}', "value.type"),
    ('{"value":{"type":"STRING","data":5}}', "value.data"),
    ('{"partition_id":"0","value":null}', "partition_id"),
    ('{"timestamp":"yesterday"}', "timestamp"),
    ('{"headers":[{"value":"eA=="}]}', "headers[0].name"),
    ('{"valeu":{"data":1}}', "valeu"),
])
def test_malformed_v3_records_name_the_field(broker, topic_name, body, field):
    # Issue 14 item 13: a record with invalid data is that record's report (200, error_code 400), as
    # Confluent's; it was 422/42205 for the whole request.
    broker.create_topic(topic_name)
    r = requests.post(broker.v3(f"/topics/{topic_name}/records"), data=body,
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    assert r.json()["error_code"] == 400 and field in r.json()["message"]
    assert end_offset(broker, topic_name) == 0


def test_v3_malformed_json_in_stream_produces_nothing(broker, topic_name):
    broker.create_topic(topic_name)
    body = '{"value":{"type":"STRING","data":"a"}} {"value":'
    r = requests.post(broker.v3(f"/topics/{topic_name}/records"), data=body,
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error_code"] == 40001
    assert end_offset(broker, topic_name) == 0


def test_admin_body_errors(broker):
    assert requests.post(broker.v3("/topics"), json={"partitions_count": 1}).json()["message"] == "topic_name is required"
    r = requests.post(broker.v3("/topics"), json={"topic_name": "x", "partitions_count": "3"})
    assert r.status_code == 422 and "partitions_count" in r.json()["message"]
    r = requests.post(broker.v3("/topics"), json={"topic_name": "x", "partitions_count": 0})
    assert r.status_code == 422 and "partitions_count" in r.json()["message"]
    r = requests.post(broker.v3("/topics"), data="[", headers={"Content-Type": "application/json"})
    assert r.status_code == 400


def test_malformed_json_bodies_say_what_is_wrong(broker):
    """A body nlohmann cannot parse is refused with the parser's reason, not only "malformed": a
    number out of a double's range (a new user's 1e400 was told "must be a JSON object") and a
    syntax error each name themselves, on every admin route that reads a JSON body."""
    json_type = {"Content-Type": "application/json"}
    r = requests.post(broker.v3("/rebalance"), data='{"tolerance": 1e400}', headers=json_type)
    assert r.status_code == 422 and r.json()["message"] == (
        "a number in the request body is out of range: 1e400 (integers must fit in 64 bits, other numbers in a double)"), r.text
    r = requests.post(broker.v3("/rebalance"), data='{"tolerance": tru}', headers=json_type)
    assert r.status_code == 400 and r.json()["error_code"] == 40001, r.text
    assert r.json()["message"].startswith("malformed JSON request body: ") and "syntax error" in r.json()["message"], r.text
    r = requests.post(broker.v3("/rebalance"), data="[1]", headers=json_type)
    assert r.status_code == 400 and r.json()["message"] == "the request body must be a JSON object", r.text
    r = requests.put(broker.v3("/client-quotas"), data='{"entity": nope}', headers=json_type)
    assert r.status_code == 400 and "syntax error" in r.json()["message"], r.text
    r = requests.put(broker.v3("/brokers/0/configs/log.retention.ms"), data='{"value": "1"', headers=json_type)
    assert r.status_code == 400 and r.json()["message"].startswith("malformed JSON request body: "), r.text
    assert "syntax error" in r.json()["message"], r.text


def test_an_out_of_range_number_is_named_on_the_simdjson_routes(broker, topic_name):
    """simdjson's routes (produce, topic create) name the number too, integer or not."""
    broker.create_topic(topic_name)
    big = "123456789012345678901234567890"
    r = requests.post(broker.v3(f"/topics/{topic_name}/records"), json=None,
                      data='{"value": {"type": "JSON", "data": {"id": ' + big + '}}}',
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and r.json()["message"] == (
        f"a number in the request body is out of range: {big} (integers must fit in 64 bits, other numbers in a double)"), r.text
    r = requests.post(broker.v3("/topics"), data='{"topic_name": "n", "partitions_count": 1e400}',
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and "out of range: 1e400 (" in r.json()["message"], r.text


def test_a_latin1_body_is_read_as_latin1(broker, topic_name):
    """charset=iso-8859-1 (which the OpenAPI accepts) is read as Latin-1: "caf\\xe9" is café, stored
    as UTF-8; the same bytes declared as UTF-8 are refused and store nothing."""
    broker.create_topic(topic_name)
    body = b'{"partition_id": 0, "value": {"type": "STRING", "data": "caf\xe9"}}'
    r = requests.post(broker.v3(f"/topics/{topic_name}/records"), data=body,
                      headers={"Content-Type": "application/json; charset=iso-8859-1"})
    assert r.status_code == 200 and r.json()["error_code"] == 200 and r.json()["offset"] == 0, r.text
    r = requests.post(broker.v3(f"/topics/{topic_name}/records"), data=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "UTF-8" in r.json()["message"], r.text
    got = requests.get(f"{broker.url}/topics/{topic_name}/partitions/0/records", params={"offset": 0},
                       headers={"Accept": BINARY})
    assert got.status_code == 200 and [base64.b64decode(x["value"]) for x in got.json()] == ["café".encode()], got.text


def test_decommission_of_an_unknown_broker_is_404_and_the_cli_says_so(broker, ringlog_bin):
    """Broker 9 is not in this cluster: its task list, its task's cancel and the CLI's --status
    say so (404, exit 1) instead of an empty list (exit 0) or a 400 that the OpenAPI did not list."""
    r = requests.get(broker.v3("/brokers/9/tasks"))
    assert r.status_code == 404 and r.json()["message"] == "broker 9 is not in this cluster", r.text
    r = requests.delete(broker.v3("/brokers/9/tasks/remove-broker"))
    assert r.status_code == 404 and "no broker 9" in r.json()["message"], r.text
    r = requests.get(broker.v3("/brokers/0/tasks"))   # this node (node.id 0): registered, no task
    assert r.status_code == 200 and r.json()["data"] == [], r.text
    out = subprocess.run([ringlog_bin, "cluster", "decommission", "9", "--status", "--bootstrap-server", broker.url],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "broker 9 is not in this cluster" in out.stderr, out


def test_bootstrap_server_from_the_environment(broker, ringlog_bin):
    """RINGLOG_BOOTSTRAP_SERVER stands for --bootstrap-server when the option is not given; the
    option wins when it is."""
    env = dict(os.environ, RINGLOG_BOOTSTRAP_SERVER=broker.url)
    out = subprocess.run([ringlog_bin, "cluster", "status"], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out
    env["RINGLOG_BOOTSTRAP_SERVER"] = "http://127.0.0.1:1"
    out = subprocess.run([ringlog_bin, "topics", "list"], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode != 0 and "127.0.0.1:1" in out.stderr, out
    out = subprocess.run([ringlog_bin, "topics", "list", "--bootstrap-server", broker.url], capture_output=True,
                         text=True, timeout=60, env=env)
    assert out.returncode == 0, out


def test_query_parameter_errors(broker, topic_name):
    broker.create_topic(topic_name)
    base = f"{broker.url}/topics/{topic_name}/partitions/0/records"
    r = requests.get(base)
    assert r.status_code == 422 and "offset" in r.json()["message"]
    for params, name in [({"offset": "-1"}, "offset"),
                         ({"offset": "0", "timeout": "99999999"}, "timeout"),
                         ({"offset": "0", "max_bytes": "0"}, "max_bytes"),
                         ({"offset": "0", "max_bytes": str(2**40)}, "max_bytes"),
                         # Beyond 64 bits is out of range too, not malformed (it answered 400).
                         ({"offset": "0", "max_bytes": str(2**64)}, "max_bytes"),
                         ({"offset": str(2**70)}, "offset")]:
        r = requests.get(base, params=params)
        assert r.status_code == 422 and name in r.json()["message"], (params, r.text)
    r = requests.get(base, params={"offset": "0", "max_bytes": "9" * 30})
    assert r.json()["error_code"] == 422 and "fetch.response.bytes.max" in r.json()["message"], r.text
    r = requests.get(base, params={"offset": "0", "max_bytes": "lots"})
    assert r.status_code == 400 and "max_bytes must be an integer" in r.json()["message"], r.text
    r = requests.get(f"{broker.url}/topics/{topic_name}/partitions/abc/records", params={"offset": 0})
    assert r.status_code == 404 and r.json()["error_code"] == 40402


def test_unknown_topic_and_partition_on_produce(broker, topic_name):
    broker.create_topic(topic_name, partitions=1)
    r = requests.post(f"{broker.url}/topics/{topic_name}/partitions/5", json={"records": [{"value": b64("a")}]},
                      headers={"Content-Type": BINARY})
    assert r.status_code == 404 and r.json()["error_code"] == 40402, r.text


def test_limits_name_the_limit(fresh_broker, topic_name):
    b = fresh_broker(["http.request.body.max.bytes=4096", "message.max.bytes=2048", "produce.records.max=5"])
    b.create_topic(topic_name)
    big_body = '{"records":[{"value":"' + "A" * 8000 + '"}]}'
    r = produce_v2(b, topic_name, big_body)
    assert r.status_code == 413 and r.json()["error_code"] == 41301
    assert "http.request.body.max.bytes=4096" in r.json()["message"]
    r = produce_v2(b, topic_name, '{"records":[{"value":"' + base64.b64encode(b"x" * 2500).decode() + '"}]}')
    assert r.status_code == 422 and "message.max.bytes=2048" in r.json()["message"]
    r = produce_v2(b, topic_name, '{"records":[' + ",".join(['{"value":"eA=="}'] * 6) + ']}')
    assert r.status_code == 422 and "produce.records.max=5" in r.json()["message"]
    assert end_offset(b, topic_name) == 0
    assert requests.get(b.url + "/v1/health").status_code == 200


def test_garbage_http_is_400_and_server_keeps_serving(broker):
    s = socket.create_connection(("127.0.0.1", broker.port))
    s.sendall(b"NOT HTTP AT ALL\r\n\r\n")
    data = s.recv(65536)
    s.close()
    assert data.startswith(b"HTTP/1.1 400")
    assert requests.get(broker.url + "/v1/health").status_code == 200


def raw_exchange(port, request):
    """Sends `request` on a new connection and reads until the server closes it (10 s at most)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
        except socket.timeout:
            pass
    return data


def test_two_host_headers_are_400_and_an_absolute_target_names_the_host(broker):
    """RFC 9112 section 3.2: more than one Host header is 400. An absolute-form target is served,
    and its authority is the request's Host whatever the Host header says (section 3.2.2), so the
    DNS-rebinding check reads the server the request names: a browser's absolute target naming a
    foreign name is refused like a foreign Host (session 32: checks read the Host header while the
    target named another server). Another scheme than the listener's is 400."""
    own = f"127.0.0.1:{broker.port}".encode()
    data = raw_exchange(broker.port, b"GET /v1/health HTTP/1.1\r\nHost: " + own + b"\r\nHost: evil.example\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 400") and b"2 Host headers" in data, data[:300]
    for host in [own, b"x"]:
        data = raw_exchange(broker.port, b"GET http://" + own + b"/v1/health HTTP/1.1\r\nHost: " + host +
                            b"\r\nConnection: close\r\n\r\n")
        assert data.startswith(b"HTTP/1.1 200"), (host, data[:300])
    browser = b"\r\nUser-Agent: Mozilla/5.0\r\nSec-Fetch-Site: same-origin\r\nConnection: close\r\n\r\n"
    data = raw_exchange(broker.port, b"GET http://evil.example/topics HTTP/1.1\r\nHost: " + own + browser)
    assert data.startswith(b"HTTP/1.1 403") and b"evil.example" in data, data[:300]
    for target in [b"https://" + own + b"/v1/health", b"ftp://" + own + b"/v1/health"]:
        data = raw_exchange(broker.port, b"GET " + target + b" HTTP/1.1\r\nHost: " + own + b"\r\n\r\n")
        assert data.startswith(b"HTTP/1.1 400") and b"RFC 9112" in data, (target, data[:300])
    assert requests.get(broker.url + "/v1/health").status_code == 200


def test_cors_headers_and_preflight(fresh_broker):
    broker = fresh_broker(["http.cors.allowed.origins=*"])
    r = requests.get(broker.url + "/topics", headers={"Origin": "http://example.test"})
    assert r.headers["Access-Control-Allow-Origin"] == "http://example.test"
    err = requests.get(broker.url + "/no/such/route", headers={"Origin": "http://example.test"})
    assert err.headers["Access-Control-Allow-Origin"] == "http://example.test"
    pre = requests.options(broker.url + "/topics/x", headers={
        "Origin": "http://example.test", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    assert pre.status_code == 204
    assert "POST" in pre.headers["Access-Control-Allow-Methods"]
    assert pre.headers["Access-Control-Allow-Headers"] == "content-type"


def test_an_unsupported_transfer_encoding_closes_the_connection(broker):
    """The breaker of session 30: after the 501 for `Transfer-Encoding: gzip` the broker kept the
    connection and read the body as a next request (a hidden topic create answered 201). Where
    such a body ends is unknown (RFC 9112 section 6.3): the connection closes after the 501."""
    import socket
    # The breaker of session 31: `identity` and an empty value were read as "no body" and the
    # body ran as a next request too.
    # gzip before chunked: the chunked framing of this body does not parse, so 400 before the 501.
    for coding, status in [(b"gzip", b"501"), (b"identity", b"501"), (b"", b"400"), (b"gzip, chunked", b"400")]:
        inner = b"POST /v3/clusters/x/topics HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        request = (b"POST /topics/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + coding +
                   b"\r\nContent-Type: application/json\r\n\r\n" + inner)
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
            s.sendall(request)
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        assert data.startswith(b"HTTP/1.1 " + status), (coding, data[:200])
        assert data.count(b"HTTP/1.1 ") == 1, (coding, data)


def test_v2_records_with_headers_are_refused_pointing_at_v3_and_the_websocket(broker, topic_name):
    """A new user of session 29: a v2 record with "headers" was refused as an unknown field with no
    word on where headers are taken (the Confluent REST Proxy's v2 has none either)."""
    broker.create_topic(topic_name)
    body = {"records": [{"value": "eA==", "headers": [{"key": "h", "value": "eQ=="}]}]}
    for url in [f"{broker.url}/topics/{topic_name}", f"{broker.url}/topics/{topic_name}/partitions/0"]:
        r = requests.post(url, json=body, headers={"Content-Type": BINARY})
        assert r.status_code == 422, r.text
        message = r.json()["message"]
        assert "records[0]" in message and "/v3/clusters/" in message and "/v1/ws" in message, message
    assert requests.get(f"{broker.url}/topics/{topic_name}/partitions/0/offsets").json()["end_offset"] == 0
