#!/usr/bin/python3
"""WebSocket benchmark (issue 5): produce over /v1/ws at a fixed schedule and measure, per
delivered record, scheduled-send -> received latency at 1 and at 100 subscribers of one partition.
Every record carries its scheduled send time (ns, perf_counter clock of this process), so delay
in the client is counted too (no coordinated omission).

The client is Debian's python3-websockets on the same 2 cores as the server, which bounds the
rates it can drive: read the figures as an upper bound of the server's latency at these rates,
not as its capacity. Usage: bench/run-ws-bench.py [BUILD_DIR]
"""
import asyncio, base64, json, os, shutil, subprocess, sys, tempfile, time

import requests
import websockets

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
RINGLOG = os.path.join(BUILD, "src/app/ringlog")
PORT = 9591
URL = f"http://127.0.0.1:{PORT}"
WS = f"ws://127.0.0.1:{PORT}/v1/ws"
SCENARIOS = [(1, 500, 5), (1, 2000, 5), (1, 5000, 5), (100, 100, 5)]  # (subscribers, records/s, seconds)


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))] if v else float("nan")


async def subscriber(topic, expected, latencies, ready):
    async with websockets.connect(WS, max_size=None) as ws:
        await ws.send(json.dumps({"type": "subscribe", "id": "s", "topic": topic, "partition": 0, "position": "latest"}))
        await ws.send(json.dumps({"type": "credit", "records": expected + 10}))
        while True:
            m = json.loads(await ws.recv())
            if m["type"] == "subscribed":
                ready.set_result(True) if not ready.done() else None
                break
        got = 0
        while got < expected:
            m = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if m["type"] != "record":
                continue
            now = time.perf_counter_ns()
            sent = int(base64.b64decode(m["value"])[:20])
            latencies.append((now - sent) / 1e6)
            got += 1


async def scenario(subscribers, rate, seconds, topic):
    requests.post(URL + "/v3/clusters/ringlog-cluster/topics", json={"topic_name": topic, "partitions_count": 1}).raise_for_status()
    total = rate * seconds
    latencies = []
    readies = [asyncio.get_running_loop().create_future() for _ in range(subscribers)]
    subs = [asyncio.create_task(subscriber(topic, total, latencies, r)) for r in readies]
    await asyncio.wait_for(asyncio.gather(*readies), 30)
    padding = b"x" * 1000
    async with websockets.connect(WS, max_size=None) as ws:
        async def drain_acks():
            for _ in range(total):
                await ws.recv()
        acks = asyncio.create_task(drain_acks())
        start = time.perf_counter_ns()
        interval = 1e9 / rate
        for i in range(total):
            scheduled = start + int(i * interval)
            delay = (scheduled - time.perf_counter_ns()) / 1e9
            if delay > 0:
                await asyncio.sleep(delay)
            value = base64.b64encode(str(scheduled).rjust(20).encode() + padding).decode()
            await ws.send(json.dumps({"type": "produce", "id": i, "topic": topic, "partition": 0, "value": value}))
        await acks
    await asyncio.gather(*subs)
    return total, latencies


async def main():
    data = tempfile.mkdtemp(prefix="ringlog-ws-bench-")
    broker = subprocess.Popen([RINGLOG, "serve", "--set", f"listeners={URL}", "--set", f"log.dirs={data}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if requests.get(URL + "/v1/health", timeout=1).ok:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline or broker.poll() is not None:
                raise SystemExit("ringlog did not start")
            time.sleep(0.05)
        print("| subscribers | produce rate (records/s, 1 KiB, acks=all) | records delivered | p50 ms | p99 ms | p99.9 ms |")
        print("|---|---|---|---|---|---|")
        for n, (subs, rate, seconds) in enumerate(SCENARIOS):
            total, lat = await scenario(subs, rate, seconds, f"ws{n}")
            print(f"| {subs} | {rate} | {len(lat)} ({total} x {subs}) | {pct(lat, 50):.2f} | {pct(lat, 99):.2f} | {pct(lat, 99.9):.2f} |")
    finally:
        broker.terminate()
        broker.wait(timeout=30)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
