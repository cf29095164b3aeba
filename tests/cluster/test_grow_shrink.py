"""The grow-shrink plan is a function of its seed, its kill targets resolve to the brokers of the
moves under way, and the checker's placement and admin rules fire (and stay quiet on a clean end).

Run: /usr/bin/python3 -m pytest -q tests/cluster/test_grow_shrink.py   (meson test: cluster-grow-shrink-plan)
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import checker       # noqa: E402
import grow_shrink   # noqa: E402
from test_checker import clean_history  # noqa: E402

VOTERS = [1, 2, 3]


def test_the_same_seed_gives_the_same_plan_and_other_seeds_others():
    a = grow_shrink.make_plan(7, VOTERS, 4).describe()
    b = grow_shrink.make_plan(7, VOTERS, 4).describe()
    assert a == b
    others = {tuple(grow_shrink.make_plan(s, VOTERS, 4).describe()) for s in range(20)}
    assert len(others) == 20


def test_plans_stay_in_their_ranges_and_cover_every_choice():
    targets, while_down, decommission_kills, pauses = set(), set(), set(), set()
    for seed in range(200):
        p = grow_shrink.make_plan(seed, VOTERS, 4)
        assert grow_shrink.ADD_AT_S[0] <= p.add_at_s <= grow_shrink.ADD_AT_S[1]
        assert grow_shrink.KILL_HOLD_S[0] <= p.kill_hold_s <= grow_shrink.KILL_HOLD_S[1]
        assert p.kill_node in (1, 2, 3, 4)
        if p.cancel_while_down:
            assert 0 <= p.cancel_after_s < p.kill_hold_s   # the cancel lands before the restart
        if p.decommission_kill is not None:
            # a voter (or the controller): broker 4 is the one leaving
            assert p.decommission_kill in ("controller", "1", "2", "3")
        targets.add(p.kill_target)
        while_down.add(p.cancel_while_down)
        decommission_kills.add(p.decommission_kill is not None)
        pauses.add(p.pause_new_broker)
    assert targets == set(grow_shrink.KILL_TARGETS)
    assert while_down == {True, False} and decommission_kills == {True, False} and pauses == {True, False}


def test_kill_targets_resolve_to_the_brokers_of_the_moves():
    moves = [{"partition_id": 0, "adding_replicas": [4], "removing_replicas": [1]},
             {"partition_id": 3, "adding_replicas": [4], "removing_replicas": [2]}]
    leaders = {0: 2, 1: 1, 3: 3}
    assert grow_shrink.kill_candidates("adding", moves, leaders, 1, 2) == [4]
    assert grow_shrink.kill_candidates("removing", moves, leaders, 1, 2) == [1, 2]
    assert grow_shrink.kill_candidates("leader", moves, leaders, 1, 2) == [2, 3]
    assert grow_shrink.kill_candidates("controller", moves, leaders, 1, 2) == [1]
    assert grow_shrink.kill_candidates("controller", moves, leaders, None, 2) == []
    assert grow_shrink.kill_candidates("node", moves, leaders, 1, 2) == [2]
    assert grow_shrink.kill_candidates("adding", [], leaders, 1, 2) == []


def grown_and_shrunk():
    h = clean_history()
    h["expected_placement"] = {"replication_factor": 3, "excluded": [4]}
    # the replica sets moved (partition 1 now on 2, 3, 1 after being on 4 for a while)
    h["placement"] = {"0": {"replicas": [1, 2, 3], "in_sync": [1, 2, 3], "reassigning": False},
                      "1": {"replicas": [1, 2, 3], "in_sync": [1, 2, 3], "reassigning": False}}
    h["events"] = [{"t": 1.0, "event": "admin-step", "step": "rebalance", "ok": True},
                   {"t": 9.0, "event": "admin-step", "step": "decommission", "ok": True}]
    return h


def test_a_clean_grow_and_shrink_is_valid():
    r = checker.check(grown_and_shrunk())
    assert r["verdict"] == "VALID", checker.format_report(r)


def test_placement_fires_on_a_short_replica_set_a_decommissioned_broker_and_a_move_still_listed():
    h = grown_and_shrunk()
    h["placement"]["0"] = {"replicas": [1, 2], "in_sync": [1, 2], "reassigning": False}
    h["placement"]["1"] = {"replicas": [1, 2, 4], "in_sync": [1, 2, 4], "reassigning": True}
    r = checker.check(h)
    assert r["verdict"] == "INVALID"
    found = {a["partition"]: a["problems"] for a in r["anomalies"]["placement"]}
    assert found[0] == ["2 replicas [1, 2], replication factor 3"]
    assert found[1] == ["still on decommissioned broker(s) [4]", "still being reassigned"]


def test_a_partition_nobody_described_is_noted_not_judged():
    h = grown_and_shrunk()
    h["placement"]["1"] = None
    h["strays"] = {"0": [4]}
    r = checker.check(h)
    assert r["verdict"] == "VALID" and not r["anomalies"]["placement"]
    assert any("no final replica set for partitions [1]" in n for n in r["notes"])
    assert any("outside the final replica sets" in n for n in r["notes"])


def test_an_admin_step_that_failed_is_an_anomaly():
    h = grown_and_shrunk()
    h["events"].append({"t": 30.0, "event": "admin-step", "step": "decommission", "ok": False,
                        "error": "the remove-broker task of broker 4 is not SUCCESS after 180s"})
    r = checker.check(h)
    assert r["verdict"] == "INVALID"
    assert [a["step"] for a in r["anomalies"]["admin"]] == ["decommission"]


def test_histories_without_a_plan_are_judged_as_before():
    r = checker.check(clean_history())
    assert r["verdict"] == "VALID" and not r["anomalies"]["placement"] and not r["anomalies"]["admin"]


# ---- the plan's steps against a fake cluster: an in-process HTTP server answering the issue 33
# routes as api33.md describes them, and nodes that only pretend to run.

import http.server      # noqa: E402
import json             # noqa: E402
import threading        # noqa: E402

import workload         # noqa: E402


class FakeAdmin:
    """The cluster's admin state: moves under way, the decommission of broker 4, brokers."""

    def __init__(self):
        self.lock = threading.Lock()
        self.under_way = []
        self.rebalances = 0
        self.cancelled = 0
        self.decommission = None      # polls left before SUCCESS
        self.brokers = [1, 2, 3]
        self.calls = []

    def answer(self, method, path):
        with self.lock:
            self.calls.append((method, path))
            if path.endswith("/rebalance") and method == "POST":
                if self.under_way:
                    return 409, {"error_code": 40901, "message": "reassignments under way"}
                self.rebalances += 1
                moves = [{"topic_name": "jepsen", "partition_id": p, "replicas": [1, 2, 3], "target_replicas": [4, 2, 3],
                          "adding_replicas": [4], "removing_replicas": [1], "size_bytes": 10} for p in range(3)]
                self.under_way = [dict(m, polls=3) for m in moves]
                return 202, {"kind": "KafkaRebalancePlan", "dry_run": False, "started": 3, "balanced": True,
                             "bytes_to_move": 30, "moves": moves, "skipped": [], "brokers": []}
            if path.endswith("/rebalance") and method == "DELETE":
                n = len(self.under_way)
                self.cancelled += n
                self.under_way = []
                return 200, {"kind": "KafkaRebalanceCancel", "cancelled": n}
            if path.endswith("/reassignment"):
                data = list(self.under_way)
                for m in self.under_way:
                    m["polls"] -= 1
                self.under_way = [m for m in self.under_way if m["polls"] > 0]
                return 200, {"data": data}
            if path.endswith("/brokers/4") and method == "DELETE":
                self.decommission = 2
                return 202, {"kind": "KafkaBrokerTask", "task_type": "remove-broker", "task_status": "IN_PROGRESS",
                             "partitions_remaining": 3}
            if path.endswith("/brokers/4/tasks/remove-broker"):
                self.decommission = max(0, self.decommission - 1)
                done = self.decommission == 0
                if done and 4 in self.brokers:
                    self.brokers.remove(4)
                return 200, {"kind": "KafkaBrokerTask", "task_type": "remove-broker",
                             "task_status": "SUCCESS" if done else "IN_PROGRESS",
                             "partitions_remaining": 0 if done else 2, "reassignments_in_progress": 0 if done else 2}
            return 404, {"error_code": 404, "message": f"no route {method} {path}"}


