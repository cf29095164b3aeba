#!/usr/bin/python3
"""Jepsen-style fault runs against real `ringlog serve` processes (issue 13, "Test bed and checker").

One schedule = a fresh cluster of --nodes brokers (network namespaces joined by a bridge when this
machine allows, see harness.py), a topic with replication factor 3 and min.insync.replicas=2,
producers writing unique values with acks=all, readers tailing every partition, pollers of every
broker's high watermarks, and a nemesis playing a seeded fault schedule (nemesis.py). Then
everything is healed, the cluster gets time to converge (a leader for every partition, every
replica in sync), readers catch up, every partition is read in full from its leader, the brokers
are stopped and every replica's segment files are read from disk; checker.py judges it all.

  tests/cluster/run.py --smoke                               # about 90 s, one schedule (scripts/test.sh)
  tests/cluster/run.py --schedules 50 --minutes 2 --seed 7   # the long run; schedule i has seed 7+i
  tests/cluster/run.py --seed 12 --minutes 2                 # replay one schedule
  tests/cluster/run.py --bin build-broken/src/app/ringlog --expect-anomaly   # a negative control
  tests/cluster/run.py --check-only /tmp/ringlog-cluster-12-...              # re-judge a saved history
  tests/cluster/run.py --plan isolate-leader --seed 27 --seconds 24         # KAFKA-2334 (meson: cluster-end-offsets)
  tests/cluster/run.py --plan grow-shrink --seed 5                          # issue 33: add a broker, rebalance,
                                                                            # kill and cancel mid-move, decommission

Exit status: 0 every schedule VALID; 1 an anomaly (INVALID); 2 INCONCLUSIVE (no anomaly, but too
few acknowledged writes or the cluster did not converge); 3 the harness failed; 77 the plan needs
network namespaces this machine does not give (skipped). With
--expect-anomaly: 0 when at least one schedule was INVALID (with a kind named, if any given), 1 when
none was: the broken build was not caught.
"""
import argparse
import hashlib
import json
import os
import pathlib
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback

import requests

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import checker    # noqa: E402
import grow_shrink  # noqa: E402
import harness    # noqa: E402
import nemesis    # noqa: E402
import segments   # noqa: E402
import workload   # noqa: E402

