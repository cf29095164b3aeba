"""A few Kafka requests by hand (protocol guide, "Requests and Responses"), for tests that need
bytes no client library sends: unsupported versions, corrupt batches, malformed frames, and a
Fetch whose timing is measured. Non-flexible versions only (request header v1, response header v0).
"""
import socket
import struct

from kafka.record.default_records import DefaultRecordBatchBuilder

API_PRODUCE, API_FETCH, API_VERSIONS = 0, 1, 18


def string(s):
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def frame(api_key, version, correlation_id, body, client_id="ringlog-test"):
    payload = struct.pack(">hhi", api_key, version, correlation_id) + string(client_id) + body
    return struct.pack(">i", len(payload)) + payload


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take(">h")
        if n < 0:
            return None
        s = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return s

    def bytes(self):
        n = self.take(">i")
        if n < 0:
            return None
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b


def connect(bootstrap, timeout=10):
    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout)


def read_exact(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("connection closed")
        out += chunk
    return out


def exchange(sock, api_key, version, correlation_id, body):
    """Sends one request and returns (correlation_id, response body after header v0)."""
    sock.sendall(frame(api_key, version, correlation_id, body))
    size = struct.unpack(">i", read_exact(sock, 4))[0]
    data = read_exact(sock, size)
    return struct.unpack_from(">i", data)[0], data[4:]


def uvarint(n):
    """An unsigned varint (flexible versions: compact lengths, tagged-field counts)."""
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if not n:
            return out + bytes([b])
        out += bytes([b | 0x80])


def compact_string(s):
    b = s.encode() if isinstance(s, str) else s
    return uvarint(len(b) + 1) + b


class FlexReader(Reader):
    """A Reader for flexible versions: unsigned varints, compact strings and arrays, tagged fields."""

    def uvarint(self):
        shift = n = 0
        while True:
            b = self.take(">B")
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7

    def compact_string(self):
        n = self.uvarint()
        if n == 0:
            return None
        s = self.data[self.pos:self.pos + n - 1].decode()
        self.pos += n - 1
        return s

    def int32s(self):
        """A compact array of int32."""
        return [self.take(">i") for _ in range(self.uvarint() - 1)]

    def tagged(self):
        """{tag: raw bytes} of a tagged-field section."""
        out = {}
        for _ in range(self.uvarint()):
            tag, size = self.uvarint(), self.uvarint()
            out[tag] = self.data[self.pos:self.pos + size]
            self.pos += size
        return out

    def skip_tags(self):
        assert self.uvarint() == 0


def exchange_flexible(sock, api_key, version, correlation_id, body, client_id="ringlog-test"):
    """Sends one request with header v2 (header v1 + an empty tagged-field section) and returns
    (correlation_id, the response after its correlation id). ApiVersions answers with header v0,
    every other flexible answer has header v1: its tagged-field byte is left at the body's start."""
    payload = struct.pack(">hhi", api_key, version, correlation_id) + string(client_id) + b"\x00" + body
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    size = struct.unpack(">i", read_exact(sock, 4))[0]
    data = read_exact(sock, size)
    return struct.unpack_from(">i", data)[0], data[4:]


def api_versions_error(body):
    """The error code of an ApiVersions v0 response body."""
    return struct.unpack_from(">h", body)[0]


def batch(records, compression=0, base_offset=0, producer=None, transactional=False):
    """A v2 record batch built by kafka-python: records are (key, value, headers, timestamp).
    `producer`: (producer_id, producer_epoch, base_sequence) of an idempotent or transactional
    producer; `transactional` sets the batch's transactional attribute (bit 4)."""
    producer_id, producer_epoch, base_sequence = producer or (-1, -1, -1)
    b = DefaultRecordBatchBuilder(magic=2, compression_type=compression, is_transactional=transactional,
                                  producer_id=producer_id, producer_epoch=producer_epoch,
                                  base_sequence=base_sequence, batch_size=1 << 20)
    for i, (key, value, headers, ts) in enumerate(records):
        b.append(base_offset + i, timestamp=ts, key=key, value=value, headers=headers or [])
    return bytes(b.build())


def produce_v3(topic, partition, records_bytes, acks=-1, version=3, transactional_id=None):
    """A Produce v3 body (v2 when version=2: no transactional_id); the response shapes match."""
    body = (string(transactional_id) if version >= 3 else b"") + struct.pack(">hi", acks, 10000)
    body += struct.pack(">i", 1) + string(topic) + struct.pack(">i", 1)
    body += struct.pack(">ii", partition, len(records_bytes)) + records_bytes
    return body


def parse_produce_v3(body):
    r = Reader(body)
    out = []
    for _ in range(r.take(">i")):
        topic = r.string()
        for _ in range(r.take(">i")):
            partition, error, base_offset, log_append_time = r.take(">i"), r.take(">h"), r.take(">q"), r.take(">q")
            out.append((topic, partition, error, base_offset, log_append_time))
    return out


def parse_produce_v8(body):
    """[(topic, partition, error, base_offset, error_message)] of a Produce v8 response."""
    r = Reader(body)
    out = []
    for _ in range(r.take(">i")):
        topic = r.string()
        for _ in range(r.take(">i")):
            partition, error, base_offset = r.take(">i"), r.take(">h"), r.take(">q")
            r.take(">q"), r.take(">q")  # log_append_time_ms, log_start_offset
            for _ in range(max(r.take(">i"), 0)):  # record_errors
                r.take(">i"), r.string()
            out.append((topic, partition, error, base_offset, r.string()))
    return out


def with_attributes(records_bytes, bits):
    """One v2 batch with `bits` or'ed into its attributes and its CRC-32C (attributes..end) redone."""
    from kafka.record.util import calc_crc32c
    b = bytearray(records_bytes)
    struct.pack_into(">h", b, 21, struct.unpack_from(">h", b, 21)[0] | bits)
    struct.pack_into(">I", b, 17, calc_crc32c(bytes(b[21:])))
    return bytes(b)


def fetch_v4(topic, partition, offset, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, partition_max_bytes=1 << 20,
             version=4):
    """A Fetch v4 body (v3 when version=3: no isolation_level)."""
    body = struct.pack(">iiii", -1, max_wait_ms, min_bytes, max_bytes) + (b"\x00" if version >= 4 else b"")
    body += struct.pack(">i", 1) + string(topic) + struct.pack(">i", 1)
    body += struct.pack(">iqi", partition, offset, partition_max_bytes)
    return body


def parse_fetch_v4(body, version=4):
    """[(topic, partition, error, high_watermark, records bytes)]."""
    r = Reader(body)
    r.take(">i")  # throttle
    out = []
    for _ in range(r.take(">i")):
        topic = r.string()
        for _ in range(r.take(">i")):
            partition, error, hw = r.take(">i"), r.take(">h"), r.take(">q")
            if version >= 4:
                r.take(">q")  # last_stable_offset
                n = r.take(">i")
                for _ in range(max(n, 0)):
                    r.take(">q"), r.take(">q")
            out.append((topic, partition, error, hw, r.bytes()))
    return out


def batch_attributes(records_bytes):
    """Attributes of each batch in a record set (compression = attributes & 7)."""
    out, pos = [], 0
    while pos + 61 <= len(records_bytes):
        length = struct.unpack_from(">i", records_bytes, pos + 8)[0]
        out.append(struct.unpack_from(">h", records_bytes, pos + 21)[0])
        pos += 12 + length
    return out


API_JOIN_GROUP, API_OFFSET_DELETE = 11, 47


def join_group_v5(group, member_id="", protocol_type="consumer", protocols=(("range", b""),),
                  session_timeout_ms=10_000, rebalance_timeout_ms=10_000, group_instance_id=None):
    body = string(group) + struct.pack(">ii", session_timeout_ms, rebalance_timeout_ms) + string(member_id)
    body += string(group_instance_id) + string(protocol_type) + struct.pack(">i", len(protocols))
    for name, metadata in protocols:
        body += string(name) + struct.pack(">i", len(metadata)) + metadata
    return body


def parse_join_group_v5(body):
    """(error_code, generation, protocol_name, leader, member_id) of a JoinGroup v5 response."""
    r = Reader(body)
    r.take(">i")  # throttle_time_ms
    error = r.take(">h")
    generation = r.take(">i")
    return error, generation, r.string(), r.string(), r.string()


def offset_delete_v0(group, topics):
    """topics: {name: [partition, ...]}."""
    body = string(group) + struct.pack(">i", len(topics))
    for name, partitions in topics.items():
        body += string(name) + struct.pack(">i", len(partitions))
        for p in partitions:
            body += struct.pack(">i", p)
    return body


def parse_offset_delete_v0(body):
    """(error_code, {(topic, partition): error_code})."""
    r = Reader(body)
    error = r.take(">h")
    r.take(">i")  # throttle_time_ms
    out = {}
    for _ in range(r.take(">i")):
        name = r.string()
        for _ in range(r.take(">i")):
            p = r.take(">i")
            out[(name, p)] = r.take(">h")
    return error, out


API_INCREMENTAL_ALTER_CONFIGS = 44
RESOURCE_TOPIC, RESOURCE_BROKER = 2, 4


def incremental_alter_config_v0(bootstrap, resource_type, resource_name, name, value, operation=0,
                                validate_only=False):
    """IncrementalAlterConfigs v0 (KIP-339) of one config of one resource (operation 0 SET,
    1 DELETE; a BROKER named "" is the cluster-wide default): (error_code, error_message)."""
    body = (struct.pack(">i", 1) + struct.pack(">b", resource_type) + string(resource_name) + struct.pack(">i", 1) +
            string(name) + struct.pack(">b", operation) + string(value) + struct.pack(">?", validate_only))
    with connect(bootstrap) as s:
        _, resp = exchange(s, API_INCREMENTAL_ALTER_CONFIGS, 0, 7, body)
    r = Reader(resp)
    r.take(">i")   # throttle_time_ms
    assert r.take(">i") == 1
    return r.take(">h"), r.string()


API_OFFSET_FETCH = 9


def offset_fetch_request(version, group, topics, require_stable=False):
    """An OffsetFetch body, v6-v8 (flexible). `topics`: [(name, [partition, ...])], or None for
    every committed partition (v8 only). require_stable (KIP-447) is v7+; v8 names one group in
    its `groups` array (KIP-709)."""
    assert 6 <= version <= 8
    assert topics is not None or version == 8
    if topics is None:
        listed = uvarint(0)
    else:
        listed = uvarint(len(topics) + 1) + b"".join(
            compact_string(name) + uvarint(len(parts) + 1) + b"".join(struct.pack(">i", p) for p in parts) + b"\x00"
            for name, parts in topics)
    stable = struct.pack(">b", 1 if require_stable else 0) if version >= 7 else b""
    if version < 8:
        return compact_string(group) + listed + stable + b"\x00"
    return uvarint(2) + compact_string(group) + listed + b"\x00" + stable + b"\x00"


def parse_offset_fetch(version, body):
    """(error, {(topic, partition): (committed_offset, error)}) of an OffsetFetch v6-v8 answer
    (the body after the correlation id, header v1). error: the top-level one (v6-v7) or the one
    group's (v8)."""
    r = FlexReader(body)
    r.skip_tags()        # response header v1
    r.take(">i")         # throttle_time_ms

    def topics():
        out = {}
        for _ in range(r.uvarint() - 1):
            name = r.compact_string()
            for _ in range(r.uvarint() - 1):
                partition, offset, _epoch = r.take(">i"), r.take(">q"), r.take(">i")
                r.compact_string()   # metadata
                out[(name, partition)] = (offset, r.take(">h"))
                r.skip_tags()
            r.skip_tags()
        return out

    if version < 8:
        partitions = topics()
        return r.take(">h"), partitions
    assert r.uvarint() == 2, "one group asked for, one answered"
    r.compact_string()   # group_id
    partitions = topics()
    error = r.take(">h")
    r.skip_tags()
    return error, partitions


def offset_fetch(bootstrap, version, group, topics, require_stable=False):
    """Sends one OffsetFetch (see offset_fetch_request) and returns parse_offset_fetch's answer."""
    with connect(bootstrap) as sock:
        _, body = exchange_flexible(sock, API_OFFSET_FETCH, version, 1,
                                    offset_fetch_request(version, group, topics, require_stable))
    return parse_offset_fetch(version, body)
