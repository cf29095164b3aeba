"""SASL on the Kafka listener and SCRAM users (issue 29): SASL_PLAINTEXT://, SCRAM-SHA-256,
SCRAM-SHA-512 and PLAIN (checked against the SCRAM store), with real clients (confluent-kafka /
librdkafka, kafka-python 2.0 with its SaslHandshake v0 + raw token framing, kcat, KafkaJS) and by
hand on the wire (SaslHandshake v1 + SaslAuthenticate, KIP-368 re-authentication). Refusals leave
nothing stored and the broker serving. Users are metadata records: one made through node 1 logs in
on node 3.
"""
import base64
import hashlib
import hmac
import os
import random
import socket
import struct
import subprocess
import time

import pytest
import requests

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafka_wire
from conftest import Broker, binary_path, free_port, wait_until
from test_cluster import FAILOVER_DEADLINE_S, Cluster

ADMIN = ("admin", "admin-secret")
ALICE = ("alice", "alice-secret")
MECHANISMS = "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN"
API_SASL_HANDSHAKE, API_SASL_AUTHENTICATE, API_METADATA = 17, 36, 3


class SaslBroker(Broker):
    """A broker whose Kafka listener is SASL_PLAINTEXT:// (the later --set listeners wins) and
    which starts with --add-scram flags."""

    def __init__(self, data_dir, add_scram=(), extra_sets=()):
        port, kafka_port = free_port(), free_port()
        super().__init__(data_dir, [f"listeners=http://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{kafka_port}",
                                    f"sasl.enabled.mechanisms={MECHANISMS}", *extra_sets],
                         port=port, kafka_port=kafka_port,
                         extra_args=[arg for a in add_scram for arg in ("--add-scram", a)])


def rdkafka_conf(bootstrap, mechanism, user):
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user[0], "sasl.password": user[1]}


@pytest.fixture(scope="module")
def sasl_broker(ringlog_bin, tmp_path_factory):
    b = SaslBroker(tmp_path_factory.mktemp("sasl") / "data",
                   add_scram=[f"SCRAM-SHA-512=[name={ADMIN[0]},password={ADMIN[1]}]",
                              f"SCRAM-SHA-256=[name={ALICE[0]},password={ALICE[1]},iterations=8192]"],
                   extra_sets=["connection.failed.authentication.delay.ms=50", f"super.users=User:{ADMIN[0]}"]).start()
    yield b
    assert b.stop() == 0


# ---- real clients

@pytest.mark.parametrize("mechanism,user", [("SCRAM-SHA-256", ALICE), ("SCRAM-SHA-512", ADMIN), ("PLAIN", ALICE)])
def test_librdkafka_produces_consumes_and_commits_over_sasl(sasl_broker, mechanism, user):
    topic = "rd-" + mechanism.lower()
    conf = rdkafka_conf(sasl_broker.bootstrap, mechanism, user)
    admin = AdminClient(conf)   # kept: its futures need the handle alive
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(timeout=30)
    p = Producer({**conf, "acks": "all"})
    for i in range(20):
        p.produce(topic, key=f"k{i}", value=f"v{i}")
    assert p.flush(30) == 0
    c = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < 20 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            seen.append(m.value().decode())
    assert seen == [f"v{i}" for i in range(20)]
    c.commit(asynchronous=False)
    assert c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 20
    c.close()
    # The login is logged with its principal on the broker side only when it fails; a good one is
    # silent. Nothing failed here:
    assert f"principal=User:{user[0]} " not in sasl_broker.log_path.read_text()


@pytest.mark.parametrize("mechanism,user", [("SCRAM-SHA-256", ALICE), ("SCRAM-SHA-512", ADMIN), ("PLAIN", ADMIN)])
def test_kafka_python_v0_raw_token_framing(sasl_broker, mechanism, user):
    from kafka import KafkaConsumer, KafkaProducer
    topic = "kp-" + mechanism.lower()
    sasl = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism,
            "sasl_plain_username": user[0], "sasl_plain_password": user[1]}
    producer = KafkaProducer(bootstrap_servers=sasl_broker.bootstrap, acks="all", **sasl)
    for i in range(10):
        producer.send(topic, value=f"v{i}".encode()).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=sasl_broker.bootstrap, group_id=f"g-{topic}",
                             auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=15000, **sasl)
    seen = []
    for m in consumer:
        seen.append(m.value.decode())
        if len(seen) == 10:
            break
    assert seen == [f"v{i}" for i in range(10)]
    consumer.commit()
    consumer.close()


def test_kcat_with_scram(sasl_broker):
    topic = "kcat-scram"
    conf = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-512",
            "-X", f"sasl.username={ADMIN[0]}", "-X", f"sasl.password={ADMIN[1]}"]
    admin = AdminClient(rdkafka_conf(sasl_broker.bootstrap, "SCRAM-SHA-512", ADMIN))
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(timeout=30)
    subprocess.run(["kcat", "-b", sasl_broker.bootstrap, *conf, "-P", "-t", topic], input=b"one\ntwo\n",
                   check=True, timeout=60)
    out = subprocess.run(["kcat", "-b", sasl_broker.bootstrap, *conf, "-C", "-t", topic, "-o", "beginning", "-e",
                          "-q"], capture_output=True, check=True, timeout=60)
    assert out.stdout.decode().split() == ["one", "two"]
    wrong = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-512",
             "-X", f"sasl.username={ADMIN[0]}", "-X", "sasl.password=nope"]
    r = subprocess.run(["kcat", "-b", sasl_broker.bootstrap, *wrong, "-L", "-m", "5"], capture_output=True, timeout=60)
    assert r.returncode != 0
    assert b"Authentication failed" in r.stderr or b"SASL" in r.stderr, r.stderr


