"""The nemesis: a schedule of faults made from a seed before the run, then played against the cluster.

A schedule is a list of faults, each started at `at_s` (seconds after the workload starts) and
healed `hold_s` later; between faults the cluster gets a quiet interval. Fault kinds:

  self-test: wipe (SIGKILL, delete the node's partition directories of the test topic, restart at
            heal): a lost disk, which replication does not promise to survive; only to prove the
            harness catches lost writes end to end, never scheduled unless asked for
  process:  kill (SIGKILL, restarted at heal), pause (SIGSTOP, SIGCONT at heal),
            restart (SIGTERM, a controlled shutdown, then start at once),
            kill-restart (SIGKILL then start at once: crash recovery under load)
  network:  isolate (the node and every other: both ways), one-way-out (nothing the node sends
            arrives), one-way-in (nothing sent to the node arrives), one-way (one directed pair),
            bridge (two nodes cannot talk, a third talks to both: two overlapping majorities),
            split (a random minority from the majority, both ways)

A fault targets a node id, or "leader:<p>" (the leader of partition p when the fault starts), or
"controller" (the active controller then). The schedule itself (kinds, times, targets as written)
depends only on the seed and the options; which node a leader/controller target resolves to
depends on the run and is printed when the fault starts. `compound` faults start two at once.
"""
import random
import shutil
from dataclasses import dataclass, field

PROCESS_KINDS = ("kill", "pause", "restart", "kill-restart")
NETWORK_KINDS = ("isolate", "one-way-out", "one-way-in", "one-way", "bridge", "split")
ALL_KINDS = PROCESS_KINDS + NETWORK_KINDS
# Not a fault a broker must survive: SIGKILL, then delete the node's copies of the test topic's
# partitions (a lost disk), restart at heal. Only to show the harness end to end catches what it
# should (`--faults wipe --expect-anomaly`); never in the default mix.
SELF_TEST_KINDS = ("wipe",)
# Timing of a schedule: long enough for a failover with the defaults (election and session
# timeouts are about 1-2 s) to happen inside a fault, short enough for many faults per minute.
WARMUP_S = 3.0
COOLDOWN_S = 2.0
HOLD_S = (2.0, 10.0)
QUIET_S = (2.0, 6.0)
LEADER_TARGET_P = 0.45       # share of faults aimed at a partition leader
CONTROLLER_TARGET_P = 0.15   # share aimed at the active controller
COMPOUND_P = 0.12            # share of two faults at once


@dataclass
class Fault:
    at_s: float
    hold_s: float
    kind: str
    target: str                       # "3", "leader:1", "controller"
    peer: str = None                  # one-way: the receiving node; bridge: the middle node
    also: "Fault" = None              # a second fault started and healed with this one
    resolved: dict = field(default_factory=dict)

    def describe(self):
        what = f"{self.kind} {self.target}"
        if self.peer is not None:
            what += f" -> {self.peer}" if self.kind == "one-way" else f" (middle {self.peer})"
        if self.also is not None:
            what += f"  +  {self.also.describe_one()}"
        return f"t={self.at_s:6.1f}s  hold {self.hold_s:4.1f}s  {what}"

    def describe_one(self):
        what = f"{self.kind} {self.target}"
        if self.peer is not None:
            what += f" -> {self.peer}" if self.kind == "one-way" else f" (middle {self.peer})"
        return what


def _target(rng, nodes, partitions):
    r = rng.random()
    if r < LEADER_TARGET_P and partitions:
        return f"leader:{rng.choice(partitions)}"
    if r < LEADER_TARGET_P + CONTROLLER_TARGET_P:
        return "controller"
    return str(rng.choice(nodes))


def _one_fault(rng, at_s, hold_s, kinds, nodes, partitions):
    kind = rng.choice(kinds)
    target = _target(rng, nodes, partitions)
    peer = None
    if kind == "one-way":
        peer = str(rng.choice(nodes))   # resolved to another node than the target when they meet
    elif kind == "bridge":
        peer = str(rng.choice(nodes))
    return Fault(round(at_s, 1), round(hold_s, 1), kind, target, peer)


