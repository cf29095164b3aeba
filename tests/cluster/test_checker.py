"""The checker fires: each anomaly kind is found in a synthetic history built to hold it, and a
clean history passes. Also the offline segment reader on batches built here byte by byte.

Run: /usr/bin/python3 -m pytest -q tests/cluster/test_checker.py   (meson test: cluster-checker)
"""
import copy
import hashlib
import pathlib
import struct
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import checker    # noqa: E402
import segments   # noqa: E402


def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()


def clean_history():
    """Two partitions, two keys each, three acked writes per key; reads, reports and replicas agree."""
    writes, reads, final, replicas = [], [], {}, {}
    t = 0.0
    for p in (0, 1):
        records = []
        for seq in range(3):
            for k in (f"k{p}a", f"k{p}b"):
                offset = len(records)
                value = f"{k}:{seq}"
                writes.append({"value": value, "key": k, "partition": p, "seq": seq, "status": "ok",
                               "offset": offset, "t_invoke": t, "t_complete": t + 0.5, "node": 1, "error": None})
                t += 1.0
                records.append([offset, k, value])
                reads.append({"partition": p, "offset": offset, "value": value, "key": k, "node": 2, "t": t})
        # an unknown write that never landed, and a failed one: neither is an anomaly
        writes.append({"value": f"k{p}a:99", "key": f"k{p}a", "partition": p, "seq": 99, "status": "unknown",
                       "offset": None, "t_invoke": t, "t_complete": t + 10, "node": 3, "error": "timeout"})
        writes.append({"value": f"k{p}b:98", "key": f"k{p}b", "partition": p, "seq": 98, "status": "fail",
                       "offset": None, "t_invoke": t, "t_complete": t + 0.1, "node": 3, "error": "503"})
        final[str(p)] = {"high_watermark": len(records), "records": records}
        batches = [[r[0], r[0], digest(r[2]), 80] for r in records]
        replicas[str(p)] = {str(n): {"log_end_offset": len(records), "high_watermark_checkpoint": len(records),
                                     "batches": copy.deepcopy(batches)} for n in (1, 2, 3)}
    hw = []
    for i in range(1, 7):
        for p in (0, 1):
            hw.append({"partition": p, "node": 1, "incarnation": 1, "leader": 1, "leader_epoch": 0,
                       "high_watermark": i, "t_send": i, "t_recv": i + 0.1})
            # a follower's high watermark lags and may drop: not served, not judged
            hw.append({"partition": p, "node": 2, "incarnation": 1, "leader": 1, "leader_epoch": 0,
                       "high_watermark": 7 - i, "t_send": i, "t_recv": i + 0.1})
    # leadership moves to node 2 in epoch 1 with a higher high watermark
    hw.append({"partition": 0, "node": 2, "incarnation": 1, "leader": 2, "leader_epoch": 1,
               "high_watermark": 6, "t_send": 8, "t_recv": 8.1})
    return {"partitions": [0, 1], "writes": writes, "reads": reads, "hw": hw, "final": final,
            "replicas": replicas, "converged": True}


def append_committed(h, p, offset, key, value):
    """A record the final log and every replica hold below the high watermark."""
    h["final"][str(p)]["records"].append([offset, key, value])
    h["final"][str(p)]["high_watermark"] = offset + 1
    for rep in h["replicas"][str(p)].values():
        rep["batches"].append([offset, offset, digest(value), 80])
        rep["log_end_offset"] = offset + 1


def kinds(result):
    return {k for k, v in result["anomalies"].items() if v}


def test_a_clean_history_is_valid():
    result = checker.check(clean_history())
    assert kinds(result) == set(), checker.format_report(result)
    assert result["verdict"] == "VALID"
    assert result["stats"]["acked"] == 12 and result["stats"]["unknown"] == 2 and result["stats"]["failed"] == 2


def test_an_unknown_write_that_landed_is_fine():
    h = clean_history()
    append_committed(h, 0, 6, "k0a", "k0a:99")
    result = checker.check(h)
    assert result["verdict"] == "VALID", checker.format_report(result)
    assert result["stats"]["unknown_present"] == 1


