"""The grow-shrink plan (issue 33, "Tests"): the cluster grows by a broker-only node and shrinks
again while producers and readers run.

Steps, in this order, each after a delay drawn from the seed (`make_plan`), each written to the
history (event "admin-step") and the run log with what was asked and what the cluster answered:

  1. add-broker      start node N+1 with process.roles=broker and the voters' controller.quorum.voters
                     (its own namespace when the harness has them); wait until every node lists it
                     unfenced; from then on clients may route through it and pollers ask it too
  2. rebalance       POST /v3/clusters/{c}/rebalance {} (the plan's moves are logged)
  3. kill            (first, for most seeds, the new broker is paused with SIGSTOP as soon as the
                     rebalance answers: a slow new broker, so that the moves onto it are held
                     mid-way; moves of this workload's few MB end within 0.1 s otherwise; it is
                     continued with the restart below)
                     kill -9 a broker while those moves are under way: one the moves add a replica
                     to, one they remove a replica from, the leader of a moving partition, the active
                     controller, or a broker named by the seed (resolved when it happens, printed);
                     restarted after its hold
  4. cancel          DELETE /v3/clusters/{c}/rebalance halfway through the moves: while the killed
                     broker is still down (its moves cannot finish then) or after it is back, as the
                     seed says; the reassignments listed just before and the number cancelled are logged
  5. rebalance       POST again (409 "reassignments under way" is retried); waits until no partition
                     is being reassigned
  6. decommission    DELETE /v3/clusters/{c}/brokers/{N+1}; GET .../tasks/remove-broker until
                     task_status is SUCCESS; optionally (seed) kill -9 a voter during the drain, restarted
                     after its hold; the broker is then gone from every node's brokers list
  7. retire          SIGTERM the decommissioned broker (it must exit 0), then start it once more: it
                     must exit by itself, with an error status (a signal is a crash), naming the
                     decommission ("node N was decommissioned")

A step whose answer breaks the contract (http-api routes of issue 33), or that does not finish
within its deadline, is recorded with ok=false: the checker counts it as an `admin` anomaly. The
plan ends there; run.py then heals, waits for convergence (every partition with its replication
factor, every replica in sync, no reassignment under way, the decommissioned broker in no replica
set) and judges as for every plan.
"""
import random
import time
from dataclasses import dataclass

import requests

import nemesis

# Kill targets for the kill during the first rebalance (resolved when the kill happens). Moves of
# the few MB this workload writes finish within a second: only a kill of the broker the moves add
# replicas to holds them all mid-way (it cannot catch up while down), so that one is drawn half
# of the time; the others often find the moves of their own partitions already done (logged).
KILL_TARGETS = ("adding", "removing", "leader", "controller", "node")
KILL_TARGET_WEIGHTS = (4, 1, 1, 1, 1)
# Delays (s, drawn uniformly from (low, high)), long enough for a step's effect to show on a
# loaded 2-core machine, short enough for the whole plan to fit about a minute.
ADD_AT_S = (3.0, 6.0)              # after the workload starts
REBALANCE_AFTER_S = (2.0, 5.0)     # after broker N+1 is unfenced everywhere
KILL_AFTER_S = (0.0, 0.3)          # after the rebalance was answered: the moves are under way
KILL_HOLD_S = (3.0, 8.0)
CANCEL_WHILE_DOWN_P = 0.75         # else the cancel comes after the restart
PAUSE_NEW_BROKER_P = 0.8           # the new broker paused (SIGSTOP) from the rebalance to the restart
CANCEL_AFTER_S = (0.2, 1.5)        # after the kill (while down) or after the restart
REBALANCE_AGAIN_AFTER_S = (1.0, 4.0)
DECOMMISSION_AFTER_S = (2.0, 5.0)
DECOMMISSION_KILL_P = 0.5
DECOMMISSION_KILL_AFTER_S = (0.0, 0.6)   # the drain of a few MB takes about a second
DECOMMISSION_KILL_HOLD_S = (2.0, 6.0)
TAIL_S = (3.0, 5.0)                # writes go on after the plan before the run ends
# Deadlines (s).
BROKER_START_DEADLINE_S = 90.0      # started, healthy, unfenced on every node
ADMIN_CALL_TIMEOUT_S = 60.0         # one HTTP call (a rebalance asks every broker for its sizes)
MOVES_DEADLINE_S = 120.0            # every reassignment of a rebalance finished
DECOMMISSION_DEADLINE_S = 180.0     # the remove-broker task reaches SUCCESS
UNREGISTERED_DEADLINE_S = 30.0
REFUSED_START_DEADLINE_S = 60.0     # a decommissioned broker started again exits by itself
CANCEL_SETTLE_DEADLINE_S = 20.0     # a cancelled move gone from the voters' images (metadata propagation)
CONFLICT_RETRIES_MAX = 30           # 409 "reassignments under way" answers retried, 1 s apart
POLL_S = 0.5
REFUSAL_TEXT = "was decommissioned"


