"""HTTP authentication (issue 29): Basic and Bearer on every route, the console's login session
with CSRF protection, access tokens for WebSocket and streams, consumer instances owned by their
principal, CORS credentials only to named origins, and one audit line per refusal and admin write.

Clients: curl (subprocess), python3-requests, python3-websockets; JWTs signed here with keys that
python3-cryptography generates at test time. Every refusal is followed by a check that nothing
was stored and that the server still serves.
"""
import asyncio
import base64
import http.server
import json
import os
import ssl
import subprocess
import threading
import time

import pytest
import requests
import websockets
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils

import tls_certs
from conftest import Broker, binary_path, wait_until

BINARY = "application/vnd.kafka.binary.v2+json"
V2 = "application/vnd.kafka.v2+json"
ISSUER = "https://idp.test"
AUDIENCE = "ringlog"
USERS = {"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}
DEADLINE_S = 10


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64(text):
    return base64.b64encode(text.encode()).decode()


def int_bytes(n):
    return n.to_bytes((n.bit_length() + 7) // 8, "big")


class Issuer:
    """An identity provider of our own: an RSA and an EC key, their JWKS, and signed tokens."""

    def __init__(self):
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())

    def jwks(self):
        rn = self.rsa.public_key().public_numbers()
        en = self.ec.public_key().public_numbers()
        return {"keys": [
            {"kty": "RSA", "kid": "rsa-1", "alg": "RS256", "use": "sig", "n": b64url(int_bytes(rn.n)), "e": b64url(int_bytes(rn.e))},
            # The same key for PS256: a JWK that names its alg serves that alg only.
            {"kty": "RSA", "kid": "rsa-ps", "alg": "PS256", "n": b64url(int_bytes(rn.n)), "e": b64url(int_bytes(rn.e))},
            {"kty": "EC", "kid": "ec-1", "crv": "P-256", "x": b64url(en.x.to_bytes(32, "big")), "y": b64url(en.y.to_bytes(32, "big"))},
        ]}

    def token(self, sub="carol", alg="RS256", kid=None, **claims):
        now = int(time.time())
        body = {"sub": sub, "iss": ISSUER, "aud": [AUDIENCE], "iat": now, "exp": now + 300}
        body.update(claims)
        body = {k: v for k, v in body.items() if v is not None}
        header = {"alg": alg, "typ": "JWT", "kid": kid or {"ES256": "ec-1", "PS256": "rsa-ps"}.get(alg, "rsa-1")}
        signing_input = (b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(body).encode())).encode()
        if alg == "RS256":
            sig = self.rsa.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
        elif alg == "PS256":
            sig = self.rsa.sign(signing_input, padding.PSS(padding.MGF1(hashes.SHA256()), 32), hashes.SHA256())
        elif alg == "ES256":
            r, s = utils.decode_dss_signature(self.ec.sign(signing_input, ec.ECDSA(hashes.SHA256())))
            sig = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        else:
            sig = b""
        return signing_input.decode() + "." + b64url(sig)


@pytest.fixture(scope="module")
def issuer():
    return Issuer()


def start_secured(tmp_path_factory, issuer, extra=()):
    data = tmp_path_factory.mktemp("auth") / "ringlog-data"
    jwks = data.parent / "jwks.json"
    jwks.write_text(json.dumps(issuer.jwks()))
    scram = [a for u, p in USERS.items() for a in ("--add-scram", f"SCRAM-SHA-512=[name={u},password={p}]")]
    b = Broker(data, ["http.authentication.method=BASIC,BEARER",
                      f"sasl.oauthbearer.jwks.endpoint.url=file:{jwks}",
                      f"sasl.oauthbearer.expected.issuer={ISSUER}",
                      f"sasl.oauthbearer.expected.audience=other,{AUDIENCE}",
                      "http.cors.credentials.origins=https://console.example",
                      "http.cors.allowed.origins=*",
                      "super.users=User:admin",
                      *extra], extra_args=scram).start()
    return b


@pytest.fixture(scope="module")
def secured(ringlog_bin, tmp_path_factory, issuer):
    b = start_secured(tmp_path_factory, issuer)
    yield b
    assert b.stop() == 0


ALICE = ("alice", USERS["alice"])
BOB = ("bob", USERS["bob"])


def cluster_url(b, path=""):
    cid = requests.get(b.url + "/v3/clusters", auth=ALICE).json()["data"][0]["cluster_id"]
    return f"{b.url}/v3/clusters/{cid}{path}"


def create_topic(b, name, auth=ALICE):
    r = requests.post(cluster_url(b, "/topics"), json={"topic_name": name, "partitions_count": 1}, auth=auth)
    assert r.status_code == 201, r.text


def end_offset(b, topic):
    r = requests.get(f"{b.url}/topics/{topic}/partitions/0/offsets", auth=ALICE, headers={"Accept": V2})
    assert r.status_code == 200, r.text
    return r.json()["end_offset"]


def produce(b, topic, value, **kwargs):
    return requests.post(f"{b.url}/topics/{topic}/partitions/0", json={"records": [{"value": b64(value)}]},
                         headers={"Content-Type": BINARY, **kwargs.pop("headers", {})}, **kwargs)