def test_lost_acknowledged_write():
    h = clean_history()
    h["final"]["1"]["records"] = [r for r in h["final"]["1"]["records"] if r[2] != "k1b:2"]
    h["reads"] = [r for r in h["reads"] if r["value"] != "k1b:2"]
    result = checker.check(h)
    assert kinds(result) == {"lost"}, checker.format_report(result)
    assert result["anomalies"]["lost"][0]["value"] == "k1b:2"
    assert result["verdict"] == "INVALID"
    # still lost when a replica holds it above a high watermark that never reached it; named
    h["above_hw"] = {"1": {"3": [[6, "k1b:2"]]}}
    result = checker.check(h)
    assert kinds(result) == {"lost"}
    assert result["anomalies"]["lost"][0]["on_disk_above_high_watermark_on"] == ["3"]


def test_record_read_then_gone():
    h = clean_history()
    # an unknown write was served to a reader (from a leader that lost it later), then vanished
    h["reads"].append({"partition": 0, "offset": 6, "value": "k0a:99", "key": "k0a", "node": 1, "t": 50})
    result = checker.check(h)
    assert kinds(result) == {"read-then-gone"}, checker.format_report(result)


def test_one_offset_two_values():
    h = clean_history()
    # a reader was served another acked value at offset 2 (a stale or diverged replica)
    h["reads"].append({"partition": 0, "offset": 2, "value": "k0a:0", "key": "k0a", "node": 3, "t": 60})
    result = checker.check(h)
    assert "inconsistent-offset" in kinds(result), checker.format_report(result)
    assert result["anomalies"]["inconsistent-offset"][0]["offset"] == 2


def test_ack_naming_an_offset_that_holds_another_value():
    h = clean_history()
    w = next(w for w in h["writes"] if w["value"] == "k1a:1")
    w["offset"] = 0
    result = checker.check(h)
    assert "inconsistent-offset" in kinds(result), checker.format_report(result)


def test_reordering_within_a_key_in_the_final_log():
    h = clean_history()
    recs = h["final"]["0"]["records"]
    # swap k0a:0 (offset 0) and k0a:1 (offset 2) in the final log, acks and reads say nothing
    recs[0][2], recs[2][2] = recs[2][2], recs[0][2]
    h["reads"] = [r for r in h["reads"] if r["partition"] != 0]
    for w in h["writes"]:
        if w["partition"] == 0:
            w["offset"] = None
    result = checker.check(h)
    assert kinds(result) == {"reorder"}, checker.format_report(result)


def test_reordering_within_a_key_in_the_acks():
    h = clean_history()
    h["final"] = {}
    h["reads"] = []
    a = next(w for w in h["writes"] if w["value"] == "k0b:0")
    b = next(w for w in h["writes"] if w["value"] == "k0b:1")
    a["offset"], b["offset"] = 9, 8
    result = checker.check(h)
    assert kinds(result) == {"reorder"}, checker.format_report(result)


def test_concurrent_writes_of_one_key_are_not_ordered():
    h = clean_history()
    a = next(w for w in h["writes"] if w["value"] == "k0b:0")
    b = next(w for w in h["writes"] if w["value"] == "k0b:1")
    b["t_invoke"] = a["t_complete"] - 0.1      # sent before the first was acknowledged
    a["offset"], b["offset"] = b["offset"], a["offset"]
    for r in h["final"]["0"]["records"]:
        r[2] = {"k0b:0": "k0b:1", "k0b:1": "k0b:0"}.get(r[2], r[2])
    h["reads"] = [r for r in h["reads"] if r["partition"] != 0]
    result = checker.check(h)
    assert "reorder" not in kinds(result), checker.format_report(result)


def test_high_watermark_regression_on_one_leader():
    h = clean_history()
    h["hw"].append({"partition": 1, "node": 1, "incarnation": 1, "leader": 1, "leader_epoch": 0,
                    "high_watermark": 3, "t_send": 20, "t_recv": 20.1})
    h["hw"].append({"partition": 1, "node": 1, "incarnation": 1, "leader": 1, "leader_epoch": 0,
                    "high_watermark": 2, "t_send": 21, "t_recv": 21.1})
    result = checker.check(h)
    assert kinds(result) == {"hw-regression"}, checker.format_report(result)
    rules = {a["rule"] for a in result["anomalies"]["hw-regression"]}
    assert "one broker process" in rules
    regression = next(a for a in result["anomalies"]["hw-regression"] if a["rule"] == "one broker process")
    assert regression["reports"] == 2     # the 3 and then the 2, both below 6: one entry