@dataclass
class Plan:
    """The seed's choices; `describe()` prints them before the run (the same seed, the same lines)."""
    seed: int
    new_node: int
    add_at_s: float
    rebalance_after_s: float
    pause_new_broker: bool      # SIGSTOP the new broker right after the first rebalance's answer
    kill_target: str            # one of KILL_TARGETS
    kill_node: int              # the node for kill_target "node"
    kill_after_s: float
    kill_hold_s: float
    cancel_while_down: bool
    cancel_after_s: float
    rebalance_again_after_s: float
    decommission_after_s: float
    decommission_kill: str      # None, "controller" or a voter's id as a string
    decommission_kill_after_s: float
    decommission_kill_hold_s: float
    tail_s: float

    def describe(self):
        kill = f"node {self.kill_node}" if self.kill_target == "node" else self.kill_target
        lines = [
            f"t={self.add_at_s:5.1f}s  add-broker {self.new_node} (process.roles=broker)",
            f"+{self.rebalance_after_s:4.1f}s once it is unfenced: rebalance (POST {{}})"
            + (f"; at its answer pause broker {self.new_node} (SIGSTOP, continued with the restart)"
               if self.pause_new_broker else ""),
            f"+{self.kill_after_s:4.1f}s kill -9 {kill} (a broker of the moves under way), restart after {self.kill_hold_s:.1f}s",
            f"+{self.cancel_after_s:4.1f}s after the {'kill (still down)' if self.cancel_while_down else 'restart'}: "
            f"cancel the moves (DELETE rebalance)",
            f"+{self.rebalance_again_after_s:4.1f}s rebalance again (POST {{}}), wait until no partition moves",
            f"+{self.decommission_after_s:4.1f}s decommission broker {self.new_node} (DELETE brokers/{self.new_node}), "
            f"poll its remove-broker task until SUCCESS",
        ]
        if self.decommission_kill is not None:
            lines.append(f"    +{self.decommission_kill_after_s:4.1f}s into the drain: kill -9 {self.decommission_kill}, "
                         f"restart after {self.decommission_kill_hold_s:.1f}s")
        lines.append(f"then: SIGTERM broker {self.new_node} (exit 0), start it again (refused by name); "
                     f"writes go on {self.tail_s:.1f}s more")
        return lines


def make_plan(seed, voters, new_node):
    """The grow-shrink plan from `seed` for voters `voters` (ints) and the broker-only `new_node`."""
    rng = random.Random(seed)
    u = rng.uniform
    nodes = sorted(voters) + [new_node]
    plan = Plan(seed=seed, new_node=new_node,
                add_at_s=round(u(*ADD_AT_S), 1), rebalance_after_s=round(u(*REBALANCE_AFTER_S), 1),
                pause_new_broker=rng.random() < PAUSE_NEW_BROKER_P,
                kill_target=rng.choices(KILL_TARGETS, weights=KILL_TARGET_WEIGHTS)[0], kill_node=rng.choice(nodes),
                kill_after_s=round(u(*KILL_AFTER_S), 1), kill_hold_s=round(u(*KILL_HOLD_S), 1),
                cancel_while_down=rng.random() < CANCEL_WHILE_DOWN_P, cancel_after_s=round(u(*CANCEL_AFTER_S), 1),
                rebalance_again_after_s=round(u(*REBALANCE_AGAIN_AFTER_S), 1),
                decommission_after_s=round(u(*DECOMMISSION_AFTER_S), 1),
                decommission_kill=None, decommission_kill_after_s=0.0, decommission_kill_hold_s=0.0,
                tail_s=round(u(*TAIL_S), 1))
    if plan.cancel_while_down:
        # The cancel lands while the killed broker is down: before its restart.
        plan.cancel_after_s = round(min(plan.cancel_after_s, plan.kill_hold_s - 0.5), 1)
    if rng.random() < DECOMMISSION_KILL_P:
        plan.decommission_kill = rng.choice(["controller"] + [str(v) for v in sorted(voters)])
        plan.decommission_kill_after_s = round(u(*DECOMMISSION_KILL_AFTER_S), 1)
        plan.decommission_kill_hold_s = round(u(*DECOMMISSION_KILL_HOLD_S), 1)
    return plan