def test_kafkajs_with_scram(sasl_broker, monkeypatch):
    from test_kafka_groups import run_kafkajs
    monkeypatch.setenv("KAFKA_SASL_USERNAME", ALICE[0])
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", ALICE[1])
    run_kafkajs("sasl.test.mjs", sasl_broker.bootstrap, "kafkajs-sasl")


# ---- refusals, by hand and by clients

def scram_client_first(user, nonce):
    return f"n,,n={user},r={nonce}"


def scram_client_final(mechanism, password, bare, server_first, proof_override=None, nonce_override=None):
    h = hashlib.sha256 if mechanism == "SCRAM-SHA-256" else hashlib.sha512
    attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(h().name, password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", h).digest()
    stored = h(client_key).digest()
    without_proof = f"c=biws,r={nonce_override or attrs['r']}"
    auth = f"{bare},{server_first},{without_proof}".encode()
    signature = hmac.new(stored, auth, h).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    server_key = hmac.new(salted, b"Server Key", h).digest()
    expected_final = "v=" + base64.b64encode(hmac.new(server_key, auth, h).digest()).decode()
    return f"{without_proof},p={proof_override or base64.b64encode(proof).decode()}", expected_final


def handshake(sock, mechanism, version=1, correlation_id=1):
    _, body = kafka_wire.exchange(sock, API_SASL_HANDSHAKE, version, correlation_id, kafka_wire.string(mechanism))
    r = kafka_wire.Reader(body)
    error = r.take(">h")
    mechanisms = [r.string() for _ in range(r.take(">i"))]
    return error, mechanisms


def authenticate(sock, token, correlation_id=2):
    """SaslAuthenticate v1: (error_code, error_message, auth_bytes, session_lifetime_ms)."""
    _, body = kafka_wire.exchange(sock, API_SASL_AUTHENTICATE, 1, correlation_id, struct.pack(">i", len(token)) + token)
    r = kafka_wire.Reader(body)
    return r.take(">h"), r.string(), r.bytes(), r.take(">q")


def closed_by_peer(sock, deadline_s=10):
    sock.settimeout(deadline_s)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def metadata_v1(sock, correlation_id):
    return kafka_wire.exchange(sock, API_METADATA, 1, correlation_id, struct.pack(">i", -1))


def scram_login(sock, mechanism, user, correlation_id=1):
    """A whole SCRAM login with SaslHandshake v1 + SaslAuthenticate v1; returns the session lifetime."""
    assert handshake(sock, mechanism, correlation_id=correlation_id)[0] == 0
    bare = f"n={user[0]},r=fyko+d2lbbFgONRv9qkxdawL"
    error, message, server_first, _ = authenticate(sock, ("n,," + bare).encode(), correlation_id + 1)
    assert error == 0, message
    final, expected = scram_client_final(mechanism, user[1], bare, server_first.decode())
    error, message, server_final, lifetime = authenticate(sock, final.encode(), correlation_id + 2)
    assert error == 0, message
    assert server_final.decode() == expected   # the server proved it knows the key too
    return lifetime


def test_wire_v1_framing_and_every_refusal_leaves_the_broker_serving(sasl_broker):
    b = sasl_broker
    before = b.log_path.read_text()
    # A good login by hand, then Metadata is served.
    with kafka_wire.connect(b.bootstrap) as s:
        assert scram_login(s, "SCRAM-SHA-256", ALICE) == 0   # connections.max.reauth.ms=0: no expiry
        assert metadata_v1(s, 9)[0] == 9
    # A request before authenticating: closed unanswered, with a log line.
    with kafka_wire.connect(b.bootstrap) as s:
        s.sendall(kafka_wire.frame(API_METADATA, 1, 1, struct.pack(">i", -1)))
        assert closed_by_peer(s)
    wait_until(lambda: "before SASL authentication" in b.log_path.read_text(), 10, "the log line of the refusal")
    # An unknown mechanism: UNSUPPORTED_SASL_MECHANISM with the enabled list.
    with kafka_wire.connect(b.bootstrap) as s:
        error, mechanisms = handshake(s, "GSSAPI")
        assert error == 33 and mechanisms == MECHANISMS.split(",")
        assert closed_by_peer(s)
    # Wrong password (PLAIN), unknown user (PLAIN and SCRAM): SASL_AUTHENTICATION_FAILED with a
    # message, then the connection is closed.
    for mechanism, token in [("PLAIN", b"\0alice\0wrong"), ("PLAIN", b"\0nobody\0x")]:
        with kafka_wire.connect(b.bootstrap) as s:
            assert handshake(s, mechanism)[0] == 0
            error, message, _, _ = authenticate(s, token)
            assert error == 58 and "Authentication failed" in message
            assert closed_by_peer(s)
    # SCRAM: a client final with a wrong proof, a wrong nonce, and an unknown user.
    for user, proof, nonce in [(ALICE, base64.b64encode(b"x" * 32).decode(), None), (ALICE, None, "r0gue"),
                               (("nobody", "pw"), None, None)]:
        with kafka_wire.connect(b.bootstrap) as s:
            assert handshake(s, "SCRAM-SHA-256")[0] == 0
            bare = f"n={user[0]},r=abcdefgh"
            error, message, server_first, _ = authenticate(s, ("n,," + bare).encode())
            assert error == 0, message   # an unknown user is not told apart at the first step
            final, _ = scram_client_final("SCRAM-SHA-256", user[1], bare, server_first.decode(), proof, nonce)
            error, message, _, _ = authenticate(s, final.encode(), 3)
            assert error == 58, message
            assert closed_by_peer(s)
    # SaslAuthenticate without a handshake: ILLEGAL_SASL_STATE.
    with kafka_wire.connect(b.bootstrap) as s:
        error, _, _, _ = authenticate(s, b"n,,n=alice,r=x")
        assert error == 34
        assert closed_by_peer(s)
    # Malformed SASL bytes, a seeded fuzz loop over both framings: never a login, never a crash.
    rng = random.Random(29)
    for round_ in range(60):
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200)))
        mechanism = rng.choice(MECHANISMS.split(","))
        with kafka_wire.connect(b.bootstrap) as s:
            if round_ % 2 == 0:
                assert handshake(s, mechanism, version=1)[0] == 0
                error, _, _, _ = authenticate(s, junk)
                if mechanism.startswith("SCRAM") and error == 0:
                    # A first message that happened to parse: its final must still fail.
                    error, _, _, _ = authenticate(s, junk, 3)
                assert error in (58, 34)
            else:
                assert handshake(s, mechanism, version=0)[0] == 0
                s.sendall(struct.pack(">i", len(junk) or 1) + (junk or b"\0"))
            try:
                assert closed_by_peer(s)
            except socket.timeout:
                raise AssertionError(f"round {round_}: the connection stayed open after junk")
    # Each failed login has one audit line naming the principal tried, the door and the peer.
    log = b.log_path.read_text()[len(before):]
    audits = [line for line in log.splitlines() if "authentication failed" in line]
    assert any('principal="User:nobody"' in line and "door=kafka" in line and "peer=127.0.0.1:" in line
               for line in audits), audits[:3]
    # Still serving, nothing stored by the refusals: no topic was created by them.
    with kafka_wire.connect(b.bootstrap) as s:
        scram_login(s, "SCRAM-SHA-512", ADMIN)
        assert metadata_v1(s, 9)[0] == 9
    assert requests.get(b.url + "/v1/health", timeout=5).status_code == 200


