"""A partition's checkpoint file that does not parse, on a real `ringlog serve` restarted after
kill -9 (partition_log.h lists the files; docs/architecture.md "Recovery" says what is rebuilt).

The breaker of session 29: one partition's empty replication-offset-checkpoint (or a garbage
log-start-offset-checkpoint, or a leader-epoch-checkpoint whose entry count does not match) kept
EVERY partition of the broker unopened after a restart, answering 50301 "has not opened its
replica" for good. Now the other partitions always serve; the bad partition serves too when the
file is only an optimisation (recovery point, high watermark, leader epochs: rebuilt, with a
warning naming the file), and stays offline with a line naming the file and the repair when it
is the log start offset (serving from the first segment could expose deleted records).
"""
import base64

import pytest
import requests

from conftest import wait_until

BINARY = "application/vnd.kafka.binary.v2+json"
HEALTHY = [f"h{i}" for i in range(6)]
BAD = "a-bad"                    # sorts first: the broker opens topics in name order
RECORDS = 5
DEADLINE_S = 20.0


def produce(b, topic, partition=0):
    body = {"records": [{"value": base64.b64encode(f"{topic}-{i}".encode()).decode()} for i in range(RECORDS)]}
    r = requests.post(f"{b.url}/topics/{topic}/partitions/{partition}", json=body,
                      headers={"Content-Type": BINARY}, timeout=10)
    assert r.status_code == 200, r.text


def values(b, topic, partition=0):
    """The values read from offset 0 (decoded), or None while the partition does not serve."""
    r = requests.get(f"{b.url}/topics/{topic}/partitions/{partition}/records", params={"offset": 0},
                     headers={"Accept": BINARY}, timeout=10)
    if r.status_code != 200:
        return None
    return [base64.b64decode(x["value"]).decode() for x in r.json()]


def all_served(b, topic, partition=0):
    return values(b, topic, partition) == [f"{topic}-{i}" for i in range(RECORDS)]


@pytest.mark.parametrize("file,content,rebuilt", [
    ("replication-offset-checkpoint", b"", "the high watermark starts at the log start"),
    ("recovery-point-offset-checkpoint", b"garbage", "recovery scans every segment"),
    ("leader-epoch-checkpoint", b"0\n1\n", "the leader epochs are rebuilt from the batches"),
    ("leader-epoch-checkpoint", b"0\n1\nx 0\n", "the leader epochs are rebuilt from the batches"),
])
def test_an_unreadable_optional_checkpoint_is_rebuilt_and_every_partition_serves(fresh_broker, file, content,
                                                                                 rebuilt):
    b = fresh_broker()
    for t in [BAD] + HEALTHY:
        b.create_topic(t)
        produce(b, t)
    b.kill()
    (b.data_dir / f"{BAD}-0" / file).write_bytes(content)
    b.start()
    for t in HEALTHY + [BAD]:
        wait_until(lambda t=t: all_served(b, t), DEADLINE_S, f"{t}-0 serving its records")
    log = b.log_path.read_text()
    assert f"{BAD}-0/{file}" in log and rebuilt in log, log[-3000:]
    produce(b, BAD)   # and it takes writes
    if file == "leader-epoch-checkpoint":
        epochs = (b.data_dir / f"{BAD}-0" / file).read_text().splitlines()
        assert epochs[0] == "0" and int(epochs[1]) >= 1, epochs   # rewritten from the batches


def test_an_unreadable_log_start_offset_keeps_only_its_partition_offline(fresh_broker):
    b = fresh_broker()
    for t in [BAD] + HEALTHY:
        b.create_topic(t)
        produce(b, t)
    b.kill()
    path = b.data_dir / f"{BAD}-0" / "log-start-offset-checkpoint"
    path.write_bytes(b"garbage")
    b.start()
    for t in HEALTHY:
        wait_until(lambda t=t: all_served(b, t), DEADLINE_S, f"{t}-0 serving its records")
    assert values(b, BAD) is None   # never served from an unknown start
    log = b.log_path.read_text()
    assert f"partition {BAD}-0: cannot open its replica" in log and str(path) in log and "To repair" in log, \
        log[-3000:]
    # The repair the line names: remove the file (serve from the first segment), restart.
    b.stop()
    path.unlink()
    b.start()
    wait_until(lambda: all_served(b, BAD), DEADLINE_S, f"{BAD}-0 serving once repaired")


