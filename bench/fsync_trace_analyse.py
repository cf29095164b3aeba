#!/usr/bin/python3
"""bench/run-fsync-trace.sh's analysis of `perf script -F comm,tid,time,event,trace` output.

Pairs ext4_sync_file enter/exit per thread (an fdatasync), block_rq issue/complete per sector (a
device request, with the thread that issued it), and each thread's sched_switch out / wake-up /
switch in. Prints the fdatasync and device-request latency percentiles by request kind (rwbs: WS
a data write with FUA/sync, WSM the inode's metadata write, FF a cache flush), then for the
fdatasyncs over 10 ms: in all, how much was their own requests' device time, blocked until woken
(waiting on I/O, theirs or another thread's on a shared buffer) and waiting for a core after a
wake-up or a preemption; and the 15 slowest, each with the block requests in flight meanwhile."""
import re, sys, collections
syncs = []          # (start, end, comm)
open_sync = {}
blocks = []         # (issue, complete, rwbs, bytes)
open_rq = {}
off_since = {}
woken = {}
off_cpu = collections.defaultdict(list)   # tid -> (start, end, state)
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"\s*(\S.*?)\s+(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)", line)
    if not m: continue
    comm, tid, t, ev, rest = m.group(1), int(m.group(2)), float(m.group(3)), m.group(4), m.group(5)
    if ev == "ext4:ext4_sync_file_enter":
        open_sync[tid] = (t, comm)
    elif ev == "ext4:ext4_sync_file_exit":
        if tid in open_sync:
            s, c = open_sync.pop(tid); syncs.append((s, t, c, tid))
    elif ev == "sched:sched_switch":
        m2 = re.search(r"prev_pid=(\d+) .*prev_state=(\S+) ==> .*next_pid=(\d+)", rest)
        if m2:
            prev, state, nxt = int(m2.group(1)), m2.group(2), int(m2.group(3))
            off_since[prev] = (t, state)
            if nxt in off_since:
                s0, st = off_since.pop(nxt)
                w = woken.pop(nxt, None)
                if st.startswith("R") or w is None or w < s0:
                    off_cpu[nxt].append((s0, t, "R" if st.startswith("R") else st))
                else:
                    off_cpu[nxt].append((s0, w, st))      # blocked until woken
                    off_cpu[nxt].append((w, t, "R"))      # then waiting for a core
    elif ev == "sched:sched_wakeup":
        m2 = re.search(r"pid=(\d+)", rest)
        if m2: woken[int(m2.group(1))] = t
    elif ev == "block:block_rq_issue":
        f = rest.split()
        # dev rwbs bytes () sector + n [comm]
        key = (f[0], f[4] if len(f) > 4 else "")
        open_rq[key] = (t, f[1], f[2], tid)
    elif ev == "block:block_rq_complete":
        f = rest.split()
        key = (f[0], f[3] if len(f) > 3 else "")
        if key in open_rq:
            s, rwbs, nbytes, issuer = open_rq.pop(key); blocks.append((s, t, rwbs, nbytes, issuer))
def pct(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else 0
sd = [(e - s) * 1000 for s, e, c, *_ in syncs]
bd = [(e - s) * 1000 for s, e, r, n, *_ in blocks]
print(f"syncs {len(sd)}: p50 {pct(sd,.5):.2f} p99 {pct(sd,.99):.2f} p99.9 {pct(sd,.999):.2f} max {max(sd or [0]):.2f} ms; over 10 ms {sum(d>10 for d in sd)}")
print(f"block requests {len(bd)}: p50 {pct(bd,.5):.2f} p99 {pct(bd,.99):.2f} p99.9 {pct(bd,.999):.2f} max {max(bd or [0]):.2f} ms; over 10 ms {sum(d>10 for d in bd)}")
by_kind = collections.defaultdict(list)
for s, e, r, n, *_ in blocks: by_kind[r].append((e - s) * 1000)
for k, v in sorted(by_kind.items(), key=lambda kv: -len(kv[1]))[:8]:
    print(f"  {k:6s} {len(v):7d} p99 {pct(v,.99):.2f} max {max(v):.2f} ms")
by_comm = collections.Counter(c for s, e, c, *_ in syncs)
print("syncs by thread name:", dict(by_comm.most_common(8)))
slow = sorted([(e - s, s, e, c, tid) for s, e, c, tid in syncs if (e - s) > 0.010], reverse=True)[:15]
def clip(a, b, s, e): return max(0.0, min(b, e) - max(a, s))
tot = collections.Counter()
for d, s, e, c, tid in sorted([(e - s, s, e, c, tid) for s, e, c, tid in syncs if (e - s) > 0.010]):
    mine = [(b_s, b_e) for b_s, b_e, r, n, issuer in blocks if issuer == tid and b_s >= s and b_s <= e]
    dev = sum(clip(b_s, b_e, s, e) for b_s, b_e in mine)
    runnable = sum(clip(a, b, s, e) for a, b, st in off_cpu[tid] if st.startswith("R"))
    blocked = sum(clip(a, b, s, e) for a, b, st in off_cpu[tid] if not st.startswith("R"))
    tot["syncs"] += 1; tot["total"] += d; tot["own device"] += dev; tot["runnable"] += runnable; tot["blocked"] += blocked
if tot["syncs"]:
    print(f"syncs over 10 ms: {tot['syncs']}, {tot['total']*1000:.0f} ms in all: own block requests {tot['own device']*1000:.0f} ms, "
          f"off-CPU waiting for a core (preempted, or woken and not yet run) {tot['runnable']*1000:.0f} ms, off-CPU blocked until woken (D/S) {tot['blocked']*1000:.0f} ms")
for d, s, e, c, tid in slow:
    over = [(b_e - b_s) * 1000 for b_s, b_e, r, n, *_ in blocks if b_s < e and b_e > s]
    worst = max(over or [0])
    mine = [(b_e - b_s) * 1000 for b_s, b_e, r, n, issuer in blocks if issuer == tid and s <= b_s <= e]
    runnable = sum(clip(a, b, s, e) for a, b, st in off_cpu[tid] if st.startswith("R")) * 1000
    blocked = sum(clip(a, b, s, e) for a, b, st in off_cpu[tid] if not st.startswith("R")) * 1000
    print(f"slow sync {d*1000:.1f} ms at {s:.3f} ({c}): own requests {len(mine)} ({sum(mine):.1f} ms), runnable {runnable:.1f} ms, blocked {blocked:.1f} ms; "
          f"{len(over)} block requests overlapped, slowest {worst:.1f} ms")
