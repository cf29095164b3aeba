"""Any Kafka request by its message schema (src/protocol/schemas/*.json, Kafka's message JSON), for
tests that walk every api the server serves: encodes a request given as a dict of the fields it sets
(the rest take the schema's defaults), decodes the answer into dicts. Both encodings: classic and
flexible (KIP-482: compact lengths, tagged fields; unknown tags are skipped). Stdlib only.
"""
import json
import pathlib
import struct
import uuid as uuid_module

import kafka_wire
from kafka_wire import uvarint

SCHEMAS = pathlib.Path(__file__).resolve().parents[2] / "src" / "protocol" / "schemas"
INTS = {"int8": ">b", "int16": ">h", "uint16": ">H", "int32": ">i", "uint32": ">I", "int64": ">q", "float64": ">d"}


def in_versions(spec, v):
    if spec is None or spec == "none":
        return False
    if spec.endswith("+"):
        return v >= int(spec[:-1])
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo) <= v <= int(hi)
    return v == int(spec)


class Message:
    """One message schema: `Message("MetadataRequest")`."""

    def __init__(self, name):
        self.schema = json.loads((SCHEMAS / f"{name}.json").read_text())
        self.api_key = self.schema.get("apiKey")
        self.common = {s["name"]: s["fields"] for s in self.schema.get("commonStructs", [])}

    def flexible(self, v):
        return in_versions(self.schema.get("flexibleVersions"), v)

    def _struct_fields(self, field):
        if "fields" in field:
            return field["fields"]
        return self.common[field["type"].lstrip("[]")]

    # ---- encode
    def encode(self, v, values):
        return self._encode_fields(self.schema["fields"], v, values or {})

    def _encode_fields(self, fields, v, values):
        flex = self.flexible(v)
        out = b""
        for f in fields:
            if not in_versions(f["versions"], v) or (flex and in_versions(f.get("taggedVersions"), v)):
                continue
            out += self._encode_value(f, v, values.get(f["name"], self._default(f)), flex)
        if flex:
            out += uvarint(0)   # no tagged fields
        return out

    def _default(self, f):
        t, d = f["type"], f.get("default")
        if d == "null":
            return None
        if t.startswith("[]"):
            return []
        if t in INTS:
            if d is None:
                return 0
            return float(d) if t == "float64" else int(d, 0) if isinstance(d, str) else int(d)
        if t == "bool":
            return d in ("true", True)
        if t == "string":
            return d or ""
        if t in ("bytes", "records"):
            return b""
        if t == "uuid":
            return bytes(16)
        return {}

    def _encode_value(self, f, v, value, flex):
        t = f["type"]
        if t.startswith("[]"):
            if value is None:
                return uvarint(0) if flex else struct.pack(">i", -1)
            out = uvarint(len(value) + 1) if flex else struct.pack(">i", len(value))
            inner = t[2:]
            for item in value:
                if inner in INTS or inner in ("bool", "string", "bytes", "uuid", "records"):
                    out += self._encode_value({"type": inner}, v, item, flex)
                else:
                    out += self._encode_fields(self._struct_fields(f), v, item)
            return out
        if t in INTS:
            return struct.pack(INTS[t], value)
        if t == "bool":
            return struct.pack(">?", value)
        if t == "uuid":
            return value
        if t == "string":
            if value is None:
                return uvarint(0) if flex else struct.pack(">h", -1)
            b = value.encode()
            return (uvarint(len(b) + 1) if flex else struct.pack(">h", len(b))) + b
        if t in ("bytes", "records"):
            if value is None:
                return uvarint(0) if flex else struct.pack(">i", -1)
            return (uvarint(len(value) + 1) if flex else struct.pack(">i", len(value))) + value
        return self._encode_fields(self._struct_fields(f), v, value)

    # ---- decode
    def decode(self, v, data):
        r = _Reader(data)
        out = self._decode_fields(self.schema["fields"], v, r)
        return out

    def _decode_fields(self, fields, v, r):
        flex = self.flexible(v)
        out = {}
        for f in fields:
            if not in_versions(f["versions"], v) or (flex and in_versions(f.get("taggedVersions"), v)):
                continue
            out[f["name"]] = self._decode_value(f, v, r, flex)
        if flex:
            for _ in range(r.uvarint()):
                r.uvarint()
                r.pos += r.uvarint()
        return out

    def _decode_value(self, f, v, r, flex):
        t = f["type"]
        if t.startswith("[]"):
            n = r.uvarint() - 1 if flex else r.take(">i")
            if n < 0:
                return None
            inner = t[2:]
            if inner in INTS or inner in ("bool", "string", "bytes", "uuid", "records"):
                return [self._decode_value({"type": inner}, v, r, flex) for _ in range(n)]
            return [self._decode_fields(self._struct_fields(f), v, r) for _ in range(n)]
        if t in INTS:
            return r.take(INTS[t])
        if t == "bool":
            return r.take(">?")
        if t == "uuid":
            return str(uuid_module.UUID(bytes=r.raw(16)))
        if t == "string":
            n = r.uvarint() - 1 if flex else r.take(">h")
            return None if n < 0 else r.raw(n).decode()
        if t in ("bytes", "records"):
            n = r.uvarint() - 1 if flex else r.take(">i")
            return None if n < 0 else r.raw(n)
        return self._decode_fields(self._struct_fields(f), v, r)


class _Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def raw(self, n):
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def uvarint(self):
        shift = value = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7


def api_name(api_key):
    for p in SCHEMAS.glob("*Request.json"):
        s = json.loads(p.read_text())
        if s.get("apiKey") == api_key and s.get("type") == "request":
            return s["name"][:-len("Request")]
    return None


def exchange(sock, name, version, correlation_id, values, client_id="ringlog-test"):
    """Sends `name`Request at `version` with `values` (header client.id `client_id`); returns the
    decoded `name`Response."""
    request, response = Message(name + "Request"), Message(name + "Response")
    flex = request.flexible(version)
    header = struct.pack(">hhi", request.api_key, version, correlation_id) + kafka_wire.string(client_id)
    if flex:
        header += uvarint(0)
    payload = header + request.encode(version, values)
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    size = struct.unpack(">i", kafka_wire.read_exact(sock, 4))[0]
    body = kafka_wire.read_exact(sock, size)
    assert struct.unpack_from(">i", body)[0] == correlation_id
    offset = 4
    if response.flexible(version) and request.api_key != 18:   # ApiVersions: always header v0 (KIP-511)
        r = _Reader(body[offset:])
        for _ in range(r.uvarint()):
            r.uvarint()
            r.pos += r.uvarint()
        offset += r.pos
    return response.decode(version, body[offset:])


def error_codes(decoded):
    """Every *ErrorCode value anywhere in a decoded answer."""
    found = []
    stack = [decoded]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            for k, value in x.items():
                if k.endswith("ErrorCode") and isinstance(value, int):
                    found.append(value)
                else:
                    stack.append(value)
        elif isinstance(x, list):
            stack.extend(x)
    return found
