"""A failed write in log.dirs halts the node (storage/log_dir_failure.h, docs/configuration.md
"Disk failures"), on three real `ringlog serve` processes.

Node 3's log.dirs is on a small tmpfs of its own (mounted here, as root; the test is skipped where
mounting is not permitted), filled with a file until a few hundred KiB are left. acks=all writes
of 50 KB records then fill it: the first write that fails (ENOSPC) must stop node 3 with exit code
74 and one log line naming the directory, the operation and the error - never leave it serving
"No space left on device" for its partitions until someone restarts it (Kafka: the log directory
goes offline, the broker halts and its leaderships move to the in-sync replicas). Both sides are
checked: node 3 leading the partition written, and node 3 only following it. Then: the other
nodes take over and keep acknowledging acks=all writes, nothing acknowledged is lost, and once
the filler is removed and node 3 restarted it recovers and rejoins the ISR. Every wait polls with
a deadline.
"""
import os
import subprocess

import pytest
import requests

from conftest import wait_until
from test_cluster import FAILOVER_DEADLINE_S, SESSION_DEADLINE_S, Cluster, create_topic
from test_replication import JSONV2, isr_of, leader_of, read_all

EXIT_CODE_LOG_DIR_FAILURE = 74          # src/app/serve.h exit_code_log_dir_failure (sysexits EX_IOERR)
DISK_SIZE = "64m"                       # node 3's tmpfs
FREE_AFTER_FILL_BYTES = 400 * 1024      # what the filler leaves: a few 50 KB records' worth
RECORD_BYTES = 50_000
WRITES_MAX = 200                        # far more than the free space holds; the node must stop first
HALT_DEADLINE_S = 30.0
PARTITIONS = 6                          # round-robin leaders: node 3 leads some, follows the rest
TOPIC = "disk"


def mount_tmpfs(where):
    """Mounts a DISK_SIZE tmpfs on `where`; the reason it cannot, or None."""
    where.mkdir(parents=True)
    if os.geteuid() != 0:
        return "mounting a small filesystem for node 3's log.dirs needs root"
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return f"mount -t tmpfs is not permitted here: {done.stderr.strip()}"
    return None


@pytest.fixture
def small_disk(tmp_path):
    where = tmp_path / "disk3"
    why_not = mount_tmpfs(where)
    if why_not:
        pytest.skip(why_not)
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture
def disk_cluster(ringlog_bin, tmp_path, small_disk):
    c = Cluster(tmp_path)
    c.node(3).data_dir = small_disk / "data"   # its log file stays on tmp_path (node3/)
    c.start()
    yield c
    c.stop()


def fill(disk, leave_bytes):
    """Writes a filler file on `disk` until about `leave_bytes` are left; returns its path."""
    filler = disk / "filler"
    st = os.statvfs(disk)
    size = max(0, st.f_bavail * st.f_frsize - leave_bytes)
    chunk = b"\0" * (1 << 20)
    with open(filler, "wb") as f:
        while size > 0:
            size -= f.write(chunk[:min(len(chunk), size)])
    return filler


def produce_one(node, partition, value):
    """One acks=all record; its offset when acknowledged, else None (refused, or the node gone)."""
    try:
        r = requests.post(f"{node.url}/topics/{TOPIC}", params={"acks": "all"},
                          json={"records": [{"value": value, "partition": partition}]},
                          headers={"Content-Type": JSONV2}, timeout=40)
    except requests.ConnectionError:
        return None
    if r.status_code != 200:
        return None
    offset = r.json()["offsets"][0]
    return None if offset.get("error") is not None else offset["offset"]


def leaders(node):
    got = [leader_of(node, TOPIC, p) for p in range(PARTITIONS)]
    return got if None not in got else None


def halt_line_count(node):
    return sum(1 for line in node.log_path.read_text(errors="replace").splitlines() if "log directory failed" in line)