ROOT = HERE.parent.parent
TOPIC = "jepsen"
CONVERGE_STABLE_CHECKS = 3           # the same converged view this many times in a row
FINAL_READ_MAX_BYTES = 1024 * 1024
PRODUCER_JOIN_S = 20.0
EXIT_SKIPPED = 77                    # meson's "skipped": the plan cannot run on this machine
ABOVE_HW_KEPT_MAX = 10000            # records per replica kept from above the final high watermark
# grow-shrink: the workload runs until the plan's last step (at least --seconds); a plan still
# going this long after --seconds is stopped (its step is recorded as not finished).
PLAN_OVERRUN_MAX_S = 420.0
# Defaults that depend on the plan: grow-shrink wants more partitions than brokers (4 at its
# largest), so that a rebalance has replicas and leaderships to give the new broker.
PLAN_DEFAULTS = {"grow-shrink": {"partitions": 8, "keys": 16}}
DEFAULTS = {"partitions": 3, "keys": 12}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("RINGLOG_BIN", str(ROOT / "build" / "src" / "app" / "ringlog")),
                    help="the ringlog binary (default $RINGLOG_BIN or build/src/app/ringlog); point it at a "
                         "deliberately broken build for a negative control")
    ap.add_argument("--smoke", action="store_true", help="one short schedule (about 90 s in all)")
    ap.add_argument("--schedules", type=int, default=1, help="independent runs, each on a fresh cluster")
    ap.add_argument("--minutes", type=float, default=None, help="workload length of each schedule")
    ap.add_argument("--seconds", type=float, default=None, help="workload length of each schedule")
    ap.add_argument("--seed", type=int, default=None, help="seed of the first schedule (schedule i: seed+i); "
                                                           "default: random, printed")
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=None, help="3 (grow-shrink: 8)")
    ap.add_argument("--replication-factor", type=int, default=3)
    ap.add_argument("--min-insync-replicas", type=int, default=2)
    ap.add_argument("--topic-config", action="append", default=[], metavar="NAME=VALUE",
                    help="another topic config at creation (repeatable)")
    ap.add_argument("--keys", type=int, default=None, help="12 (grow-shrink: 16)")
    ap.add_argument("--rate", type=float, default=150.0, help="writes per second, all producers together (a cap)")
    ap.add_argument("--plan", choices=nemesis.PLANS, default="random",
                    help="random: faults of --faults at random; isolate-leader: a partition leader cut off from "
                         "the other brokers for about 3 s, healed, again (KAFKA-2334; needs network namespaces); "
                         "grow-shrink: a broker-only node added, rebalance, kill -9 and cancel mid-move, "
                         "rebalance again, the node decommissioned (issue 33; --seconds is a minimum)")
    ap.add_argument("--faults", default=",".join(nemesis.ALL_KINDS),
                    help=f"fault kinds to schedule, comma-separated (from {','.join(nemesis.ALL_KINDS)}; "
                         "the harness self-test `wipe` only when named), or none")
    ap.add_argument("--network", choices=["auto", "netns", "loopback"], default="auto")
    ap.add_argument("--route", choices=["auto", "leader", "any", "mixed"], default="auto",
                    help="which broker clients send a partition's requests to; auto: mixed when a broker "
                         "that does not lead a partition serves it (forwarding), else leader")
    ap.add_argument("--node-set", action="append", default=[], metavar="NAME=VALUE",
                    help="extra `--set` for every broker (repeatable); num.shards=1 is always set first")
    ap.add_argument("--converge-seconds", type=float, default=60.0,
                    help="how long the healed cluster gets to converge")
    ap.add_argument("--min-acked", type=int, default=None,
                    help="fewer acknowledged writes than this makes a schedule INCONCLUSIVE")
    ap.add_argument("--expect-anomaly", nargs="?", const="any", default=None, metavar="KINDS",
                    help="negative control: succeed only if an anomaly is found (optionally of these "
                         f"comma-separated kinds: {','.join(checker.ANOMALY_KINDS)})")
    ap.add_argument("--run-dir", default=None, help="where node data, logs and histories go "
                                                    "(default: a new directory under $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep the run directory of VALID schedules too")
    ap.add_argument("--check-only", metavar="DIR", help="re-judge DIR/history.json of an earlier schedule")
    ap.add_argument("--cleanup", action="store_true",
                    help="remove namespaces and bridges left by killed runs, then exit")
    args = ap.parse_args(argv)
    for name, value in {**DEFAULTS, **PLAN_DEFAULTS.get(args.plan, {})}.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.smoke:
        args.seconds = args.seconds or 40.0
        args.converge_seconds = min(args.converge_seconds, 40.0)
    if args.seconds is None:
        args.seconds = (args.minutes or 1.0) * 60.0
    elif args.minutes is not None:
        ap.error("give --minutes or --seconds, not both")
    if args.min_acked is None:
        args.min_acked = 20
    args.fault_kinds = [] if args.faults in ("", "none") else args.faults.split(",")
    bad = [k for k in args.fault_kinds if k not in nemesis.ALL_KINDS + nemesis.SELF_TEST_KINDS]
    if bad:
        ap.error(f"unknown fault kinds {bad}")
    if args.expect_anomaly and args.expect_anomaly != "any":
        unknown = [k for k in args.expect_anomaly.split(",") if k not in checker.ANOMALY_KINDS]
        if unknown:
            ap.error(f"unknown anomaly kinds {unknown}")
    return args


class Log:
    def __init__(self, path=None):
        self.file = open(path, "a") if path else None

    def __call__(self, text):
        print(text, flush=True)
        if self.file:
            self.file.write(text + "\n")
            self.file.flush()

    def close(self):
        if self.file:
            self.file.close()


