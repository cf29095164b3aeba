"""TLS on the Kafka listeners (issue 29): SSL:// and named listeners with
listener.security.protocol.map, per-listener overrides, mutual TLS, Metadata by listener name,
refusals (wrong CA, no client certificate, plaintext to a TLS port, TLS to a plaintext port,
random bytes), PEM key forms, bad settings named by key, and certificate renewal without a
restart. Certificates are made at test time (tls_certs.py); real clients: kcat, confluent-kafka
(librdkafka), kafka-python.
"""
import json
import os
import random
import signal
import socket
import ssl
import subprocess
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer

from conftest import (Broker, binary_path, free_port, read_kafka_answer, read_to_close_notify, send_until_closed,
                      strict_tls_connections, wait_until)
from tls_certs import Material


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return Material(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def tls_broker(ringlog_bin, certs, tmp_path_factory):
    """PLAINTEXT, SSL and a mutual-TLS CLIENT listener at once."""
    http, plain, ssl_port, client = free_port(), free_port(), free_port(), free_port()
    b = Broker(tmp_path_factory.mktemp("tlsdata") / "ringlog-data", port=http, extra_sets=[
        f"listeners=http://127.0.0.1:{http},PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{ssl_port},"
        f"CLIENT://127.0.0.1:{client}",
        "listener.security.protocol.map=CLIENT:SSL",
        f"ssl.keystore.location={certs.broker_pem}",
        f"ssl.truststore.location={certs.ca_file}",
        "listener.name.client.ssl.client.auth=required",
        "listener.name.client.ssl.principal.mapping.rules=RULE:^.*CN=([a-z]+).*$/$1/",
        "ssl.reload.check.interval.ms=200",
    ])
    b.plain = f"127.0.0.1:{plain}"
    b.ssl = f"127.0.0.1:{ssl_port}"
    b.mtls = f"127.0.0.1:{client}"
    b.start()
    yield b
    assert b.stop() == 0


def kcat(*args, input_bytes=None, check=True):
    r = subprocess.run(["kcat", *args], input=input_bytes, capture_output=True, timeout=30)
    if check:
        assert r.returncode == 0, r.stderr.decode()
    return r


def kcat_ssl(certs, client_cert=True, ca=None):
    args = ["-X", "security.protocol=SSL", "-X", f"ssl.ca.location={ca or certs.ca_file}"]
    if client_cert:
        args += ["-X", f"ssl.certificate.location={certs.alice_crt}", "-X", f"ssl.key.location={certs.alice_key}"]
    return args


def rdkafka_ssl(certs, bootstrap, client_cert=False):
    conf = {"bootstrap.servers": bootstrap, "security.protocol": "SSL", "ssl.ca.location": certs.ca_file}
    if client_cert:
        conf.update({"ssl.certificate.location": certs.alice_crt, "ssl.key.location": certs.alice_key})
    return conf


def stored_count(broker, topic):
    """Records in partition 0 of `topic`, by a plaintext kcat (0 when the topic does not exist)."""
    r = kcat("-b", broker.plain, "-L", "-J", "-t", topic, check=False)
    meta = json.loads(r.stdout.decode() or "{}")
    topics = [t for t in meta.get("topics", []) if t["topic"] == topic and not t.get("error")]
    if not topics:
        return 0
    out = kcat("-b", broker.plain, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%s\n")
    return len([line for line in out.stdout.decode().splitlines() if line])


def log_text(broker):
    return broker.log_path.read_text(errors="replace")


def still_serves(broker, certs):
    meta = json.loads(kcat("-b", broker.ssl, *kcat_ssl(certs, client_cert=False), "-L", "-J").stdout)
    assert meta["brokers"], meta


# ---------------------------------------------------------------- clients over SSL and mTLS

def test_kcat_produces_and_consumes_over_ssl_and_metadata_names_the_ssl_port(tls_broker, certs, topic_name):
    ssl_args = kcat_ssl(certs, client_cert=False)
    kcat("-b", tls_broker.ssl, *ssl_args, "-P", "-t", topic_name, "-p", "0", input_bytes=b"one\ntwo\nthree\n")
    out = kcat("-b", tls_broker.ssl, *ssl_args, "-C", "-t", topic_name, "-p", "0", "-o", "beginning", "-e", "-q",
               "-f", "%s\n").stdout.decode()
    assert out.split() == ["one", "two", "three"]
    # Kafka's rule: Metadata answers the endpoints of the listener the client connected on.
    meta = json.loads(kcat("-b", tls_broker.ssl, *ssl_args, "-L", "-J").stdout)
    assert [b["name"] for b in meta["brokers"]] == [tls_broker.ssl]
    meta = json.loads(kcat("-b", tls_broker.plain, "-L", "-J").stdout)
    assert [b["name"] for b in meta["brokers"]] == [tls_broker.plain]
    meta = json.loads(kcat("-b", tls_broker.mtls, *kcat_ssl(certs), "-L", "-J").stdout)
    assert [b["name"] for b in meta["brokers"]] == [tls_broker.mtls]


def test_confluent_kafka_over_ssl_and_mtls(tls_broker, certs, topic_name):
    for bootstrap, client_cert in ((tls_broker.ssl, False), (tls_broker.mtls, True)):
        p = Producer(rdkafka_ssl(certs, bootstrap, client_cert))
        for i in range(20):
            p.produce(topic_name, value=f"{bootstrap}-{i}".encode(), partition=0)
        assert p.flush(15) == 0
    c = Consumer({**rdkafka_ssl(certs, tls_broker.mtls, True), "group.id": "g-" + topic_name,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic_name, 0, 0)])
    got = []
    end = time.monotonic() + 20
    while len(got) < 40 and time.monotonic() < end:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value().decode())
    c.close()
    assert len(got) == 40
    assert got[0] == f"{tls_broker.ssl}-0" and got[-1] == f"{tls_broker.mtls}-19"