def test_reauthentication_as_another_principal_is_refused_and_the_connection_closed(sasl_broker):
    """KIP-368: re-authentication must keep the principal (Kafka: "Cannot change principals during
    re-authentication"); a breaker logged in as alice and re-authenticated as admin."""
    b = sasl_broker
    before = len(b.log_path.read_text())
    with kafka_wire.connect(b.bootstrap) as s:
        assert handshake(s, "PLAIN")[0] == 0
        assert authenticate(s, f"\0{ALICE[0]}\0{ALICE[1]}".encode())[0] == 0
        assert handshake(s, "PLAIN", correlation_id=3)[0] == 0
        error, message, _, _ = authenticate(s, f"\0{ADMIN[0]}\0{ADMIN[1]}".encode(), 4)
        assert error == 58 and "Cannot change principals" in message, (error, message)
        assert closed_by_peer(s)
    wait_until(lambda: "Cannot change principals" in b.log_path.read_text()[before:], 10, "the audit line")


def test_the_failed_login_audit_line_escapes_what_the_client_sent(sasl_broker):
    """A user name with a quote and a newline cannot forge a log line; the line carries
    audit=authentication and the listener's security protocol."""
    b = sasl_broker
    before = len(b.log_path.read_text())
    with kafka_wire.connect(b.bootstrap) as s:
        assert handshake(s, "PLAIN")[0] == 0
        assert authenticate(s, b'\0ev"il\nlevel=info msg=forged\0wrong')[0] == 58
        assert closed_by_peer(s)
    wait_until(lambda: "authentication failed" in b.log_path.read_text()[before:], 10, "the audit line")
    lines = b.log_path.read_text()[before:].splitlines()
    audit = [line for line in lines if 'msg="authentication failed"' in line]
    assert len(audit) == 1 and "audit=authentication" in audit[0], audit
    assert 'principal="User:ev\\"il\\nlevel=info msg=forged"' in audit[0], audit[0]
    assert "security.protocol=SASL_PLAINTEXT" in audit[0]
    assert not any(line.startswith("level=info msg=forged") for line in lines)


def test_kip_368_reauthentication_and_session_expiry(ringlog_bin, tmp_path):
    b = SaslBroker(tmp_path / "data", add_scram=[f"SCRAM-SHA-256=[name={ALICE[0]},password={ALICE[1]}]"],
                   extra_sets=["connections.max.reauth.ms=1500"]).start()
    try:
        with kafka_wire.connect(b.bootstrap) as s:
            assert scram_login(s, "SCRAM-SHA-256", ALICE) == 1500
            # Re-authentication on the same connection (KIP-368) before the session ends, then
            # requests keep being served.
            assert scram_login(s, "SCRAM-SHA-256", ALICE, correlation_id=10) == 1500
            assert metadata_v1(s, 20)[0] == 20
        # Without re-authentication the connection is closed at the first request after the
        # session's end (Kafka's rule); poll with Metadata until then.
        with kafka_wire.connect(b.bootstrap) as s:
            scram_login(s, "SCRAM-SHA-256", ALICE)
            start = time.monotonic()
            correlation = 100

            def closed():
                nonlocal correlation
                correlation += 1
                try:
                    metadata_v1(s, correlation)
                    return False
                except (ConnectionError, socket.timeout):
                    return True

            wait_until(closed, 15, "the session to expire")
            assert time.monotonic() - start >= 1.4
        wait_until(lambda: "expired (connections.max.reauth.ms)" in b.log_path.read_text(), 10, "the expiry log line")
    finally:
        assert b.stop() == 0


