#!/usr/bin/python3
"""Cross-checks ringlog's record batch codec against kafka-python (Debian python3-kafka).

Usage: /usr/bin/python3 kafka_batch_crosscheck.py PATH/TO/codec_crosscheck

Both directions:
  1. kafka-python's DefaultRecordBatchBuilder writes batches (none and lz4, keys, null keys and
     values, headers including a null header value); `codec_crosscheck decode` must print exactly
     the records kafka-python put in.
  2. `codec_crosscheck encode` writes a fixed set of batches (mirrored below in
     ringlog_fixed_batches); kafka-python's DefaultRecordBatch must validate their CRCs and read
     the same records, and `codec_crosscheck decode` must agree with it.
Exits non-zero with a message on the first difference.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

BASE_TIME_MS = 1_700_000_000_000
LOG_APPEND_TIME_MS = 1_800_000_000_000
CODEC_NONE = 0
CODEC_LZ4 = 3
CREATE_TIME = 0
LOG_APPEND_TIME = 1


def hex_or_none(b):
    return None if b is None else bytes(b).hex()


def record_line(batch, base_offset, compression, timestamp_type, transactional, offset, timestamp, key, value,
                headers):
    """The dict one `codec_crosscheck decode` line parses to."""
    return {
        "batch": batch,
        "base_offset": base_offset,
        "compression": compression,
        "timestamp_type": timestamp_type,
        "transactional": transactional,
        "offset": offset,
        "timestamp": timestamp,
        "key": hex_or_none(key),
        "value": hex_or_none(value),
        "headers": [[k.encode("utf-8").hex(), hex_or_none(v)] for k, v in headers],
    }


# ---- direction 1: kafka-python writes, ringlog reads ----

def python_batches():
    """(base_offset, compression, [(timestamp, key, value, headers)]) for kafka-python to write."""
    small = []
    for i, delta in enumerate([0, -7, 30, -1000, 2]):
        key = None if i == 1 else ("pk-%d" % i).encode()
        value = None if i == 3 else ("pv-%d" % i).encode() * (i + 1)
        headers = []
        if i == 2:
            headers = [("trace-id", b"\x01\x02"), ("empty", b""), ("nullable", None)]
        if i == 4:
            headers = [("unicode-\u00e9", b"\xff")]
        small.append((BASE_TIME_MS + delta, key, value, headers))
    big = []
    for i in range(300):
        headers = [("i", str(i).encode())] if i % 7 == 0 else []
        key = None if i % 11 == 0 else ("key-%d" % i).encode()
        big.append((BASE_TIME_MS + (i * 13) % 97 - 40, key, b"y" * 150 + str(i).encode(), headers))
    return [(0, CODEC_NONE, small), (5, CODEC_LZ4, big), (400, CODEC_NONE, big[:3])]


def build_with_kafka_python(base_offset, compression, records):
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=compression, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 30)
    for offset_delta, (timestamp, key, value, headers) in enumerate(records):
        assert builder.append(offset_delta, timestamp=timestamp, key=key, value=value, headers=headers) is not None
    buf = bytearray(builder.build())
    # kafka-python falls back to no compression when it does not help; the lz4 case must be lz4.
    attributes = struct.unpack_from(">h", buf, 21)[0]
    assert attributes & 0x7 == compression, "kafka-python wrote codec %d, wanted %d" % (attributes & 7, compression)
    # The broker assigns base_offset: it is outside the CRC, so patching it keeps the batch valid.
    struct.pack_into(">q", buf, 0, base_offset)
    return bytes(buf)


def expected_from_python_batches(batches):
    lines = []
    for batch_index, (base_offset, compression, records) in enumerate(batches):
        for offset_delta, (timestamp, key, value, headers) in enumerate(records):
            lines.append(record_line(batch_index, base_offset, compression, CREATE_TIME, False,
                                     base_offset + offset_delta, timestamp, key, value, headers))
    return lines


# ---- direction 2: ringlog writes, kafka-python reads ----

def ringlog_fixed_batches():
    """Mirror of fixed_batches() in tests/codec/crosscheck_tool.cc, as expected decode lines."""
    lines = []
    deltas = [0, -5, 10, -20, 3]
    for i in range(5):
        key = None if i == 1 else ("key-%d" % i).encode()
        value = None if i == 2 else ("value-%d" % i).encode() * (i + 1)
        headers = []
        if i == 3:
            headers = [("trace", b"abc"), ("empty", b""), ("null", None)]
        if i == 4:
            headers = [("h", b"\x00\xff")]
        lines.append(record_line(0, 0, CODEC_NONE, CREATE_TIME, False, i, BASE_TIME_MS + deltas[i], key, value,
                                 headers))
    for i in range(100):
        headers = [("n", str(i).encode())] if i % 10 == 0 else []
        lines.append(record_line(1, 5, CODEC_LZ4, CREATE_TIME, False, 5 + i, BASE_TIME_MS + i, ("k%d" % i).encode(),
                                 b"x" * 200 + str(i).encode(), headers))
    lines.append(record_line(2, 105, CODEC_NONE, CREATE_TIME, True, 105, BASE_TIME_MS, None, b"txn-0", []))
    lines.append(record_line(2, 105, CODEC_NONE, CREATE_TIME, True, 106, BASE_TIME_MS + 1, b"txn-key", b"txn-1", []))
    lines.append(record_line(3, 107, CODEC_NONE, LOG_APPEND_TIME, False, 107, LOG_APPEND_TIME_MS, b"appended",
                             b"at log append time", []))
    return lines


def split_batches(data):
    batches = []
    position = 0
    while position < len(data):
        (batch_length,) = struct.unpack_from(">i", data, position + 8)
        batches.append(data[position:position + 12 + batch_length])
        position += 12 + batch_length
    assert position == len(data), "trailing bytes after the last batch"
    return batches


def read_with_kafka_python(data):
    lines = []
    for batch_index, raw in enumerate(split_batches(data)):
        batch = DefaultRecordBatch(raw)
        assert batch.magic == 2
        assert batch.validate_crc(), "kafka-python rejects the CRC of ringlog batch %d" % batch_index
        producer_id, producer_epoch, base_sequence, records_count = batch._header_data[9:13]
        records = list(batch)
        assert len(records) == records_count
        assert batch.last_offset_delta == records_count - 1
        assert batch.max_timestamp == max(r.timestamp for r in records)
        if batch.is_transactional:
            assert (producer_id, producer_epoch, base_sequence) == (77, 2, 0), batch._header_data
        for r in records:
            lines.append(record_line(batch_index, batch.base_offset, batch.compression_type, batch.timestamp_type,
                                     batch.is_transactional, r.offset, r.timestamp, r.key, r.value, r.headers))
    return lines


# ---- driver ----

def ringlog_decode(tool, path):
    out = subprocess.run([tool, "decode", path], check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def assert_same(what, got, want):
    if got == want:
        print("ok: %s (%d records)" % (what, len(want)))
        return
    if len(got) != len(want):
        sys.exit("FAIL %s: %d records, expected %d" % (what, len(got), len(want)))
    for g, w in zip(got, want):
        if g != w:
            sys.exit("FAIL %s:\n  got      %s\n  expected %s" % (what, g, w))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: kafka_batch_crosscheck.py PATH/TO/codec_crosscheck")
    tool = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="ringlog-crosscheck-") as tmp:
        batches = python_batches()
        python_file = os.path.join(tmp, "kafka-python.batches")
        with open(python_file, "wb") as f:
            for base_offset, compression, records in batches:
                f.write(build_with_kafka_python(base_offset, compression, records))
        assert_same("ringlog decodes kafka-python batches", ringlog_decode(tool, python_file),
                    expected_from_python_batches(batches))

        ringlog_file = os.path.join(tmp, "ringlog.batches")
        subprocess.run([tool, "encode", ringlog_file], check=True)
        with open(ringlog_file, "rb") as f:
            ringlog_data = f.read()
        expected = ringlog_fixed_batches()
        assert_same("kafka-python reads ringlog batches", read_with_kafka_python(ringlog_data), expected)
        assert_same("ringlog decodes its own batches", ringlog_decode(tool, ringlog_file), expected)

        # A corrupted byte must be refused by ringlog (crc_mismatch), as kafka-python does.
        corrupt = bytearray(ringlog_data)
        corrupt[70] ^= 0x01
        corrupt_file = os.path.join(tmp, "corrupt.batches")
        with open(corrupt_file, "wb") as f:
            f.write(corrupt)
        assert not DefaultRecordBatch(bytes(corrupt[:len(split_batches(ringlog_data)[0])])).validate_crc()
        result = subprocess.run([tool, "decode", corrupt_file], capture_output=True, text=True)
        assert result.returncode == 1 and "crc_mismatch" in result.stderr, result
        print("ok: a flipped bit is crc_mismatch for both")


if __name__ == "__main__":
    main()