def kill_candidates(target, moves, leaders, controller, kill_node):
    """The nodes a kill target may resolve to, sorted (the runtime rng picks one).

    moves: [{"partition_id", "adding_replicas", "removing_replicas", ...}] under way (the
    reassignment list, or the rebalance's plan when none is listed any more); leaders:
    {partition: leader id}; controller: the active controller's id or None.
    """
    if target == "node":
        return [kill_node]
    if target == "controller":
        return [controller] if controller is not None else []
    if target == "adding":
        return sorted({b for m in moves for b in m.get("adding_replicas", [])})
    if target == "removing":
        return sorted({b for m in moves for b in m.get("removing_replicas", [])})
    if target == "leader":
        return sorted({leaders[m["partition_id"]] for m in moves if leaders.get(m["partition_id"]) is not None})
    raise ValueError(f"unknown kill target {target!r}")


class StepFailed(Exception):
    """A step's answer broke the contract, or it did not finish in time."""


class GrowShrink(nemesis.Nemesis):
    """Plays a Plan against the cluster; heals (restarts killed or crashed nodes) like the nemesis."""

    def __init__(self, cluster, history, router, plan, seed, log, topic, on_broker_added):
        super().__init__(cluster, history, router, [], seed, log, topic)
        self.plan = plan
        self.on_broker_added = on_broker_added
        self.done = False
        self.failed_steps = []
        self.last_moves = []
        self.answered_by = None
        # Which voter an admin call goes through: its own stream, so that the number of polls
        # does not change how kill targets resolve (self.rng, the nemesis').
        self.admin_rng = random.Random(seed ^ 0xAD31)

    # ---- helpers

    def note(self, step, ok=True, **fields):
        """One admin step in the history and the run log."""
        entry = self.history.event("admin-step", step=step, ok=ok, **fields)
        shown = {k: v for k, v in fields.items() if k not in ("plan",)}
        self.log(f"[grow-shrink t={entry['t']:7.2f}] {step}{'' if ok else ' FAILED'}: {shown}")
        if not ok:
            self.failed_steps.append(step)
        return entry

    def admin_node(self):
        """A live voter to send an admin call to (the runtime rng: the same seed, the same order)."""
        voters = [n for n in sorted(self.cluster.nodes) if n in self.cluster.voters and n not in self.killed
                  and self.cluster.node(n).running()]
        return self.cluster.node(self.admin_rng.choice(voters))

    def call(self, method, path, body=None, ok_statuses=(200, 202), retry_conflict=False):
        """One admin call through a live voter: (status, json); self.answered_by names the voter. Connection errors and 5xx are tried on
        another voter (up to 3 tries); 409 is retried when asked (reassignments under way)."""
        tries = 0
        conflicts = 0
        while True:
            node = self.admin_node()
            try:
                r = requests.request(method, self.cluster.v3(node, path), json=body, timeout=ADMIN_CALL_TIMEOUT_S)
            except requests.RequestException as e:
                tries += 1
                self.log(f"[grow-shrink] {method} {path} via node {node.node_id}: {type(e).__name__}")
                if tries >= 3:
                    raise StepFailed(f"{method} {path}: no answer from 3 voters ({type(e).__name__})")
                continue
            try:
                answer = r.json()
            except ValueError:
                answer = {"text": r.text[:300]}
            if r.status_code == 409 and retry_conflict and conflicts < CONFLICT_RETRIES_MAX:
                conflicts += 1
                if conflicts in (1, 10, 20):
                    self.log(f"[grow-shrink] {method} {path}: 409 {answer.get('message', '')!r}, retrying")
                time.sleep(1.0)
                continue
            if r.status_code >= 500 and tries < 2:
                tries += 1
                self.log(f"[grow-shrink] {method} {path} via node {node.node_id}: {r.status_code} {r.text[:200]!r}")
                time.sleep(1.0)
                continue
            if r.status_code not in ok_statuses:
                raise StepFailed(f"{method} {path} via node {node.node_id}: {r.status_code} {r.text[:300]}")
            self.answered_by = node.node_id
            return r.status_code, answer

    def reassignments(self):
        """[{"topic_name", "partition_id", "adding_replicas", "removing_replicas"}] under way, as a
        live voter's image shows them (None when none answers)."""
        try:
            _status, answer = self.call("GET", "/topics/-/partitions/-/reassignment", ok_statuses=(200,))
        except StepFailed:
            return None
        return [{k: r.get(k) for k in ("topic_name", "partition_id", "replica_ids", "adding_replicas",
                                       "removing_replicas")} for r in answer.get("data", [])]

    def wait_moves_done(self, stop_event, deadline_s=MOVES_DEADLINE_S):
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            moving = self.reassignments()
            if moving == []:
                return True
            if stop_event.wait(POLL_S):
                return False
        raise StepFailed(f"reassignments still under way after {deadline_s:.0f}s: {self.reassignments()}")

    def sleep(self, stop_event, seconds):
        if stop_event.wait(seconds):
            raise InterruptedError()

    def kill(self, node_id, why):
        self.cluster.node(node_id).kill()
        self.killed.add(node_id)
        self.note("kill", node=node_id, why=why, incarnation=self.cluster.node(node_id).incarnation)

    def restart_killed(self):
        """Starts every killed node again (and any node that exited by itself: a crash event),
        continues a paused one."""
        self.nodes = sorted(self.cluster.nodes)
        started = sorted(self.killed)
        continued = sorted(self.paused - self.killed)
        self.heal()
        if started or continued:
            self.note("restart", nodes=started, continued=continued)

    def pause_new_broker(self):
        new = self.plan.new_node
        self.cluster.node(new).pause()
        self.paused.add(new)
        self.note("pause", node=new, why="a slow new broker (SIGSTOP): the moves onto it wait, so the kill and "
                                         "the cancel land mid-move")

    def leaders(self):
        self.router.refresh()
        return {p: self.router.leader(p) for p in self.router.partitions}

    # ---- the steps

    def add_broker(self, stop_event):
        new = self.plan.new_node
        self.note("add-broker", node=new, roles="broker", voters=self.cluster.voters_spec)
        node = self.cluster.add_broker(new, BROKER_START_DEADLINE_S)
        self.nodes = sorted(self.cluster.nodes)
        self.on_broker_added(node)
        self.note("broker-unfenced", node=new, on_every_node=True)

    def rebalance(self, stop_event, which):
        status, plan = self.call("POST", "/rebalance", body={}, retry_conflict=True)
        moves = [{k: m.get(k) for k in ("topic_name", "partition_id", "replicas", "target_replicas",
                                        "adding_replicas", "removing_replicas", "size_bytes")}
                 for m in plan.get("moves", [])]
        self.last_moves = moves
        self.note("rebalance", which=which, status=status, started=plan.get("started"), balanced=plan.get("balanced"),
                  bytes_to_move=plan.get("bytes_to_move"), moves=moves, skipped=plan.get("skipped"),
                  brokers=[{"id": b.get("broker_id"), "replicas": b.get("replicas"), "leaders": b.get("leaders")}
                           for b in plan.get("brokers", [])])
        if plan.get("kind") != "KafkaRebalancePlan" or plan.get("dry_run") is not False:
            raise StepFailed(f"rebalance answer is not a started KafkaRebalancePlan: {str(plan)[:300]}")
        if status == 202 and not moves:
            raise StepFailed("202 (started) with no moves")
        if which == "first" and not any(self.plan.new_node in m.get("adding_replicas") or [] for m in moves):
            raise StepFailed(f"the first rebalance moves nothing onto the new broker {self.plan.new_node}")
        return moves

    def kill_mid_moves(self, stop_event, moves):
        under_way = self.reassignments()
        listed_by = self.answered_by
        pool = under_way if under_way else moves
        candidates = kill_candidates(self.plan.kill_target, pool, self.leaders(), self.cluster.controller(),
                                     self.plan.kill_node)
        candidates = [c for c in candidates if c in self.cluster.nodes]
        node = self.rng.choice(candidates) if candidates else self.rng.choice(sorted(self.cluster.nodes))
        self.kill(node, why=f"{self.plan.kill_target} of the moves; reassignments under way just before "
                            f"(as node {listed_by} lists them): {under_way if under_way is not None else 'no answer'}")
        return node

    def cancel(self, stop_event):
        before = self.reassignments()
        before_from = self.answered_by
        status, answer = self.call("DELETE", "/rebalance", ok_statuses=(200,))
        cancelled_by = self.answered_by
        answered = time.monotonic()
        after = self.reassignments()
        self.note("cancel", status=status, cancelled=answer.get("cancelled"), via=cancelled_by,
                  under_way_before=before, listed_by=before_from, under_way_just_after=after,
                  listed_after_by=self.answered_by)
        if answer.get("kind") != "KafkaRebalanceCancel" or not isinstance(answer.get("cancelled"), int):
            raise StepFailed(f"cancel answer is not a KafkaRebalanceCancel: {str(answer)[:300]}")
        # The moves cancelled end (the voter asked next may apply the cancel a moment later).
        cancelled = {(r["topic_name"], r["partition_id"]) for r in before or []}
        while True:
            now = self.reassignments()
            left = sorted(k for k in cancelled if now is None or k in {(r["topic_name"], r["partition_id"]) for r in now})
            if not left:
                break
            if time.monotonic() - answered > CANCEL_SETTLE_DEADLINE_S:
                raise StepFailed(f"moves still listed {CANCEL_SETTLE_DEADLINE_S:.0f}s after the cancel: {left}")
            self.sleep(stop_event, POLL_S)
        self.note("cancel-settled", after_s=round(time.monotonic() - answered, 2),
                  partitions_back=len(cancelled))

    def decommission(self, stop_event):
        new = self.plan.new_node
        status, task = self.call("DELETE", f"/brokers/{new}", ok_statuses=(200, 202), retry_conflict=True)
        self.note("decommission", node=new, status=status, task_status=task.get("task_status"),
                  partitions_remaining=task.get("partitions_remaining"))
        if task.get("kind") != "KafkaBrokerTask" or task.get("task_type") != "remove-broker":
            raise StepFailed(f"decommission answer is not a remove-broker KafkaBrokerTask: {str(task)[:300]}")
        start = time.monotonic()
        kill_at = start + self.plan.decommission_kill_after_s if self.plan.decommission_kill else None
        restart_at = None
        last = None
        while True:
            now = time.monotonic()
            if kill_at is not None and now >= kill_at:
                target = self.plan.decommission_kill
                node = self.resolve(target)
                if node == new or node not in self.cluster.nodes:   # a voter only: the drain's sources
                    node = self.rng.choice(sorted(self.cluster.voters))
                self.kill(node, why=f"{target} during the decommission drain (task then: {last})")
                kill_at = None
                restart_at = now + self.plan.decommission_kill_hold_s
            if restart_at is not None and now >= restart_at:
                self.restart_killed()
                restart_at = None
            try:
                _s, task = self.call("GET", f"/brokers/{new}/tasks/remove-broker", ok_statuses=(200,))
            except StepFailed as e:
                task = {"error": str(e)}
            shown = (task.get("task_status"), task.get("partitions_remaining"), task.get("reassignments_in_progress"))
            if shown != last:
                self.note("decommission-progress", node=new, task_status=shown[0], partitions_remaining=shown[1],
                          reassignments_in_progress=shown[2], error=task.get("error"))
                last = shown
            if task.get("task_status") == "SUCCESS" and restart_at is None and kill_at is None:
                break
            if task.get("task_status") == "CANCELED":
                raise StepFailed(f"the remove-broker task of broker {new} ended CANCELED: {str(task)[:300]}")
            if now - start > DECOMMISSION_DEADLINE_S:
                if restart_at is not None:
                    self.restart_killed()
                raise StepFailed(f"the remove-broker task of broker {new} is not SUCCESS after "
                                 f"{DECOMMISSION_DEADLINE_S:.0f}s: {str(task)[:300]}")
            self.sleep(stop_event, POLL_S)
        if task.get("partitions_remaining") != 0:
            raise StepFailed(f"SUCCESS with partitions_remaining {task.get('partitions_remaining')}")

        def unregistered():
            for n in list(self.cluster.nodes.values()):
                if n.node_id == new or not n.running():
                    continue
                b = self.cluster.brokers(n)
                if b is None or new in b:
                    return False
            return True
        end = time.monotonic() + UNREGISTERED_DEADLINE_S
        while not unregistered():
            if time.monotonic() > end:
                raise StepFailed(f"broker {new} still listed by some node {UNREGISTERED_DEADLINE_S:.0f}s after SUCCESS")
            self.sleep(stop_event, POLL_S)
        self.note("decommissioned", node=new, unregistered_on_every_node=True)

    def retire(self, stop_event):
        """SIGTERM the decommissioned broker; start it again: it must refuse to run, by name."""
        new = self.plan.new_node
        node = self.cluster.retire(new)
        self.nodes = sorted(self.cluster.nodes)
        code = node.stop()
        self.note("stop-decommissioned", node=new, exit_code=code)
        if code not in (0, None):
            self.history.event("node-stop-status", node=new, exit_code=code)
        mark = node.log_path.stat().st_size if node.log_path.exists() else 0
        node.start()
        end = time.monotonic() + REFUSED_START_DEADLINE_S
        while node.exited() is None and time.monotonic() < end:
            self.sleep(stop_event, POLL_S)
        code = node.exited()
        text = node.log_path.read_bytes()[mark:].decode(errors="replace")
        named = REFUSAL_TEXT in text
        node.kill()   # reaps it (or kills it when it kept running)
        lines = text.strip().splitlines()
        line = next((ln for ln in lines if REFUSAL_TEXT in ln), lines[-1] if lines else "")
        # Refused: it exits by itself with an error status (a signal, e.g. -11, is a crash, not a
        # refusal) and names the decommission.
        self.note("restart-decommissioned", ok=code is not None and code > 0 and named, node=new, exit_code=code,
                  refusal_named=named, line=line[:300])

    def run(self, stop_event):
        """Plays the plan; always ends with every killed node started again. Sets self.done."""
        p = self.plan
        step = "add-broker"
        try:
            self.sleep(stop_event, max(0.0, p.add_at_s - self.history.now()))
            self.add_broker(stop_event)
            step = "rebalance"
            self.sleep(stop_event, p.rebalance_after_s)
            moves = self.rebalance(stop_event, "first")
            if p.pause_new_broker:
                self.pause_new_broker()
            step = "kill"
            self.sleep(stop_event, p.kill_after_s)
            self.kill_mid_moves(stop_event, moves)
            step = "cancel"
            if p.cancel_while_down:
                self.sleep(stop_event, p.cancel_after_s)
                self.cancel(stop_event)
                self.sleep(stop_event, max(0.0, p.kill_hold_s - p.cancel_after_s))
                self.restart_killed()
            else:
                self.sleep(stop_event, p.kill_hold_s)
                self.restart_killed()
                self.sleep(stop_event, p.cancel_after_s)
                self.cancel(stop_event)
            step = "rebalance again"
            self.sleep(stop_event, p.rebalance_again_after_s)
            self.wait_moves_done(stop_event)   # a cancel ends at once; this is its confirmation
            self.rebalance(stop_event, "again")
            self.wait_moves_done(stop_event)
            self.note("moves-done", which="again")
            step = "decommission"
            self.sleep(stop_event, p.decommission_after_s)
            self.decommission(stop_event)
            step = "retire"
            self.retire(stop_event)
            self.sleep(stop_event, p.tail_s)
        except InterruptedError:
            self.note("stopped", ok=False, at_step=step, why="the run's deadline came first")
        except (StepFailed, TimeoutError, RuntimeError) as e:
            self.note(step, ok=False, error=str(e))
        finally:
            self.restart_killed()
            self.done = True