def test_kafka_python_over_mtls(tls_broker, certs, topic_name):
    common = dict(bootstrap_servers=tls_broker.mtls, security_protocol="SSL", ssl_cafile=certs.ca_file,
                  ssl_certfile=certs.alice_crt, ssl_keyfile=certs.alice_key, api_version_auto_timeout_ms=10000)
    p = KafkaProducer(**common)
    for i in range(10):
        p.send(topic_name, value=b"kp-%d" % i, partition=0)
    p.flush(15)
    p.close()
    c = KafkaConsumer(topic_name, auto_offset_reset="earliest", consumer_timeout_ms=5000, **common)
    values = [m.value for m in c]
    c.close()
    assert values == [b"kp-%d" % i for i in range(10)]


def test_large_fetch_over_tls_copies_record_sets(tls_broker, certs, topic_name):
    """Zero-copy (sendfile) cannot go through userspace TLS: the SSL listener copies the bytes."""
    payload = b"x" * 100_000
    p = Producer({**rdkafka_ssl(certs, tls_broker.ssl), "linger.ms": 5})
    for _ in range(50):
        p.produce(topic_name, value=payload, partition=0)
    assert p.flush(20) == 0
    c = Consumer({**rdkafka_ssl(certs, tls_broker.ssl), "group.id": "big-" + topic_name,
                  "fetch.max.bytes": 4 << 20})
    c.assign([TopicPartition(topic_name, 0, 0)])
    n = 0
    end = time.monotonic() + 20
    while n < 50 and time.monotonic() < end:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            assert m.value() == payload
            n += 1
    c.close()
    assert n == 50


# ---------------------------------------------------------------- refusals

def test_wrong_ca_and_missing_client_certificate_are_refused_with_nothing_stored(tls_broker, certs, topic_name):
    # A client that trusts another CA refuses the broker; the broker logs the failed handshake.
    r = kcat("-b", tls_broker.ssl, *kcat_ssl(certs, client_cert=False, ca=certs.stranger_ca_file), "-P", "-t",
             topic_name, "-p", "0", "-X", "message.timeout.ms=3000", input_bytes=b"nope\n", check=False)
    assert r.returncode != 0 or b"certificate verify failed" in r.stderr
    # No client certificate on the CLIENT listener (ssl.client.auth=required).
    r = kcat("-b", tls_broker.mtls, *kcat_ssl(certs, client_cert=False), "-P", "-t", topic_name, "-p", "0",
             "-X", "message.timeout.ms=3000", input_bytes=b"nope\n", check=False)
    assert r.returncode != 0
    # A client certificate from a stranger CA.
    r = kcat("-b", tls_broker.mtls, "-X", "security.protocol=SSL", "-X", f"ssl.ca.location={certs.ca_file}",
             "-X", f"ssl.certificate.location={certs.stranger_crt}", "-X", f"ssl.key.location={certs.stranger_key}",
             "-P", "-t", topic_name, "-p", "0", "-X", "message.timeout.ms=3000", input_bytes=b"nope\n", check=False)
    assert r.returncode != 0
    assert stored_count(tls_broker, topic_name) == 0
    wait_until(lambda: "listener=CLIENT" in log_text(tls_broker) and "TLS handshake failed" in log_text(tls_broker),
               10, "a log line naming the listener")
    still_serves(tls_broker, certs)


