"""Regression tests for defects an adversarial session found (each `# FIXED` test failed before its
fix), plus tests marked `# COVERAGE` for paths the rest of the suite did not reach (durability under
concurrent load, SIGTERM under load, chunked streams with garbage, timestamp lookup,
delete/recreate, partitioner edge keys).
"""
import base64
import contextlib
import itertools
import json
import os
import random
import resource
import signal
import socket
import subprocess
import threading
import time

import requests

from conftest import binary_path, wait_until

BINARY = "application/vnd.kafka.binary.v2+json"


def b64(data):
    return base64.b64encode(data if isinstance(data, bytes) else data.encode()).decode()


@contextlib.contextmanager
def soft_nofile(limit):
    """Lowers RLIMIT_NOFILE for brokers started inside the block (children inherit it at fork)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def offsets(b, topic, p=0, **params):
    return requests.get(f"{b.url}/topics/{topic}/partitions/{p}/offsets", params=params).json()


def read_partition(b, topic, p):
    """[(offset, value bytes)] from the log start to the log end."""
    o = offsets(b, topic, p)
    at, out = o["beginning_offset"], []
    while at < o["end_offset"]:
        got = requests.get(f"{b.url}/topics/{topic}/partitions/{p}/records", params={"offset": at},
                           headers={"Accept": BINARY}).json()
        assert got, f"empty read at {p}:{at} below end {o['end_offset']}"
        out += [(g["offset"], base64.b64decode(g["value"])) for g in got]
        at = got[-1]["offset"] + 1
    return o, out


def cpu_seconds(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- DEFECTS

def test_topic_creation_that_exhausts_file_descriptors_is_refused_and_broker_restarts(fresh_broker, topic_name):
    # FIXED, was a defect (critical): 3 fds per partition are opened with no limit check. A topic of 400
    # partitions (limit 10000) under 1024 fds answers 500, leaves the topic half-created, and
    # the broker can never start again ("open directory ...: Too many open files").
    with soft_nofile(1024):
        b = fresh_broker()
        r = requests.post(b.v3("/topics"), json={"topic_name": topic_name, "partitions_count": 400})
        if r.status_code != 201:
            assert 400 <= r.status_code < 500, r.text          # a refusal naming the limit, not 500
            assert "limit" in r.json()["message"], r.text
            assert requests.get(b.v3(f"/topics/{topic_name}")).status_code == 404   # nothing stored
        assert b.stop() == 0
        b.start()   # today: AssertionError, ringlog exited with 1
    assert requests.get(b.url + "/v1/health").status_code == 200


def test_accept_does_not_spin_when_file_descriptors_run_out(fresh_broker):
    # FIXED, was a defect (high): no connection limit; once fds are exhausted accept() fails with EMFILE and is
    # retried at once: 100% CPU and ~1 million "accept failed" log lines per second.
    with soft_nofile(256):
        b = fresh_broker()
    socks = []
    try:
        for _ in range(300):
            socks.append(socket.create_connection(("127.0.0.1", b.port)))
        time.sleep(0.5)
        before_cpu, before_log = cpu_seconds(b.proc.pid), b.log_path.stat().st_size
        time.sleep(2)
        used, logged = cpu_seconds(b.proc.pid) - before_cpu, b.log_path.stat().st_size - before_log
    finally:
        for s in socks:
            s.close()
    assert used < 0.5, f"broker burnt {used:.2f}s CPU in 2s while out of fds"
    assert logged < 100_000, f"broker logged {logged} bytes in 2s while out of fds"
    wait_until(lambda: requests.get(b.url + "/v1/health", timeout=2).status_code == 200, 10, "health")


def test_cleanup_policy_compact_does_not_delete_by_retention(broker, topic_name):
    # FIXED, was a defect (high): cleanup.policy=compact is accepted but ignored; time/size retention deletes
    # every record (Kafka never deletes a compact-only topic's latest value per key).
    r = requests.post(broker.v3("/topics"), json={"topic_name": topic_name, "partitions_count": 1, "configs": [
        {"name": "cleanup.policy", "value": "compact"}, {"name": "retention.ms", "value": "1000"},
        {"name": "segment.bytes", "value": "1024"}]})
    if r.status_code != 201:   # refusing an unimplemented policy is fine too
        assert 400 <= r.status_code < 500 and "cleanup.policy" in r.json()["message"]
        return
    for i in range(20):
        requests.post(f"{broker.url}/topics/{topic_name}", json={"records": [{"key": b64(f"k{i}"), "value": b64("v" * 200)}]},
                      headers={"Content-Type": BINARY})
    time.sleep(12)   # two maintenance ticks (5 s each)
    o, recs = read_partition(broker, topic_name, 0)
    assert len(recs) == 20, f"compact topic lost records: {o}"


def test_retention_runs_soon_after_a_restart(fresh_broker, topic_name):
    # FIXED, was a defect (low): the first retention check came a whole log.retention.check.interval.ms
    # (5 min) after start, so a node restarted more often than that never applied retention. Kafka's
    # LogManager runs its first check InitialTaskDelayMs (30 s) after start.
    b = fresh_broker()
    b.create_topic(topic_name, configs={"retention.ms": "1000", "segment.bytes": "1024"})
    for i in range(20):
        r = requests.post(f"{b.url}/topics/{topic_name}", json={"records": [{"value": b64("v" * 200)}]},
                          headers={"Content-Type": BINARY})
        assert r.status_code == 200, r.text
    assert b.stop() == 0
    b.start()   # log.retention.check.interval.ms stays at its default, 300000
    wait_until(lambda: offsets(b, topic_name).get("beginning_offset", 0) > 0, 60,
               "retention to remove the expired segments well before log.retention.check.interval.ms")


def test_sigterm_answers_parked_long_poll_promptly(fresh_broker, topic_name):
    # FIXED, was a defect (medium): the HTTP drain waits for parked long-polls (counted in flight) and only then
    # the broker wakes them: SIGTERM takes shutdown.drain.timeout.ms (10 s) with one poll parked.
    b = fresh_broker()
    b.create_topic(topic_name)
    result = {}

    def poll():
        try:
            result["r"] = requests.get(f"{b.url}/topics/{topic_name}/partitions/0/records",
                                       params={"offset": 0, "timeout": 60000}, timeout=30).status_code
        except requests.RequestException as e:
            result["r"] = repr(e)
    t = threading.Thread(target=poll)
    t.start()
    time.sleep(0.5)
    started = time.monotonic()
    assert b.stop(signal.SIGTERM) == 0
    took = time.monotonic() - started
    t.join()
    assert took < 3, f"SIGTERM took {took:.1f}s with one parked long-poll"
    assert result["r"] == 200


def test_offsets_for_timestamp_reports_the_found_records_timestamp(broker, topic_name):
    # FIXED, was a defect (low): {"offset", "timestamp"} echoes the query timestamp; Kafka's ListOffsets answers
    # the timestamp of the record found. (The offset itself is right.)
    broker.create_topic(topic_name)
    for ts in [1000, 5000, 3000, 7000]:
        requests.post(broker.v3(f"/topics/{topic_name}/records"), json={"value": {"data": ts}, "timestamp": ts})
    assert offsets(broker, topic_name, timestamp=4000) == {"offset": 1, "timestamp": 5000}


def test_impossible_iso8601_date_is_refused(broker, topic_name):
    # FIXED, was a defect (low): "2024-02-31" is accepted and silently stored as 2024-03-02.
    broker.create_topic(topic_name)
    r = requests.post(broker.v3(f"/topics/{topic_name}/records"),
                      json={"value": {"data": 1}, "timestamp": "2024-02-31T00:00:00Z"})
    # Issue 14 item 13: the record's own report (200, error_code 400), not the request's status.
    assert r.status_code == 200 and r.json()["error_code"] == 400 and "timestamp" in r.json()["message"], r.text
    assert offsets(broker, topic_name)["end_offset"] == 0


def test_non_object_body_error_names_the_body(broker, topic_name):
    # FIXED, was a defect (low): the message has an empty field name: " must be an object, got null".
    broker.create_topic(topic_name)
    r = requests.post(f"{broker.url}/topics/{topic_name}", data="null", headers={"Content-Type": BINARY})
    assert r.status_code == 422 and r.json()["message"].startswith("request body"), r.text


def test_signed_percent_escape_is_malformed(broker):
    # FIXED, was a defect (low): percent_decode uses from_chars, which takes a sign: "%-1" decodes to byte 0xFF.
    s = socket.create_connection(("127.0.0.1", broker.port))
    s.sendall(b"GET /topics/%-1/partitions/0/offsets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    assert data.startswith(b"HTTP/1.1 400"), data[:200]


def test_dump_log_prints_records_of_a_segment(fresh_broker, topic_name):
    # FIXED, was a defect (medium): issue 2 requires `ringlog dump-log [--records] FILE...`; it prints
    # "dump-log: not built yet" and exits 2 (while `ringlog --help` lists it).
    b = fresh_broker()
    b.create_topic(topic_name)
    requests.post(f"{b.url}/topics/{topic_name}", json={"records": [{"key": b64("k1"), "value": b64("hello-dump")}]},
                  headers={"Content-Type": BINARY})
    assert b.stop() == 0
    seg = b.data_dir / f"{topic_name}-0" / "00000000000000000000.log"
    p = subprocess.run([str(binary_path()), "dump-log", "--records", str(seg)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert "hello-dump" in p.stdout and "offset" in p.stdout.lower()


# ---------------------------------------------------------------- COVERAGE (passes today)

_sequence = itertools.count()


def _load(b, topic, stop, acked, lock, wid):
    s = requests.Session()
    while not stop.is_set():
        vals = [f"w{wid}-{next(_sequence)}-" + "z" * random.randint(0, 200) for _ in range(random.randint(1, 40))]
        n = len(vals)
        try:
            if n % 2:
                r = s.post(f"{b.url}/topics/{topic}", json={"records": [{"key": b64(v[:5]), "value": b64(v)} for v in vals]},
                           headers={"Content-Type": BINARY}, timeout=10)
                pairs = [(v, (o["partition"], o["offset"])) for v, o in zip(vals, r.json()["offsets"]) if o["error_code"] is None]
            else:
                body = "".join(json.dumps({"value": {"type": "STRING", "data": v}}) for v in vals)
                r = s.post(b.v3(f"/topics/{topic}/records"), data=body, headers={"Content-Type": "application/json"}, timeout=10)
                reps = [json.loads(line) for line in r.text.splitlines() if line.strip()]
                pairs = [(v, (j["partition_id"], j["offset"])) for v, j in zip(vals, reps) if j.get("error_code") == 200]
            with lock:
                acked.update(pairs)
        except (requests.RequestException, ValueError, KeyError):
            pass


def _check_exactly_once(b, topic, partitions, acked):
    found = {}
    for p in range(partitions):
        o, recs = read_partition(b, topic, p)
        assert [x[0] for x in recs] == list(range(o["beginning_offset"], o["end_offset"])), "offsets not dense"
        for off, v in recs:
            found.setdefault(v.decode(), []).append((p, off))
    for v, loc in acked.items():
        assert found.get(v) == [loc], (v[:30], loc, found.get(v))


def _durability_rounds(fresh_broker, topic, sig, rounds):
    b = fresh_broker()
    b.create_topic(topic, partitions=3)
    acked, lock = {}, threading.Lock()
    for _ in range(rounds):
        stop = threading.Event()
        workers = [threading.Thread(target=_load, args=(b, topic, stop, acked, lock, i)) for i in range(4)]
        for w in workers:
            w.start()
        time.sleep(random.uniform(0.3, 1.5))
        if sig == signal.SIGKILL:
            b.kill()
        else:
            assert b.stop(sig) == 0
        stop.set()
        for w in workers:
            w.join()
        b.start()
        _check_exactly_once(b, topic, 3, acked)
    assert len(acked) > 1000


def test_sigkill_under_concurrent_v2_and_v3_load_keeps_acked_exactly_once(fresh_broker, topic_name):
    # COVERAGE (passes today): 4 concurrent producers, acks=all, 5 SIGKILLs at random moments.
    _durability_rounds(fresh_broker, topic_name, signal.SIGKILL, 5)


def test_sigterm_under_concurrent_load_exits_zero_and_keeps_acked(fresh_broker, topic_name):
    # COVERAGE (passes today)
    _durability_rounds(fresh_broker, topic_name, signal.SIGTERM, 3)


def test_chunked_v3_stream_with_garbage_mid_stream_answers_it_alone(broker, topic_name):
    # A chunked body is a produce stream (Confluent's streaming mode): records are produced and
    # answered as they arrive, so a malformed record cannot undo the ones before it. It is
    # answered alone (400/40001) and the stream goes on at the next object; nothing else changes.
    broker.create_topic(topic_name)

    def chunks():
        yield b'{"value":{"type":"STRING","data":"a"}}\n'
        yield b'{"value":{"type":"STRING","data":"b"}}\n'
        yield b'{"value": garbage}\n'
        yield b'{"value":{"type":"STRING","data":"c"}}\n'
    r = requests.post(broker.v3(f"/topics/{topic_name}/records"), data=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    reports = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    assert [x["error_code"] for x in reports] == [200, 200, 40001, 200], reports
    assert [x["offset"] for x in reports if x["error_code"] == 200] == [0, 1, 2]
    assert offsets(broker, topic_name)["end_offset"] == 3
    # Text that cannot start a record ends the stream with a report naming it.
    r = requests.post(broker.v3(f"/topics/{topic_name}/records"), data=iter([b'{"value":{"data":1}} ', b'oops {}']),
                      headers={"Content-Type": "application/json"})
    reports = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    assert [x["error_code"] for x in reports] == [200, 40001], reports
    assert "found 'o'" in reports[1]["message"]
    assert offsets(broker, topic_name)["end_offset"] == 4
    s = socket.create_connection(("127.0.0.1", broker.port))   # bad chunk framing after one record
    rec = b'{"value":{"type":"STRING","data":"q"}}'
    s.sendall(b"POST /v3/clusters/ringlog-cluster/topics/" + topic_name.encode() + b"/records HTTP/1.1\r\nHost: x\r\n"
              b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + hex(len(rec))[2:].encode() +
              b"\r\n" + rec + b"\r\nZZ\r\nxx\r\n0\r\n\r\n")
    s.settimeout(10)
    data = b""
    while chunk := s.recv(65536):   # the server closes the connection: the framing is lost
        data += chunk
    s.close()
    assert data.startswith(b"HTTP/1.1 200"), data[:200]
    assert offsets(broker, topic_name)["end_offset"] <= 5   # q may be stored; nothing else
    assert requests.get(broker.url + "/v1/health", timeout=5).status_code == 200


def test_v3_produce_stream_answers_each_record_while_the_client_is_still_sending(broker, topic_name):
    # Confluent's streaming mode: a client sends one record, waits for its report, then sends
    # the next, on one chunked request. The broker must answer each before the body ends.
    broker.create_topic(topic_name)
    s = socket.create_connection(("127.0.0.1", broker.port))
    s.settimeout(10)
    s.sendall(b"POST /v3/clusters/ringlog-cluster/topics/" + topic_name.encode() + b"/records HTTP/1.1\r\nHost: x\r\n"
              b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    buffered = b""

    def next_report():
        """The next report line; the chunk framing around it is skipped (reports are JSON
        objects, each ending in a newline)."""
        nonlocal buffered
        while True:
            start = buffered.find(b"{\"")
            end = buffered.find(b"}\n", start) if start >= 0 else -1
            if start >= 0 and end >= 0:
                report = json.loads(buffered[start:end + 1])
                buffered = buffered[end + 2:]
                return report
            chunk = s.recv(65536)
            assert chunk, "connection closed before the report"
            buffered += chunk

    for i in range(3):
        rec = json.dumps({"value": {"type": "STRING", "data": f"r{i}"}}).encode()
        s.sendall(hex(len(rec))[2:].encode() + b"\r\n" + rec + b"\r\n")
        report = next_report()
        assert report["error_code"] == 200 and report["offset"] == i, report
    s.sendall(b"0\r\n\r\n")
    rest = b""
    while not rest.endswith(b"0\r\n\r\n"):
        chunk = s.recv(65536)
        assert chunk, rest
        rest += chunk
    s.close()
    assert offsets(broker, topic_name)["end_offset"] == 3


def test_offset_for_timestamp_with_non_monotonic_timestamps(broker, topic_name):
    # COVERAGE (passes today): earliest offset whose timestamp >= T; past the end -> null.
    broker.create_topic(topic_name)
    for ts in [1000, 5000, 3000, 7000]:
        requests.post(broker.v3(f"/topics/{topic_name}/records"), json={"value": {"data": ts}, "timestamp": ts})
    got = {t: offsets(broker, topic_name, timestamp=t)["offset"] for t in [0, 1000, 1001, 4000, 5000, 6000, 7000, 7001]}
    assert got == {0: 0, 1000: 0, 1001: 1, 4000: 1, 5000: 1, 6000: 3, 7000: 3, 7001: None}


def test_delete_then_recreate_starts_empty_and_keys_stay_after_partition_increase(broker, topic_name):
    # COVERAGE (passes today)
    for i in range(5):
        broker.create_topic(topic_name, partitions=2)
        for p in range(2):
            assert offsets(broker, topic_name, p)["end_offset"] == 0, i
        requests.post(f"{broker.url}/topics/{topic_name}", json={"records": [{"value": b64("x")}] * 3},
                      headers={"Content-Type": BINARY})
        assert requests.delete(broker.v3(f"/topics/{topic_name}")).status_code == 204
    broker.create_topic(topic_name, partitions=2)
    keys = [f"key{i}" for i in range(40)]
    r = requests.post(f"{broker.url}/topics/{topic_name}", json={"records": [{"key": b64(k), "value": b64(k)} for k in keys]},
                      headers={"Content-Type": BINARY})
    where = {k: o["partition"] for k, o in zip(keys, r.json()["offsets"])}
    assert requests.patch(broker.v3(f"/topics/{topic_name}"), json={"partitions_count": 5}).status_code == 200
    for p in range(2):
        _, recs = read_partition(broker, topic_name, p)
        assert all(where[v.decode()] == p for _, v in recs)


def test_partitioner_matches_kafka_python_for_binary_and_empty_keys(broker, topic_name):
    # COVERAGE (passes today): empty, NUL, 0xff and random binary keys (negative murmur2 values).
    from kafka.partitioner.default import murmur2
    broker.create_topic(topic_name, partitions=7)
    rnd = random.Random(1)
    keys = [b"", b"\x00", b"\xff" * 3, "ключ".encode()] + [bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 40)))
                                                             for _ in range(200)]
    r = requests.post(f"{broker.url}/topics/{topic_name}", json={"records": [{"key": b64(k), "value": b64("v")} for k in keys]},
                      headers={"Content-Type": BINARY})
    for k, o in zip(keys, r.json()["offsets"]):
        assert o["partition"] == (murmur2(k) & 0x7FFFFFFF) % 7, k


def test_absolute_form_request_target_is_accepted(broker):
    # FIXED, was a defect (low): RFC 9112 section 3.2.2 says servers must accept the absolute form.
    s = socket.create_connection(("127.0.0.1", broker.port))
    s.sendall(f"GET http://127.0.0.1:{broker.port}/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    assert data.startswith(b"HTTP/1.1 200"), data[:200]


def test_duplicate_json_fields_and_far_timestamps_are_refused(broker, topic_name):
    # FIXED, was a defect (low): {"value":..,"value":..} silently kept one; a timestamp of
    # 2^63-1 ms was stored and shown as year 292278994.
    broker.create_topic(topic_name)
    dup = requests.post(broker.v3(f"/topics/{topic_name}/records"), data='{"value":{"data":1},"value":{"data":2}}',
                        headers={"Content-Type": "application/json"})
    assert dup.status_code == 200 and dup.json()["error_code"] == 400 and "twice" in dup.json()["message"], dup.text
    far = requests.post(broker.v3(f"/topics/{topic_name}/records"),
                        json={"value": {"data": 1}, "timestamp": 9223372036854775807})
    assert far.status_code == 200 and far.json()["error_code"] == 400 and "timestamp" in far.json()["message"], far.text
    assert offsets(broker, topic_name)["end_offset"] == 0


def _ws_exchange(broker, messages, replies, wait_s=1.5):
    """Sends `messages` on one /v1/ws connection and returns up to `replies` answers (JSON)."""
    import asyncio
    import websockets

    async def go():
        out = []
        async with websockets.connect(f"ws://127.0.0.1:{broker.port}/v1/ws") as ws:
            for m in messages:
                await ws.send(json.dumps(m))
            with contextlib.suppress(asyncio.TimeoutError):
                while len(out) < replies:
                    out.append(json.loads(await asyncio.wait_for(ws.recv(), wait_s)))
        return out
    return asyncio.run(go())


def test_partition_numbers_past_int32_are_refused_not_wrapped(broker, topic_name):
    # FIXED, was a defect (high): a JSON partition of 2^32 + p was read with get<int32_t>() and wrapped to p:
    # a v2 commit of partition 4294967296 committed t-0, a seek moved t-0, and a WebSocket produce
    # to partition 4294967297 stored the record in partition 1 (2^31 answered "partition -2147483648").
    broker.create_topic(topic_name, partitions=2)
    v2 = {"Content-Type": "application/vnd.kafka.v2+json"}
    requests.post(f"{broker.url}/topics/{topic_name}", json={"records": [{"value": b64("v"), "partition": 0}] * 3},
                  headers={"Content-Type": BINARY})
    group = f"g-{topic_name}"
    base = f"{broker.url}/consumers/{group}/instances/w"
    assert requests.post(f"{broker.url}/consumers/{group}", headers=v2,
                         json={"name": "w", "format": "binary", "auto.offset.reset": "earliest"}).status_code == 200
    assert requests.post(f"{base}/subscription", headers=v2, json={"topics": [topic_name]}).status_code == 204
    wait_until(lambda: len(requests.get(f"{base}/records", params={"timeout": 500}, headers={"Accept": BINARY}).json()) > 0,
               10, "records")
    committed = lambda: requests.get(f"{base}/offsets", headers=v2,  # noqa: E731
                                     json={"partitions": [{"topic": topic_name, "partition": 0}]}).json()
    before = committed()
    for partition in (2**32, 2**31, 2**63):
        r = requests.post(f"{base}/offsets", headers=v2,
                          json={"offsets": [{"topic": topic_name, "partition": partition, "offset": 1}]})
        assert r.status_code == 422 and "partition" in r.json()["message"], (partition, r.text)
        r = requests.post(f"{base}/positions", headers=v2,
                          json={"offsets": [{"topic": topic_name, "partition": partition, "offset": 0}]})
        assert r.status_code == 422 and "partition" in r.json()["message"], (partition, r.text)
    assert committed() == before
    answers = _ws_exchange(broker, [
        {"type": "produce", "id": 1, "topic": topic_name, "partition": 2**32 + 1, "value": b64("x")},
        {"type": "produce", "id": 2, "topic": topic_name, "partition": 2**31, "value": b64("x")},
        {"type": "ping", "id": 3}], 3)
    assert [a["type"] for a in answers] == ["error", "error", "pong"], answers
    assert all(a["error_code"] == 422 and "2147483647" in a["message"] for a in answers[:2]), answers
    assert offsets(broker, topic_name, 1)["end_offset"] == 0


def test_websocket_credit_near_int64_max_does_not_overflow(broker, topic_name):
    # FIXED, was a defect (medium): credit was added before it was capped, so a grant of 2^63-1 on top of
    # any credit overflowed (undefined behaviour; in practice a negative credit) and the connection
    # never received another record, whatever it granted later. The same for byte credit.
    broker.create_topic(topic_name)
    requests.post(f"{broker.url}/topics/{topic_name}", json={"records": [{"value": b64(f"v{i}")} for i in range(3)]},
                  headers={"Content-Type": BINARY})
    big = 2**63 - 1
    for grants in ([{"records": 1}, {"records": big}],
                   [{"records": 10, "bytes": big}, {"bytes": big}],
                   [{"records": 10, "bytes": 1}, {"bytes": big}]):
        answers = _ws_exchange(broker, [{"type": "subscribe", "id": 1, "topic": topic_name, "position": "earliest"}] +
                               [{"type": "credit", **g} for g in grants], 4)
        assert [a["type"] for a in answers] == ["subscribed", "record", "record", "record"], (grants, answers)


def test_no_content_length_on_204_and_304(broker):
    # FIXED, was a defect (low): every 204 (CORS preflight, commits, subscriptions) and the console's 304
    # carried "Content-Length: 0"; RFC 9110 section 8.6 forbids it on a 204 and allows it on a 304
    # only with the 200's length (a cache that keeps it would serve an empty app.js).
    def head_of(request):
        s = socket.create_connection(("127.0.0.1", broker.port))
        s.sendall(request.encode())
        data = b""
        while b"\r\n\r\n" not in data and (chunk := s.recv(65536)):
            data += chunk
        s.close()
        return data.split(b"\r\n\r\n")[0].decode().lower()
    etag = requests.get(f"{broker.url}/console/app.js").headers["ETag"]
    not_modified = head_of(f"GET /console/app.js HTTP/1.1\r\nHost: x\r\nIf-None-Match: {etag}\r\nConnection: close\r\n\r\n")
    # A browser's preflight names this server in Host (a foreign name is refused: DNS rebinding).
    preflight = head_of("OPTIONS /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://a.example\r\n"
                        "Access-Control-Request-Method: GET\r\nConnection: close\r\n\r\n")
    assert not_modified.startswith("http/1.1 304") and "content-length" not in not_modified, not_modified
    assert preflight.startswith("http/1.1 204") and "content-length" not in preflight, preflight
    # keep-alive still works after a 204 without Content-Length
    with requests.Session() as s:
        assert s.options(f"{broker.url}/v1/health").status_code == 204
        assert s.get(f"{broker.url}/v1/health").status_code == 200


def test_links_percent_encode_group_and_instance_ids(broker, topic_name):
    # FIXED, was a defect (medium): base_uri and the v3 self/related links pasted group and instance ids
    # into URLs unencoded. Following the base_uri of group "team/app" answered 404, and of group
    # "q?x" POSTed to /consumers/q: a new consumer instance in another group.
    import urllib.parse
    broker.create_topic(topic_name)
    v2 = {"Content-Type": "application/vnd.kafka.v2+json"}
    for group, name in ((f"team/app-{topic_name}", "w1"), (f"q?x#%41 {topic_name}", "w-2")):
        r = requests.post(f"{broker.url}/consumers/{urllib.parse.quote(group, safe='')}", headers=v2,
                          json={"name": name, "format": "binary", "auto.offset.reset": "earliest"})
        assert r.status_code == 200, r.text
        base_uri = r.json()["base_uri"]
        assert r.json()["instance_id"] == name
        r = requests.post(f"{base_uri}/subscription", headers=v2, json={"topics": [topic_name]})
        assert r.status_code == 204, (base_uri, r.status_code, r.text)
        assert requests.get(f"{base_uri}/subscription", headers=v2).json()["topics"] == [topic_name]
        v3 = requests.get(broker.v3(f"/consumer-groups/{urllib.parse.quote(group, safe='')}")).json()
        assert v3["consumer_group_id"] == group
        for link in (v3["metadata"]["self"], v3["consumers"]["related"]):
            assert requests.get(link).status_code == 200, link
        history = requests.get(broker.v3(f"/consumer-groups/{urllib.parse.quote(group, safe='')}/lag-history")).json()
        assert requests.get(history["metadata"]["self"]).json()["consumer_group_id"] == group
        assert requests.delete(base_uri).status_code == 204


def test_refused_websocket_join_keeps_the_current_membership(broker, topic_name):
    # FIXED, was a defect (low): a join with a non-string topic (or position) left the current group
    # before the field was checked; the error came back and the connection was no member any more.
    broker.create_topic(topic_name)
    group = f"g-{topic_name}"
    import asyncio
    import websockets

    async def go():
        async with websockets.connect(f"ws://127.0.0.1:{broker.port}/v1/ws") as ws:
            await ws.send(json.dumps({"type": "join", "id": "j1", "group": group, "topics": [topic_name]}))
            while json.loads(await asyncio.wait_for(ws.recv(), 10)).get("id") != "j1":
                pass
            out = []
            for m in ({"type": "join", "id": "j2", "group": group, "topics": [5]},
                      {"type": "join", "id": "j3", "group": group, "topics": [topic_name], "position": 1},
                      {"type": "commit", "id": "c"}):
                await ws.send(json.dumps(m))
                while (a := json.loads(await asyncio.wait_for(ws.recv(), 10)))["type"] == "assignment":
                    pass
                out.append(a)
            return out
    j2, j3, commit = asyncio.run(go())
    assert j2["type"] == "error" and "topics" in j2["message"], j2
    assert j3["type"] == "error", j3
    assert commit["type"] == "committed", commit


def test_compressed_request_bodies_are_refused_by_name_not_parsed_as_json(broker, topic_name):
    # FIXED, was a defect (low): "Content-Encoding: gzip" was ignored: a gzipped produce body got
    # 400 "malformed JSON request body: The input is not valid UTF-8", and "Transfer-Encoding:
    # gzip, chunked" stored the chunks as they were. RFC 9110 8.4.1 (415) and RFC 9112 6.1 (501).
    import gzip
    broker.create_topic(topic_name)
    body = json.dumps({"records": [{"value": b64("v")}]}).encode()
    r = requests.post(f"{broker.url}/topics/{topic_name}", data=gzip.compress(body),
                      headers={"Content-Type": BINARY, "Content-Encoding": "gzip"})
    assert r.status_code == 415 and "Content-Encoding" in r.json()["message"], r.text
    s = socket.create_connection(("127.0.0.1", broker.port))
    s.sendall(f"POST /topics/{topic_name} HTTP/1.1\r\nHost: x\r\nContent-Type: {BINARY}\r\n"
              f"Transfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n".encode() +
              b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    assert data.startswith(b"HTTP/1.1 501") and b"Transfer-Encoding" in data, data[:300]
    ok = requests.post(f"{broker.url}/topics/{topic_name}", data=body,
                       headers={"Content-Type": BINARY, "Content-Encoding": "identity"})
    assert ok.status_code == 200, ok.text
    assert offsets(broker, topic_name)["end_offset"] == 1


def test_offsets_reset_value_past_int64_is_refused_and_shifts_saturate(broker, topic_name):
    # FIXED, was a defect (medium): offsets:reset read "value": 2^63 with get<int64_t>() (-2^63, so
    # to=offset went to the log start), and to=shift with 2^63-1 overflowed committed + shift and
    # rewound the group to the log start: the opposite of the shift asked for.
    broker.create_topic(topic_name)
    requests.post(f"{broker.url}/topics/{topic_name}", json={"records": [{"value": b64("v")}] * 5},
                  headers={"Content-Type": BINARY})
    group = f"g-{topic_name}"
    v2 = {"Content-Type": "application/vnd.kafka.v2+json"}
    base = f"{broker.url}/consumers/{group}/instances/w"
    requests.post(f"{broker.url}/consumers/{group}", headers=v2, json={"name": "w", "format": "binary"})
    requests.post(f"{base}/subscription", headers=v2, json={"topics": [topic_name]})
    wait_until(lambda: requests.post(f"{base}/offsets", headers=v2, json={"offsets": [
        {"topic": topic_name, "partition": 0, "offset": 1}]}).status_code == 204, 10, "commit")
    assert requests.delete(base).status_code == 204
    reset = broker.v3(f"/consumer-groups/{group}/offsets:reset")
    r = requests.post(reset, json={"to": "offset", "value": 2**63})
    assert r.status_code == 422 and "value" in r.json()["message"], r.text
    r = requests.post(reset, json={"to": "shift", "value": 2**63 - 1})
    assert r.status_code == 200 and r.json()["offsets"][0]["offset"] == 5, r.text
    r = requests.post(reset, json={"to": "shift", "value": -2**63})
    assert r.status_code == 200 and r.json()["offsets"][0]["offset"] == 0, r.text


# FIXED: a chunked v3 produce stream counted a report as answered once it was queued on the
# connection, not once it was on the socket: a client that sent records and never read its
# reports made the server read its whole body and queue every report in memory (60 MiB of
# records grew the broker to 616 MiB). Reports not yet sent now count toward
# produce_stream_unanswered_max, so the server stops reading and the client waits in TCP.
def test_v3_produce_stream_whose_client_never_reads_stops_reading_its_body(broker, topic_name):
    broker.create_topic(topic_name)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
    s.connect(("127.0.0.1", broker.port))
    s.sendall(f"POST /v3/clusters/{broker.cluster_id()}/topics/{topic_name}/records HTTP/1.1\r\n"
              "Host: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
    records = b'{"value":{"type":"JSON","data":1}}\n' * 2000
    chunk = b"%x\r\n" % len(records) + records + b"\r\n"
    s.settimeout(5)
    sent = 0
    limit = 32 * 1024 * 1024   # without the bound the server takes all of it in a few seconds
    blocked = False
    try:
        while sent < limit:
            s.sendall(chunk)
            sent += len(chunk)
    except socket.timeout:
        blocked = True
    finally:
        s.close()
    assert blocked, f"the server read {sent} bytes of records whose reports nobody read"
    assert requests.get(broker.url + "/v1/health", timeout=5).status_code == 200


# FIXED: a long-poll fetch that timed out stayed in its partition's waiters until the next
# append: on an idle partition, after fetch.waiters.per.partition.max timed-out long-polls every
# new one was refused with 42901 "too many waiting fetches" although none was waiting.
def test_timed_out_long_polls_do_not_count_toward_the_waiters_limit(fresh_broker, topic_name):
    b = fresh_broker(["fetch.waiters.per.partition.max=3"])
    b.create_topic(topic_name)
    url = b.url + f"/topics/{topic_name}/partitions/0/records?offset=0&timeout=20"
    with requests.Session() as s:
        for i in range(8):
            r = s.get(url, headers={"Accept": BINARY}, timeout=10)
            assert (i, r.status_code, r.json()) == (i, 200, [])