# ---- the SCRAM store: Kafka admin API, HTTP, CLI, --add-scram, a cluster

def alter_scram(sock, correlation_id, deletions=(), upsertions=()):
    """AlterUserScramCredentials v0 (KIP-554) by hand: deletions [(name, mechanism)], upsertions
    [(name, mechanism, iterations, salt, salted_password)]; returns [(user, error_code, message)]."""
    cs, uv = kafka_wire.compact_string, kafka_wire.uvarint
    body = uv(len(deletions) + 1) + b"".join(cs(n) + struct.pack(">b", m) + b"\x00" for n, m in deletions)
    body += uv(len(upsertions) + 1) + b"".join(
        cs(n) + struct.pack(">bi", m, i) + cs(salt) + cs(salted) + b"\x00" for n, m, i, salt, salted in upsertions)
    body += b"\x00"
    _, data = kafka_wire.exchange_flexible(sock, 51, 0, correlation_id, body)
    r = kafka_wire.FlexReader(data)
    r.skip_tags()
    r.take(">i")   # throttle
    out = []
    for _ in range(r.uvarint() - 1):
        out.append((r.compact_string(), r.take(">h"), r.compact_string()))
        r.skip_tags()
    return out


def describe_scram(sock, correlation_id, users):
    """DescribeUserScramCredentials v0: {user: (error_code, [(mechanism, iterations)])}."""
    cs, uv = kafka_wire.compact_string, kafka_wire.uvarint
    body = uv(len(users) + 1) + b"".join(cs(u) + b"\x00" for u in users) + b"\x00"
    _, data = kafka_wire.exchange_flexible(sock, 50, 0, correlation_id, body)
    r = kafka_wire.FlexReader(data)
    r.skip_tags()
    r.take(">i")
    assert r.take(">h") == 0
    r.compact_string()
    out = {}
    for _ in range(r.uvarint() - 1):
        user, error = r.compact_string(), r.take(">h")
        r.compact_string()
        infos = []
        for _ in range(r.uvarint() - 1):
            infos.append((r.take(">b"), r.take(">i")))
            r.skip_tags()
        r.skip_tags()
        out[user] = (error, infos)
    return out


def test_users_over_kafka_admin_http_and_cli(sasl_broker):
    b = sasl_broker
    # AlterUserScramCredentials (51) / DescribeUserScramCredentials (50) on the wire, as Kafka's
    # admin clients send them (the client salts and hashes the password; the broker keeps keys).
    salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", b"bob-secret", salt, 10000)
    with kafka_wire.connect(b.bootstrap) as s:
        scram_login(s, "SCRAM-SHA-512", ADMIN)
        assert [(u, e) for u, e, _ in alter_scram(s, 10, upsertions=[("bob", 1, 10000, salt, salted)])] == [("bob", 0)]
        described = describe_scram(s, 11, ["bob", "nobody"])
        assert described["bob"] == (0, [(1, 10000)])
        assert described["nobody"][0] == 91   # RESOURCE_NOT_FOUND
        refused = alter_scram(s, 12, deletions=[("nobody", 1)],
                              upsertions=[("carol", 1, 100, salt, salted), ("erin", 0, 4096, salt, salted)])
        assert {u: e for u, e, _ in refused} == {"nobody": 91, "carol": 93, "erin": 33}
    # A user that is not one of super.users changes no user, not even itself, without an
    # authorizer (the HTTP users routes' rule): a password cannot be turned into another's.
    with kafka_wire.connect(b.bootstrap) as s:
        scram_login(s, "SCRAM-SHA-256", ALICE)
        refused = alter_scram(s, 20, upsertions=[("admin", 1, 10000, salt, salted), ("alice", 1, 10000, salt, salted)])
        assert {u: e for u, e, _ in refused} == {"admin": 31, "alice": 31}   # CLUSTER_AUTHORIZATION_FAILED
        assert all("only super.users" in m for _, _, m in refused), refused
    # bob logs in with librdkafka.
    AdminClient(rdkafka_conf(b.bootstrap, "SCRAM-SHA-256", ("bob", "bob-secret"))).list_topics(timeout=15)
    # HTTP: list (no secrets), create, show, delete.
    users = requests.get(b.v3("/users"), timeout=10).json()["data"]
    names = {u["user_name"]: u["credentials"] for u in users}
    assert names["alice"] == [{"mechanism": "SCRAM-SHA-256", "iterations": 8192}]
    assert "salt" not in str(users) and "stored" not in str(users) and "password" not in str(users)
    r = requests.post(b.v3("/users/dave"), json={"mechanism": "SCRAM-SHA-512", "iterations": 8192, "password": "dave-pw"},
                      timeout=10)
    assert r.status_code == 200, r.text
    assert r.json()["credentials"] == [{"mechanism": "SCRAM-SHA-512", "iterations": 8192}]
    assert requests.post(b.v3("/users/erin"), json={"mechanism": "SCRAM-SHA-1", "password": "x"}, timeout=10).status_code == 422
    assert requests.post(b.v3("/users/erin"), json={"iterations": 99, "password": "x"}, timeout=10).status_code == 422
    AdminClient(rdkafka_conf(b.bootstrap, "PLAIN", ("dave", "dave-pw"))).list_topics(timeout=15)
    assert requests.delete(b.v3("/users/dave"), timeout=10).status_code == 204
    assert requests.get(b.v3("/users/dave"), timeout=10).status_code == 404
    assert requests.delete(b.v3("/users/dave"), timeout=10).status_code == 404
    # CLI.
    cli = [str(binary_path()), "users"]
    server = ["--bootstrap-server", b.url]
    subprocess.run(cli + ["create", "frank", "--password", "frank-pw", "--mechanism", "SCRAM-SHA-256"] + server,
                   check=True, capture_output=True, timeout=30)
    listed = subprocess.run(cli + ["list"] + server, check=True, capture_output=True, timeout=30).stdout.decode()
    assert "frank\tSCRAM-SHA-256\t4096" in listed and "admin\tSCRAM-SHA-512\t4096" in listed
    AdminClient(rdkafka_conf(b.bootstrap, "SCRAM-SHA-256", ("frank", "frank-pw"))).list_topics(timeout=15)
    subprocess.run(cli + ["delete", "frank"] + server, check=True, capture_output=True, timeout=30)
    assert "frank" not in subprocess.run(cli + ["list"] + server, check=True, capture_output=True,
                                         timeout=30).stdout.decode()
    # A deleted user no longer logs in.
    bad = AdminClient({**rdkafka_conf(b.bootstrap, "SCRAM-SHA-256", ("frank", "frank-pw"))})
    with pytest.raises(KafkaException):
        bad.list_topics(timeout=5)