def test_plaintext_to_tls_port_and_tls_to_plaintext_port_are_closed_with_a_log_line(tls_broker, certs):
    host, port = tls_broker.ssl.split(":")
    # An ApiVersions v0 request in plaintext: a TLS alert or nothing, then the close.
    send_until_closed((host, int(port)), bytes.fromhex("0000000d00120000000000010003616263"))
    wait_until(lambda: "listener=SSL" in log_text(tls_broker) and "not a TLS client" in log_text(tls_broker), 10,
               "the plaintext-on-TLS log line")
    ctx = ssl.create_default_context(cafile=certs.ca_file)
    host, port = tls_broker.plain.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            ctx.wrap_socket(raw, server_hostname="localhost")
    wait_until(lambda: "TLS handshake arrived on a plaintext listener (PLAINTEXT)" in log_text(tls_broker), 10,
               "the TLS-on-plaintext log line")
    still_serves(tls_broker, certs)


def test_random_bytes_and_truncated_client_hellos_do_not_hurt_the_listener(tls_broker, certs):
    """A small fuzz loop: random bytes, a ClientHello cut at a random point, then close."""
    rng = random.Random(29)
    print("seed 29")
    ctx = ssl.create_default_context(cafile=certs.ca_file)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    hello = outgoing.read()
    host, port = tls_broker.ssl.split(":")
    for i in range(60):
        data = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 600))) if i % 2 else hello[:rng.randint(1, len(hello))]
        send_until_closed((host, int(port)), data, shut_write=True)
    still_serves(tls_broker, certs)


# ---------------------------------------------------------------- renewal

def test_renewed_certificate_is_served_without_a_restart_and_open_connections_stay(tls_broker, certs, topic_name):
    common = dict(bootstrap_servers=tls_broker.ssl, security_protocol="SSL", ssl_cafile=certs.ca_file,
                  api_version_auto_timeout_ms=10000)
    p = KafkaProducer(**common)
    p.send(topic_name, value=b"before", partition=0).get(15)

    def served_cn():
        host, port = tls_broker.ssl.split(":")
        ctx = ssl.create_default_context(cafile=certs.ca_file)
        with socket.create_connection((host, int(port)), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                der = s.getpeercert(binary_form=True)
        from cryptography import x509
        return x509.load_der_x509_certificate(der).subject.rfc4514_string()

    assert served_cn().endswith("CN=broker")
    original = open(certs.broker_pem, "rb").read()
    try:
        renewed, _ = certs.keystore("renewed.pem", cn="broker-renewed")
        tmp = certs.broker_pem + ".tmp"
        with open(renewed, "rb") as src, open(tmp, "wb") as dst:
            dst.write(src.read())
        os.replace(tmp, certs.broker_pem)   # how cert-manager and certbot swap files
        wait_until(lambda: served_cn().endswith("CN=broker-renewed"), 15, "the renewed certificate")
        # The connection opened before the renewal still works.
        p.send(topic_name, value=b"after", partition=0).get(15)
        p.close()
        # SIGHUP re-reads at once, too.
        with open(certs.broker_pem + ".tmp", "wb") as dst:
            dst.write(original)
        os.replace(certs.broker_pem + ".tmp", certs.broker_pem)
        tls_broker.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: served_cn().endswith("CN=broker"), 15, "the certificate after SIGHUP")
        assert "TLS certificate reloaded" in log_text(tls_broker)
    finally:
        with open(certs.broker_pem, "wb") as dst:
            dst.write(original)