def assert_401(r, reason=None):
    assert r.status_code == 401, r.text
    assert r.json()["error_code"] == 40101, r.text
    if reason:
        assert reason in r.json()["message"], r.text


def test_health_and_metrics_open_everything_else_needs_credentials(secured):
    assert requests.get(secured.url + "/v1/health").status_code == 200
    assert requests.get(secured.url + "/metrics").status_code == 200   # http.metrics.authentication=false
    r = requests.get(secured.url + "/topics")
    assert_401(r, "authentication required")
    challenges = r.headers["WWW-Authenticate"]
    assert 'Basic realm="ringlog"' in challenges and 'Bearer realm="ringlog"' in challenges
    # The console's own fetches get no Basic challenge (the browser would show its own dialog).
    r = requests.get(secured.url + "/v1/whoami", headers={"X-Requested-With": "ringlog-console"})
    assert_401(r)
    assert r.headers["WWW-Authenticate"].startswith("Session ")
    assert requests.get(secured.url + "/console").status_code == 200


def curl(*args):
    out = subprocess.run(["curl", "-sS", "-o", "/dev/stderr", "-w", "%{http_code}", *args],
                         capture_output=True, text=True, timeout=DEADLINE_S)
    return int(out.stdout), out.stderr


def test_basic_with_curl_and_refusals_store_nothing(secured, topic_name):
    create_topic(secured, topic_name)
    url = f"{secured.url}/topics/{topic_name}/partitions/0"
    body = json.dumps({"records": [{"value": b64("hello")}]})
    code, text = curl("-u", "alice:alice-secret", "-H", f"Content-Type: {BINARY}", "-d", body, url)
    assert code == 200, text
    for user in ("alice:wrong", "mallory:alice-secret", "alice:"):
        code, text = curl("-u", user, "-H", f"Content-Type: {BINARY}", "-d", body, url)
        assert code == 401, text
        assert json.loads(text)["error_code"] == 40101
    assert end_offset(secured, topic_name) == 1
    code, text = curl("-u", "alice:alice-secret", secured.url + "/v1/whoami")
    assert code == 200 and json.loads(text)["principal"] == "User:alice", text