def test_high_watermark_regression_across_leaders():
    h = clean_history()
    # the new leader (epoch 1) reports 4 after the old leader's 6 was seen: still establishing
    # its high watermark (KIP-207: not judged); it catches up to 6, then reports 4: a regression
    first = {"partition": 1, "node": 3, "incarnation": 1, "leader": 3, "leader_epoch": 1,
             "high_watermark": 4, "t_send": 27.5, "t_recv": 27.6}
    h["hw"].append(first)
    assert kinds(checker.check(h)) == set()
    h["hw"].append(dict(first, high_watermark=6, t_send=28.5, t_recv=28.6))
    assert kinds(checker.check(h)) == set()
    h["hw"].append(dict(first, t_send=30, t_recv=30.1))
    result = checker.check(h)
    assert kinds(result) == {"hw-regression"}, checker.format_report(result)
    assert "leaders in epoch order" in {a["rule"] for a in result["anomalies"]["hw-regression"]}


def test_a_leader_that_says_it_is_establishing_is_not_judged_until_it_says_it_is_done():
    """Seed 68's shape: the new leader (epoch 1) reports 4, the old one (epoch 0) is then seen at
    6, and the new leader reports 4 again. With the broker's own flag (high_watermark_established)
    the second 4 is not a regression while the flag is false - and is one once it is true."""
    h = clean_history()
    new = {"partition": 1, "node": 3, "incarnation": 1, "leader": 3, "leader_epoch": 1,
           "high_watermark": 4, "established": False, "t_send": 27.5, "t_recv": 27.6}
    h["hw"].append(new)
    h["hw"].append({"partition": 1, "node": 1, "incarnation": 1, "leader": 1, "leader_epoch": 0,
                    "high_watermark": 6, "established": True, "t_send": 27.7, "t_recv": 27.8})
    h["hw"].append(dict(new, t_send=28.5, t_recv=28.6))
    assert kinds(checker.check(h)) == set(), checker.format_report(checker.check(h))
    h["hw"].append(dict(new, established=True, t_send=29.5, t_recv=29.6))
    result = checker.check(h)
    # ... and an end below partition 1's acknowledged offset 5 (KAFKA-2334) besides
    assert kinds(result) == {"hw-regression", "end-below-ack"}, checker.format_report(result)
    assert "leaders in epoch order" in {a["rule"] for a in result["anomalies"]["hw-regression"]}


def test_a_stale_leader_of_an_older_epoch_is_not_a_regression():
    h = clean_history()
    # node 1 still believes it leads partition 0 in epoch 0 after node 2 led it in epoch 1 at 6:
    # its report of 6 (no lower than its own) is stale, not a regression of the newer epoch
    h["hw"].append({"partition": 0, "node": 1, "incarnation": 1, "leader": 1, "leader_epoch": 0,
                    "high_watermark": 6, "t_send": 40, "t_recv": 40.1})
    # and a report received after the next request was sent is not ordered before it
    h["hw"].append({"partition": 0, "node": 3, "incarnation": 1, "leader": 3, "leader_epoch": 2,
                    "high_watermark": 9, "t_send": 41, "t_recv": 43})
    h["hw"].append({"partition": 0, "node": 2, "incarnation": 1, "leader": 2, "leader_epoch": 2,
                    "high_watermark": 7, "t_send": 42, "t_recv": 42.1})
    result = checker.check(h)
    assert kinds(result) == set(), checker.format_report(result)