def converged_view(cluster, partitions, replication_factor, moves=False):
    """{p: {"leader", "leader_epoch", "high_watermark"}} when every node agrees on each partition's
    leader and epoch, every replica is in sync, the leader's high watermark is its log end and every
    replica's own log end (its /metrics) equals it; else None.

    The replica sets are the ones the leaders name now, not the ones the topic was created with
    (a plan may have moved them; check_placement judges them). With `moves` (plans that reassign)
    also no partition of the topic may be being reassigned, on any node's image: a partition in
    the middle of a move lists its old and new replicas together."""
    views, own_ends = {}, {}
    if moves:
        for n in cluster.nodes.values():
            under_way = cluster.reassignments(n)
            if under_way is None or any(r.get("topic_name") == TOPIC for r in under_way):
                return None
    for n in cluster.nodes.values():
        v = cluster.partitions(n, TOPIC)
        e = cluster.own_log_ends(n, TOPIC)
        if v is None or e is None:
            return None
        views[n.node_id] = v
        own_ends[n.node_id] = e
    out = {}
    for p in partitions:
        leaders = {(cluster.leader_id(v[p]), v[p]["leader_epoch"]) for v in views.values() if p in v}
        if len(leaders) != 1:
            return None
        leader, epoch = leaders.pop()
        if leader is None:
            return None
        reps = cluster.replicas(cluster.node(leader), TOPIC, p)
        if not reps or len(reps) != replication_factor or not all(r["is_in_sync"] for r in reps):
            return None
        lv = views[leader][p]
        if lv["high_watermark"] != lv["log_end_offset"]:
            return None
        # each replica's own log end (the partitions route shows the leader's figures everywhere)
        if any(own_ends.get(r["broker_id"], {}).get(p) != lv["log_end_offset"] for r in reps):
            return None
        out[p] = {"leader": leader, "leader_epoch": epoch, "high_watermark": lv["high_watermark"],
                  "isr": sorted(r["broker_id"] for r in reps)}
    return out


def wait_converged(cluster, partitions, replication_factor, deadline_s, moves=False):
    end = time.monotonic() + deadline_s
    last, same = None, 0
    while time.monotonic() < end:
        v = converged_view(cluster, partitions, replication_factor, moves)
        if v is not None and v == last:
            same += 1
            if same >= CONVERGE_STABLE_CHECKS:
                return v
        else:
            same = 1 if v is not None else 0
        last = v
        time.sleep(0.5)
    return None


def best_effort_view(cluster, partitions):
    """Unconverged end: each partition's leader (newest epoch any node names) and its high watermark."""
    out = {}
    for p in partitions:
        best = None
        for n in cluster.nodes.values():
            v = cluster.partitions(n, TOPIC)
            if not v or p not in v:
                continue
            leader = cluster.leader_id(v[p])
            if leader is not None and (best is None or v[p]["leader_epoch"] > best[1]):
                best = (leader, v[p]["leader_epoch"])
        if best is None:
            continue
        lv = (cluster.partitions(cluster.node(best[0]), TOPIC) or {}).get(p)
        if lv is not None and cluster.leader_id(lv) == best[0]:
            reps = cluster.replicas(cluster.node(best[0]), TOPIC, p) or []
            out[p] = {"leader": best[0], "leader_epoch": lv["leader_epoch"], "high_watermark": lv["high_watermark"],
                      "isr": sorted(r["broker_id"] for r in reps if r.get("is_in_sync"))}
    return out


def final_placement(cluster, partitions, view):
    """{"<p>": {"replicas", "in_sync", "reassigning"} or None}: each partition's replica set as its
    final leader (else any node) describes it, and whether a move of it is still listed."""
    reassigning = set()
    for n in cluster.nodes.values():
        for r in cluster.reassignments(n) or []:
            if r.get("topic_name") == TOPIC:
                reassigning.add(r.get("partition_id"))
    out = {}
    for p in partitions:
        asked = [view[p]["leader"]] if p in view and view[p]["leader"] in cluster.nodes else []
        asked += [i for i in sorted(cluster.nodes) if i not in asked]
        out[str(p)] = None
        for i in asked:
            reps = cluster.replicas(cluster.node(i), TOPIC, p)
            if reps:
                out[str(p)] = {"replicas": sorted(r["broker_id"] for r in reps),
                               "in_sync": sorted(r["broker_id"] for r in reps if r.get("is_in_sync")),
                               "reassigning": p in reassigning, "described_by": i}
                break
    return out