def test_add_scram_twice_does_not_change_the_user_and_survives_restart(ringlog_bin, tmp_path):
    data = tmp_path / "data"
    b = SaslBroker(data, add_scram=["SCRAM-SHA-512=[name=admin,password=first]"]).start()
    try:
        AdminClient(rdkafka_conf(b.bootstrap, "SCRAM-SHA-512", ("admin", "first"))).list_topics(timeout=15)
    finally:
        assert b.stop() == 0
    # Restart with the flag naming another password: the user is left as it was.
    b2 = SaslBroker(data, add_scram=["SCRAM-SHA-512=[name=admin,password=second]"]).start()
    try:
        AdminClient(rdkafka_conf(b2.bootstrap, "SCRAM-SHA-512", ("admin", "first"))).list_topics(timeout=15)
        with pytest.raises(KafkaException):
            AdminClient(rdkafka_conf(b2.bootstrap, "SCRAM-SHA-512", ("admin", "second"))).list_topics(timeout=5)
        assert "the user exists, left unchanged" in b2.log_path.read_text()
    finally:
        assert b2.stop() == 0


def test_bad_sasl_config_is_refused_naming_the_key(ringlog_bin, tmp_path):
    for args in (["--set", "sasl.enabled.mechanisms=GSSAPI"], ["--add-scram", "SCRAM-SHA-1=[name=a,password=b]"],
                 ["--add-scram", "SCRAM-SHA-512=[name=a,password=b,iterations=1]"]):
        r = subprocess.run([str(binary_path()), "serve", "--set", f"log.dirs={tmp_path}/d", *args],
                           capture_output=True, timeout=30)
        assert r.returncode == 2, r
        text = (r.stdout + r.stderr).decode()
        assert ("sasl.enabled.mechanisms" in text) or ("--add-scram" in text), text


def test_oauthbearer_or_bearer_without_a_jwks_is_a_config_error_naming_the_key(ringlog_bin, tmp_path):
    """SASL OAUTHBEARER offered with no sasl.oauthbearer.jwks.endpoint.url exited 1 ("cannot listen",
    after the start had bound its ports) while HTTP BEARER without it exited 2: both are config
    errors now, found before anything binds, naming the key to set."""
    sasl = f"SASL_PLAINTEXT://127.0.0.1:{free_port()}"
    for sets in ([f"listeners=http://127.0.0.1:{free_port()},{sasl}", "sasl.enabled.mechanisms=SCRAM-SHA-256,OAUTHBEARER"],
                 [f"listeners=http://127.0.0.1:{free_port()},{sasl}",
                  "listener.name.sasl_plaintext.sasl.enabled.mechanisms=OAUTHBEARER"],
                 [f"listeners=http://127.0.0.1:{free_port()}", "http.authentication.method=BASIC,BEARER"]):
        args = [a for s in sets for a in ("--set", s)]
        r = subprocess.run([str(binary_path()), "serve", "--set", f"log.dirs={tmp_path}/d", *args],
                           capture_output=True, timeout=30)
        text = (r.stdout + r.stderr).decode()
        assert r.returncode == 2, (sets, text)
        assert "bad config" in text and "sasl.oauthbearer.jwks.endpoint.url" in text, text
        assert "cannot listen" not in text, text