def serve(admin):
    class Handler(http.server.BaseHTTPRequestHandler):
        def handle_one(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            status, body = admin.answer(self.command, self.path)
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = handle_one

        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class FakeNode:
    def __init__(self, node_id, log_path, refuses=False):
        self.node_id = node_id
        self.log_path = log_path
        self.alive = True
        self.paused = False
        self.retired = False
        self.incarnation = 1
        self.refuses = refuses
        self.exit_code = None

    def running(self):
        return self.alive

    def exited(self):
        return self.exit_code

    def kill(self):
        self.alive = False
        self.paused = False
        self.exit_code = None

    def stop(self):
        self.alive = False
        return 0

    def start(self):
        self.incarnation += 1
        if self.refuses:   # a decommissioned broker started again
            with open(self.log_path, "a") as f:
                f.write(f"node {self.node_id} was decommissioned from cluster c: not starting\n")
            self.exit_code = 1
        else:
            self.alive = True

    def pause(self):
        self.paused = True

    def resume(self):
        self.paused = False

    def log_tail(self, chars=3000):
        return ""


class FakeCluster:
    def __init__(self, url, tmp_path, admin):
        self.url = url
        self.admin = admin
        self.tmp_path = tmp_path
        self.voters = {1, 2, 3}
        self.voters_spec = "1@a:1,2@b:1,3@c:1"
        self.nodes = {i: FakeNode(i, tmp_path / f"n{i}.log") for i in (1, 2, 3)}
        self.retired = {}

    def node(self, node_id):
        return self.nodes[node_id] if node_id in self.nodes else self.retired[node_id]

    def v3(self, node, path=""):
        return f"{self.url}/v3/clusters/c{path}"

    def controller(self):
        return 1

    def add_broker(self, node_id, deadline_s):
        self.nodes = {**self.nodes, node_id: FakeNode(node_id, self.tmp_path / f"n{node_id}.log")}
        self.admin.brokers.append(node_id)
        return self.nodes[node_id]

    def retire(self, node_id):
        node = self.nodes[node_id]
        node.retired = True
        node.refuses = True
        self.nodes = {k: v for k, v in self.nodes.items() if k != node_id}
        self.retired = {**self.retired, node_id: node}
        return node

    def brokers(self, node):
        return {b: {"broker_id": b, "state": "unfenced"} for b in self.admin.brokers}


class FakeRouter:
    partitions = [0, 1, 2]

    def refresh(self):
        pass

    def leader(self, p):
        return 1 + p % 3


def fast_plan(seed, **changes):
    p = grow_shrink.make_plan(seed, VOTERS, 4)
    for name in ("add_at_s", "rebalance_after_s", "kill_after_s", "cancel_after_s", "rebalance_again_after_s",
                 "decommission_after_s", "decommission_kill_after_s", "tail_s"):
        setattr(p, name, 0.0)
    p.kill_hold_s = 0.2
    p.decommission_kill_hold_s = 0.1
    for k, v in changes.items():
        setattr(p, k, v)
    return p


def play(tmp_path, monkeypatch, plan):
    monkeypatch.setattr(grow_shrink, "POLL_S", 0.01)
    admin = FakeAdmin()
    server = serve(admin)
    try:
        cluster = FakeCluster(f"http://127.0.0.1:{server.server_address[1]}", tmp_path, admin)
        history = workload.History([0, 1, 2])
        lines = []
        added = []
        g = grow_shrink.GrowShrink(cluster, history, FakeRouter(), plan, plan.seed, lines.append, "jepsen", added.append)
        g.run(threading.Event())
    finally:
        server.shutdown()
    return g, admin, history, cluster, added, lines


def steps(history):
    return [(e["step"], e["ok"]) for e in history.events if e["event"] == "admin-step"]


def test_the_plan_plays_every_step_in_order_against_a_cluster_that_keeps_the_contract(tmp_path, monkeypatch):
    plan = fast_plan(3, pause_new_broker=True, kill_target="adding", cancel_while_down=True, decommission_kill="2")
    g, admin, history, cluster, added, lines = play(tmp_path, monkeypatch, plan)
    got = steps(history)
    assert all(ok for _s, ok in got), "\n".join(lines)
    names = [s for s, _ok in got]
    assert names[:8] == ["add-broker", "broker-unfenced", "rebalance", "pause", "kill", "cancel", "cancel-settled",
                         "restart"], names
    assert names[-3:] == ["decommissioned", "stop-decommissioned", "restart-decommissioned"], names
    assert "moves-done" in names and names.count("kill") == 2 and names.count("rebalance") == 2
    kill = next(e for e in history.events if e.get("step") == "kill")
    assert kill["node"] == 4                 # the broker the moves add replicas to
    cancel = next(e for e in history.events if e.get("step") == "cancel")
    assert cancel["cancelled"] == 3 and cancel["under_way_before"]
    assert [n.node_id for n in added] == [4]
    assert sorted(cluster.nodes) == [1, 2, 3] and sorted(cluster.retired) == [4]
    assert all(n.running() for n in cluster.nodes.values())     # every killed node started again
    assert g.done and not g.failed_steps
    assert checker.check_admin({"events": history.events}) == []


def test_a_decommission_that_never_finishes_is_an_admin_anomaly(tmp_path, monkeypatch):
    monkeypatch.setattr(grow_shrink, "DECOMMISSION_DEADLINE_S", 0.5)
    monkeypatch.setattr(FakeAdmin, "answer", stuck_decommission(FakeAdmin.answer))
    plan = fast_plan(4, pause_new_broker=True, kill_target="controller", cancel_while_down=False, decommission_kill=None)
    g, _admin, history, cluster, _added, lines = play(tmp_path, monkeypatch, plan)
    assert g.failed_steps == ["decommission"], "\n".join(lines)
    found = checker.check_admin({"events": history.events})
    assert len(found) == 1 and "not SUCCESS after" in found[0]["error"]
    assert 4 in cluster.nodes                  # not retired: it still holds replicas
    assert not cluster.nodes[4].paused         # continued with the restart


def stuck_decommission(answer):
    def stuck(self, method, path):
        if path.endswith("/tasks/remove-broker"):
            self.decommission = 99
        return answer(self, method, path)
    return stuck