def read_partition(cluster, node, p, high_watermark):
    """[[offset, key, value]] below high_watermark read from `node`, or None when it stops answering."""
    out = []
    offset = 0
    while offset < high_watermark:
        try:
            r = requests.get(f"{node.url}/topics/{TOPIC}/partitions/{p}/records",
                             params={"offset": offset, "timeout": 0, "max_bytes": FINAL_READ_MAX_BYTES},
                             headers={"Accept": workload.V2_BINARY}, timeout=10)
        except requests.RequestException:
            return None
        if r.status_code != 200:
            return None
        recs = r.json()
        if not recs:
            return None
        for rec in recs:
            if rec["offset"] >= high_watermark:
                break
            key = workload.base64.b64decode(rec["key"]).decode(errors="replace") if rec.get("key") else None
            value = workload.base64.b64decode(rec["value"]).decode(errors="replace") if rec.get("value") else None
            out.append([rec["offset"], key, value])
        offset = recs[-1]["offset"] + 1
    return out


def probe_route(cluster, router, log):
    """mixed when a broker that does not lead partition 0 answers its read, else leader."""
    leader = router.leader(0)
    other = next((n for n in sorted(cluster.nodes) if n != leader), None)
    if other is None or leader is None:
        return "leader"
    try:
        r = requests.get(f"{cluster.node(other).url}/topics/{TOPIC}/partitions/0/records",
                         params={"offset": 0, "timeout": 0}, headers={"Accept": workload.V2_BINARY}, timeout=5)
    except requests.RequestException:
        return "leader"
    log(f"route probe: node {other} (not the leader {leader}) answered a read of partition 0 with "
        f"{r.status_code} {r.text[:160]!r}")
    return "mixed" if r.status_code == 200 else "leader"


def replica_snapshot(cluster, partitions, placement=None):
    """{p: {node: {...}}} from every node's segment files (nodes stopped), the leaders' records, and
    {p: [node]} of directories left out: with `placement`, a node outside a partition's final
    replica set (a replica moved away, a decommissioned broker) is not compared."""
    reps, records, strays = {}, {}, {}
    for p in partitions:
        reps[str(p)] = {}
        keep = None
        if placement is not None and placement.get(str(p)) is not None:
            keep = set(placement[str(p)]["replicas"])
        for n in cluster.all_nodes().values():
            d = n.data_dir / f"{TOPIC}-{p}"
            if not d.is_dir():
                continue
            if keep is not None and n.node_id not in keep:
                strays.setdefault(str(p), []).append(n.node_id)
                continue
            rl = segments.read_replica(d)
            reps[str(p)][str(n.node_id)] = {
                "log_end_offset": rl.log_end_offset,
                "high_watermark_checkpoint": rl.high_watermark_checkpoint,
                "torn_tail": rl.torn_tail,
                "batches": [[b.base_offset, b.last_offset, hashlib.sha256(b.raw).hexdigest(), len(b.raw)]
                            for b in rl.batches],
            }
            records[(p, n.node_id)] = [[r.offset, r.key.decode(errors="replace") if r.key is not None else None,
                                        r.value.decode(errors="replace") if r.value is not None else None]
                                       for b in rl.batches for r in b.records]
    return reps, records, strays


def replay_command(args, seed):
    """The command that runs this schedule again: the seed and every option that shapes it."""
    parts = ["tests/cluster/run.py", "--seed", str(seed), "--seconds", f"{args.seconds:g}", "--bin", args.bin]
    if args.plan != "random":
        parts += ["--plan", args.plan]
    if args.faults != ",".join(nemesis.ALL_KINDS):
        parts += ["--faults", args.faults]
    defaults = {**DEFAULTS, **PLAN_DEFAULTS.get(args.plan, {})}
    for flag, value, default in (("--nodes", args.nodes, 3), ("--partitions", args.partitions, defaults["partitions"]),
                                 ("--replication-factor", args.replication_factor, 3),
                                 ("--min-insync-replicas", args.min_insync_replicas, 2),
                                 ("--keys", args.keys, defaults["keys"]),
                                 ("--rate", args.rate, 150.0), ("--network", args.network, "auto"),
                                 ("--route", args.route, "auto")):
        if value != default:
            parts += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    for s in args.node_set:
        parts += ["--node-set", s]
    for s in args.topic_config:
        parts += ["--topic-config", s]
    return " ".join(parts)


