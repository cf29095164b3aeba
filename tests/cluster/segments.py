"""Reads a partition directory's segments offline: record batches v2 (magic 2), byte for byte.

Kafka's layout (the protocol guide, "Record Batch"), big-endian:

    base_offset int64 | batch_length int32 | partition_leader_epoch int32 | magic int8 |
    crc uint32 | attributes int16 | last_offset_delta int32 | base_timestamp int64 |
    max_timestamp int64 | producer_id int64 | producer_epoch int16 | base_sequence int32 |
    records_count int32 | records...

batch_length counts the bytes after itself, so a batch is 12 + batch_length bytes. Each record:
length varint | attributes int8 | timestamp_delta varlong | offset_delta varint | key_length varint |
key | value_length varint | value | headers_count varint | headers (zig-zag varints; -1 = null).

The replica-divergence check compares the raw bytes of batches (a follower stores the leader's
batches as they are: same offsets, epochs and CRCs), so nothing is re-encoded here.
"""
import gzip
import pathlib
import struct
from dataclasses import dataclass, field

BATCH_HEADER_BYTES = 61
LOG_OVERHEAD_BYTES = 12   # base_offset + batch_length
COMPRESSION_MASK = 0x07
CONTROL_BIT = 0x20


@dataclass
class Record:
    offset: int
    key: bytes
    value: bytes


@dataclass
class Batch:
    base_offset: int
    last_offset: int
    partition_leader_epoch: int
    attributes: int
    raw: bytes
    records: list = field(default_factory=list)

    @property
    def is_control(self):
        return bool(self.attributes & CONTROL_BIT)


@dataclass
class ReplicaLog:
    """One replica's partition directory as found on disk."""
    directory: str
    batches: list
    high_watermark_checkpoint: int = None
    torn_tail: str = None      # why reading stopped before a file's end, if it did

    @property
    def log_end_offset(self):
        return self.batches[-1].last_offset + 1 if self.batches else 0


def _varint(buf, pos):
    """Zig-zag varint (Kafka's records use signed varints). Returns (value, new position)."""
    shift = 0
    raw = 0
    while True:
        if pos >= len(buf):
            raise ValueError("varint runs past the buffer")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")
    return (raw >> 1) ^ -(raw & 1), pos


def _bytes_field(buf, pos):
    n, pos = _varint(buf, pos)
    if n < 0:
        return None, pos
    if pos + n > len(buf):
        raise ValueError("field runs past the record")
    return bytes(buf[pos:pos + n]), pos + n


def _decompress(codec, data):
    if codec == 0:
        return data
    if codec == 1:
        return gzip.decompress(data)
    if codec == 3:
        import lz4.frame
        return lz4.frame.decompress(data)
    if codec == 4:
        import zstandard
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    raise ValueError(f"compression codec {codec} is not read by this checker")


def parse_records(base_offset, attributes, count, body):
    """The records of one batch: [Record]."""
    body = _decompress(attributes & COMPRESSION_MASK, body)
    out = []
    pos = 0
    for _ in range(count):
        length, pos = _varint(body, pos)
        end = pos + length
        if length < 0 or end > len(body):
            raise ValueError("record length runs past the batch")
        pos += 1                          # attributes
        _, pos = _varint(body, pos)       # timestamp delta
        offset_delta, pos = _varint(body, pos)
        key, pos = _bytes_field(body, pos)
        value, pos = _bytes_field(body, pos)
        out.append(Record(base_offset + offset_delta, key, value))
        pos = end                         # headers are not needed
    return out


def parse_segment(data, decode_records=True):
    """[Batch] of one .log file's bytes, and why it stopped early (None when read to the end)."""
    batches = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < LOG_OVERHEAD_BYTES:
            return batches, f"{len(data) - pos} trailing bytes at file position {pos}"
        base_offset, batch_length = struct.unpack_from(">qi", data, pos)
        total = LOG_OVERHEAD_BYTES + batch_length
        if batch_length < BATCH_HEADER_BYTES - LOG_OVERHEAD_BYTES or pos + total > len(data):
            return batches, f"torn batch at file position {pos} (batch_length {batch_length})"
        (leader_epoch, magic, _crc, attributes, last_delta, _bt, _mt, _pid, _pe, _bs,
         count) = struct.unpack_from(">ibIhiqqqhii", data, pos + LOG_OVERHEAD_BYTES)
        if magic != 2:
            return batches, f"magic {magic} at file position {pos}"
        raw = bytes(data[pos:pos + total])
        batch = Batch(base_offset, base_offset + last_delta, leader_epoch, attributes, raw)
        if decode_records and not batch.is_control:
            batch.records = parse_records(base_offset, attributes, count, raw[BATCH_HEADER_BYTES:])
        batches.append(batch)
        pos += total
    return batches, None


def read_checkpoint(path):
    """Kafka's offset checkpoint text ("0", count, "topic partition offset" lines): the offset."""
    try:
        lines = pathlib.Path(path).read_text().split("\n")
    except OSError:
        return None
    for line in lines[2:]:
        parts = line.split()
        if len(parts) == 3:
            return int(parts[2])
    return None


def read_replica(directory, decode_records=True):
    """Every segment of a partition directory, in base-offset order, as one ReplicaLog."""
    directory = pathlib.Path(directory)
    batches = []
    torn = None
    for seg in sorted(directory.glob("*.log"), key=lambda p: int(p.stem)):
        got, why = parse_segment(seg.read_bytes(), decode_records)
        batches.extend(got)
        if why:
            torn = f"{seg.name}: {why}"
            break
    return ReplicaLog(str(directory), batches, read_checkpoint(directory / "replication-offset-checkpoint"), torn)