@pytest.mark.parametrize("role", ["leader", "follower"])
def test_a_full_log_dir_halts_the_node_and_its_partitions_move(disk_cluster, small_disk, role):
    c = disk_cluster
    n1, n3 = c.node(1), c.node(3)
    wait_until(c.controller, FAILOVER_DEADLINE_S, "one quorum leader")
    r = create_topic(n1, TOPIC, partitions=PARTITIONS, replication_factor=3,
                     configs=[{"name": "min.insync.replicas", "value": "2"}])
    assert r.status_code == 201, r.text
    led = wait_until(lambda: leaders(n1), FAILOVER_DEADLINE_S, "a leader of every partition")
    wait_until(lambda: all(isr_of(n1, TOPIC, p) == [1, 2, 3] for p in range(PARTITIONS)), SESSION_DEADLINE_S,
               "every ISR of three")
    # Leader side: a partition node 3 leads. Follower side: one node 1 leads (node 3 follows all).
    partition = led.index(3) if role == "leader" else led.index(1)
    writer = c.node(led[partition])
    acked = {}
    for i in range(5):
        value = f"before-{i}"
        offset = produce_one(writer, partition, value)
        assert offset is not None, f"{value} refused before the disk filled"
        acked[offset] = value

    filler = fill(small_disk, FREE_AFTER_FILL_BYTES)
    for i in range(WRITES_MAX):
        if n3.proc.poll() is not None:
            break
        value = f"fill-{i}-" + "y" * RECORD_BYTES
        offset = produce_one(writer if role == "follower" else n3, partition, value)
        if offset is not None:
            acked[offset] = value
    code = n3.proc.wait(timeout=HALT_DEADLINE_S)
    n3.log.close()
    n3.proc = None
    assert code == EXIT_CODE_LOG_DIR_FAILURE, n3.log_path.read_text()[-3000:]
    text = n3.log_path.read_text(errors="replace")
    lines = [line for line in text.splitlines() if "log directory failed" in line]
    assert len(lines) == 1, lines
    assert f'log.dirs="{small_disk / "data"}"' in lines[0], lines[0]
    assert "No space left on device" in lines[0] and "operation=" in lines[0], lines[0]
    assert "free space or check the disk, then restart" in lines[0], lines[0]
    assert text.count("No space left on device") <= 5, "error lines flooded the log before the halt"

    # The others take over: a leader of every partition among 1 and 2, acks=all writes acknowledged.
    moved = wait_until(lambda: (lambda ls: ls if ls and 3 not in ls else None)(leaders(n1)), FAILOVER_DEADLINE_S,
                       "every leadership away from node 3")
    wait_until(lambda: all(3 not in isr_of(n1, TOPIC, p) for p in range(PARTITIONS)), SESSION_DEADLINE_S,
               "node 3 out of every ISR")
    for p in range(PARTITIONS):
        value = f"after-{p}"
        offset = wait_until(lambda p=p, v=value: produce_one(c.node(moved[p]), p, v), FAILOVER_DEADLINE_S,
                            f"an acks=all write of partition {p} through node {moved[p]}")
        if p == partition:
            acked[offset] = value
    # Nothing acknowledged is lost.
    end = max(acked) + 1
    records = wait_until(lambda: (lambda g: g if len(g) >= end else None)(
        read_all(c.node(moved[partition]), TOPIC, partition, end)), FAILOVER_DEADLINE_S, "every acknowledged record")
    stored = {x["offset"]: x["value"] for x in records}
    assert {o: stored.get(o) for o in acked} == acked

    # The operator frees space and restarts node 3: it recovers and rejoins every ISR.
    filler.unlink()
    n3.spawn()
    wait_until(n3.healthy, 60.0, "node 3 restarted")
    wait_until(lambda: all(isr_of(n1, TOPIC, p) == [1, 2, 3] for p in range(PARTITIONS)), 60.0,
               "node 3 back in every ISR")
    assert halt_line_count(n3) == 1


TOPICS_MAX = 300        # far more 4-partition topics than the space left holds; the node must stop first


def test_a_new_replica_that_cannot_be_written_halts_the_node(ringlog_bin, tmp_path, small_disk):
    """The breaker of session 34: with log.dirs full, topics created one after another opened
    their replicas with ENOSPC writing checkpoint files; the node logged "cannot open its replica
    ... it stays offline here" and went on serving (their creators heard "already exists"), and
    halted only later, when a metadata log write failed. A new replica's files are written, not
    read, so their failure is the disk's: the node halts at the first one (exit 74, one line)."""
    from conftest import Broker
    b = Broker(small_disk / "data", extra_sets=["num.shards=1"])
    b.log_path = tmp_path / "node.log"   # beside, not on, the full disk
    fill(small_disk, 3 * 1024 * 1024)
    b.start()
    try:
        cluster = b.v3()
        for i in range(TOPICS_MAX):
            if b.proc.poll() is not None:
                break
            try:
                requests.post(f"{cluster}/topics", json={"topic_name": f"full-{i}", "partitions_count": 4,
                                                            "configs": [{"name": "segment.bytes", "value": "1048576"}]},
                              timeout=30)
            except requests.RequestException:
                pass
        code = b.proc.wait(timeout=HALT_DEADLINE_S)
        text = b.log_path.read_text(errors="replace")
        assert code == EXIT_CODE_LOG_DIR_FAILURE, text[-3000:]
        assert "cannot open its replica" not in text, [line for line in text.splitlines() if "cannot open" in line][:3]
        lines = [line for line in text.splitlines() if "log directory failed" in line]
        assert len(lines) == 1 and "No space left on device" in lines[0], lines
    finally:
        if b.proc is not None and b.proc.poll() is None:
            b.proc.kill()
        b.proc.wait()
        b.log.close()
        b.proc = None
