#!/usr/bin/python3
"""A paused partition leader, end to end: how long acks=all HTTP writes stop.

  bench/run-pause-bench.py [--pauses N] [--bin build/src/app/ringlog]

Three real `ringlog serve` processes on 127.0.0.1 with the default timeouts
(broker.session.timeout.ms=3000). One acks=all HTTP v2 producer writes one record per request,
one after another, to partition 0 of a replication-factor-3 topic through a node that does not
lead it. The leader is paused (SIGSTOP); the gap is the time from the last write acknowledged
before the pause to the first one acknowledged after it (the session timeout, the fencing, the
new leader's first write acknowledged by the in-sync replicas left, and the forwarding node
learning the new leader). Then the paused node is resumed (SIGCONT), rejoins the ISR, and the
next pause follows. Prints each gap and p50/max in a Markdown line (docs/benchmarks.md).
Uses only loopback and temp dirs.
"""
import argparse
import os
import pathlib
import signal
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from conftest import wait_until  # noqa: E402
from test_cluster import Cluster, create_topic  # noqa: E402
from test_cluster_newcomer import SequentialProducer  # noqa: E402
from test_replication import isr_of, leader_of  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pauses", type=int, default=5)
    parser.add_argument("--bin", default=str(ROOT / "build" / "src" / "app" / "ringlog"))
    args = parser.parse_args()
    os.environ["RINGLOG_BIN"] = str(pathlib.Path(args.bin).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        c = Cluster(pathlib.Path(tmp), extra_sets=["auto.leader.rebalance.enable=false"]).start()
        try:
            controller = wait_until(c.controller, 30, "one controller")
            assert create_topic(c.node(controller), "paused", partitions=1, replication_factor=3).status_code == 201
            gaps = []
            for k in range(args.pauses):
                wait_until(lambda: isr_of(c.node(controller), "paused", 0) == [1, 2, 3] or None, 60, "an ISR of three")
                leader = wait_until(lambda: leader_of(c.node(controller), "paused", 0), 30, "a leader")
                # Through a node that neither leads nor is the quorum leader (the pause of the
                # quorum leader would add an election): the last of the three when possible.
                through = next((n for n in c.nodes if n.node_id not in (leader, controller)),
                               next(n for n in c.nodes if n.node_id != leader))
                writer = SequentialProducer(through, "paused", 0)
                writer.start()
                wait_until(lambda: len(writer.acked_at) >= 20, 30, "writes before the pause")
                paused = c.node(leader)
                paused.proc.send_signal(signal.SIGSTOP)
                paused_at = time.monotonic()
                wait_until(lambda: len(writer.acked_at) > 0 and writer.acked_at[-1] > paused_at + 0.05 or None, 60,
                           "a write acknowledged after the pause")
                acked = list(writer.acked_at)
                before = max(t for t in acked if t <= paused_at)
                after = min(t for t in acked if t > paused_at + 0.05)
                gaps.append(after - before)
                writer.stop()
                paused.proc.send_signal(signal.SIGCONT)
                print(f"pause {k + 1}: broker {leader} paused, writes through broker {through.node_id}: "
                      f"acks stopped for {after - before:.2f} s", flush=True)
            print(f"\n| paused leader, acks=all HTTP writes through another node | p50 {statistics.median(gaps):.2f} s "
                  f"| max {max(gaps):.2f} s | {len(gaps)} pauses |")
        finally:
            for n in c.nodes:
                if n.proc is not None:
                    n.proc.send_signal(signal.SIGCONT)
            c.stop()


if __name__ == "__main__":
    main()