def test_an_end_below_an_acknowledged_offset_through_any_node():
    """KAFKA-2334: after partition 1's write at offset 5 was acknowledged (t=11.5), node 3 tells a
    client the partition ends at 4 (a zombie leader's, or a new leader's before KIP-207 allows)."""
    h = clean_history()
    h["ends"] = [
        {"partition": 1, "node": 1, "end_offset": 6, "status": 200, "t_send": 12.0, "t_recv": 12.1},
        # asked before the ack completed: 5 was not acknowledged yet, nothing to judge
        {"partition": 1, "node": 3, "end_offset": 5, "status": 200, "t_send": 11.0, "t_recv": 12.0},
        # refused (503, retry): no answer
        {"partition": 1, "node": 3, "end_offset": None, "status": 503, "t_send": 12.0, "t_recv": 12.1},
    ]
    result = checker.check(h)
    assert kinds(result) == set(), checker.format_report(result)
    assert result["stats"]["end_answers"] == 2 and result["stats"]["end_refusals"] == 1
    h["ends"].append({"partition": 1, "node": 3, "end_offset": 4, "status": 200, "t_send": 12.0, "t_recv": 12.1})
    h["ends"].append({"partition": 1, "node": 3, "end_offset": 5, "status": 200, "t_send": 13.0, "t_recv": 13.1})
    result = checker.check(h)
    assert kinds(result) == {"end-below-ack"}, checker.format_report(result)
    [found] = result["anomalies"]["end-below-ack"]
    assert found["node"] == 3 and found["answers"] == 2 and found["end"] == 4 and found["acked_offset"] == 5


def test_a_partitions_route_figure_counts_only_when_the_broker_calls_it_established():
    h = clean_history()
    below = {"partition": 1, "node": 2, "incarnation": 1, "leader": 1, "leader_epoch": 0, "high_watermark": 2,
             "t_send": 30.0, "t_recv": 30.1}
    h["hw"].append(dict(below, established=False))   # a follower's own figure, or a leader still establishing
    result = checker.check(h)
    assert "end-below-ack" not in kinds(result), checker.format_report(result)
    h["hw"].append(dict(below, established=True))
    result = checker.check(h)
    assert kinds(result) == {"end-below-ack"}, checker.format_report(result)
    assert result["anomalies"]["end-below-ack"][0]["source"].startswith("v3 partitions")


def test_a_kafka_fetch_answer_carrying_a_high_watermark_below_an_ack():
    """The breaker's finding: a Fetch from offset 0 (committed records) whose answer carried an
    establishing leader's high watermark, below the offset acknowledged at t=11.5."""
    h = clean_history()
    h["fetch_ends"] = [
        {"partition": 1, "node": 2, "high_watermark": 6, "error": 0, "t_send": 12.0, "t_recv": 12.1},
        {"partition": 1, "node": 2, "high_watermark": None, "error": 78, "t_send": 12.0, "t_recv": 12.1},
    ]
    result = checker.check(h)
    assert "end-below-ack" not in kinds(result), checker.format_report(result)
    h["fetch_ends"].append({"partition": 1, "node": 2, "high_watermark": 3, "error": 0, "t_send": 12.5,
                            "t_recv": 12.6})
    result = checker.check(h)
    assert kinds(result) == {"end-below-ack"}, checker.format_report(result)
    assert result["anomalies"]["end-below-ack"][0]["source"] == "Kafka Fetch high_watermark"


def test_replica_divergence_below_the_high_watermark():
    h = clean_history()
    h["replicas"]["0"]["3"]["batches"][4][2] = digest("something else")
    result = checker.check(h)
    assert kinds(result) == {"divergence"}, checker.format_report(result)
    assert result["anomalies"]["divergence"][0]["base_offset"] == 4


def test_replicas_may_differ_above_the_high_watermark():
    h = clean_history()
    h["replicas"]["0"]["3"]["batches"].append([6, 6, digest("uncommitted"), 80])
    h["replicas"]["0"]["3"]["log_end_offset"] = 7
    result = checker.check(h)
    assert kinds(result) == set(), checker.format_report(result)


def test_a_replica_short_of_the_high_watermark_once_in_sync():
    h = clean_history()
    h["replicas"]["1"]["2"]["batches"] = h["replicas"]["1"]["2"]["batches"][:3]
    h["replicas"]["1"]["2"]["log_end_offset"] = 3
    result = checker.check(h)
    assert kinds(result) == {"divergence"}, checker.format_report(result)
    # while replicas were not all back in sync, being behind is not divergence
    h["converged"] = False
    result = checker.check(h)
    assert kinds(result) == set(), checker.format_report(result)
    assert result["verdict"] == "INCONCLUSIVE"


