"""The checker: judges one run's history. Pure functions of a JSON-shaped dict, no I/O.

History shape (what workload.py records; tests/cluster/test_checker.py builds synthetic ones):

    {
      "partitions": [0, 1, 2],
      "writes": [{"value": str, "key": str, "partition": int, "seq": int (per key, issue order),
                  "status": "ok" | "fail" | "unknown", "offset": int or None (the ack's offset),
                  "t_invoke": s, "t_complete": s, "node": int, "error": str or None}],
      "reads":  [{"partition", "offset", "value", "key", "node", "t"}],
      "hw":     [{"partition", "node", "incarnation", "leader": int or None, "leader_epoch",
                  "high_watermark", "established": bool or None, "t_send", "t_recv"}],
      "ends":   [{"partition", "node", "end_offset": int or None (None: refused), "status", "t_send",
                  "t_recv"}]   (optional: the v2 offsets route asked through every node)
      "fetch_ends": [{"partition", "node", "high_watermark": int or None (None: refused), "error",
                  "t_send", "t_recv"}]   (optional: a Kafka Fetch from offset 0 through every node)
      "final":  {"<p>": {"high_watermark": int, "records": [[offset, key, value], ...]}},
      "replicas": {"<p>": {"<node>": {"log_end_offset": int, "high_watermark_checkpoint": int or None,
                                      "batches": [[base_offset, last_offset, sha256_hex, bytes], ...]}}},
      "converged": bool,
      "above_hw": {"<p>": {"<node>": [[offset, value], ...]}}   (optional: replicas' records at or
                  above the final high watermark; a lost write found there is annotated, still lost)
      "expected_placement": {"replication_factor": int, "excluded": [broker ids]}   (optional: plans
                  that move replicas, e.g. grow-shrink; excluded: brokers decommissioned)
      "placement": {"<p>": {"replicas": [ids], "in_sync": [ids], "reassigning": bool} or None}
                  (optional: each partition's final replica set as its leader describes it)
      "strays": {"<p>": [node ids]}   (optional: partition directories on brokers outside its final
                  replica set, left out of the replica comparison; noted)
    }

Rules (issue 13, "Test bed and checker"; design.md section 1):
- lost: an acknowledged (acks=all) write is not in the final committed log.
- read-then-gone: a value a reader was served is not in the final committed log.
- inconsistent-offset: one offset of a partition holds two values across what producers were told
  (the ack's offset), what readers were served and the final log.
- reorder: two writes of one key, the second sent after the first was acknowledged, stand in the
  opposite order (by ack offsets, or by their offsets in the final log).
- hw-regression: a broker process, while leading a partition, reported its high watermark lower
  than it had before; or a leader reported one lower than another leader process of the same or
  an older epoch had reported before this request was sent (consumers read through whichever
  broker leads). Followers' high watermarks are not served to consumers and are not judged. A
  new leader's figure in the partitions route is compared with earlier leaders' only once it
  has caught up with them (reported at least their highest): until then it is establishing its
  high watermark (its ISR may still have to fetch, or to shrink), and the broker tells readers at
  its high watermark to retry (KIP-207), so readers never see it go back; the route shows the
  figure as it is. Once caught up, any lower report is a regression.
- end-below-ack (KAFKA-2334, KIP-207): a partition's end told to a client - the v2 offsets route's
  end_offset through any node ("ends"), or a partitions-route high watermark the broker calls
  established (its own leader's figure, known), or the high watermark a Kafka Fetch answer carried
  ("fetch_ends") - at or below an offset acknowledged to an acks=all producer before the request
  was sent. A refusal (503, retry) is no answer and never judged.
- divergence: replicas' batches below the final high watermark are not byte-for-byte equal, or
  (once every replica is back in sync) a replica lacks a batch below it.
- duplicate: one written value at two offsets (every value is sent exactly once, no retries).
- phantom: a value that no producer wrote.
- failed-present: a write the broker refused definitely (connection refused, 4xx other than 408)
  was stored anyway.
- crash: a broker process exited without being told to (an assertion, a fatal error), or a
  SIGTERM at the end did not stop it with status 0 ("events": node-crashed, node-stop-status).
- placement (plans that move replicas): a partition ends with another number of replicas than its
  replication factor, on a decommissioned broker, or still being reassigned.
- admin (plans with admin steps): an admin call answered outside its contract, or a task (moves,
  a decommission) that did not finish within its deadline ("events": admin-step with ok false).
Writes whose outcome is unknown (timeouts, resets, 5xx) may or may not be present: no rule.
"""
import bisect
import collections
import re

