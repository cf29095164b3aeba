"""The nemesis schedule is a function of the seed, and each network fault drops the pairs it names.

Run: /usr/bin/python3 -m pytest -q tests/cluster/test_nemesis.py   (meson test: cluster-nemesis)
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import nemesis  # noqa: E402

NODES = [1, 2, 3]


def test_the_same_seed_gives_the_same_schedule_and_another_seed_another():
    a = [f.describe() for f in nemesis.make_schedule(42, 120, NODES, [0, 1, 2], nemesis.ALL_KINDS)]
    b = [f.describe() for f in nemesis.make_schedule(42, 120, NODES, [0, 1, 2], nemesis.ALL_KINDS)]
    c = [f.describe() for f in nemesis.make_schedule(43, 120, NODES, [0, 1, 2], nemesis.ALL_KINDS)]
    assert a == b and a != c
    assert len(a) >= 8


def test_faults_fit_the_run_and_do_not_overlap():
    for seed in range(50):
        s = nemesis.make_schedule(seed, 60, NODES, [0], nemesis.ALL_KINDS)
        for f, g in zip(s, s[1:]):
            assert f.at_s + f.hold_s <= g.at_s
        for f in s:
            assert f.at_s >= nemesis.WARMUP_S and f.at_s + f.hold_s <= 60 - nemesis.COOLDOWN_S
            assert f.kind in nemesis.ALL_KINDS


def test_only_the_kinds_asked_for():
    kinds = {f.kind for seed in range(20) for f in nemesis.make_schedule(seed, 120, NODES, [0], ["pause"])}
    assert kinds == {"pause"}


def test_network_faults_drop_the_pairs_they_name():
    assert nemesis.directed_edges("isolate", 2, None, NODES) == {(2, 1), (2, 3), (1, 2), (3, 2)}
    assert nemesis.directed_edges("one-way-out", 2, None, NODES) == {(2, 1), (2, 3)}
    assert nemesis.directed_edges("one-way-in", 2, None, NODES) == {(1, 2), (3, 2)}
    assert nemesis.directed_edges("one-way", 1, 3, NODES) == {(1, 3)}
    # bridge with 2 in the middle: 1 and 3 cannot talk, both talk to 2
    assert nemesis.directed_edges("bridge", 1, 2, NODES) == {(1, 3), (3, 1)}
    assert nemesis.split_edges([3], NODES) == {(3, 1), (3, 2), (1, 3), (2, 3)}
    five = [1, 2, 3, 4, 5]
    assert len(nemesis.split_edges([1, 2], five)) == 2 * 2 * 3