def test_an_offline_replica_is_offline_at_every_door(tmp_path):
    """The breaker of session 40: a partition kept offline by a damaged log-start-offset-checkpoint
    was reported healthy and empty: Kafka Metadata named this broker its leader without an error,
    REST showed it led with log_end_offset 0 and offline_partitions_count 0, and HTTP reads said
    "has not opened its replica yet (the topic was created a moment ago)". Kafka answers an
    offline replica on a failed log directory with KAFKA_STORAGE_ERROR and no leader."""
    from confluent_kafka.admin import AdminClient
    from conftest import Broker, free_port
    b = Broker(tmp_path / "ringlog-data", kafka_port=free_port()).start()
    try:
        for t in [BAD] + HEALTHY[:2]:
            b.create_topic(t)
            produce(b, t)
        b.kill()
        path = b.data_dir / f"{BAD}-0" / "log-start-offset-checkpoint"
        path.write_bytes(b"zz\nqq\n")
        b.start()
        for t in HEALTHY[:2]:
            wait_until(lambda t=t: all_served(b, t), DEADLINE_S, f"{t}-0 serving its records")
        wait_until(lambda: "cannot open its replica" in b.log_path.read_text(), DEADLINE_S, "the open failure logged")
        # REST: no leader, the reason, counted offline (topic, cluster figures and the metric).
        part = requests.get(b.v3(f"/topics/{BAD}/partitions/0"), timeout=10).json()
        assert part["leader"] is None and str(path) in part.get("offline_reason", ""), part
        assert part["high_watermark_established"] is False, part
        topic = requests.get(b.v3(f"/topics/{BAD}"), timeout=10).json()
        assert topic["offline_partitions_count"] == 1, topic
        healthy = requests.get(b.v3(f"/topics/{HEALTHY[0]}"), timeout=10).json()
        assert healthy["offline_partitions_count"] == 0, healthy
        metrics = requests.get(f"{b.url}/metrics", timeout=10).text
        assert f'ringlog_topic_offline_partitions{{topic="{BAD}"}} 1' in metrics
        # HTTP: 503 naming the damaged file, never "created a moment ago".
        for url, accept in ((f"{b.url}/topics/{BAD}/partitions/0/records?offset=0", BINARY),
                            (f"{b.url}/topics/{BAD}/partitions/0/offsets", "application/json")):
            r = requests.get(url, headers={"Accept": accept}, timeout=30)
            assert r.status_code == 503 and str(path) in r.text and "a moment ago" not in r.text, (url, r.text)
        # Kafka Metadata: no leader, LEADER_NOT_AVAILABLE.
        md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(BAD, timeout=10).topics[BAD].partitions[0]
        assert md.leader == -1 and md.error is not None and md.error.name() == "LEADER_NOT_AVAILABLE", (md.leader, md.error)
    finally:
        b.stop()


@pytest.mark.parametrize("other_id", ["AAAAAAAAAAAAAAAAAAAAAA", "q2N4oC3hQxWm0-1yZx9aBg"])
def test_a_partition_metadata_naming_another_topic_id_moves_its_files_aside(fresh_broker, other_id):
    """The breaker of session 40: a well-formed partition.metadata naming another topic id made
    the broker delete the partition at start with an INFO line (6000 acknowledged records of the
    only copy). Whether these are an earlier topic's records or the file is damaged is unknown:
    the directory is moved aside whole with a warning naming where (Kafka's stray logs), and the
    partition starts a new replica."""
    b = fresh_broker()
    for t in [BAD] + HEALTHY[:2]:
        b.create_topic(t)
        produce(b, t)
    b.stop()
    path = b.data_dir / f"{BAD}-0" / "partition.metadata"
    original = path.read_text()
    ours = original.split("topic_id: ")[1].strip()
    sizes = {f.name: f.stat().st_size for f in (b.data_dir / f"{BAD}-0").glob("*.log")}
    assert sum(sizes.values()) > 0
    path.write_text(f"version: 0\ntopic_id: {other_id}\n")
    b.start()
    for t in HEALTHY[:2]:
        wait_until(lambda t=t: all_served(b, t), DEADLINE_S, f"{t}-0 serving its records")
    aside = list(b.data_dir.glob(f"{BAD}-0.{other_id}*-stray"))
    assert len(aside) == 1, list(b.data_dir.iterdir())
    assert {f.name: f.stat().st_size for f in aside[0].glob("*.log")} == sizes   # nothing deleted
    log = b.log_path.read_text()
    assert f"moved aside to {aside[0]}" in log and other_id in log, log[-3000:]
    assert ours not in (aside[0] / "partition.metadata").read_text()
    produce(b, BAD)   # a new replica takes writes