ANOMALY_KINDS = ("lost", "read-then-gone", "inconsistent-offset", "reorder", "hw-regression", "end-below-ack",
                 "divergence", "duplicate", "phantom", "failed-present", "crash", "placement", "admin")
# Examples listed per kind in the printed verdict; the counts are always complete.
EXAMPLES_PRINTED_MAX = 10


def _final_log(history, p):
    final = history.get("final", {}).get(str(p))
    if final is None:
        return None
    return final


def check_lost_and_gone(history):
    lost, gone, failed_present = [], [], []
    for p in history["partitions"]:
        final = _final_log(history, p)
        if final is None:
            continue
        present = {r[2] for r in final["records"]}
        for w in history["writes"]:
            if w["partition"] != p:
                continue
            if w["status"] == "ok" and w["value"] not in present:
                entry = {"partition": p, "value": w["value"], "key": w["key"], "acked_offset": w["offset"],
                         "node": w["node"], "t_complete": w["t_complete"]}
                above = history.get("above_hw", {}).get(str(p), {})
                holders = sorted(n for n, recs in above.items() if any(v == w["value"] for _o, v in recs))
                if holders:
                    entry["on_disk_above_high_watermark_on"] = holders
                lost.append(entry)
        read_values = {}
        for r in history["reads"]:
            if r["partition"] == p:
                read_values.setdefault(r["value"], r)
        for value, r in read_values.items():
            if value not in present:
                gone.append({"partition": p, "value": value, "read_offset": r["offset"], "node": r["node"], "t": r["t"]})
        for w in history["writes"]:
            if w["partition"] == p and w["status"] == "fail" and (w["value"] in present or w["value"] in read_values):
                failed_present.append({"partition": p, "value": w["value"], "error": w.get("error"), "node": w["node"]})
    return lost, gone, failed_present


def check_offsets(history):
    """inconsistent-offset, duplicate and phantom."""
    inconsistent, duplicates, phantoms = [], [], []
    written = {w["value"] for w in history["writes"]}
    for p in history["partitions"]:
        seen = collections.defaultdict(dict)   # offset -> value -> first source
        for w in history["writes"]:
            if w["partition"] == p and w["status"] == "ok" and w["offset"] is not None:
                seen[w["offset"]].setdefault(w["value"], f"ack to the producer (node {w['node']})")
        for r in history["reads"]:
            if r["partition"] == p:
                seen[r["offset"]].setdefault(r["value"], f"read via node {r['node']}")
        final = _final_log(history, p)
        final_values = []
        if final is not None:
            for offset, _key, value in final["records"]:
                seen[offset].setdefault(value, "final log")
                final_values.append((value, offset))
        for offset in sorted(seen):
            if len(seen[offset]) > 1:
                inconsistent.append({"partition": p, "offset": offset,
                                     "values": {v: src for v, src in seen[offset].items()}})
        at = collections.defaultdict(list)
        for value, offset in final_values:
            at[value].append(offset)
        for value, offsets in at.items():
            if len(offsets) > 1:
                duplicates.append({"partition": p, "value": value, "offsets": offsets})
        reported = set()
        for offset in sorted(seen):
            for value, src in seen[offset].items():
                if value not in written and value not in reported:
                    reported.add(value)
                    phantoms.append({"partition": p, "offset": offset, "value": value, "source": src})
    return inconsistent, duplicates, phantoms


def check_reorder(history):
    """Writes of one key are sent one at a time; acked ones must stand in send order."""
    out = []
    by_key = collections.defaultdict(list)
    for w in history["writes"]:
        if w["status"] == "ok":
            by_key[w["key"]].append(w)
    final_offset = {}
    for p in history["partitions"]:
        final = _final_log(history, p)
        if final is not None:
            for offset, _key, value in final["records"]:
                final_offset.setdefault((p, value), offset)
    for key, writes in by_key.items():
        writes.sort(key=lambda w: w["seq"])
        prev = None
        for w in writes:
            if prev is not None and w["t_invoke"] >= prev["t_complete"]:
                if w["offset"] is not None and prev["offset"] is not None and w["offset"] <= prev["offset"]:
                    out.append({"key": key, "first": prev["value"], "then": w["value"], "source": "acks",
                                "offsets": [prev["offset"], w["offset"]]})
                a = final_offset.get((prev["partition"], prev["value"]))
                b = final_offset.get((w["partition"], w["value"]))
                if a is not None and b is not None and b <= a:
                    out.append({"key": key, "first": prev["value"], "then": w["value"], "source": "final log",
                                "offsets": [a, b]})
            prev = w
    return out


