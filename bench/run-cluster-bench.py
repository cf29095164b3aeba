#!/usr/bin/python3
"""Cluster I benchmarks on this machine: three real `ringlog serve` processes on 127.0.0.1.

  bench/run-cluster-bench.py [--kills N] [--topics N] [--bin build/src/app/ringlog]

Measures, with ringlog's default timeouts (controller.quorum.election.timeout.ms=1000,
controller.quorum.fetch.timeout.ms=1000, broker.session.timeout.ms=3000):

1. Controller failover: kill -9 of the active controller, then the time until a topic create
   sent to a surviving node succeeds (HTTP 201), over N kills (default 20). The killed node is
   restarted and the cluster settles before the next kill. p50/p99/max.
2. Metadata commit latency: create a topic on one node, then the time until every node answers
   it (describe 200); p50/p99 over 50 topics.
3. Time to create --topics topics (default 1000) of 6 partitions, replication factor 3, one
   request after another through one node.

Prints a Markdown report (paste into docs/benchmarks.md). Uses only loopback and temp dirs.
"""
import argparse
import os
import pathlib
import statistics
import sys
import tempfile
import time

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from conftest import wait_until  # noqa: E402
from test_cluster import Cluster, create_topic, describe  # noqa: E402


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def failover(cluster, kills):
    times = []
    for k in range(kills):
        old = wait_until(cluster.controller, 30, "one controller")
        survivors = [n for n in cluster.nodes if n.node_id != old]
        cluster.node(old).kill()
        start = time.monotonic()
        name = f"failover-{k}"

        def created():
            try:
                r = create_topic(survivors[k % 2], name, partitions=1)
            except requests.RequestException:
                return False
            return r.status_code == 201

        wait_until(created, 60, "a topic create after the kill")
        times.append(time.monotonic() - start)
        cluster.node(old).spawn()
        wait_until(cluster.node(old).healthy, 60, "the restarted node")
        wait_until(lambda: all(b["state"] == "unfenced" for b in survivors[0].brokers().values()), 30,
                   "every broker unfenced")
    return times


def commit_latency(cluster, count):
    times = []
    for i in range(count):
        name = f"latency-{i}"
        start = time.monotonic()
        r = create_topic(cluster.nodes[i % 3], name, partitions=1)
        assert r.status_code == 201, r.text
        for n in cluster.nodes:
            wait_until(lambda: describe(n, name).status_code == 200, 30, "visible everywhere")
        times.append(time.monotonic() - start)
    return times


def many_topics(cluster, count):
    node = cluster.nodes[0]
    start = time.monotonic()
    for i in range(count):
        r = create_topic(node, f"many-{i}", partitions=6, replication_factor=3)
        assert r.status_code == 201, r.text
    return time.monotonic() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--bin", default=str(ROOT / "build" / "src" / "app" / "ringlog"))
    args = parser.parse_args()
    os.environ["RINGLOG_BIN"] = str(pathlib.Path(args.bin).resolve())
    with tempfile.TemporaryDirectory(prefix="ringlog-cluster-bench-") as tmp:
        cluster = Cluster(pathlib.Path(tmp)).start()
        try:
            fo = failover(cluster, args.kills)
            lat = commit_latency(cluster, 50)
            many = many_topics(cluster, args.topics)
        finally:
            cluster.stop()
    ms = lambda s: f"{s * 1000:.0f} ms"  # noqa: E731
    print("| measure | n | p50 | p99 | max |")
    print("|---|---|---|---|---|")
    print(f"| controller failover: kill -9 to topic created | {len(fo)} | {ms(statistics.median(fo))} | "
          f"{ms(percentile(fo, 99))} | {ms(max(fo))} |")
    print(f"| metadata commit: create to visible on all 3 nodes | {len(lat)} | {ms(statistics.median(lat))} | "
          f"{ms(percentile(lat, 99))} | {ms(max(lat))} |")
    print(f"\n{args.topics} topics x 6 partitions, replication factor 3, one by one through one node: "
          f"{many:.1f} s ({args.topics / many:.0f} topics/s)")


if __name__ == "__main__":
    main()