def test_a_renewal_that_is_expired_not_yet_valid_or_of_another_key_is_refused(ringlog_bin, certs, tmp_path):
    """A renewed keystore that would fail every handshake is not taken: the serving certificate
    stays and the error line names the file and why (issue 29, a breaker's finding)."""
    import datetime
    store = str(tmp_path / "serving.pem")
    with open(store, "wb") as dst:
        dst.write(open(certs.broker_pem, "rb").read())
    http, port = free_port(), free_port()
    b = Broker(tmp_path / "d", port=http, extra_sets=[f"listeners=http://127.0.0.1:{http},SSL://127.0.0.1:{port}",
                                                      f"ssl.keystore.location={store}",
                                                      "ssl.reload.check.interval.ms=100"]).start()

    def served_cn():
        ctx = ssl.create_default_context(cafile=certs.ca_file)
        ctx.check_hostname = False
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            with ctx.wrap_socket(raw) as s:
                der = s.getpeercert(binary_form=True)
        from cryptography import x509
        return x509.load_der_x509_certificate(der).subject.rfc4514_string()

    # A certificate and a key that is not its own, made with the openssl CLI.
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(tmp_path / "k1.pem"),
                    "-out", str(tmp_path / "c1.pem"), "-subj", "/CN=broker-other-key", "-days", "1"],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-out", str(tmp_path / "k2.pem")],
                   check=True, capture_output=True)
    day = datetime.timedelta(days=1)
    expired, _ = certs.keystore("expired.pem", cn="broker-expired", valid=(-2 * day, -day))
    early, _ = certs.keystore("early.pem", cn="broker-early", valid=(day, 2 * day))
    mismatched = (tmp_path / "k2.pem").read_bytes() + (tmp_path / "c1.pem").read_bytes()
    cases = [(open(expired, "rb").read(), "has expired"), (open(early, "rb").read(), "is not valid yet"),
             (mismatched, "does not match")]
    try:
        assert served_cn().endswith("CN=broker")
        for content, why in cases:
            before = len(log_text(b))
            with open(store + ".tmp", "wb") as dst:
                dst.write(content)
            os.replace(store + ".tmp", store)
            wait_until(lambda: "TLS certificate not reloaded" in log_text(b)[before:], 15, f"the refusal ({why})")
            line = next(l for l in log_text(b)[before:].splitlines() if "TLS certificate not reloaded" in l)
            assert why in line and store in line, line
            assert served_cn().endswith("CN=broker")
    finally:
        assert b.stop() == 0


# ---------------------------------------------------------------- key forms and bad settings

@pytest.mark.parametrize("form,key_kind,password", [
    ("pkcs8", "rsa", None), ("pkcs1", "rsa", None), ("pkcs1", "ec", None), ("pkcs8", "ec", None),
    ("pkcs8", "rsa", "s3cret"), ("pkcs1", "rsa", "s3cret")])
def test_pem_key_forms_are_served(ringlog_bin, certs, tmp_path, form, key_kind, password):
    store, _ = certs.keystore(f"ks-{form}-{key_kind}-{bool(password)}.pem", form=form, key_kind=key_kind,
                              password=password)
    http, port = free_port(), free_port()
    sets = [f"listeners=http://127.0.0.1:{http},SSL://127.0.0.1:{port}", f"ssl.keystore.location={store}"]
    if password:
        sets.append(f"ssl.key.password={password}")
    b = Broker(tmp_path / "d", port=http, extra_sets=sets).start()
    try:
        ctx = ssl.create_default_context(cafile=certs.ca_file)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                assert s.version() in ("TLSv1.2", "TLSv1.3")
    finally:
        assert b.stop() == 0


def start_fails(tmp_path, sets):
    http = free_port()
    r = subprocess.run([str(binary_path()), "serve", "--set", f"log.dirs={tmp_path / 'd'}", "--set", "num.shards=1",
                        "--set", f"listeners=http://127.0.0.1:{http},SSL://127.0.0.1:{free_port()}"] +
                       [a for s in sets for a in ("--set", s)], capture_output=True, timeout=30)
    assert r.returncode != 0
    return r.stdout.decode() + r.stderr.decode()


def test_bad_tls_settings_are_refused_naming_the_key(ringlog_bin, certs, tmp_path):
    out = start_fails(tmp_path, [])
    assert "ssl.keystore.location" in out
    out = start_fails(tmp_path, [f"ssl.keystore.location={tmp_path}/missing.pem"])
    assert "ssl.keystore.location=" in out and "cannot open" in out
    # A key that does not match the certificate.
    other, _ = certs.keystore("other.pem", cn="other")
    key_part = open(other).read().split("-----END PRIVATE KEY-----")[0] + "-----END PRIVATE KEY-----\n"
    cert_part = "-----BEGIN CERTIFICATE-----" + open(certs.broker_pem).read().split("-----BEGIN CERTIFICATE-----", 1)[1]
    mismatched = certs.write("mismatched.pem", (key_part + cert_part).encode())
    out = start_fails(tmp_path, [f"ssl.keystore.location={mismatched}"])
    assert "does not match the certificate" in out
    encrypted, _ = certs.keystore("enc.pem", password="right")
    out = start_fails(tmp_path, [f"ssl.keystore.location={encrypted}", "ssl.key.password=wrong"])
    assert "ssl.key.password" in out
    out = start_fails(tmp_path, [f"ssl.keystore.location={encrypted}"])
    assert "ssl.key.password is not set" in out
    out = start_fails(tmp_path, [f"ssl.keystore.location={certs.broker_pem}", "ssl.enabled.protocols=TLSv1.1"])
    assert "ssl.enabled.protocols" in out and "TLSv1.1" in out
    out = start_fails(tmp_path, [f"ssl.keystore.location={certs.broker_pem}", "ssl.keystore.type=JKS"])
    assert "ssl.keystore.type" in out and "PEM" in out
    out = start_fails(tmp_path, [f"ssl.keystore.location={certs.broker_pem}", "ssl.client.auth=required"])
    assert "truststore" in out
    out = start_fails(tmp_path, [f"ssl.keystore.location={certs.broker_pem}",
                                 "listener.name.nosuch.ssl.client.auth=required"])
    assert "listener.name.nosuch.ssl.client.auth" in out and "NOSUCH" in out
    out = start_fails(tmp_path, [f"ssl.keystore.location={certs.broker_pem}",
                                 f"listeners=http://127.0.0.1:{free_port()},CLIENT://127.0.0.1:{free_port()}"])
    assert "listener.security.protocol.map" in out and "CLIENT" in out