def run_schedule(args, seed, index, base_dir, log_main):
    run_dir = base_dir / f"schedule-{index:03d}-seed-{seed}"
    run_dir.mkdir(parents=True, exist_ok=True)
    log = Log(run_dir / "run.log")
    partitions = list(range(args.partitions))
    growing = args.plan == "grow-shrink"
    # grow-shrink: room (a namespace, or ports) for the broker-only node it adds
    network, note = harness.make_network(args.network, args.nodes + (1 if growing else 0))
    can_partition = network.supports_partitions
    kinds = [k for k in args.fault_kinds if can_partition or k not in nemesis.NETWORK_KINDS]
    plan = None
    if growing:
        plan = grow_shrink.make_plan(seed, list(range(1, args.nodes + 1)), args.nodes + 1)
        schedule = []
    elif args.plan == "isolate-leader":
        schedule = nemesis.isolate_leader_schedule(seed, args.seconds, partitions) if can_partition else []
    else:
        schedule = nemesis.make_schedule(seed, args.seconds, list(range(1, args.nodes + 1)), partitions, kinds) \
            if kinds else []
    log(f"==== schedule {index}: seed {seed}  (replay: {replay_command(args, seed)})")
    log(f"binary {args.bin}")
    log(f"network: {network.describe()}" + (f"  [{note}]" if note else ""))
    log(f"topic {TOPIC}: {args.partitions} partitions, replication factor {args.replication_factor}, "
        f"min.insync.replicas {args.min_insync_replicas}; {args.keys} keys (one producer each), "
        f"<= {args.rate:g} writes/s, acks=all; workload {args.seconds:g} s")
    if plan is not None:
        log("grow-shrink plan (admin steps; targets resolve at run time):")
        for line in plan.describe():
            log(f"  {line}")
    else:
        log(f"nemesis schedule ({len(schedule)} faults; leader:<p>/controller resolve at run time):")
        for f in schedule:
            log(f"  {f.describe()}")
    history = workload.History(partitions)
    cluster = harness.Cluster(args.bin, args.nodes, run_dir, network, ["num.shards=1", *args.node_set])
    stop_clients = threading.Event()
    stop_readers = threading.Event()
    stop_nemesis = threading.Event()
    threads = []
    router = None
    try:
        cluster.start()
        configs = {"min.insync.replicas": args.min_insync_replicas}
        for kv in args.topic_config:
            k, _, v = kv.partition("=")
            configs[k] = v
        cluster.create_topic(TOPIC, args.partitions, args.replication_factor, configs)
        router = workload.Router(cluster, TOPIC, partitions, "leader", seed)
        router.start()
        router.mode = probe_route(cluster, router, log) if args.route == "auto" else args.route
        log(f"clients route requests: {router.mode}")
        history.t0 = time.monotonic()
        pollers = [workload.HighWatermarkPoller(n, cluster, history, TOPIC, stop_readers) for n in cluster.nodes.values()]
        pollers += [workload.EndOffsetPoller(n, cluster, history, TOPIC, stop_readers) for n in cluster.nodes.values()]
        pollers += [workload.KafkaFetchPoller(n, cluster, history, TOPIC, stop_readers) for n in cluster.nodes.values()]
        readers = [workload.Reader(p, cluster, router, history, TOPIC, stop_readers) for p in partitions]
        keys = [f"k{i}" for i in range(args.keys)]
        key_partition = {k: i % args.partitions for i, k in enumerate(keys)}
        # One producer thread per key: a stalled partition stalls only its own keys.
        producers = [workload.Producer(i, [k], key_partition, cluster, router, history, TOPIC,
                                       stop_clients, args.rate / len(keys)) for i, k in enumerate(keys)]
        if plan is not None:
            def broker_added(node):
                # The new broker is asked like the others from now on (its own answers are judged).
                more = [workload.HighWatermarkPoller(node, cluster, history, TOPIC, stop_readers),
                        workload.EndOffsetPoller(node, cluster, history, TOPIC, stop_readers),
                        workload.KafkaFetchPoller(node, cluster, history, TOPIC, stop_readers)]
                for t in more:
                    t.start()
                pollers.extend(more)
            nem = grow_shrink.GrowShrink(cluster, history, router, plan, seed, log, TOPIC, broker_added)
        else:
            nem = nemesis.Nemesis(cluster, history, router, schedule, seed, log, TOPIC)
        nem_thread = threading.Thread(target=nem.run, args=(stop_nemesis,), name="nemesis", daemon=True)
        threads = pollers + readers + producers
        for t in threads:
            t.start()
        nem_thread.start()
        if plan is not None:
            log(f"workload running until the plan ends (at least {args.seconds:g} s, at most "
                f"{args.seconds + PLAN_OVERRUN_MAX_S:g} s)")
        else:
            log(f"workload running for {args.seconds:g} s")
        started = time.monotonic()
        end = started + args.seconds
        hard_end = end + (PLAN_OVERRUN_MAX_S if plan is not None else 0.0)

        def running():
            now = time.monotonic()
            return now < end or (plan is not None and not nem.done and now < hard_end)
        while running():
            wake = end if time.monotonic() < end else hard_end
            deadline = time.monotonic() + min(5.0, max(0.0, wake - time.monotonic()))
            while time.monotonic() < deadline and running():
                time.sleep(0.2)
            s = history.as_dict()
            acked = sum(1 for w in s["writes"] if w["status"] == "ok")
            log(f"  t={history.now():6.1f}s  writes {len(s['writes'])} (acked {acked})  reads {len(s['reads'])}")
        stop_nemesis.set()
        nem_thread.join()
        stop_clients.set()
        for t in producers:
            t.join(PRODUCER_JOIN_S)
        log(f"healed at t={history.now():.1f}s; waiting up to {args.converge_seconds:g} s for convergence")
        view = wait_converged(cluster, partitions, args.replication_factor, args.converge_seconds, moves=growing)
        converged = view is not None
        if not converged:
            view = best_effort_view(cluster, partitions)
            log(f"NOT converged; best-effort view {view}")
        else:
            log(f"converged at t={history.now():.1f}s: {view}")
        history.event("final-view", converged=converged, view={str(p): v for p, v in view.items()})
        placement = None
        if growing:
            placement = final_placement(cluster, partitions, view)
            log(f"final replica sets: {placement}")
        for r in readers:
            r.target = view[r.p]["high_watermark"] if r.p in view else None
        for r in readers:
            r.join(timeout=30.0 if r.target is not None else 0.1)
        stop_readers.set()
        for t in readers + pollers:
            t.join(timeout=10)
        final = {}
        for p in partitions:
            if p not in view:
                continue
            recs = read_partition(cluster, cluster.node(view[p]["leader"]), p, view[p]["high_watermark"])
            if recs is not None:
                final[str(p)] = {"high_watermark": view[p]["high_watermark"], "records": recs, "source": "http",
                                 "isr": view[p].get("isr")}
        stop_status = {}
        for n in cluster.nodes.values():
            code = n.stop()
            stop_status[n.node_id] = code
            if code not in (0, None):
                history.event("node-stop-status", node=n.node_id, exit_code=code)
        log(f"brokers stopped (SIGTERM): exit statuses {stop_status}")
        replicas, replica_records, strays = replica_snapshot(cluster, partitions, placement)
        for p in partitions:
            if str(p) not in final and p in view and (p, view[p]["leader"]) in replica_records:
                hw = view[p]["high_watermark"]
                final[str(p)] = {"high_watermark": hw, "source": "leader's segment files", "isr": view[p].get("isr"),
                                 "records": [r for r in replica_records[(p, view[p]["leader"])] if r[0] < hw]}
        # Records each replica holds at or above the final high watermark (not committed): a lost
        # write found there is stuck above a high watermark, not gone from every disk.
        above_hw = {}
        for (p, node_id), recs in replica_records.items():
            if str(p) in final:
                hw = final[str(p)]["high_watermark"]
                above_hw.setdefault(str(p), {})[str(node_id)] = [[o, v] for o, _k, v in recs if o >= hw][:ABOVE_HW_KEPT_MAX]
        h = history.as_dict()
        h.update({"final": final, "replicas": replicas, "converged": converged, "seed": seed, "above_hw": above_hw,
                  "schedule": plan.describe() if plan is not None else [f.describe() for f in schedule],
                  "route": router.mode, "binary": args.bin})
        if growing:
            excluded = sorted(cluster.retired) + ([plan.new_node] if any(
                e.get("event") == "admin-step" and e.get("step") == "decommission" for e in h["events"]) else [])
            h.update({"placement": placement, "strays": strays,
                      "expected_placement": {"replication_factor": args.replication_factor,
                                             "excluded": sorted(set(excluded))}})
    except KeyboardInterrupt:
        log("interrupted: stopping the brokers and removing the network")
        raise
    except Exception:
        log(f"HARNESS ERROR in schedule {index} (seed {seed}):\n{traceback.format_exc()}")
        for n in cluster.nodes.values():
            log(f"--- node {n.node_id} log tail:\n{n.log_tail(2000)}")
        return {"seed": seed, "verdict": "ERROR", "run_dir": str(run_dir), "anomalies": {}}
    finally:
        stop_nemesis.set()
        stop_clients.set()
        stop_readers.set()
        if router is not None:
            router.close()
        cluster.teardown()
        log.close()
    (run_dir / "history.json").write_text(json.dumps(h))
    result = checker.check(h, min_acked=args.min_acked)
    (run_dir / "verdict.json").write_text(json.dumps(result, default=str))
    report = checker.format_report(result)
    log2 = Log(run_dir / "run.log")
    log2(f"---- schedule {index}, seed {seed}: route {router.mode}, converged {converged}")
    log2(report)
    log2.close()
    return {"seed": seed, "verdict": result["verdict"], "run_dir": str(run_dir),
            "anomalies": {k: len(v) for k, v in result["anomalies"].items() if v}, "stats": result["stats"]}


