#!/usr/bin/python3
"""Kafka Fetch from the page cache by one consumer (issue 15): GB/s of record bytes against this
machine's memory copy rate, with the zero-copy path (kafka.fetch.zero.copy=true, the default:
sendfile from the segment files) and with it off (the copying path: pread into memory, then the
answer written to the socket), in one run on the same data.

Steps: a tiny C program (built here with cc -O2) measures memcpy GB/s over a 256 MiB buffer (the
machine's memory copy rate, one core). A broker (HTTP 127.0.0.1:9790, Kafka 127.0.0.1:9792)
stores DATA_MIB MiB in one partition (librdkafka, acks=1, 16 KiB values); the data is read once
to warm the page cache. Then the broker is restarted on the same log.dirs with each setting in
turn, ROUNDS times alternating, and one consumer reads the whole partition with raw Fetch v4
requests (max_bytes 64 MiB, partition_max_bytes FETCH_MIB MiB, one request at a time, as a Kafka
consumer with one partition does): bytes of record sets received / seconds. The consumer is a
Python socket loop (recv_into a reused buffer, only batch headers parsed), so it also pays one
copy (kernel to user) per byte on both paths: the figures are what one consumer gets, not the
broker's limit. For scale, each round also sends the segment file to the same reader over
loopback TCP with no broker at all (from a forked process, with sendfile, and with pread +
send): what one such reader receives on this machine without a broker. Best of ROUNDS per setting is reported, with every round.

Usage: bench/run-fetch-bench.py [BUILD_DIR]   (env: DATA_MIB=1024, FETCH_MIB=16, ROUNDS=3)
Prints a markdown table. Not a test: no figure is asserted.
"""
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