def check_high_watermarks(history):
    """High watermarks consumers can see: those a leader reports (a follower's is not served).

    Each regression is reported once per (partition, node, incarnation, epoch) with how many
    reports showed it, so one lagging leader polled 50 times counts once.
    """
    found = {}

    def report(key, entry):
        if key in found:
            found[key]["reports"] += 1
        else:
            entry["reports"] = 1
            found[key] = entry

    obs = [h for h in history["hw"] if h.get("high_watermark") is not None and h.get("leader") == h["node"]]
    # One broker process while it leads: its reports in the order its (sequential) poller got them.
    per_process = collections.defaultdict(list)
    for h in obs:
        per_process[(h["partition"], h["node"], h["incarnation"])].append(h)
    for (p, node, inc), seq in per_process.items():
        seq.sort(key=lambda h: h["t_send"])
        best = None
        for h in seq:
            if best is not None and h["high_watermark"] < best["high_watermark"]:
                report(("process", p, node, inc, h["leader_epoch"]),
                       {"partition": p, "rule": "one broker process", "node": node, "incarnation": inc,
                        "leader_epoch": h["leader_epoch"], "before": best["high_watermark"],
                        "after": h["high_watermark"], "t": h["t_send"]})
            if best is None or h["high_watermark"] > best["high_watermark"]:
                best = h
    # Leaders in epoch order: a leader's report is compared with every report another leader
    # process of the same or an older epoch gave before this request was sent.
    caught_up = set()   # (partition, epoch, node, incarnation) that reached its predecessors' figure
    for p in history["partitions"]:
        leaders = [h for h in obs if h["partition"] == p]
        by_recv = sorted(leaders, key=lambda h: h["t_recv"])
        by_send = sorted(leaders, key=lambda h: h["t_send"])
        best = {}   # (epoch, node, incarnation) -> that process's highest report received so far
        i = 0
        for h in by_send:
            while i < len(by_recv) and by_recv[i]["t_recv"] < h["t_send"]:
                g = by_recv[i]
                k = (g["leader_epoch"], g["node"], g["incarnation"])
                if k not in best or g["high_watermark"] > best[k]["high_watermark"]:
                    best[k] = g
                i += 1
            floor = None
            for (epoch, node, inc), g in best.items():
                if epoch <= h["leader_epoch"] and (node, inc) != (h["node"], h["incarnation"]):
                    if floor is None or g["high_watermark"] > floor["high_watermark"]:
                        floor = g
            me = (p, h["leader_epoch"], h["node"], h["incarnation"])
            if h.get("established") is False:
                continue   # the leader says it is still establishing it (KIP-207): reads are gated
            if h.get("established") is True:
                caught_up.add(me)   # the broker's own word: its figure counts from now on
            elif floor is None or h["high_watermark"] >= floor["high_watermark"]:
                caught_up.add(me)   # histories without the flag: the first report that reaches its predecessors'
            if me not in caught_up:
                continue   # still establishing its high watermark (KIP-207): reads are gated
            if floor is not None and h["high_watermark"] < floor["high_watermark"]:
                report(("epochs", p, h["node"], h["incarnation"], h["leader_epoch"]),
                       {"partition": p, "rule": "leaders in epoch order", "node": h["node"],
                        "incarnation": h["incarnation"], "leader_epoch": h["leader_epoch"],
                        "after": h["high_watermark"], "before": floor["high_watermark"],
                        "before_node": floor["node"], "before_epoch": floor["leader_epoch"], "t": h["t_send"]})
    return list(found.values())


# After a heal, the time a node cut off from the controller may still act on its old metadata
# (a metadata fetch round and a heartbeat), s: at least this, and at least as long as the cut
# lasted. A connection whose segments were dropped for H seconds sends its next retransmission
# up to about H later (TCP doubles its retransmission timeout), so a node isolated for 3.35 s
# read that it was replaced 2.2-3.2 s after the heal (CI of session 27, seed 27, isolate-leader).
# After that retransmission come a metadata fetch round and the apply: CUT_OFF_APPLY_S more (the
# CI of session 36, same seed: a node isolated for 3.36 s answered its old figure 3.36-3.39 s
# after the heal, 4 ms past a window of the cut's length).
CUT_OFF_GRACE_S = 2.0
CUT_OFF_APPLY_S = 0.5