def test_a_user_made_on_node_1_logs_in_on_node_3(ringlog_bin, tmp_path):
    c = Cluster(tmp_path, kafka=True)
    for n in c.nodes:
        n.extra_sets.append(f"listeners=http://127.0.0.1:{n.port},cluster://127.0.0.1:{n.cluster_port},"
                            f"SASL_PLAINTEXT://127.0.0.1:{n.kafka_port}")
    c.start()
    try:
        wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
        n1, n3 = c.node(1), c.node(3)
        r = requests.post(n1.v3("/users/gina"), json={"mechanism": "SCRAM-SHA-512", "password": "gina-pw"}, timeout=30)
        assert r.status_code == 200, r.text
        wait_until(lambda: requests.get(n3.v3("/users/gina"), timeout=5).status_code == 200, 30,
                   "node 3 to apply the user's record")
        with kafka_wire.connect(n3.bootstrap) as s:
            scram_login(s, "SCRAM-SHA-512", ("gina", "gina-pw"))
            assert metadata_v1(s, 9)[0] == 9
    finally:
        c.stop()


def test_nodes_that_start_together_with_add_scram_add_the_user_once(ringlog_bin, tmp_path):
    """Three nodes started at once for the first time, each with the same --add-scram: each found
    no user in its image and wrote one, so the metadata log got a UserScramCredentialRecord per
    node (each with its own salt, the last one winning). The write is create-only now, checked
    where every node applies it: one node adds the user, the others are refused and say so."""
    spec = f"SCRAM-SHA-512=[name={ADMIN[0]},password={ADMIN[1]}]"
    c = Cluster(tmp_path, extra_args=["--add-scram", spec])
    c.start()   # each node serves HTTP once its --add-scram is done
    try:
        logs = [n.log_path.read_text() for n in c.nodes]
        lines = [line for text in logs for line in text.splitlines() if "--add-scram" in line]
        added = [line for line in lines if "user added" in line]
        unchanged = [line for line in lines if "the user exists, left unchanged" in line]
        assert len(added) == 1 and len(unchanged) == 2, lines
        for n in c.nodes:
            r = requests.get(n.v3(f"/users/{ADMIN[0]}"), timeout=10)
            assert r.status_code == 200, r.text
    finally:
        c.stop()


# ---- OAUTHBEARER (issue 29): the JWT rules and JWKS file of HTTP Bearer, on the Kafka listener

def test_oauthbearer_with_librdkafka_s_token_refresh_callback(ringlog_bin, tmp_path):
    import json
    from test_http_auth import AUDIENCE, ISSUER, Issuer
    issuer = Issuer()
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(issuer.jwks()))
    b = SaslBroker(tmp_path / "data", extra_sets=[
        "sasl.enabled.mechanisms=OAUTHBEARER,SCRAM-SHA-256", f"sasl.oauthbearer.jwks.endpoint.url=file:{jwks}",
        f"sasl.oauthbearer.expected.issuer={ISSUER}", f"sasl.oauthbearer.expected.audience={AUDIENCE}",
        "connection.failed.authentication.delay.ms=10"]).start()
    try:
        b.create_topic("oauth")

        def log_end(b, topic):
            return requests.get(f"{b.url}/topics/{topic}/partitions/0/offsets", timeout=10).json()["end_offset"]
        refreshed = []

        def token(sub, **claims):
            def oauth_cb(_config):
                refreshed.append(sub)
                return issuer.token(sub=sub, **claims), time.time() + 300
            return oauth_cb

        acked = []
        p = Producer({"bootstrap.servers": b.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                      "sasl.mechanism": "OAUTHBEARER", "oauth_cb": token("dave")})
        p.produce("oauth", value=b"by a token", on_delivery=lambda err, msg: acked.append(err))
        p.flush(30)
        assert acked == [None] and "dave" in refreshed
        assert log_end(b, "oauth") == 1
        # A token of another issuer is refused, with the audit line; nothing is stored.
        before = len(b.log_path.read_text())
        bad = Producer({"bootstrap.servers": b.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": "OAUTHBEARER", "oauth_cb": token("mallory", iss="https://evil.test"),
                        "message.timeout.ms": 3000})
        failed = []
        bad.produce("oauth", value=b"never", on_delivery=lambda err, msg: failed.append(err))
        bad.flush(10)
        assert failed and failed[0] is not None
        wait_until(lambda: "OAUTHBEARER token refused" in b.log_path.read_text()[before:], 10, "the audit line")
        assert log_end(b, "oauth") == 1
        # KIP-368 (the breaker's ob_lifetime.py): the session ends with the token, even with
        # connections.max.reauth.ms 0: SaslAuthenticate answers its lifetime, at most exp - now.
        with socket.create_connection(("127.0.0.1", b.kafka_port), timeout=10) as s:
            assert handshake(s, "OAUTHBEARER")[0] == 0
            short = issuer.token(sub="dave", exp=int(time.time()) + 40)
            error, _, _, lifetime_ms = authenticate(s, b"n,,\x01auth=Bearer " + short.encode() + b"\x01\x01")
            assert error == 0 and 25_000 <= lifetime_ms <= 40_000, lifetime_ms
    finally:
        assert b.stop() == 0