import requests
from confluent_kafka import Producer

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
RINGLOG = os.path.join(BUILD, "src/app/ringlog")
DATA_MIB = int(os.environ.get("DATA_MIB", "1024"))
FETCH_MIB = int(os.environ.get("FETCH_MIB", "16"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
HTTP = "http://127.0.0.1:9790"
KAFKA_PORT = 9792
TOPIC = "fetch-bench"
VALUE_BYTES = 16384

MEMCPY_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
/* memcpy GB/s: 256 MiB source to a 256 MiB destination, best of 10 passes (both buffers
   touched first, so page faults are not timed). */
int main(void) {
  const size_t n = 256u << 20;
  char *src = malloc(n), *dst = malloc(n);
  if (!src || !dst) return 1;
  memset(src, 1, n);
  memset(dst, 2, n);
  double best = 0;
  for (int pass = 0; pass < 10; ++pass) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    memcpy(dst, src, n);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    double gbs = n / s / 1e9;
    if (gbs > best) best = gbs;
    src[pass] = dst[n - 1 - pass];   /* keep the copies observable */
  }
  printf("%.3f\n", best);
  return dst[12345] == 7;
}
"""


def memcpy_gbs(workdir):
    src = os.path.join(workdir, "memcpy.c")
    exe = os.path.join(workdir, "memcpy")
    with open(src, "w") as f:
        f.write(MEMCPY_C)
    subprocess.run(["cc", "-O2", "-o", exe, src], check=True)
    return float(subprocess.run([exe], capture_output=True, text=True, check=True).stdout)


def metric(text, name):
    """The value of an unlabelled counter in /metrics text."""
    m = re.search(r"^" + re.escape(name) + r" (\d+)$", text, re.M)
    if not m:
        raise SystemExit(f"{name} missing from /metrics")
    return int(m.group(1))


def start(data, zero_copy):
    proc = subprocess.Popen([RINGLOG, "serve", "--set", f"listeners={HTTP},kafka://127.0.0.1:{KAFKA_PORT}",
                             "--set", f"log.dirs={data}", "--set", f"kafka.fetch.zero.copy={str(zero_copy).lower()}",
                             "--set", "log.segment.bytes=1073741824"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit("ringlog exited early")
        try:
            if requests.get(HTTP + "/v1/health", timeout=1).status_code == 200:
                return proc
        except requests.ConnectionError:
            pass
        time.sleep(0.05)
    raise SystemExit("ringlog did not become healthy")


def stop(proc):
    proc.terminate()
    if proc.wait(60) != 0:
        raise SystemExit("ringlog did not stop cleanly")


def produce():
    p = Producer({"bootstrap.servers": f"127.0.0.1:{KAFKA_PORT}", "acks": "1", "linger.ms": 20,
                  "batch.size": 1048576, "queue.buffering.max.kbytes": 1048576, "enable.idempotence": False})
    value = os.urandom(VALUE_BYTES)
    count = DATA_MIB * 1024 * 1024 // VALUE_BYTES
    for _ in range(count):
        while True:
            try:
                p.produce(TOPIC, value=value, partition=0)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(300) != 0:
        raise SystemExit("produce did not finish")
    return count


def fetch_request(offset, correlation_id):
    """Fetch v4: replica -1, max_wait 0, min_bytes 1, max_bytes 64 MiB, read_uncommitted, one
    partition of TOPIC at `offset` with FETCH_MIB MiB."""
    name = TOPIC.encode()
    body = struct.pack(">iiiib", -1, 0, 1, 64 << 20, 0) + struct.pack(">i", 1) + struct.pack(">h", len(name)) + name
    body += struct.pack(">i", 1) + struct.pack(">iqi", 0, offset, FETCH_MIB << 20)
    client = b"fetch-bench"
    header = struct.pack(">hhih", 1, 4, correlation_id, len(client)) + client
    return struct.pack(">i", len(header) + len(body)) + header + body


def recv_exact(sock, view):
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if n == 0:
            raise SystemExit("connection closed")
        got += n


def read_all(end_offset):
    """Reads the partition from 0 to end_offset; returns (record bytes, seconds)."""
    buf = bytearray((FETCH_MIB << 20) + (1 << 20))
    view = memoryview(buf)
    size = bytearray(4)
    total = 0
    offset = 0
    correlation = 0
    with socket.create_connection(("127.0.0.1", KAFKA_PORT)) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        start = time.monotonic()
        while offset < end_offset:
            correlation += 1
            s.sendall(fetch_request(offset, correlation))
            recv_exact(s, memoryview(size))
            n = struct.unpack(">i", size)[0]
            if n > len(buf):
                buf = bytearray(n)
                view = memoryview(buf)
            recv_exact(s, view[:n])
            # correlation(4) throttle(4) topics(4) name(2+len) partitions(4) partition(4) error(2)
            # hw(8) lso(8) aborted(4, -1 or 0) records(4) batches...
            pos = 4 + 4 + 4
            pos += 2 + struct.unpack_from(">h", buf, pos)[0]
            pos += 4 + 4
            error = struct.unpack_from(">h", buf, pos)[0]
            if error != 0:
                raise SystemExit(f"fetch error {error} at offset {offset}")
            pos += 2 + 8 + 8
            aborted = struct.unpack_from(">i", buf, pos)[0]
            pos += 4 + max(aborted, 0) * 16
            length = struct.unpack_from(">i", buf, pos)[0]
            pos += 4
            end = pos + length
            last = None
            while pos + 61 <= end:
                base = struct.unpack_from(">q", buf, pos)[0]
                batch_length = struct.unpack_from(">i", buf, pos + 8)[0]
                if pos + 12 + batch_length > end:
                    break
                last_delta = struct.unpack_from(">i", buf, pos + 23)[0]
                last = base + last_delta
                pos += 12 + batch_length
            if last is None:
                raise SystemExit(f"no whole batch at offset {offset}")
            total += length
            offset = last + 1
        seconds = time.monotonic() - start
    return total, seconds


def loopback(path, zero_copy):
    """The same reader receiving the segment file's bytes over loopback TCP with no broker: a
    forked process sends them with sendfile, or with pread into 16 MiB + send (what one reader on
    this machine can receive, for each way of sending). Returns GB/s."""
    size = os.path.getsize(path)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    child = os.fork()
    if child == 0:
        try:
            c, _ = server.accept()
            with c, open(path, "rb") as f:
                offset = 0
                if zero_copy:
                    while offset < size:
                        offset += os.sendfile(c.fileno(), f.fileno(), offset, size - offset)
                else:
                    chunk = bytearray(16 << 20)
                    while offset < size:
                        n = os.preadv(f.fileno(), [chunk], offset)
                        c.sendall(memoryview(chunk)[:n])
                        offset += n
        finally:
            os._exit(0)
    buf = bytearray(FETCH_MIB << 20)
    view = memoryview(buf)
    got = 0
    with socket.create_connection(server.getsockname()) as s:
        start = time.monotonic()
        while True:
            n = s.recv_into(view)
            if n == 0:
                break
            got += n
        seconds = time.monotonic() - start
    os.waitpid(child, 0)
    server.close()
    assert got == size
    return got / seconds / 1e9


def main():
    workdir = tempfile.mkdtemp(prefix="ringlog-fetch-bench-")
    data = os.path.join(workdir, "d")
    try:
        copy_rate = memcpy_gbs(workdir)
        proc = start(data, True)
        r = requests.post(f"{HTTP}/v3/clusters/ringlog-cluster/topics", json={"topic_name": TOPIC, "partitions_count": 1})
        assert r.status_code == 201, r.text
        records = produce()
        read_all(records)   # warm the page cache (and check that everything reads)
        stop(proc)
        rounds = {True: [], False: []}
        ceiling = {True: [], False: []}
        segment = os.path.join(data, f"{TOPIC}-0", "00000000000000000000.log")
        for _ in range(ROUNDS):
            for zero_copy in (True, False):
                ceiling[zero_copy].append(loopback(segment, zero_copy))
                proc = start(data, zero_copy)
                try:
                    metrics_before = requests.get(HTTP + "/metrics", timeout=5).text
                    total, seconds = read_all(records)
                    metrics_after = requests.get(HTTP + "/metrics", timeout=5).text
                finally:
                    stop(proc)
                counter = "ringlog_kafka_fetch_bytes_zero_copy_total" if zero_copy else "ringlog_kafka_fetch_bytes_copied_total"
                moved = metric(metrics_after, counter) - metric(metrics_before, counter)
                if moved < total:
                    raise SystemExit(f"{counter} moved by {moved} < {total}: the path was not the one asked for")
                rounds[zero_copy].append(total / seconds / 1e9)
        uname = os.uname()
        print(f"machine: {uname.sysname} {uname.release} {uname.machine}, {os.cpu_count()} cpus; "
              f"{records} records of {VALUE_BYTES} bytes ({DATA_MIB} MiB) in one partition; Fetch v4 with "
              f"partition_max_bytes {FETCH_MIB} MiB; best of {ROUNDS}\n")
        print("| what | GB/s | rounds GB/s | share of memcpy |\n|---|---:|---|---:|")
        print(f"| memcpy, one core, 256 MiB buffers (the machine's memory copy rate) | {copy_rate:.2f} | | 100% |")
        for zero_copy, name in [(True, "no broker: the segment file sent with sendfile to the same reader (loopback TCP)"),
                                (False, "no broker: the segment file sent with pread + send to the same reader")]:
            best = max(ceiling[zero_copy])
            every = ", ".join(f"{x:.2f}" for x in ceiling[zero_copy])
            print(f"| {name} | {best:.2f} | {every} | {100 * best / copy_rate:.0f}% |")
        for zero_copy, name in [(True, "Kafka fetch, one consumer, kafka.fetch.zero.copy=true (sendfile)"),
                                (False, "Kafka fetch, one consumer, kafka.fetch.zero.copy=false (pread + write)")]:
            best = max(rounds[zero_copy])
            every = ", ".join(f"{x:.2f}" for x in rounds[zero_copy])
            print(f"| {name} | {best:.2f} | {every} | {100 * best / copy_rate:.0f}% |")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