def heal_grace_s(start, heal):
    """How long after a heal at `heal` (s) a node cut off since `start` may act on old metadata."""
    return max(CUT_OFF_GRACE_S, heal - start + CUT_OFF_APPLY_S)


def cut_off_windows(history):
    """node -> [(from, to)] while the nemesis had it cut off from the rest of the cluster's
    leadership: a split's minority, a bridge's far side (cut off from the controller, reached only
    through the middle node), an isolated or one-way-cut node; each window runs to the heal plus
    heal_grace_s (CUT_OFF_GRACE_S, or the cut's own length plus CUT_OFF_APPLY_S when longer); for a one-way drop of one link, both of its ends. A paused (SIGSTOPped) node
    is cut off the same way: it hears nothing while stopped, and right after it continues it may
    answer before it reads that it was fenced and replaced (CI seed 1612168957). Such a node may still lead a partition in an old leader epoch
    and answer a Kafka Fetch below its high watermark with that old figure: Kafka does the same
    (docs/kafka.md), and its readers see only committed records, so those answers are not judged
    by end-below-ack. A new leader's figure (KIP-207, the rule this check exists for) comes from
    the connected side."""
    windows = collections.defaultdict(list)
    open_faults = []
    for e in history.get("events", []):
        if e.get("event") == "nemesis-start":
            for r in (e.get("resolved"), e.get("also")):
                if not r or ("dropped" not in r and "paused" not in r):
                    continue
                if "paused" in r:
                    nodes = list(r["paused"])
                elif "minority" in r:
                    nodes = list(r["minority"])
                elif "middle" in r:
                    ends = {a for pair in r["dropped"] for a in pair}
                    nodes = sorted(ends - {r.get("node"), r.get("middle")})
                elif "to" in r:
                    # One direction of one link dropped: TCP between the two ends stops both ways,
                    # so whichever is not the controller is cut off from it (breaker, seed 26).
                    nodes = [r.get("node"), r["to"]]
                else:
                    nodes = [r.get("node")]
                open_faults.append((e["t"], nodes))
        elif e.get("event") == "nemesis-heal":
            for start, nodes in open_faults:
                for n in nodes:
                    windows[n].append((start, e["t"] + heal_grace_s(start, e["t"])))
            open_faults = []
    for start, nodes in open_faults:
        for n in nodes:
            windows[n].append((start, float("inf")))
    return windows


def _within(windows, t):
    return any(a <= t <= b for a, b in windows)


def check_ends_below_acks(history):
    """end-below-ack: each end a client was told against the highest offset acknowledged to a
    producer before it asked. One entry per (partition, node, source) with how many answers showed
    it and the worst one."""
    found = {}
    observations = []
    for e in history.get("ends", []):
        if e.get("end_offset") is not None:
            observations.append((e["partition"], e["node"], "v2 offsets end_offset", e["end_offset"], e["t_send"]))
    cut_off = cut_off_windows(history)
    for e in history.get("fetch_ends", []):
        if e.get("high_watermark") is not None and not _within(cut_off.get(e["node"], ()), e["t_send"]):
            observations.append((e["partition"], e["node"], "Kafka Fetch high_watermark", e["high_watermark"],
                                 e["t_send"]))
    for h in history.get("hw", []):
        if h.get("high_watermark") is not None and h.get("established") is True:
            observations.append((h["partition"], h["node"], "v3 partitions high_watermark (established)",
                                 h["high_watermark"], h["t_send"]))
    for p in history["partitions"]:
        acks = sorted((w["t_complete"], w["offset"]) for w in history["writes"]
                      if w["partition"] == p and w["status"] == "ok" and w["offset"] is not None
                      and w.get("t_complete") is not None)
        times = [t for t, _o in acks]
        highest = []   # highest acknowledged offset among acks[:i+1]
        for _t, o in acks:
            highest.append(o if not highest else max(highest[-1], o))
        for (q, node, source, end, t_send) in observations:
            if q != p:
                continue
            i = bisect.bisect_left(times, t_send)   # acks completed strictly before the request was sent
            if i == 0 or end > highest[i - 1]:
                continue
            key = (p, node, source)
            gap = highest[i - 1] + 1 - end
            if key not in found:
                found[key] = {"partition": p, "node": node, "source": source, "answers": 0, "worst_gap": 0}
            f = found[key]
            f["answers"] += 1
            if gap > f["worst_gap"]:
                f.update({"worst_gap": gap, "end": end, "acked_offset": highest[i - 1], "t": t_send})
    return list(found.values())