def test_a_stray_directory_of_an_unknown_topic_is_moved_aside_not_deleted(fresh_broker):
    """A directory whose topic id the metadata does not know and whose name is no partition of
    this broker is a stray log: moved aside ("-stray", as Kafka's LogManager does), never deleted."""
    import shutil
    b = fresh_broker()
    b.create_topic(BAD)
    produce(b, BAD)
    b.stop()
    stray = b.data_dir / "gone-0"
    shutil.copytree(b.data_dir / f"{BAD}-0", stray)
    (stray / "partition.metadata").write_text("version: 0\ntopic_id: q2N4oC3hQxWm0-1yZx9aBg\n")
    sizes = {f.name: f.stat().st_size for f in stray.glob("*.log")}
    b.start()
    wait_until(lambda: all_served(b, BAD), DEADLINE_S, f"{BAD}-0 serving its records")
    aside = b.data_dir / "gone-0.q2N4oC3hQxWm0-1yZx9aBg-stray"
    wait_until(lambda: aside.exists(), DEADLINE_S, "the stray directory moved aside")
    assert not stray.exists()
    assert {f.name: f.stat().st_size for f in aside.glob("*.log")} == sizes
    log = b.log_path.read_text()
    assert "log directory gone-0 belongs to topic id q2N4oC3hQxWm0-1yZx9aBg" in log and str(aside) in log, log[-3000:]
    b.stop()
    b.start()   # a second start leaves the moved-aside directory alone
    wait_until(lambda: all_served(b, BAD), DEADLINE_S, f"{BAD}-0 serving after a second start")
    assert aside.exists() and not list(b.data_dir.glob("gone-0.*-stray.*"))


def filled_segments(b, topic):
    """`topic` with 4 KiB segments and 200 records (40 produces of 5); its segment files, sorted."""
    b.create_topic(topic, configs={"segment.bytes": "4096"})
    for n in range(40):
        body = {"records": [{"value": base64.b64encode(f"{n}-{i}-".encode() + b"x" * 50).decode()}
                            for i in range(5)]}
        r = requests.post(f"{b.url}/topics/{topic}/partitions/0", json=body, headers={"Content-Type": BINARY},
                          timeout=10)
        assert r.status_code == 200, r.text
    return sorted((b.data_dir / f"{topic}-0").glob("*.log"))


def end_offset(b, topic):
    r = requests.get(f"{b.url}/topics/{topic}/partitions/0/offsets", timeout=10)
    return r.json()["end_offset"] if r.status_code == 200 else None


def test_a_stray_empty_segment_file_costs_no_records(fresh_broker):
    """The breaker: an empty 00000000000000000100.log inside a segment of offsets 80-119 cut the
    log at 120 and deleted the intact segments after it. It holds nothing: it alone goes."""
    b = fresh_broker()
    segments = filled_segments(b, "seg")
    assert len(segments) >= 3, segments
    b.kill()
    stray = b.data_dir / "seg-0" / f"{int(segments[1].stem) + 1:020d}.log"
    stray.write_bytes(b"")
    b.start()
    assert wait_until(lambda: end_offset(b, "seg"), DEADLINE_S, "seg-0 open") == 200
    log = b.log_path.read_text()
    assert f"removed the empty segment {stray.name}" in log, log[-3000:]