def test_oauthbearer_with_a_jwks_fetched_over_https(ringlog_bin, tmp_path):
    """The https JWKS (test_http_auth.JwksServer) on the Kafka listener: a login with a token of
    the issuer, then with a key the identity provider started serving after the broker's start."""
    import tls_certs
    from test_http_auth import AUDIENCE, ISSUER, Issuer, JwksServer, rotated_jwks
    issuer = Issuer()
    certs = tls_certs.Material(tmp_path / "tls")
    with JwksServer(certs.broker_pem, issuer.jwks()) as idp:
        b = SaslBroker(tmp_path / "data", extra_sets=[
            "sasl.enabled.mechanisms=OAUTHBEARER,SCRAM-SHA-256", f"sasl.oauthbearer.jwks.endpoint.url={idp.url()}",
            f"ssl.truststore.location={certs.ca_file}", f"sasl.oauthbearer.expected.issuer={ISSUER}",
            f"sasl.oauthbearer.expected.audience={AUDIENCE}", "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms=0",
            "connection.failed.authentication.delay.ms=10"]).start()
        try:
            def logs_in(token):
                with socket.create_connection(("127.0.0.1", b.kafka_port), timeout=10) as s:
                    assert handshake(s, "OAUTHBEARER")[0] == 0
                    return authenticate(s, b"n,,\x01auth=Bearer " + token.encode() + b"\x01\x01")[0] == 0

            assert logs_in(issuer.token(sub="dave"))
            idp.jwks, rotated = rotated_jwks(issuer)
            token = rotated.token(sub="erin", kid="rsa-2")
            wait_until(lambda: logs_in(token), 10, "the rotated key to be fetched")
        finally:
            assert b.stop() == 0


def test_a_listener_offers_its_own_sasl_mechanisms(ringlog_bin, tmp_path):
    """Session 32's new user: listener.name.<l>.sasl.enabled.mechanisms was stored and never read,
    so a listener restricted to SCRAM-SHA-512 still took PLAIN (a password in the clear). It
    offers its own list now (Kafka's per-listener key), and a bad value is refused at start as the
    global key's is."""
    b = SaslBroker(tmp_path / "data", add_scram=[f"SCRAM-SHA-512=[name={ADMIN[0]},password={ADMIN[1]}]"],
                   extra_sets=["listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-512"]).start()
    try:
        with kafka_wire.connect(b.bootstrap) as s:
            error, mechanisms = handshake(s, "PLAIN")
            assert (error, mechanisms) == (33, ["SCRAM-SHA-512"])   # UNSUPPORTED_SASL_MECHANISM
        with kafka_wire.connect(b.bootstrap) as s:
            scram_login(s, "SCRAM-SHA-512", ADMIN)   # asserts each step
        p = Producer({**rdkafka_conf(b.bootstrap, "SCRAM-SHA-512", ADMIN), "message.timeout.ms": 20000})
        p.produce("per-listener", b"v")
        assert p.flush(20) == 0
        reports = []
        denied = Producer({**rdkafka_conf(b.bootstrap, "PLAIN", ADMIN), "message.timeout.ms": 3000})
        denied.produce("per-listener", b"never", on_delivery=lambda err, msg: reports.append(err))
        denied.flush(10)
        assert len(reports) == 1 and reports[0] is not None   # not delivered: the listener does not take PLAIN
        r = requests.get(f"{b.url}/topics/per-listener/partitions/0/records", params={"offset": 0}, timeout=10)
        assert r.status_code == 200 and [rec["value"] for rec in r.json()] == ["dg=="], r.text   # "v" alone
    finally:
        assert b.stop() == 0
    for value, why in [("GSSAPI", "not supported"), ("", "at least one mechanism")]:
        r = subprocess.run([str(binary_path()), "serve", "--set", f"log.dirs={tmp_path / 'refused'}",
                            "--set", f"listeners=http://127.0.0.1:{free_port()},SASL_PLAINTEXT://127.0.0.1:{free_port()}",
                            "--set", f"listener.name.sasl_plaintext.sasl.enabled.mechanisms={value}"],
                           capture_output=True, timeout=30)
        out = r.stdout.decode() + r.stderr.decode()
        assert r.returncode == 2 and "listener.name.sasl_plaintext.sasl.enabled.mechanisms" in out and why in out, out
    r = subprocess.run([str(binary_path()), "serve", "--set", f"log.dirs={tmp_path / 'refused'}",
                        "--set", f"listeners=http://127.0.0.1:{free_port()},SASL_PLAINTEXT://127.0.0.1:{free_port()}",
                        "--set", "listener.name.sasl_plaintext.sasl.oauthbearer.expected.issuer=x"],
                       capture_output=True, timeout=30)
    out = r.stdout.decode() + r.stderr.decode()
    assert r.returncode == 2 and "cannot be set per listener" in out, out