def _timeline(rng, duration_s, hold_s, quiet_s, fault):
    """[fault(t, hold)] from WARMUP_S to COOLDOWN_S before the end: holds drawn from `hold_s`,
    quiet intervals from `quiet_s` (both (low, high) seconds)."""
    schedule = []
    t = WARMUP_S
    while True:
        hold = rng.uniform(*hold_s)
        if t + hold > duration_s - COOLDOWN_S:
            break
        schedule.append(fault(t, hold))
        t += hold + rng.uniform(*quiet_s)
    return schedule


def make_schedule(seed, duration_s, nodes, partitions, kinds):
    """Faults from `seed` for a run of `duration_s` seconds: [Fault], in start order."""
    rng = random.Random(seed)
    kinds = list(kinds)

    def fault(t, hold):
        f = _one_fault(rng, t, hold, kinds, nodes, partitions)
        if rng.random() < COMPOUND_P:
            f.also = _one_fault(rng, t, hold, kinds, nodes, partitions)
        return f
    return _timeline(rng, duration_s, HOLD_S, QUIET_S, fault)


# The isolate-leader plan (KAFKA-2334, issue 27 item 3): a partition leader cut off from every other
# broker for about 3 s, then healed, again and again. Clients still reach it: a zombie leader that
# has not heard it was replaced must not answer the partition's end, nor may the new leader before
# its high watermark is established (KIP-207).
ISOLATE_LEADER_HOLD_S = (2.5, 3.5)
ISOLATE_LEADER_QUIET_S = (3.0, 5.0)
# grow-shrink (issue 33): a broker-only node added, rebalances, a kill and a cancel mid-move, the node
# decommissioned again: admin steps rather than faults (grow_shrink.py).
PLANS = ("random", "isolate-leader", "grow-shrink")


def isolate_leader_schedule(seed, duration_s, partitions):
    """The isolate-leader plan from `seed`: [Fault] isolating leader:<p> (p from the seed) for
    ISOLATE_LEADER_HOLD_S, ISOLATE_LEADER_QUIET_S apart, from WARMUP_S to COOLDOWN_S before the end."""
    rng = random.Random(seed)
    return _timeline(rng, duration_s, ISOLATE_LEADER_HOLD_S, ISOLATE_LEADER_QUIET_S,
                     lambda t, hold: Fault(round(t, 1), round(hold, 1), "isolate", f"leader:{rng.choice(partitions)}"))


def directed_edges(kind, node, peer, nodes):
    """The (from, to) pairs a network fault drops, for nodes `nodes` (ints)."""
    others = [n for n in nodes if n != node]
    if kind == "isolate":
        return {(node, o) for o in others} | {(o, node) for o in others}
    if kind == "one-way-out":
        return {(node, o) for o in others}
    if kind == "one-way-in":
        return {(o, node) for o in others}
    if kind == "one-way":
        return {(node, peer)}
    if kind == "bridge":
        ends = [n for n in nodes if n != peer]
        cut = set()
        half = len(ends) // 2
        left, right = ends[:half], ends[half:]
        for a in left:
            for b in right:
                cut |= {(a, b), (b, a)}
        return cut
    if kind == "split":
        raise ValueError("split edges come from split_edges")
    raise ValueError(f"{kind} is not a network fault")


def split_edges(minority, nodes):
    majority = [n for n in nodes if n not in minority]
    cut = set()
    for a in minority:
        for b in majority:
            cut |= {(a, b), (b, a)}
    return cut