def check_divergence(history):
    out = []
    converged = history.get("converged", False)
    for p in history["partitions"]:
        final = _final_log(history, p)
        replicas = history.get("replicas", {}).get(str(p), {})
        if final is None or not replicas:
            continue
        hw = final["high_watermark"]
        tables = {}
        for node, rep in replicas.items():
            tables[node] = {b[0]: b for b in rep["batches"] if b[0] < hw}
        bases = sorted(set().union(*[set(t) for t in tables.values()]))
        for base in bases:
            holders = {node: t[base] for node, t in tables.items() if base in t}
            digests = {(b[1], b[2]) for b in holders.values()}
            if len(digests) > 1:
                isr = final.get("isr")
                out.append({"partition": p, "base_offset": base, "high_watermark": hw,
                            "replicas": {node: {"last_offset": b[1], "sha256": b[2][:16], "bytes": b[3],
                                                "log_end_offset": replicas[node]["log_end_offset"],
                                                "in_sync_at_end": None if isr is None else int(node) in isr}
                                         for node, b in holders.items()}})
                continue
            if converged:
                missing = sorted(node for node in tables if base not in tables[node])
                if missing:
                    out.append({"partition": p, "base_offset": base, "high_watermark": hw,
                                "missing_on": missing, "note": "every replica was in sync at the end"})
        if converged:
            for node, rep in replicas.items():
                if rep["log_end_offset"] < hw:
                    out.append({"partition": p, "node": node, "log_end_offset": rep["log_end_offset"],
                                "high_watermark": hw, "note": "in sync at the end but shorter than the high watermark"})
    return out


def check_placement(history):
    """placement: each partition's final replica set against the expected replication factor and
    the decommissioned brokers. A partition nobody described at the end is not judged (noted)."""
    expected = history.get("expected_placement")
    placement = history.get("placement")
    if not expected or placement is None:
        return []
    rf = expected["replication_factor"]
    excluded = set(expected.get("excluded", []))
    out = []
    for p in history["partitions"]:
        pl = placement.get(str(p))
        if pl is None:
            continue
        problems = []
        replicas = set(pl["replicas"])
        if len(replicas) != rf:
            problems.append(f"{len(replicas)} replicas {sorted(replicas)}, replication factor {rf}")
        if replicas & excluded:
            problems.append(f"still on decommissioned broker(s) {sorted(replicas & excluded)}")
        if pl.get("reassigning"):
            problems.append("still being reassigned")
        if problems:
            out.append({"partition": p, "replicas": sorted(replicas), "in_sync": sorted(pl.get("in_sync", [])),
                        "problems": problems})
    return out


def check_admin(history):
    return [{k: v for k, v in e.items() if k != "event"} for e in history.get("events", [])
            if e.get("event") == "admin-step" and e.get("ok") is False]