def test_duplicate_and_phantom_values():
    h = clean_history()
    append_committed(h, 1, 6, "k1a", "k1a:0")
    append_committed(h, 1, 7, "zz", "never-written")
    result = checker.check(h)
    assert kinds(result) == {"duplicate", "phantom"}, checker.format_report(result)


def test_a_definitely_failed_write_that_was_stored():
    h = clean_history()
    append_committed(h, 1, 6, "k1b", "k1b:98")
    result = checker.check(h)
    assert kinds(result) == {"failed-present"}, checker.format_report(result)


def test_a_broker_that_exited_by_itself():
    h = clean_history()
    h["events"] = [{"t": 3.0, "event": "nemesis-heal"},
                   {"t": 9.0, "event": "node-crashed", "node": 2, "exit_code": 134, "log_tail": "assertion failed"}]
    result = checker.check(h)
    assert kinds(result) == {"crash"}, checker.format_report(result)


def test_no_acknowledged_write_is_inconclusive_not_valid():
    h = clean_history()
    for w in h["writes"]:
        w["status"] = "unknown"
        w["offset"] = None
    result = checker.check(h)
    assert result["verdict"] == "INCONCLUSIVE"


# -- the offline segment reader

def zigzag(n):
    raw = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = raw & 0x7F
        raw >>= 7
        if raw:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode_batch(base_offset, leader_epoch, kvs):
    records = b""
    for i, (k, v) in enumerate(kvs):
        body = b"\x00" + zigzag(0) + zigzag(i)
        body += zigzag(len(k)) + k if k is not None else zigzag(-1)
        body += zigzag(len(v)) + v
        body += zigzag(0)
        records += zigzag(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, len(kvs) - 1, 0, 0, -1, -1, -1, len(kvs)) + records
    after_length = struct.pack(">ibI", leader_epoch, 2, 0) + after_crc
    return struct.pack(">qi", base_offset, len(after_length)) + after_length


def test_segment_reader_reads_batches_and_records_and_stops_at_a_torn_tail(tmp_path):
    a = encode_batch(0, 3, [(b"k", b"v0"), (None, b"v1")])
    b = encode_batch(2, 4, [(b"key", b"x" * 300)])
    batches, torn = segments.parse_segment(a + b)
    assert torn is None
    assert [(x.base_offset, x.last_offset, x.partition_leader_epoch) for x in batches] == [(0, 1, 3), (2, 2, 4)]
    assert [(r.offset, r.key, r.value) for r in batches[0].records] == [(0, b"k", b"v0"), (1, None, b"v1")]
    assert batches[1].records[0].value == b"x" * 300
    assert batches[0].raw == a and batches[1].raw == b
    batches, torn = segments.parse_segment(a + b[:-5])
    assert len(batches) == 1 and "torn batch" in torn

    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(a)
    (d / "00000000000000000002.log").write_bytes(b)
    (d / "replication-offset-checkpoint").write_text("0\n1\nt 0 3\n")
    rep = segments.read_replica(d)
    assert rep.log_end_offset == 3 and rep.high_watermark_checkpoint == 3 and rep.torn_tail is None
    assert [x.base_offset for x in rep.batches] == [0, 2]


def fetch_answer(node, t_send):
    """A Kafka Fetch of partition 1 answered by `node` with high watermark 3 (below the ack of 5)."""
    return {"partition": 1, "node": node, "high_watermark": 3, "error": 0, "t_send": t_send, "t_recv": t_send + 0.1}


def test_a_fetch_answer_of_a_node_cut_off_from_the_controller_is_not_judged():
    """CI seed 2104097521: node 1, cut off from the controller (node 3) by a bridge, still led a
    partition in its old epoch and answered a Fetch with its old high watermark, below an ack of
    the new leader (Kafka does the same; its readers see committed records only). The same
    answer from a connected node, or after the heal's grace, is still an anomaly."""
    h = clean_history()
    h["events"] = [{"t": 11.0, "event": "nemesis-start", "fault": "bridge", "also": None,
                    "resolved": {"node": 3, "middle": 2, "dropped": [[1, 3], [3, 1]]}},
                   {"t": 13.0, "event": "nemesis-heal"}]
    h["fetch_ends"] = [fetch_answer(1, 12.5)]
    assert "end-below-ack" not in kinds(checker.check(h)), checker.format_report(checker.check(h))
    for node, t in ((2, 12.5), (1, 13.0 + checker.heal_grace_s(11.0, 13.0) + 0.5)):
        h["fetch_ends"] = [fetch_answer(node, t)]
        assert kinds(checker.check(h)) == {"end-below-ack"}, (node, t)


