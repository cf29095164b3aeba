"""The browser console's files (issue 6), embedded into the binary at build time, are served at
/console with their Content-Type, an ETag that answers 304, HEAD without a body, and a JSON 404
for a file that is not there. The pages themselves are tested in a browser (web-console/tests)."""
import hashlib
import pathlib
import socket

import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
SRC = ROOT / "web-console" / "src"
TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}


def test_every_console_file_is_served_byte_for_byte_with_its_type(broker):
    files = sorted(p for p in SRC.iterdir() if p.is_file())
    assert len(files) >= 10
    for path in files:
        r = requests.get(f"{broker.url}/console/{path.name}")
        assert r.status_code == 200, (path.name, r.text)
        assert r.content == path.read_bytes(), f"{path.name} differs from web-console/src: rebuild"
        assert r.headers["Content-Type"].split(";")[0] == TYPES[path.suffix]
        assert r.headers["ETag"] == '"' + hashlib.sha256(path.read_bytes()).hexdigest()[:16] + '"'
        assert r.headers["Cache-Control"] == "no-cache"
        assert r.headers["X-Content-Type-Options"] == "nosniff"


def test_console_root_is_the_index_page_with_a_content_security_policy(broker):
    index = (SRC / "index.html").read_bytes()
    for path in ("/console", "/console/", "/console/index.html"):
        r = requests.get(broker.url + path, allow_redirects=False)
        assert r.status_code == 200, path
        assert r.content == index
        assert r.headers["Content-Type"] == "text/html; charset=utf-8"
        assert "frame-ancestors 'none'" in r.headers["Content-Security-Policy"]


def test_etag_revalidation_answers_304_without_a_body(broker):
    first = requests.get(f"{broker.url}/console/app.js")
    etag = first.headers["ETag"]
    for header in (etag, f'"x", W/{etag}', "*"):
        again = requests.get(f"{broker.url}/console/app.js", headers={"If-None-Match": header})
        assert again.status_code == 304, header
        assert again.content == b""
        assert again.headers["ETag"] == etag
    changed = requests.get(f"{broker.url}/console/app.js", headers={"If-None-Match": '"0000000000000000"'})
    assert changed.status_code == 200 and changed.content == first.content


def test_head_answers_the_headers_and_length_without_the_body(broker):
    get = requests.get(f"{broker.url}/console/app.css")
    # Raw socket: a client library might hide a body sent after a HEAD's headers.
    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as s:
        s.sendall(b"HEAD /console/app.css HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    assert f"Content-Length: {len(get.content)}".encode() in head
    assert b"ETag: " + get.headers["ETag"].encode() in head
    # The next bytes on the connection are the second answer, not the stylesheet.
    assert rest.startswith(b"HTTP/1.1 200"), rest[:80]
    assert rest.endswith(b'{"status":"ok"}')


def test_unknown_console_files_are_404_with_the_error_body(broker):
    for path in ("/console/nope.js", "/console/..%2Fmeson.build", "/console/a/b.js"):
        r = requests.get(broker.url + path)
        assert r.status_code == 404, path
        body = r.json()
        assert body["error_code"] == 404
        assert body["message"], path
    r = requests.post(f"{broker.url}/console/app.js", data="x")
    assert r.status_code == 405
    assert r.headers["Allow"] == "GET, HEAD, OPTIONS"