def test_users_create_changes_the_password_of_every_credential_the_user_has(sasl_broker, ringlog_bin):
    """Session 32's new user: `users create NAME --password NEW` on a user with both SCRAM
    credentials changed only SCRAM-SHA-512, and the old password still logged in with
    SCRAM-SHA-256. Without --mechanism every credential is set now; with it, the CLI says which
    one keeps its old password."""
    b = sasl_broker

    def users(*args):
        r = subprocess.run([str(ringlog_bin), "users", *args, "--bootstrap-server", b.url],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    def logs_in(mechanism, password):
        with kafka_wire.connect(b.bootstrap) as s:
            assert handshake(s, mechanism)[0] == 0
            bare = "n=dora,r=fyko+d2lbbFgONRv9qkxdawL"
            error, _, server_first, _ = authenticate(s, ("n,," + bare).encode())
            if error != 0:
                return False
            final, _ = scram_client_final(mechanism, password, bare, server_first.decode())
            return authenticate(s, final.encode(), 3)[0] == 0

    users("create", "dora", "--password", "old", "--mechanism", "SCRAM-SHA-256")
    users("create", "dora", "--password", "old", "--mechanism", "SCRAM-SHA-512")
    out = users("create", "dora", "--password", "new")
    assert "SCRAM-SHA-256" in out and "SCRAM-SHA-512" in out, out
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        assert wait_until(lambda: logs_in(mechanism, "new") or None, 5, f"{mechanism} with the new password")
        assert not logs_in(mechanism, "old")
    out = users("create", "dora", "--password", "newer", "--mechanism", "SCRAM-SHA-512")
    assert "SCRAM-SHA-256 credential keeps its old password" in out, out
    users("delete", "dora")
    # User:* is the ACL wildcard: no user may be named so (the breaker of session 32).
    r = subprocess.run([str(ringlog_bin), "users", "create", "*", "--password", "x", "--bootstrap-server", b.url],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "reserved" in r.stderr, r.stdout + r.stderr


def test_users_create_says_whether_it_created_or_replaced_the_credential(sasl_broker, ringlog_bin):
    """Session 34's new user: `users create NAME` on an existing user printed "User NAME has a
    SCRAM-SHA-512 credential." exactly as a creation did, so replacing someone's password by
    mistake looked like making a new user. The CLI asks the broker first and says which it was."""
    b = sasl_broker

    def create(*args):
        r = subprocess.run([str(ringlog_bin), "users", "create", "fern", "--password", "pw", *args,
                            "--bootstrap-server", b.url], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout.strip()

    assert create() == "Created the SCRAM-SHA-512 credential of user fern (a new user)."
    assert create() == ("Replaced the SCRAM-SHA-512 credential of user fern: "
                        "its old password no longer logs in.")
    assert create("--mechanism", "SCRAM-SHA-256").splitlines() == [
        "Created the SCRAM-SHA-256 credential of user fern.",
        "Its SCRAM-SHA-512 credential keeps its old password (without --mechanism every credential is set)."]
    subprocess.run([str(ringlog_bin), "users", "delete", "fern", "--bootstrap-server", b.url],
                   capture_output=True, timeout=60, check=True)


def test_a_sasl_broker_with_open_http_says_so_at_start(sasl_broker):
    """Session 32's new user: the SASL example left REST (users and ACLs included) open to anyone
    reaching http://, without a word. The start-up log says so now."""
    assert "HTTP listener asks no credentials" in sasl_broker.log_path.read_text()


def test_a_frame_over_the_pre_login_bound_names_sasl_server_max_receive_size(sasl_broker):
    """Before a SASL login a frame is bounded by 512 KiB (Kafka's sasl.server.max.receive.size);
    the close line named socket.request.max.bytes instead, whose bound it was not (the breaker of
    session 34)."""
    host, port = sasl_broker.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(struct.pack(">i", 1024 * 1024))
        s.settimeout(10)
        try:
            assert s.recv(1) == b""
        except ConnectionResetError:
            pass
    wait_until(lambda: "frame size 1048576 outside 1..524288 (sasl.server.max.receive.size" in
               sasl_broker.log_path.read_text(), 10, "the close line naming sasl.server.max.receive.size")


# ---- --add-scram-file: the first admin's password kept off the command line (and out of `ps`)

def test_add_scram_file_adds_users_without_a_password_on_the_command_line(ringlog_bin, tmp_path):
    entries = tmp_path / "first-users"
    entries.write_text(f"# the first admin\n\nSCRAM-SHA-512=[name={ADMIN[0]},password={ADMIN[1]}]\n"
                       f"  SCRAM-SHA-256=[name={ALICE[0]},password={ALICE[1]},iterations=8192]  \n")
    entries.chmod(0o600)
    b = SaslBroker(tmp_path / "data")
    b.extra_args = ["--add-scram-file", str(entries)]
    b.start()
    try:
        assert ADMIN[1] not in " ".join(b.proc.args)
        wait_until(lambda: b.log_path.read_text().count("--add-scram: user added") == 2, 30, "both users added")
        users = requests.get(b.v3("/users"), timeout=10).json()
        assert {u["user_name"] for u in users["data"]} >= {ADMIN[0], ALICE[0]}, users
    finally:
        assert b.stop() == 0


def test_add_scram_file_open_to_others_is_refused_naming_it(ringlog_bin, tmp_path):
    entries = tmp_path / "first-users"
    entries.write_text(f"SCRAM-SHA-512=[name={ADMIN[0]},password={ADMIN[1]}]\n")
    entries.chmod(0o644)
    out = subprocess.run([str(ringlog_bin), "serve", "--set", f"log.dirs={tmp_path / 'data'}",
                          "--add-scram-file", str(entries)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and str(entries) in out.stderr and "chmod 600" in out.stderr, out
    assert not (tmp_path / "data").exists()
    entries.chmod(0o600)
    entries.write_text("SCRAM-SHA-512=[name=admin]\n")
    out = subprocess.run([str(ringlog_bin), "serve", "--set", f"log.dirs={tmp_path / 'data'}",
                          "--add-scram-file", str(entries)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and f"{entries} line 1" in out.stderr, out