def test_a_tls_client_that_closes_without_close_notify_is_not_a_warning(tls_broker, certs):
    """The new user of session 31: every ordinary librdkafka or kafka-python disconnect from a
    SASL_SSL listener logged `level=warning ... reason="read failed: stream truncated"` (they close
    the TCP connection without TLS's close_notify, as Kafka's clients do). Between two requests
    that is a normal close; a cut inside a request still is not."""
    import socket
    import ssl
    host, port = tls_broker.ssl.split(":")
    context = ssl.create_default_context(cafile=certs.ca_file)
    context.check_hostname = False
    before = len(log_text(tls_broker))   # other tests of the module cut requests on purpose
    for _ in range(3):
        raw = socket.create_connection((host, int(port)), timeout=10)
        tls = context.wrap_socket(raw, server_hostname="localhost")
        tls.do_handshake()
        raw_fd = tls.detach()   # the TCP socket alone: closing it sends no close_notify
        socket.socket(fileno=raw_fd).close()
    still_serves(tls_broker, certs)   # the closes above were read on the same listener before this
    assert "stream truncated" not in log_text(tls_broker)[before:], log_text(tls_broker)[before:][-2000:]


def test_failed_handshakes_are_logged_once_per_interval_with_the_count(ringlog_bin, certs, tmp_path):
    """The new user's find: each failed TLS handshake logged a warning, so a port scanner flooded
    the log. Now one line per listener per 10 s, the next one saying how many were left out."""
    http, ssl_port = free_port(), free_port()
    b = Broker(tmp_path / "data", port=http, extra_sets=[
        f"listeners=http://127.0.0.1:{http},SSL://127.0.0.1:{ssl_port}", f"ssl.keystore.location={certs.broker_pem}"])
    b.start()

    def fail_one_handshake():
        send_until_closed(("127.0.0.1", ssl_port), b"GET / HTTP/1.0\r\n\r\n")   # plaintext, not a ClientHello

    def failure_lines():
        return [l for l in log_text(b).splitlines() if "TLS handshake failed" in l]

    try:
        for _ in range(30):
            fail_one_handshake()
        wait_until(failure_lines, 10, "the first failed-handshake line")
        assert len(failure_lines()) == 1, failure_lines()

        def summarised():
            fail_one_handshake()
            return next((l for l in failure_lines() if "more failed TLS handshakes on this listener not logged" in l),
                        None)

        line = wait_until(summarised, 20, "the next line, with the count left out")
        assert "listener=SSL" in line, line
        assert int(line.split(" (")[-1].split(" more")[0]) >= 29, line
    finally:
        assert b.stop() == 0


def test_a_controlled_shutdown_ends_tls_connections_with_close_notify(ringlog_bin, certs, tmp_path):
    """The new user's find: on SIGTERM TLS connections were cut without TLS's close_notify, and
    librdkafka logged "unexpected eof while reading" as an error during a controlled shutdown."""
    http, ssl_port = free_port(), free_port()
    b = Broker(tmp_path / "data", port=http, extra_sets=[
        f"listeners=http://127.0.0.1:{http},SSL://127.0.0.1:{ssl_port}", f"ssl.keystore.location={certs.broker_pem}"])
    b.start()
    context = ssl.create_default_context(cafile=certs.ca_file)
    context.check_hostname = False
    clients = []
    try:
        clients = strict_tls_connections(context, ssl_port, 3)
        # Every connection is served (ApiVersions v0 answered) before the stop.
        for tls in clients:
            tls.sendall(bytes.fromhex("0000000d00120000000000010003616263"))
            read_kafka_answer(tls)
        b.proc.send_signal(signal.SIGTERM)
        read_to_close_notify(clients)
    finally:
        for tls in clients:
            tls.close()
        assert b.stop() == 0