def test_a_fetch_answer_of_a_node_just_continued_from_a_pause_is_not_judged():
    """CI seed 1612168957: node 2 led partition 0, was SIGSTOPped past broker.session.timeout.ms
    (fenced; node 1 led on and acknowledged more), and 160 ms after SIGCONT, before it read the
    change, answered a Fetch below its high watermark with its old figure (docs/kafka.md: the open
    part, as in Kafka). Like a node cut off by the network, it is not judged until the heal's
    grace has passed; another node's same answer, or node 2's after the grace, still is."""
    h = clean_history()
    h["events"] = [{"t": 11.0, "event": "nemesis-start", "fault": "pause 2", "also": None,
                    "resolved": {"node": 2, "paused": [2]}},
                   {"t": 13.0, "event": "nemesis-heal"}]
    h["fetch_ends"] = [fetch_answer(2, 13.2)]
    assert "end-below-ack" not in kinds(checker.check(h)), checker.format_report(checker.check(h))
    for node, t in ((3, 13.2), (2, 13.0 + checker.heal_grace_s(11.0, 13.0) + 0.5)):
        h["fetch_ends"] = [fetch_answer(node, t)]
        assert kinds(checker.check(h)) == {"end-below-ack"}, (node, t)


def test_a_node_cut_off_longer_hears_later_after_the_heal():
    """CI of session 27 (seed 27, isolate-leader): node 3, isolated for 3.35 s and replaced as
    partition 1's leader, answered Fetches below its old high watermark with its old figure until
    2.2-3.2 s after the heal, when its connections' retransmissions (backed off over the cut) got
    through and it read the change. The grace after a heal is as long as the cut when that is
    longer than CUT_OFF_GRACE_S, plus CUT_OFF_APPLY_S for the fetch round and apply that follow
    the retransmission; after it, the same answer is judged."""
    h = clean_history()
    h["events"] = [{"t": 10.0, "event": "nemesis-start", "fault": "isolate leader:1", "also": None,
                    "resolved": {"node": 3, "dropped": [[1, 3], [2, 3], [3, 1], [3, 2]]}},
                   {"t": 13.35, "event": "nemesis-heal"}]
    # Session 36's CI: the same seed answered 3.39 s after a heal ending a 3.36 s cut.
    h["fetch_ends"] = [fetch_answer(3, 13.35 + 3.0), fetch_answer(3, 13.35 + 3.35 + 0.04)]
    assert "end-below-ack" not in kinds(checker.check(h)), checker.format_report(checker.check(h))
    h["fetch_ends"] = [fetch_answer(3, 13.35 + 3.35 + checker.CUT_OFF_APPLY_S + 0.3)]
    assert kinds(checker.check(h)) == {"end-below-ack"}


def test_both_ends_of_a_one_way_link_drop_are_cut_off():
    """Breaker, fault-bed seed 26: `one-way leader:2 -> 3` dropped node 1 (the controller) to node
    3; node 3, fenced meanwhile, answered a Fetch below its high watermark with its old figure.
    Both ends of the link are cut off; a third node is not."""
    h = clean_history()
    h["events"] = [{"t": 11.0, "event": "nemesis-start", "fault": "one-way leader:2", "also": None,
                    "resolved": {"node": 1, "to": 3, "dropped": [[1, 3]]}},
                   {"t": 13.0, "event": "nemesis-heal"}]
    for node in (1, 3):
        h["fetch_ends"] = [fetch_answer(node, 12.5)]
        assert "end-below-ack" not in kinds(checker.check(h)), node
    h["fetch_ends"] = [fetch_answer(2, 12.5)]
    assert kinds(checker.check(h)) == {"end-below-ack"}