class Nemesis:
    """Plays a schedule: start each fault at its time, heal it after its hold."""

    def __init__(self, cluster, history, router, schedule, seed, log, topic="jepsen"):
        self.topic = topic
        self.cluster = cluster
        self.history = history
        self.router = router
        self.schedule = schedule
        self.rng = random.Random(seed ^ 0x5EED)   # runtime choices (a target that cannot resolve)
        self.log = log
        self.nodes = sorted(cluster.nodes)
        self.killed = set()
        self.paused = set()
        self.blocked = set()

    def resolve(self, target):
        if target == "controller":
            c = self.cluster.controller()
            if c is not None:
                return c
        elif target.startswith("leader:"):
            self.router.refresh()
            leader = self.router.leader(int(target.split(":")[1]))
            if leader is not None:
                return leader
        else:
            return int(target)
        return self.rng.choice(self.nodes)

    def _start_one(self, f):
        node = self.resolve(f.target)
        f.resolved["node"] = node
        k = f.kind
        if k == "kill":
            self.cluster.node(node).kill()
            self.killed.add(node)
        elif k == "wipe":
            n = self.cluster.node(node)
            n.kill()
            self.killed.add(node)
            wiped = sorted(d.name for d in n.data_dir.glob(f"{self.topic}-*") if d.is_dir())
            for name in wiped:
                shutil.rmtree(n.data_dir / name)
            f.resolved["wiped"] = wiped
        elif k == "pause":
            self.cluster.node(node).pause()
            self.paused.add(node)
            f.resolved["paused"] = [node]   # cut off from the controller too (checker.cut_off_windows)
        elif k == "restart":
            self.cluster.node(node).stop()
            self.cluster.node(node).start()
        elif k == "kill-restart":
            self.cluster.node(node).kill()
            self.cluster.node(node).start()
        else:
            if not self.cluster.network.supports_partitions:
                f.resolved["skipped"] = "this network cannot partition"
                return
            if k == "split":
                size = (len(self.nodes) - 1) // 2
                others = [n for n in self.nodes if n != node]
                minority = [node] + self.rng.sample(others, size - 1) if size > 1 else [node]
                edges = split_edges(minority, self.nodes)
                f.resolved["minority"] = minority
            else:
                peer = int(f.peer) if f.peer is not None else None
                if k == "one-way" and peer == node:
                    peer = next(n for n in self.nodes if n != node)
                if k == "bridge":
                    peer = node if peer is None else peer
                    f.resolved["middle"] = peer
                edges = directed_edges(k, node, peer, self.nodes)
                if k == "one-way":
                    f.resolved["to"] = peer
            self.blocked |= edges
            self.cluster.network.set_blocked(self.blocked)
            f.resolved["dropped"] = sorted(edges)

    def start(self, f):
        self._start_one(f)
        if f.also is not None:
            self._start_one(f.also)
        entry = self.history.event("nemesis-start", fault=f.describe(), resolved=f.resolved,
                                   also=f.also.resolved if f.also else None)
        self.log(f"[nemesis t={entry['t']:7.2f}] start {f.describe_one()} -> {f.resolved}"
                 + (f"  +  {f.also.describe_one()} -> {f.also.resolved}" if f.also else ""))

    def heal(self):
        """Everything back: partitions removed, paused nodes continued, killed or crashed nodes started."""
        acted = bool(self.blocked or self.paused or self.killed)
        if self.blocked:
            self.cluster.network.set_blocked(set())
            self.blocked = set()
        for n in sorted(self.paused):
            self.cluster.node(n).resume()
        self.paused = set()
        for n in self.nodes:
            node = self.cluster.node(n)
            code = node.exited()
            if code is not None and n not in self.killed:
                self.history.event("node-crashed", node=n, exit_code=code, log_tail=node.log_tail(4000))
                self.log(f"[nemesis] node {n} exited by itself with {code}; its log ends:\n{node.log_tail(1500)}")
                node.kill()
            if not node.running():
                node.start()
                acted = True
        self.killed = set()
        if acted:
            entry = self.history.event("nemesis-heal")
            self.log(f"[nemesis t={entry['t']:7.2f}] heal")

    def run(self, stop_event):
        """Plays the schedule until it ends or stop_event is set; always ends healed."""
        try:
            for f in self.schedule:
                if stop_event.wait(max(0.0, f.at_s - self.history.now())):
                    break
                self.start(f)
                if stop_event.wait(f.hold_s):
                    break
                self.heal()
        finally:
            self.heal()