def caught(results, expect):
    kinds = None if expect == "any" else set(expect.split(","))
    for r in results:
        if r["verdict"] == "INVALID" and (kinds is None or kinds & set(r["anomalies"])):
            return True
    return False


def main(argv=None):
    args = parse_args(argv if argv is not None else sys.argv[1:])
    if args.cleanup:
        print("removed:", harness.NetnsNetwork.cleanup_stale() if os.geteuid() == 0 else "nothing (not root)")
        return 0
    if args.check_only:
        h = json.loads((pathlib.Path(args.check_only) / "history.json").read_text())
        result = checker.check(h, min_acked=args.min_acked)
        print(f"seed {h.get('seed')}; schedule:")
        for line in h.get("schedule", []):
            print(f"  {line}")
        print(checker.format_report(result))
        return {"VALID": 0, "INVALID": 1}.get(result["verdict"], 2)
    if not pathlib.Path(args.bin).exists():
        print(f"ringlog binary not found at {args.bin}: build it (ninja -C build) or pass --bin / RINGLOG_BIN",
              file=sys.stderr)
        return 3
    if args.plan == "isolate-leader" and args.network != "loopback":
        usable, why = harness.NetnsNetwork.available()
        if not usable:
            print(f"the isolate-leader plan needs network namespaces ({why}): skipped", flush=True)
            return EXIT_SKIPPED
    # SIGTERM ends the run like Ctrl-C: the finally blocks stop the brokers and remove the network.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2 ** 31)
    base_dir = pathlib.Path(args.run_dir) if args.run_dir else pathlib.Path(
        tempfile.mkdtemp(prefix=f"ringlog-cluster-{seed}-"))
    base_dir.mkdir(parents=True, exist_ok=True)
    print(f"ringlog cluster test: seed {seed}, {args.schedules} schedule(s) x {args.seconds:g} s, run directory "
          f"{base_dir}", flush=True)
    results = []
    try:
        for i in range(args.schedules):
            r = run_schedule(args, seed + i, i, base_dir, print)
            results.append(r)
            if r["verdict"] == "VALID" and not args.keep:
                shutil.rmtree(r["run_dir"], ignore_errors=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        return 130
    print("==== summary", flush=True)
    for r in results:
        extra = f" anomalies {r['anomalies']}" if r["anomalies"] else ""
        kept = "" if r["verdict"] == "VALID" and not args.keep else f"  ({r['run_dir']})"
        stats = r.get("stats", {})
        print(f"  seed {r['seed']}: {r['verdict']}{extra}  acked {stats.get('acked', '-')} unknown "
              f"{stats.get('unknown', '-')} failed {stats.get('failed', '-')}{kept}", flush=True)
    verdicts = [r["verdict"] for r in results]
    if args.expect_anomaly:
        ok = caught(results, args.expect_anomaly)
        print(f"negative control ({args.expect_anomaly}): {'CAUGHT' if ok else 'NOT CAUGHT'}", flush=True)
        return 0 if ok else 1
    if "INVALID" in verdicts:
        return 1
    if "ERROR" in verdicts:
        return 3
    if "INCONCLUSIVE" in verdicts:
        return 2
    if not args.keep and not any(pathlib.Path(r["run_dir"]).exists() for r in results):
        shutil.rmtree(base_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