def test_a_missing_middle_segment_ends_the_log_loudly(fresh_broker):
    """Offsets stay dense (design.md): a segment missing in the middle ends the log where the
    segment before it ends, and every later segment goes - with one line per file saying so."""
    b = fresh_broker()
    segments = filled_segments(b, "seg")
    assert len(segments) >= 3, segments
    b.kill()
    middle = segments[len(segments) // 2]
    middle.unlink()
    b.start()
    end = wait_until(lambda: end_offset(b, "seg"), DEADLINE_S, "seg-0 open")
    assert end == int(middle.stem), end
    log = b.log_path.read_text()
    for later in segments[len(segments) // 2 + 1:]:
        assert f"removed segment {later.name}" in log and f"ends at offset {end}" in log, log[-3000:]


@pytest.mark.parametrize("damaged", [b"", b"version: 0\ntopic_id: cut-short\n"])
def test_a_damaged_partition_metadata_keeps_the_replica_offline_and_its_files(fresh_broker, damaged):
    """The breaker of session 30: an empty (or garbled) partition.metadata made the broker delete
    the partition's log at restart and serve it empty from offset 0 (in a cluster, as leader, it
    truncated every follower to nothing). Whose records these are is unknown: the replica stays
    offline with its files kept and a line naming the file and the repair; the others serve."""
    b = fresh_broker()
    for t in [BAD] + HEALTHY:
        b.create_topic(t)
        produce(b, t)
    b.kill()
    path = b.data_dir / f"{BAD}-0" / "partition.metadata"
    original = path.read_bytes()
    sizes = {f.name: f.stat().st_size for f in (b.data_dir / f"{BAD}-0").glob("*.log")}
    assert sum(sizes.values()) > 0
    path.write_bytes(damaged)   # empty, or the version line and a topic id cut short (the start-up's stray sweep)
    b.start()
    for t in HEALTHY:
        wait_until(lambda t=t: all_served(b, t), DEADLINE_S, f"{t}-0 serving its records")
    assert values(b, BAD) is None
    assert {f.name: f.stat().st_size for f in (b.data_dir / f"{BAD}-0").glob("*.log")} == sizes   # nothing deleted
    log = b.log_path.read_text()
    assert str(path) in log and "does not parse" in log and "To repair" in log, log[-3000:]
    b.stop()
    path.write_bytes(original)
    b.start()
    wait_until(lambda: all_served(b, BAD), DEADLINE_S, f"{BAD}-0 serving once repaired")


def test_a_cut_below_the_recovery_point_is_logged(fresh_broker):
    """The breaker of session 30: recovery cut a damaged segment to nothing without a line."""
    b = fresh_broker()
    segments = filled_segments(b, "seg")
    assert len(segments) >= 3, segments
    b.kill()
    damaged = segments[-1]
    data = bytearray(damaged.read_bytes())
    data[30] ^= 0xFF   # inside the first batch's CRC-covered bytes
    damaged.write_bytes(bytes(data))
    b.start()
    end = wait_until(lambda: end_offset(b, "seg"), DEADLINE_S, "seg-0 open")
    assert end == int(damaged.stem), end
    log = b.log_path.read_text()
    assert f"recovery cut segment {damaged.name} at offset {end}" in log, log[-3000:]


def test_a_stray_copy_of_a_segment_costs_no_records(fresh_broker):
    """The breaker of session 30: a copy of one segment saved under a base offset inside it ended
    the log there and deleted the genuine segments after it. It starts inside the log before it:
    a stray copy, removed alone."""
    b = fresh_broker()
    segments = filled_segments(b, "seg")
    assert len(segments) >= 3, segments
    b.kill()
    first = segments[0]
    inside = int(segments[1].stem) - 1   # starts inside the first segment
    stray = first.parent / f"{inside:020d}.log"
    stray.write_bytes(first.read_bytes())
    b.start()
    assert wait_until(lambda: end_offset(b, "seg"), DEADLINE_S, "seg-0 open") == 200
    log = b.log_path.read_text()
    assert f"removed segment {stray.name}" in log and "stray copy" in log, log[-3000:]


def test_another_partitions_checkpoint_is_not_applied(fresh_broker):
    """The breaker of session 30: a log-start-offset-checkpoint naming another partition was
    applied, hiding records. A checkpoint names its partition: another's does not parse here."""
    b = fresh_broker()
    for t in [BAD] + HEALTHY:
        b.create_topic(t)
        produce(b, t)
    b.kill()
    (b.data_dir / f"{BAD}-0" / "log-start-offset-checkpoint").write_text("0\n1\nh0 0 3\n")
    (b.data_dir / f"{BAD}-0" / "replication-offset-checkpoint").write_text("0\n1\nh0 0 3\n")
    b.start()
    for t in HEALTHY:
        wait_until(lambda t=t: all_served(b, t), DEADLINE_S, f"{t}-0 serving its records")
    assert values(b, BAD) is None   # the log start is unknown: offline, as a garbled file
    log = b.log_path.read_text()
    assert "names 'h0 0', not this partition ('a-bad 0')" in log, log[-3000:]


@pytest.mark.parametrize("cut", ["to_nothing", "at_a_batch_boundary"])
def test_records_lost_below_the_recovery_point_are_logged_however_cut(fresh_broker, cut):
    """The breaker of session 40: the active segment cut to 0 bytes or exactly at a batch
    boundary lost acknowledged records below the checkpointed recovery point without a line (the
    log end fell from 6000 to 5400); only a cut inside a batch was logged."""
    b = fresh_broker()
    segments = filled_segments(b, "seg")
    b.stop()   # clean: the recovery point and high watermark checkpoints say 200
    active = segments[-1]
    data = active.read_bytes()
    first_batch = 12 + int.from_bytes(data[8:12], "big")
    assert len(data) > first_batch, (active, len(data))   # two batches at least
    active.write_bytes(b"" if cut == "to_nothing" else data[:first_batch])
    b.start()
    end = wait_until(lambda: end_offset(b, "seg"), DEADLINE_S, "seg-0 open")
    assert end < 200, end
    log = b.log_path.read_text()
    assert f"recovery ends the log at offset {end}, below the recovery point 200" in log, log[-3000:]
    assert "acknowledged records were lost here" in log, log[-3000:]
