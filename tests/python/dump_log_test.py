#!/usr/bin/python3
"""Checks `dump-log` on a log written by the storage API (tests/app/dump_log_fixture.cc).

Usage: /usr/bin/python3 dump_log_test.py PATH/TO/dump_log_fixture PATH/TO/ringlog-dump-log

The fixture writes batches at offsets 0-2 (keys key-0..2, values value-0..2, headers), 3 (null key,
binary value, producer id 7) and 4-5 (lz4). This script checks the batch, record, .index,
.timeindex and .snapshot lines, then damages copies of the segment (a cut last batch, a flipped byte, a short
garbage tail, a torn index entry) and checks that the dump stops there and says where and why.
Exits non-zero with a message on the first difference.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

STEM = "00000000000000000000"
BASE_TIME_MS = 1_700_000_000_000


def run(dump_log, *args):
    p = subprocess.run([dump_log, "dump-log", *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout.splitlines(), p.stderr


def expect(condition, message, lines=None):
    if not condition:
        if lines is not None:
            sys.stderr.write("output was:\n" + "\n".join(lines) + "\n")
        sys.exit("FAIL: " + message)


def fields(line):
    """'a: 1 b: x' -> {'a': '1', 'b': 'x'} for batch lines (values never contain spaces there)."""
    return dict(re.findall(r"(\w+): (\S+)", line))


def check_log(dump_log, log_path):
    rc, lines, err = run(dump_log, log_path, "--records")
    expect(rc == 0, f"dump-log exit {rc}: {err}", lines)
    expect(lines[0] == f"Dumping {log_path}", "first line names the file", lines)
    expect(lines[1] == "Log starting offset: 0", "second line gives the base offset", lines)
    batches = [fields(l) for l in lines if l.startswith("baseOffset:")]
    records = [l for l in lines if l.startswith("| offset:")]
    expect(len(batches) == 3, "three batches", lines)
    expect(len(records) == 6, "six records", lines)

    b1, b2, b3 = batches
    for b in batches:
        expect(b["isvalid"] == "true" and b["magic"] == "2", "valid v2 batches", lines)
        expect(b["partitionLeaderEpoch"] == "3", "leader epoch stamped by append", lines)
    expect((b1["baseOffset"], b1["lastOffset"], b1["count"]) == ("0", "2", "3"), "batch 1 offsets", lines)
    expect(b1["position"] == "0" and b1["compresscodec"] == "none", "batch 1 position/codec", lines)
    expect(b1["CreateTime"] == str(BASE_TIME_MS + 2), "batch 1 max timestamp", lines)
    expect((b2["baseOffset"], b2["lastOffset"], b2["count"]) == ("3", "3", "1"), "batch 2 offsets", lines)
    expect(b2["position"] == b1["size"], "batch 2 starts where batch 1 ends", lines)
    expect((b2["producerId"], b2["producerEpoch"], b2["baseSequence"], b2["lastSequence"]) == ("7", "1", "5", "5"),
           "batch 2 producer fields", lines)
    expect((b3["baseOffset"], b3["lastOffset"], b3["compresscodec"]) == ("4", "5", "lz4"), "batch 3", lines)
    expect(int(b3["position"]) == int(b1["size"]) + int(b2["size"]), "batch 3 position", lines)
    expect(int(b3["position"]) + int(b3["size"]) == os.path.getsize(log_path), "batches cover the file", lines)

    want = [
        f"| offset: 0 CreateTime: {BASE_TIME_MS} keySize: 5 valueSize: 7 sequence: -1 headers: [h1=x] "
        "key: key-0 payload: value-0",
        f"| offset: 1 CreateTime: {BASE_TIME_MS + 1} keySize: 5 valueSize: 7 sequence: -1 headers: [h2=null] "
        "key: key-1 payload: value-1",
        f"| offset: 2 CreateTime: {BASE_TIME_MS + 2} keySize: 5 valueSize: 7 sequence: -1 headers: [] "
        "key: key-2 payload: value-2",
        f"| offset: 3 CreateTime: {BASE_TIME_MS + 10} keySize: -1 valueSize: 3 sequence: 5 headers: [] "
        "key: null payload: 0x0001ff",
        f"| offset: 4 CreateTime: {BASE_TIME_MS + 20} keySize: 4 valueSize: 11 sequence: -1 headers: [] "
        "key: lz-4 payload: lz4 value 4",
        f"| offset: 5 CreateTime: {BASE_TIME_MS + 21} keySize: 4 valueSize: 11 sequence: -1 headers: [] "
        "key: lz-5 payload: lz4 value 5",
    ]
    for got, expected in zip(records, want):
        expect(got == expected, f"record line\n  got:  {got}\n  want: {expected}", lines)

    rc, plain, _ = run(dump_log, log_path)
    expect(rc == 0 and not any(l.startswith("| ") for l in plain), "no record lines without --records", plain)
    return [int(b["position"]) for b in batches], [int(b["size"]) for b in batches]


def check_indexes(dump_log, directory, positions):
    index = os.path.join(directory, STEM + ".index")
    rc, lines, err = run(dump_log, index)
    expect(rc == 0, f"index dump exit {rc}: {err}", lines)
    # index.interval.bytes = 1: an entry for every batch after the first (as in Kafka, an entry is
    # added when more than the interval was appended since the last one), keyed by its last offset.
    want = [f"Dumping {index}", f"offset: 3 position: {positions[1]}", f"offset: 5 position: {positions[2]}"]
    expect(lines == want, f"index lines, want {want}", lines)

    timeindex = os.path.join(directory, STEM + ".timeindex")
    rc, lines, err = run(dump_log, timeindex)
    expect(rc == 0, f"timeindex dump exit {rc}: {err}", lines)
    expect(lines[0] == f"Dumping {timeindex}", "timeindex header", lines)
    entries = [tuple(int(x) for x in re.fullmatch(r"timestamp: (\d+) offset: (\d+)", l).groups()) for l in lines[1:]]
    expect(len(entries) >= 1, "time index has entries", lines)
    expect(entries[-1] == (BASE_TIME_MS + 21, 5), "last time index entry is the max timestamp", lines)
    expect(all(a[0] < b[0] for a, b in zip(entries, entries[1:])), "timestamps increase", lines)

    # A torn index entry: 3 stray bytes after the last whole entry.
    torn = damaged_copy(directory, ".index", lambda b: b + b"\x00\x00\x07")
    rc, lines, _ = run(dump_log, torn)
    size = os.path.getsize(torn)
    expect(rc == 1, "a torn index exits 1", lines)
    expect(lines[-1] == f"Stopped at position {size - 3}: torn entry: 3 bytes, fewer than an entry (8 bytes) "
           "(3 bytes from here to the end of the file not shown)", "torn index stop line", lines)


def damaged_copy(directory, suffix, change):
    target_dir = tempfile.mkdtemp(dir=os.path.dirname(directory))
    target = os.path.join(target_dir, STEM + suffix)
    with open(os.path.join(directory, STEM + suffix), "rb") as f:
        data = f.read()
    with open(target, "wb") as f:
        f.write(change(data))
    return target


def check_damage(dump_log, directory, positions, sizes):
    last = positions[2]
    # 1. The last batch cut 10 bytes short (a torn write).
    torn = damaged_copy(directory, ".log", lambda b: b[:-10])
    rc, lines, _ = run(dump_log, torn, "--records")
    expect(rc == 1, "a torn batch exits 1", lines)
    expect(sum(l.startswith("baseOffset:") for l in lines) == 2, "two whole batches before the torn one", lines)
    expect(lines[-1] == f"Stopped at position {last}: torn batch: its header says {sizes[2]} bytes, only "
           f"{sizes[2] - 10} are left ({sizes[2] - 10} bytes from here to the end of the file not shown)",
           "torn batch stop line", lines)

    # 2. A flipped byte inside batch 2's records: CRC mismatch, batch shown as invalid, then stop.
    flip_at = positions[1] + sizes[1] - 2

    def flip(b):
        return b[:flip_at] + bytes([b[flip_at] ^ 0xFF]) + b[flip_at + 1:]

    corrupt = damaged_copy(directory, ".log", flip)
    rc, lines, _ = run(dump_log, corrupt, "--records")
    expect(rc == 1, "a corrupt batch exits 1", lines)
    batch_lines = [fields(l) for l in lines if l.startswith("baseOffset:")]
    expect([b["isvalid"] for b in batch_lines] == ["true", "false"], "batch 2 shown as invalid", lines)
    expect(sum(l.startswith("| offset:") for l in lines) == 3, "only batch 1's records", lines)
    expect(lines[-1].startswith(f"Stopped at position {positions[1]}: corrupt batch: crc_mismatch"),
           "corrupt batch stop line", lines)
    expect(lines[-1].endswith(f"({os.path.getsize(corrupt) - positions[1]} bytes from here to the end of the "
                              "file not shown)"), "corrupt batch stop line names the bytes left", lines)

    # 3. 20 bytes of garbage after the last batch: fewer than a header.
    tail = damaged_copy(directory, ".log", lambda b: b + b"\x00" * 20)
    rc, lines, _ = run(dump_log, tail)
    end = os.path.getsize(tail) - 20
    expect(rc == 1, "a short tail exits 1", lines)
    expect(lines[-1] == f"Stopped at position {end}: torn batch: 20 bytes left, fewer than a batch header "
           "(61 bytes) (20 bytes from here to the end of the file not shown)", "short tail stop line", lines)

    # 4. A zeroed header (preallocated or never-written space): magic 0 is refused first.
    zeros = damaged_copy(directory, ".log", lambda b: b + b"\x00" * 100)
    rc, lines, _ = run(dump_log, zeros)
    expect(rc == 1 and lines[-1].startswith(f"Stopped at position {end}: corrupt batch header: unknown_magic"),
           "zeroed tail stop line", lines)


def check_snapshot(dump_log, directory):
    """The close-time producer snapshot (offset 6): its version, and producer 7's last append offset
    (3, its one batch) beside its batch."""
    rc, lines, err = run(dump_log, os.path.join(directory, "00000000000000000006.snapshot"))
    expect(rc == 0, f"dump-log exit {rc}: {err}", lines)
    expect(lines[1] == "snapshotOffset: 6 producers: 1 version: 3", "snapshot header line", lines)
    producer = fields(lines[2])
    expect((producer["producerId"], producer["producerEpoch"], producer["lastAppendOffset"]) == ("7", "1", "3"),
           "producer 7's line with its last append offset", lines)
    expect("[firstSequence: 5 lastSequence: 5 baseOffset: 3 lastOffset: 3]" in lines[2], "producer 7's batch", lines)


def check_usage(dump_log):
    rc, lines, _ = run(dump_log, "--help")
    expect(rc == 0 and lines[0].startswith("usage: ringlog dump-log"), "--help prints usage", lines)
    rc, _, err = run(dump_log, "--bogus", "x.log")
    expect(rc == 2 and "unknown option --bogus" in err, "unknown option is a usage error")
    rc, _, err = run(dump_log)
    expect(rc == 2 and "no FILE" in err, "missing FILE is a usage error")
    rc, lines, _ = run(dump_log, "/nonexistent/00000000000000000000.log")
    expect(rc == 1 and lines[1].startswith("Cannot open"), "missing file exits 1", lines)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    fixture, dump_log = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="ringlog-dump-log-") as tmp:
        directory = os.path.join(tmp, "events-0")
        subprocess.run([fixture, directory], check=True, timeout=60)
        positions, sizes = check_log(dump_log, os.path.join(directory, STEM + ".log"))
        check_indexes(dump_log, directory, positions)
        check_damage(dump_log, directory, positions, sizes)
        check_snapshot(dump_log, directory)
        check_usage(dump_log)
    print("dump-log: all checks passed")


if __name__ == "__main__":
    main()