def check(history, min_acked=1):
    """Runs every rule. Returns {"anomalies": {kind: [..]}, "stats": {...}, "verdict": str, "notes": [..]}."""
    lost, gone, failed_present = check_lost_and_gone(history)
    inconsistent, duplicates, phantoms = check_offsets(history)
    anomalies = {
        "lost": lost,
        "read-then-gone": gone,
        "inconsistent-offset": inconsistent,
        "reorder": check_reorder(history),
        "hw-regression": check_high_watermarks(history),
        "end-below-ack": check_ends_below_acks(history),
        "divergence": check_divergence(history),
        "duplicate": duplicates,
        "phantom": phantoms,
        "failed-present": failed_present,
        "crash": [{k: v for k, v in e.items() if k != "log_tail"} for e in history.get("events", [])
                  if e.get("event") in ("node-crashed", "node-stop-status")],
        "placement": check_placement(history),
        "admin": check_admin(history),
    }
    status = collections.Counter(w["status"] for w in history["writes"])
    present = set()
    for p in history["partitions"]:
        final = _final_log(history, p)
        if final is not None:
            present |= {r[2] for r in final["records"]}
    stats = {
        "writes": len(history["writes"]),
        "acked": status["ok"],
        "failed": status["fail"],
        "unknown": status["unknown"],
        "unknown_present": sum(1 for w in history["writes"] if w["status"] == "unknown" and w["value"] in present),
        "reads": len(history["reads"]),
        "hw_reports": len(history["hw"]),
        "end_answers": sum(1 for e in history.get("ends", []) if e.get("end_offset") is not None),
        "end_refusals": sum(1 for e in history.get("ends", []) if e.get("end_offset") is None),
        "final_records": sum(len(f["records"]) for f in history.get("final", {}).values()),
    }
    errors = collections.Counter(re.sub(r"\d+", "N", w["error"])[:110] for w in history["writes"]
                                 if w["status"] != "ok" and w.get("error"))
    stats["errors"] = errors.most_common(6)
    gaps = {}
    end = max((w["t_complete"] for w in history["writes"] if w.get("t_complete") is not None), default=None)
    for p in history["partitions"]:
        times = sorted(w["t_complete"] for w in history["writes"] if w["partition"] == p and w["status"] == "ok")
        if times and end is not None:
            times.append(end)     # a partition that stopped taking writes: the gap runs to the end
        if len(times) > 1:
            i = max(range(1, len(times)), key=lambda j: times[j] - times[j - 1])
            gaps[p] = (round(times[i] - times[i - 1], 2), round(times[i - 1], 1))
    stats["longest_ack_gap_s"] = gaps
    notes = []
    missing_final = [p for p in history["partitions"] if _final_log(history, p) is None]
    if missing_final:
        notes.append(f"no final log for partitions {missing_final}: their writes were not judged")
    if not history.get("converged", False):
        notes.append("the cluster did not converge after healing (a leader for every partition and every "
                     "replica in sync): missing replicas were not judged")
    placement = history.get("placement")
    if history.get("expected_placement") and placement is not None:
        undescribed = [p for p in history["partitions"] if placement.get(str(p)) is None]
        if undescribed:
            notes.append(f"no final replica set for partitions {undescribed}: their placement was not judged")
    strays = {p: nodes for p, nodes in (history.get("strays") or {}).items() if nodes}
    if strays:
        notes.append(f"partition directories on brokers outside the final replica sets (not compared): {strays}")
    found = sum(len(v) for v in anomalies.values())
    if found:
        verdict = "INVALID"
    elif status["ok"] < min_acked or missing_final or not history.get("converged", False):
        verdict = "INCONCLUSIVE"
        if status["ok"] < min_acked:
            notes.append(f"only {status['ok']} acknowledged writes (fewer than {min_acked}): nothing to judge")
    else:
        verdict = "VALID"
    return {"anomalies": anomalies, "stats": stats, "verdict": verdict, "notes": notes}


def format_report(result, examples=EXAMPLES_PRINTED_MAX):
    """Human-readable verdict: counts per kind, a few examples each."""
    lines = []
    s = result["stats"]
    lines.append(f"writes {s['writes']}: {s['acked']} acknowledged, {s['failed']} failed, {s['unknown']} unknown "
                 f"({s['unknown_present']} of them present); {s['reads']} reads; {s['hw_reports']} high-watermark "
                 f"reports; {s.get('end_answers', 0)} ends answered, {s.get('end_refusals', 0)} refused; "
                 f"{s['final_records']} records in the final logs")
    if s.get("errors"):
        lines.append("  most common errors of writes not acknowledged:")
        for text, count in s["errors"]:
            lines.append(f"    {count:6d}  {text}")
    if s.get("longest_ack_gap_s"):
        lines.append("  longest time without an acknowledged write, per partition (s, from t): " +
                     ", ".join(f"p{p} {g[0]} (t={g[1]})" for p, g in sorted(s["longest_ack_gap_s"].items())))
    for kind in ANOMALY_KINDS:
        found = result["anomalies"][kind]
        lines.append(f"  {kind:20s} {len(found)}")
        for a in found[:examples]:
            lines.append(f"      {a}")
        if len(found) > examples:
            lines.append(f"      ... {len(found) - examples} more")
    for n in result["notes"]:
        lines.append(f"  note: {n}")
    lines.append(f"VERDICT: {result['verdict']}")
    return "\n".join(lines)