def test_bearer_tokens_signed_at_test_time(secured, issuer, topic_name):
    create_topic(secured, topic_name)
    for alg in ("RS256", "PS256", "ES256"):
        token = issuer.token(sub="carol", alg=alg)
        r = requests.get(secured.url + "/v1/whoami", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200, (alg, r.text)
        assert r.json()["principal"] == "User:carol" and r.json()["via"] == "bearer"
    # curl's own --oauth2-bearer
    code, text = curl("--oauth2-bearer", issuer.token(sub="dave"), secured.url + "/v1/whoami")
    assert code == 200 and json.loads(text)["principal"] == "User:dave", text

    now = int(time.time())
    unsigned = b64url(b'{"alg":"none"}') + "." + b64url(json.dumps({"sub": "eve", "exp": now + 60}).encode()) + "."
    forged = issuer.token(sub="carol")[:-4] + ("AAAA" if not issuer.token().endswith("AAAA") else "BBBB")
    refused = {
        "expired": issuer.token(exp=now - 120, iat=now - 600),
        "not_yet_valid": issuer.token(nbf=now + 600),
        "alg_none_refused": unsigned,
        # An HMAC token is signed: its reason names the alg, not "none" (session 32).
        "unsupported_alg: alg 'HS256'": b64url(b'{"alg":"HS256"}') + "." + b64url(
            json.dumps({"sub": "eve", "exp": now + 60}).encode()) + ".c2ln",
        "wrong_issuer": issuer.token(iss="https://evil.test"),
        "wrong_audience": issuer.token(aud="somebody-else"),
        "unknown_kid": issuer.token(kid="rotated-away"),
        "bad_signature": forged,
        "malformed": "not-a-jwt",
    }
    for reason, token in refused.items():
        r = produce(secured, topic_name, "must not be stored", headers={"Authorization": f"Bearer {token}"})
        assert_401(r, reason)
        assert 'error="invalid_token"' in r.headers["WWW-Authenticate"], r.headers
    assert end_offset(secured, topic_name) == 0
    assert requests.get(secured.url + "/v1/health").status_code == 200


def login(b, user, password):
    s = requests.Session()
    r = s.post(b.url + "/v1/login", json={"user": user, "password": password})
    return s, r


def test_console_login_cookie_csrf_and_logout(secured, topic_name):
    create_topic(secured, topic_name)
    s, r = login(secured, "alice", "wrong")
    assert_401(r)
    assert "ringlog_session" not in s.cookies
    s, r = login(secured, "alice", USERS["alice"])
    assert r.status_code == 200, r.text
    cookie = r.raw.headers.getlist("Set-Cookie")
    session_cookie = cookie[0]
    assert session_cookie.startswith("ringlog_session=")
    for attribute in ("HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=28800"):
        assert attribute in session_cookie, cookie
    assert "Secure" not in session_cookie   # plain http; https listeners add it
    csrf = r.json()["csrf_token"]
    assert s.cookies["ringlog_csrf"] == csrf
    assert s.get(secured.url + "/v1/whoami").json()["principal"] == "User:alice"

    r = produce(secured, topic_name, "no csrf", cookies=s.cookies)
    assert r.status_code == 403, r.text
    r = produce(secured, topic_name, "wrong csrf", cookies=s.cookies, headers={"X-CSRF-Token": "x" * 43})
    assert r.status_code == 403, r.text
    assert end_offset(secured, topic_name) == 0
    r = produce(secured, topic_name, "with csrf", cookies=s.cookies, headers={"X-CSRF-Token": csrf})
    assert r.status_code == 200, r.text

    old_cookies = s.cookies.copy()
    assert s.post(secured.url + "/v1/logout").status_code == 204
    r = requests.get(secured.url + "/v1/whoami", cookies=old_cookies)
    assert_401(r, "session ended")
    r = produce(secured, topic_name, "after logout", cookies=old_cookies, headers={"X-CSRF-Token": csrf})
    assert_401(r)
    assert end_offset(secured, topic_name) == 1


def test_websocket_and_streams_by_access_token_or_cookie(secured, topic_name):
    create_topic(secured, topic_name)
    ws_url = f"ws://127.0.0.1:{secured.port}/v1/ws"

    async def refused(url, **kw):
        with pytest.raises(websockets.InvalidStatusCode) as e:
            async with websockets.connect(url, **kw):
                pass
        return e.value.status_code

    async def produce_one(url, value, **kw):
        async with websockets.connect(url, **kw) as ws:
            await ws.send(json.dumps({"type": "produce", "id": 1, "topic": topic_name, "partition": 0,
                                      "value": b64(value)}))
            return json.loads(await asyncio.wait_for(ws.recv(), DEADLINE_S))

    async def scenario():
        assert await refused(ws_url) == 401
        assert await refused(ws_url + "?access_token=guessed") == 401
        token = requests.post(secured.url + "/v1/tokens", auth=ALICE).json()["access_token"]
        ack = await produce_one(ws_url + "?access_token=" + token, "by token")
        assert ack.get("type") == "produce_ack", ack
        s, _ = login(secured, "bob", USERS["bob"])
        cookie = {"Cookie": f"ringlog_session={s.cookies['ringlog_session']}"}
        ack = await produce_one(ws_url, "by cookie", extra_headers=cookie)
        assert ack.get("type") == "produce_ack", ack
        # The cookie rides along with any page's WebSocket: another site's page is refused
        # (cross-site WebSocket hijacking); the console's own origin is served.
        assert await refused(ws_url, extra_headers=cookie, origin="https://evil.example") == 403
        ack = await produce_one(ws_url, "by cookie from the console", extra_headers=cookie,
                                origin=f"http://127.0.0.1:{secured.port}")
        assert ack.get("type") == "produce_ack", ack

    asyncio.run(scenario())
    assert end_offset(secured, topic_name) == 3
    # An NDJSON stream (EventSource and fetch streams cannot send Authorization either).
    token = requests.post(secured.url + "/v1/tokens", auth=BOB).json()["access_token"]
    url = f"{secured.url}/topics/{topic_name}/partitions/0/records?offset=0&timeout=300"
    r = requests.get(url + "&access_token=" + token, headers={"Accept": "application/x-ndjson"}, timeout=DEADLINE_S)
    assert r.status_code == 200, r.text
    assert len([line for line in r.text.splitlines() if line.strip()]) == 3
    assert_401(requests.get(url, headers={"Accept": "application/x-ndjson"}, timeout=DEADLINE_S))
    # Tokens are for GET (upgrades, streams): not a way around CSRF.
    r = produce(secured, topic_name, "post by token", params={"access_token": token})
    assert_401(r)


def test_consumer_instances_belong_to_their_principal(secured, topic_name):
    create_topic(secured, topic_name)
    group = "g-" + topic_name
    r = requests.post(f"{secured.url}/consumers/{group}", json={"name": "alices", "format": "binary"},
                      headers={"Content-Type": V2}, auth=ALICE)
    assert r.status_code == 200, r.text
    base = f"{secured.url}/consumers/{group}/instances/alices"
    r = requests.post(base + "/subscription", json={"topics": [topic_name]}, headers={"Content-Type": V2}, auth=ALICE)
    assert r.status_code == 204, r.text
    for method, path in (("GET", "/subscription"), ("GET", "/records"), ("GET", "/offsets"),
                         ("DELETE", "/subscription"), ("DELETE", "")):
        r = requests.request(method, base + path, auth=BOB, headers={"Accept": BINARY, "Content-Type": V2})
        assert r.status_code == 404, (method, path, r.text)
        assert r.json()["error_code"] == 40403
        assert "alices" in r.json()["message"]
    r = requests.get(base + "/subscription", auth=ALICE, headers={"Accept": V2})
    assert r.status_code == 200 and r.json()["topics"] == [topic_name], r.text
    assert requests.delete(base, auth=ALICE, headers={"Content-Type": V2}).status_code == 204


def test_cors_credentials_only_to_named_origins(secured):
    r = requests.get(secured.url + "/v1/whoami", auth=ALICE, headers={"Origin": "https://console.example"})
    assert r.headers.get("Access-Control-Allow-Credentials") == "true"
    assert r.headers.get("Access-Control-Allow-Origin") == "https://console.example"
    r = requests.get(secured.url + "/v1/whoami", auth=ALICE, headers={"Origin": "https://elsewhere.example"})
    assert "Access-Control-Allow-Credentials" not in r.headers
    r = requests.options(secured.url + "/topics", headers={"Origin": "https://console.example",
                                                           "Access-Control-Request-Method": "POST",
                                                           "Access-Control-Request-Headers": "Authorization, X-CSRF-Token"})
    assert r.status_code == 204
    assert r.headers.get("Access-Control-Allow-Credentials") == "true"
    assert "X-CSRF-Token" in r.headers["Access-Control-Allow-Headers"]


def test_audit_lines_for_refusals_and_admin_writes(secured, topic_name):
    requests.get(secured.url + "/topics", auth=("mallory", "guess"))
    create_topic(secured, topic_name, auth=("admin", USERS["admin"]))
    r = requests.delete(cluster_url(secured, f"/topics/{topic_name}"), auth=("admin", USERS["admin"]))
    assert r.status_code == 204, r.text

    def logged():
        text = secured.log_path.read_text()
        refusal = [line for line in text.splitlines() if "audit=authentication" in line and "User:mallory" in line]
        deleted = [line for line in text.splitlines() if "audit=admin" in line and "DELETE" in line and topic_name in line]
        return refusal and deleted and (refusal, deleted)

    refusal, deleted = wait_until(logged, DEADLINE_S, "the audit lines")
    assert "door=http" in refusal[0] and "peer=127.0.0.1:" in refusal[0] and "wrong user name or password" in refusal[0]
    assert 'principal="User:admin"' in deleted[0] and 'outcome="HTTP 204"' in deleted[0], deleted[0]


FAILED_LOGIN_DELAY_S = 0.5


def timed(fn):
    """fn's answer and the seconds it took."""
    started = time.monotonic()
    answer = fn()
    return answer, time.monotonic() - started


def test_refused_credentials_are_answered_after_the_failed_authentication_delay(ringlog_bin, tmp_path_factory,
                                                                                issuer):
    """Kafka's connection.failed.authentication.delay.ms holds the HTTP door's 401 for checked and
    refused credentials too: a wrong password, an unknown user, a refused JWT, a guessed access
    token, a failed console login, a WebSocket upgrade with a guessed token. A timer on the
    connection: while a guess waits, a good call on the same shard (num.shards=1) is answered."""
    delay_ms = int(FAILED_LOGIN_DELAY_S * 1000)
    b = start_secured(tmp_path_factory, issuer, extra=[f"connection.failed.authentication.delay.ms={delay_ms}",
                                                      "num.shards=1"])
    try:
        whoami_url = b.url + "/v1/whoami"
        assert requests.get(whoami_url, auth=ALICE, timeout=DEADLINE_S).status_code == 200
        refusals = {
            "wrong password": lambda: requests.get(whoami_url, auth=("alice", "wrong"), timeout=DEADLINE_S),
            "unknown user": lambda: requests.get(whoami_url, auth=("mallory", "x"), timeout=DEADLINE_S),
            "refused JWT": lambda: requests.get(whoami_url, timeout=DEADLINE_S, headers={
                "Authorization": "Bearer " + issuer.token(iss="https://evil.test")}),
            "guessed access token": lambda: requests.get(whoami_url, params={"access_token": "guessed"},
                                                         timeout=DEADLINE_S),
            "console login": lambda: requests.post(b.url + "/v1/login", json={"user": "alice", "password": "x"},
                                                   timeout=DEADLINE_S),
        }
        for what, call in refusals.items():
            r, took = timed(call)
            assert_401(r)
            assert took >= FAILED_LOGIN_DELAY_S, (what, took)

        async def upgrade_refused():
            with pytest.raises(websockets.InvalidStatusCode) as e:
                async with websockets.connect(f"ws://127.0.0.1:{b.port}/v1/ws?access_token=guessed"):
                    pass
            return e.value.status_code

        status, took = timed(lambda: asyncio.run(upgrade_refused()))
        assert status == 401 and took >= FAILED_LOGIN_DELAY_S, took

        # A guess in flight (its audit line is written at the check, before the wait) holds no
        # other connection of its shard: a good call sent after it is answered before it.
        done = {}
        audited = b.log_path.read_text().count("wrong user name or password")
        guess = threading.Thread(target=lambda: done.setdefault("guess", (
            requests.get(whoami_url, auth=("alice", "concurrent-guess"), timeout=DEADLINE_S), time.monotonic())))
        guess.start()
        wait_until(lambda: b.log_path.read_text().count("wrong user name or password") > audited, DEADLINE_S,
                   "the guess's audit line")
        good, good_at = requests.get(whoami_url, auth=BOB, timeout=DEADLINE_S), time.monotonic()
        guess.join(DEADLINE_S)
        assert good.status_code == 200, good.text
        assert_401(done["guess"][0])
        assert good_at < done["guess"][1]
        # No credentials is no failed login: the challenge is not held (nothing to assert on time
        # but that it is a 401; the browser's first request gets it).
        assert_401(requests.get(whoami_url, timeout=DEADLINE_S))
    finally:
        assert b.stop() == 0


def test_metrics_authentication_setting(ringlog_bin, tmp_path_factory, issuer):
    b = start_secured(tmp_path_factory, issuer, ["http.metrics.authentication=true", "http.authentication.method=BASIC"])
    try:
        assert_401(requests.get(b.url + "/metrics"))
        assert requests.get(b.url + "/metrics", auth=ALICE).status_code == 200
        assert requests.get(b.url + "/v1/health").status_code == 200
        # BASIC only: a valid JWT is not a way in.
        r = requests.get(b.url + "/v1/whoami", headers={"Authorization": "Bearer " + issuer.token()})
        assert_401(r, "not enabled")
    finally:
        assert b.stop() == 0


def test_authentication_off_by_default_is_anonymous(broker):
    r = requests.get(broker.url + "/v1/whoami")
    assert r.status_code == 200
    assert r.json() == {"principal": "User:ANONYMOUS", "authentication": "NONE", "methods": [], "via": "none"}


def test_producer_sessions_belong_to_their_principal(secured, topic_name):
    create_topic(secured, topic_name)
    r = requests.post(cluster_url(secured, "/producers"), json={}, auth=ALICE)
    assert r.status_code == 201, r.text
    params = {"producer_id": r.json()["producer_id"], "producer_epoch": r.json()["producer_epoch"]}
    url = cluster_url(secured, f"/topics/{topic_name}/records")
    record = {"partition_id": 0, "sequence": 0, "value": {"type": "JSON", "data": "x"}}
    r = requests.post(url, params=params, json=record, auth=BOB)
    assert r.status_code == 404 and r.json()["error_code"] == 40405, r.text
    assert end_offset(secured, topic_name) == 0
    r = requests.post(url, params=params, json=record, auth=ALICE)
    assert r.status_code == 200 and r.json()["error_code"] == 200, r.text
    assert end_offset(secured, topic_name) == 1
    # The WebSocket door likewise (the breaker's probe_ws_producer.py: Bob's frame naming Alice's
    # producer id was stored, and Alice's next record then taken for a duplicate).
    token = requests.post(secured.url + "/v1/tokens", auth=BOB).json()["access_token"]

    async def bob_frame():
        async with websockets.connect(secured.url.replace("http://", "ws://") + "/v1/ws?access_token=" + token) as ws:
            await ws.send(json.dumps({"type": "produce", "id": 1, "topic": topic_name, "partition": 0, "sequence": 1,
                                      "value": "eA==", **params}))
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

    frame = asyncio.run(bob_frame())
    assert frame.get("error_code") == 40405, frame
    assert end_offset(secured, topic_name) == 1


def test_a_rotated_key_is_read_from_the_jwks_file_without_a_restart(ringlog_bin, tmp_path_factory, issuer):
    b = start_secured(tmp_path_factory, issuer, ["sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms=0"])
    try:
        rotated = Issuer()
        jwks = dict(issuer.jwks())
        new_key = dict(rotated.jwks()["keys"][0], kid="rsa-2")
        (b.data_dir.parent / "jwks.json").write_text(json.dumps({"keys": jwks["keys"] + [new_key]}))
        token = rotated.token(sub="rotated", kid="rsa-2")

        def accepted():
            r = requests.get(b.url + "/v1/whoami", headers={"Authorization": f"Bearer {token}"})
            assert r.status_code in (200, 401), r.text
            return r.status_code == 200 and r.json()["principal"] == "User:rotated"

        wait_until(accepted, DEADLINE_S, "the rotated key to be read")
        # The old keys still verify.
        r = requests.get(b.url + "/v1/whoami", headers={"Authorization": f"Bearer {issuer.token(sub='carol')}"})
        assert r.status_code == 200, r.text
    finally:
        assert b.stop() == 0


def test_only_super_users_change_users_over_http(secured):
    """A breaker, as alice, reset admin's password and logged in as admin: with HTTP authentication
    on, only super.users may create, change or delete users; the others get 403 (40301) and
    nothing changes."""
    users = secured.url + "/v3/clusters/ringlog-cluster/users/admin"
    r = requests.post(users, auth=ALICE, json={"mechanism": "SCRAM-SHA-512", "password": "pwned"})
    assert r.status_code == 403 and r.json()["error_code"] == 40301, r.text
    r = requests.delete(users, auth=ALICE)
    assert r.status_code == 403, r.text
    assert requests.get(secured.url + "/v1/whoami", auth=("admin", USERS["admin"])).status_code == 200
    assert requests.get(secured.url + "/v1/whoami", auth=("admin", "pwned")).status_code == 401
    # The super user may (a new user, then gone again).
    admin = ("admin", USERS["admin"])
    r = requests.post(secured.url + "/v3/clusters/ringlog-cluster/users/carol", auth=admin, json={"mechanism": "SCRAM-SHA-512", "password": "carol-pw"})
    assert r.status_code == 200, r.text
    assert requests.get(secured.url + "/v1/whoami", auth=("carol", "carol-pw")).status_code == 200
    assert requests.delete(secured.url + "/v3/clusters/ringlog-cluster/users/carol", auth=admin).status_code in (200, 204)


def test_a_deleted_user_or_a_changed_password_ends_sessions_and_tokens(secured):
    """The breaker's MEDIUM of session 23: after DELETE users/dave (or a new password) dave's
    console session and access token still answered 200 for up to http.session.max.age.ms. Each
    now remembers the user's credentials as they were when it began and ends once they differ."""
    admin = ("admin", USERS["admin"])
    users = secured.url + "/v3/clusters/ringlog-cluster/users/dave"
    r = requests.post(users, auth=admin, json={"mechanism": "SCRAM-SHA-512", "password": "dave-pw"})
    assert r.status_code == 200, r.text
    s, r = login(secured, "dave", "dave-pw")
    assert r.status_code == 200, r.text
    token = requests.post(secured.url + "/v1/tokens", auth=("dave", "dave-pw")).json()["access_token"]
    assert s.get(secured.url + "/v1/whoami").status_code == 200
    assert requests.get(secured.url + "/v1/whoami", params={"access_token": token}).status_code == 200
    assert requests.delete(users, auth=admin).status_code in (200, 204)
    assert_401(s.get(secured.url + "/v1/whoami"), "deleted or its password changed")
    assert_401(requests.get(secured.url + "/v1/whoami", params={"access_token": token}), "deleted or its password changed")
    # The same name again with a new password: the old session stays ended; a new login works,
    # and a second password change ends that one too.
    r = requests.post(users, auth=admin, json={"mechanism": "SCRAM-SHA-512", "password": "dave-new"})
    assert r.status_code == 200, r.text
    assert_401(s.get(secured.url + "/v1/whoami"))
    s2, r = login(secured, "dave", "dave-new")
    assert r.status_code == 200 and s2.get(secured.url + "/v1/whoami").json()["principal"] == "User:dave"
    r = requests.post(users, auth=admin, json={"mechanism": "SCRAM-SHA-512", "password": "dave-newer"})
    assert r.status_code == 200, r.text
    assert_401(s2.get(secured.url + "/v1/whoami"), "deleted or its password changed")
    assert requests.delete(users, auth=admin).status_code in (200, 204)


def test_the_cli_authenticates_with_ringlog_user_or_token(secured, ringlog_bin, issuer):
    """A new user found every CLI command answering 401 once HTTP authentication was on: the CLI
    sends RINGLOG_USER/RINGLOG_PASSWORD as Basic, or RINGLOG_TOKEN as Bearer."""
    args = [str(ringlog_bin), "topics", "list", "--bootstrap-server", secured.url]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGLOG_")}
    refused = subprocess.run(args, capture_output=True, text=True, timeout=30, env=env)
    assert refused.returncode != 0 and "40101" in refused.stdout + refused.stderr, refused
    basic = subprocess.run(args, capture_output=True, text=True, timeout=30,
                           env=dict(env, RINGLOG_USER="alice", RINGLOG_PASSWORD=USERS["alice"]))
    assert basic.returncode == 0, basic
    wrong = subprocess.run(args, capture_output=True, text=True, timeout=30,
                           env=dict(env, RINGLOG_USER="alice", RINGLOG_PASSWORD="wrong"))
    assert wrong.returncode != 0, wrong


def test_a_refused_token_cannot_add_response_headers(secured, issuer):
    """A breaker put CR LF in a token's kid: the 401 quoted it into WWW-Authenticate, which let a
    request add headers of its choosing (Set-Cookie) to the answer. The description now keeps
    RFC 6750's characters only."""
    token = issuer.token(kid="x\r\nSet-Cookie: evil=1\r\nX-Evil: 1")
    r = requests.get(secured.url + "/v1/whoami", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 401, r.text
    assert "Set-Cookie" not in r.headers and "X-Evil" not in r.headers, r.headers
    assert all("\r" not in v and "\n" not in v for v in r.headers.values()), r.headers


def test_the_name_anonymous_is_reserved_for_callers_that_did_not_log_in(secured, issuer):
    """A token naming sub ANONYMOUS was taken for "authentication off" and could change users;
    neither a token nor a SCRAM user may take that name."""
    r = requests.get(secured.url + "/v1/whoami", headers={"Authorization": f"Bearer {issuer.token(sub='ANONYMOUS')}"})
    assert_401(r, "no_subject")
    admin = ("admin", USERS["admin"])
    r = requests.post(secured.url + "/v3/clusters/ringlog-cluster/users/ANONYMOUS", auth=admin,
                      json={"mechanism": "SCRAM-SHA-512", "password": "x-pw"})
    assert r.status_code == 422 and "reserved" in r.json()["message"], r.text


class JwksServer:
    """An identity provider's JWKS endpoint over https (http.server + ssl) on 127.0.0.1, in a
    thread: GET /jwks.json answers `jwks` (replace it to rotate), /moved answers a redirect."""

    def __init__(self, keystore_pem, jwks):
        self.jwks = jwks
        self.gets = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.gets += 1
                if self.path == "/moved":
                    self.send_response(302)
                    self.send_header("Location", "/jwks.json")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = json.dumps(outer.jwks).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(keystore_pem)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path="/jwks.json"):
        return f"https://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def whoami(b, token):
    r = requests.get(b.url + "/v1/whoami", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code in (200, 401), r.text
    return r.json()["principal"] if r.status_code == 200 else None


def rotated_jwks(issuer, kid="rsa-2"):
    """(the issuer's JWKS plus a new issuer's RSA key as `kid`, that new issuer)."""
    rotated = Issuer()
    return {"keys": issuer.jwks()["keys"] + [dict(rotated.jwks()["keys"][0], kid=kid)]}, rotated


def test_the_jwks_is_fetched_over_https_and_again_for_an_unknown_kid(ringlog_bin, tmp_path_factory, issuer):
    certs = tls_certs.Material(tmp_path_factory.mktemp("jwks-tls"))
    with JwksServer(certs.broker_pem, issuer.jwks()) as idp:
        b = start_secured(tmp_path_factory, issuer, [f"sasl.oauthbearer.jwks.endpoint.url={idp.url()}",
                                                     f"ssl.truststore.location={certs.ca_file}",
                                                     "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms=0"])
        try:
            assert whoami(b, issuer.token(sub="carol")) == "User:carol"
            idp.jwks, rotated = rotated_jwks(issuer)
            token = rotated.token(sub="rotated", kid="rsa-2")
            wait_until(lambda: whoami(b, token) == "User:rotated", DEADLINE_S, "the rotated key to be fetched")
            assert whoami(b, issuer.token(sub="carol")) == "User:carol"   # the old keys still verify
            # The identity provider down: a refresh fails, the keys fetched stay.
            idp.httpd.shutdown()
            idp.httpd.server_close()
            assert whoami(b, rotated.token(sub="x", kid="rsa-unknown")) is None
            wait_until(lambda: "JWKS refresh failed; the old keys stay" in b.log_path.read_text(), DEADLINE_S, "the failed refresh")
            assert whoami(b, token) == "User:rotated"
        finally:
            assert b.stop() == 0


def test_the_jwks_is_fetched_again_every_refresh_ms(ringlog_bin, tmp_path_factory, issuer):
    certs = tls_certs.Material(tmp_path_factory.mktemp("jwks-tls"))
    with JwksServer(certs.broker_pem, issuer.jwks()) as idp:
        # No fetch for an unknown kid within the hour: only the periodic refresh can find the key.
        b = start_secured(tmp_path_factory, issuer, [f"sasl.oauthbearer.jwks.endpoint.url={idp.url()}",
                                                     f"ssl.truststore.location={certs.ca_file}",
                                                     "sasl.oauthbearer.jwks.endpoint.refresh.ms=1000",
                                                     "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms=3600000"])
        try:
            idp.jwks, rotated = rotated_jwks(issuer)
            token = rotated.token(sub="rotated", kid="rsa-2")
            wait_until(lambda: whoami(b, token) == "User:rotated", DEADLINE_S, "the periodic refresh")
            assert idp.gets >= 2
        finally:
            assert b.stop() == 0


def refused_at_start(tmp_path, *sets):
    r = subprocess.run([str(binary_path()), "serve", "--set", f"log.dirs={tmp_path}/d", "--set", "listeners=http://127.0.0.1:0",
                        *[a for s in sets for a in ("--set", s)]], capture_output=True, timeout=60)
    assert r.returncode == 2, r
    return (r.stdout + r.stderr).decode()


def test_a_jwks_url_that_cannot_be_trusted_stops_the_start_naming_the_key(ringlog_bin, tmp_path):
    certs = tls_certs.Material(tmp_path / "tls")
    stranger_pem, _ = certs.keystore("stranger-server.pem", ca=certs.stranger_ca)
    with JwksServer(stranger_pem, Issuer().jwks()) as stranger:
        text = refused_at_start(tmp_path, f"sasl.oauthbearer.jwks.endpoint.url={stranger.url()}",
                                f"ssl.truststore.location={certs.ca_file}")
        assert "sasl.oauthbearer.jwks.endpoint.url" in text and stranger.url() in text, text
        assert "certificate verify failed" in text, text
    with JwksServer(certs.broker_pem, Issuer().jwks()) as idp:
        text = refused_at_start(tmp_path, f"sasl.oauthbearer.jwks.endpoint.url={idp.url('/moved')}",
                                f"ssl.truststore.location={certs.ca_file}")
        assert "sasl.oauthbearer.jwks.endpoint.url" in text and "redirects are not followed" in text, text
    text = refused_at_start(tmp_path, "sasl.oauthbearer.jwks.endpoint.url=http://127.0.0.1:1/jwks.json")
    assert "sasl.oauthbearer.jwks.endpoint.url" in text and "plaintext" in text, text


def test_an_open_websocket_ends_with_its_credential(secured, topic_name):
    """The breaker's MEDIUM of session 26: a WebSocket opened with the session cookie kept
    producing after POST /v1/logout (the cookie itself got 401) and after DELETE users/NAME, and
    one opened with ?access_token= after the user's password changed. Each socket now checks its
    credential again before serving a message (and on its 2 s tick, so an idle subscriber ends
    too): an `error` with 40101 naming why, then close 1008. Nothing after the end is stored."""
    create_topic(secured, topic_name)
    admin = ("admin", USERS["admin"])
    users = secured.url + "/v3/clusters/ringlog-cluster/users/erin"
    ws_url = f"ws://127.0.0.1:{secured.port}/v1/ws"

    def set_password(password):
        r = requests.post(users, auth=admin, json={"mechanism": "SCRAM-SHA-512", "password": password})
        assert r.status_code == 200, r.text

    async def produce(ws, value):
        await ws.send(json.dumps({"type": "produce", "id": value, "topic": topic_name, "partition": 0, "value": b64(value)}))
        return json.loads(await asyncio.wait_for(ws.recv(), DEADLINE_S))

    async def assert_ended(ws, reason, send=True):
        if send:
            await ws.send(json.dumps({"type": "produce", "id": "late", "topic": topic_name, "partition": 0,
                                      "value": b64("after the end")}))
        error = json.loads(await asyncio.wait_for(ws.recv(), DEADLINE_S))
        assert error["type"] == "error" and error["error_code"] == 40101 and reason in error["message"], error
        with pytest.raises(websockets.ConnectionClosed) as e:
            await asyncio.wait_for(ws.recv(), DEADLINE_S)
        assert e.value.code == 1008 and reason in e.value.reason, e.value

    async def opened(**kw):
        ws = await websockets.connect(ws_url + kw.pop("query", ""), **kw)
        ack = await produce(ws, "before")
        assert ack.get("type") == "produce_ack", ack
        return ws

    async def scenario():
        set_password("erin-pw")
        # 1. The session cookie, then POST /v1/logout.
        s, r = login(secured, "erin", "erin-pw")
        assert r.status_code == 200, r.text
        cookie = {"Cookie": f"ringlog_session={s.cookies['ringlog_session']}"}
        ws = await opened(extra_headers=cookie)
        assert s.post(secured.url + "/v1/logout", headers={"X-CSRF-Token": r.json()["csrf_token"]}).status_code == 204
        await assert_ended(ws, "session ended")
        # 2. An idle subscriber's session logs out: the tick ends it without a client message.
        s, r = login(secured, "erin", "erin-pw")
        cookie = {"Cookie": f"ringlog_session={s.cookies['ringlog_session']}"}
        ws = await opened(extra_headers=cookie)
        await ws.send(json.dumps({"type": "subscribe", "id": "s", "topic": topic_name, "partition": 0, "offset": 0}))
        assert s.post(secured.url + "/v1/logout", headers={"X-CSRF-Token": r.json()["csrf_token"]}).status_code == 204
        while True:   # the subscription's answer and records, then the error
            m = json.loads(await asyncio.wait_for(ws.recv(), DEADLINE_S))
            if m["type"] == "error":
                assert m["error_code"] == 40101 and "session ended" in m["message"], m
                break
        with pytest.raises(websockets.ConnectionClosed) as e:
            await asyncio.wait_for(ws.recv(), DEADLINE_S)
        assert e.value.code == 1008, e.value
        # 3. The session cookie, then the user is deleted (and made again: still ended).
        s, r = login(secured, "erin", "erin-pw")
        ws = await opened(extra_headers={"Cookie": f"ringlog_session={s.cookies['ringlog_session']}"})
        assert requests.delete(users, auth=admin).status_code in (200, 204)
        set_password("erin-pw")
        await assert_ended(ws, "deleted or its password changed")
        # 4. An access token, then a new password.
        token = requests.post(secured.url + "/v1/tokens", auth=("erin", "erin-pw")).json()["access_token"]
        ws = await opened(query="?access_token=" + token)
        set_password("erin-pw-2")
        await assert_ended(ws, "deleted or its password changed")
        # 5. Basic on the upgrade, then a new password.
        basic = {"Authorization": "Basic " + base64.b64encode(b"erin:erin-pw-2").decode()}
        ws = await opened(extra_headers=basic)
        set_password("erin-pw-3")
        await assert_ended(ws, "deleted or its password changed")
        # A socket whose credential holds is untouched by the others ending.
        basic = {"Authorization": "Basic " + base64.b64encode(b"erin:erin-pw-3").decode()}
        ws = await opened(extra_headers=basic)
        assert (await produce(ws, "still fine")).get("type") == "produce_ack"
        await ws.close()

    asyncio.run(scenario())
    assert end_offset(secured, topic_name) == 7   # one "before" per socket and "still fine"; no "after the end"
    assert requests.delete(users, auth=admin).status_code in (200, 204)
