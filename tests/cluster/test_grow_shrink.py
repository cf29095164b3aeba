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
    targets, while_down, decommission_kills = set(), set(), set()
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
    assert targets == set(grow_shrink.KILL_TARGETS)
    assert while_down == {True, False} and decommission_kills == {True, False}


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
