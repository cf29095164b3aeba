"""The workload: producers of unique values with acks=all and known keys, readers tailing every
partition, and pollers of every broker's high watermarks. Everything observed goes into one
`History` (the checker's input, see checker.py for its shape).

- Keys k0..k{K-1}; key k{i} always goes to partition i % P (explicit partition_id, so the test
  does not depend on the partitioner). Each key belongs to one producer thread, which sends its
  writes one at a time: write n+1 of a key is sent only after write n's outcome is known, so
  acknowledged writes of a key have a known order. Values are "k{i}:{n}", unique in a run.
- A write is "ok" when the broker answered its delivery report with an offset; "fail" only when
  it certainly was not stored (the connection was refused, a 4xx other than 408: the request was
  refused as invalid or throttled, or NOT_ENOUGH_REPLICAS whose message ends "nothing was
  written"); "unknown" otherwise (timeouts, resets, 5xx, and 503:
  a leader that stepped down while waiting for its followers answers not-leader although the
  record may survive, as Kafka does). The HTTP client never retries.
- Readers fetch each partition from offset 0 on with the partition-read route
  (GET /topics/{t}/partitions/{p}/records?offset=..&timeout=..), through the partition's leader
  or any broker (see Router), following leadership when a broker refuses.
- Pollers ask every broker for the topic's partitions (GET /v3/.../partitions) a few times a
  second and record each partition's leader, leader epoch and high watermark as that broker
  reports them, with the broker's incarnation (restarts counted).
- End pollers ask every broker, without pause, for every partition's end (GET /topics/{t}/
  partitions/{p}/offsets); the checker holds each answer against the acknowledged offsets.
- Kafka Fetch pollers ask every broker's kafka:// listener for each partition from offset 0 (a
  raw Fetch v4: committed records, but every answer carries the high watermark, which librdkafka
  caches for lag and watermark queries); the checker holds each answered high watermark the same.
"""
import base64
import pathlib
import random
import socket
import sys
import threading
import time

import requests

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "integration"))
import kafka_wire  # noqa: E402  (tests/integration/kafka_wire.py: Fetch v4 by hand)

PRODUCE_TIMEOUT_S = (2.0, 10.0)     # (connect, read): longer than a failover takes with the defaults
FETCH_TIMEOUT_S = (2.0, 5.0)
FETCH_WAIT_MS = 500                 # the server's long-poll
FETCH_MAX_BYTES = 256 * 1024
POLL_INTERVAL_S = 0.25
POLL_TIMEOUT_S = 1.5
LEADER_REFRESH_S = 0.5
REFRESH_MIN_INTERVAL_S = 0.2
BACKOFF_S = 0.1
V2_BINARY = "application/vnd.kafka.binary.v2+json"
# The end of a NOT_ENOUGH_REPLICAS message: the leader refused before appending.
NOTHING_WRITTEN = "nothing was written"


class History:
    """Thread-safe record of everything the clients saw; times are seconds since the run began."""

    def __init__(self, partitions):
        self.t0 = time.monotonic()
        self.lock = threading.Lock()
        self.partitions = list(partitions)
        self.writes = []
        self.reads = []
        self.hw = []
        self.ends = []
        self.fetch_ends = []
        self.events = []

    def now(self):
        return time.monotonic() - self.t0

    def add(self, kind, entry):
        with self.lock:
            getattr(self, kind).append(entry)

    def event(self, what, **fields):
        entry = {"t": round(self.now(), 3), "event": what, **fields}
        self.add("events", entry)
        return entry

    def as_dict(self):
        with self.lock:
            return {"partitions": self.partitions, "writes": list(self.writes), "reads": list(self.reads),
                    "hw": list(self.hw), "ends": list(self.ends),
                    "fetch_ends": list(self.fetch_ends), "events": list(self.events)}


class Router:
    """Which broker a client sends a partition's request to.

    mode "leader": the partition's leader as the brokers report it (refreshed in the background
    and whenever a broker refuses); "any": a random broker (needs forwarding to the leader);
    "mixed": half of the requests each way.
    """

    def __init__(self, cluster, topic, partitions, mode, seed):
        self.cluster = cluster
        self.topic = topic
        self.partitions = list(partitions)
        self.mode = mode
        self.leaders = {}
        self.last_refresh = 0.0
        self.lock = threading.Lock()
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._refresh_loop, name="router", daemon=True)

    def start(self):
        self.refresh()
        self.thread.start()

    def refresh(self):
        """Leaders as the live brokers report them; the newest epoch, then the most votes, wins.

        Many clients fail at once when a leader dies: one refresh per REFRESH_MIN_INTERVAL_S.
        """
        with self.lock:
            now = time.monotonic()
            if now - self.last_refresh < REFRESH_MIN_INTERVAL_S:
                return
            self.last_refresh = now
        votes = {}
        for n in self.cluster.live():
            parts = self.cluster.partitions(n, self.topic, timeout_s=1.0)
            if not parts:
                continue
            for p, pj in parts.items():
                leader = self.cluster.leader_id(pj)
                if leader is not None:
                    votes.setdefault(p, {}).setdefault((pj.get("leader_epoch", 0), leader), 0)
                    votes[p][(pj.get("leader_epoch", 0), leader)] += 1
        with self.lock:
            for p, v in votes.items():
                # the newest epoch any broker knows, then the most votes
                (_, leader) = max(v, key=lambda ek: (ek[0], v[ek]))
                self.leaders[p] = leader

    def _refresh_loop(self):
        while not self.stop.wait(LEADER_REFRESH_S):
            try:
                self.refresh()
            except Exception:   # a poller must not die of one bad answer
                pass

    def leader(self, p):
        with self.lock:
            return self.leaders.get(p)

    def pick(self, p):
        with self.lock:
            leader = self.leaders.get(p)
            any_node = self.rng.choice(sorted(self.cluster.nodes))
            use_any = self.mode == "any" or (self.mode == "mixed" and self.rng.random() < 0.5)
        node_id = any_node if use_any or leader is None else leader
        return self.cluster.node(node_id)

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)


def _definite_failure(exc):
    """True when the request certainly never reached a broker (connect refused or timed out)."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    if isinstance(exc, requests.exceptions.ConnectionError):
        text = repr(exc)
        return "NewConnectionError" in text or "Connection refused" in text
    return False


class Producer(threading.Thread):
    def __init__(self, index, keys, key_partition, cluster, router, history, topic, stop, rate_per_s):
        super().__init__(name=f"producer-{index}", daemon=True)
        self.index = index
        self.keys = list(keys)
        self.key_partition = key_partition
        self.cluster = cluster
        self.router = router
        self.history = history
        self.topic = topic
        self.stop_event = stop
        self.interval_s = 1.0 / rate_per_s if rate_per_s > 0 else 0.0
        self.seq = {k: 0 for k in self.keys}
        self.session = requests.Session()

    def run(self):
        i = 0
        next_at = time.monotonic()
        while not self.stop_event.is_set():
            key = self.keys[i % len(self.keys)]
            i += 1
            self.produce(key)
            if self.interval_s:
                next_at += self.interval_s
                delay = next_at - time.monotonic()
                if delay > 0:
                    self.stop_event.wait(delay)
                else:
                    next_at = time.monotonic()

    def produce(self, key):
        p = self.key_partition[key]
        seq = self.seq[key]
        self.seq[key] += 1
        value = f"{key}:{seq}"
        node = self.router.pick(p)
        w = {"value": value, "key": key, "partition": p, "seq": seq, "status": "unknown", "offset": None,
             "t_invoke": self.history.now(), "t_complete": None, "node": node.node_id, "error": None}
        body = {"partition_id": p, "key": {"type": "STRING", "data": key}, "value": {"type": "STRING", "data": value}}
        try:
            r = self.session.post(self.cluster.v3(node, f"/topics/{self.topic}/records") + "?acks=all", json=body,
                                  timeout=PRODUCE_TIMEOUT_S)
            self._classify(w, r)
        except requests.RequestException as e:
            w["status"] = "fail" if _definite_failure(e) else "unknown"
            w["error"] = type(e).__name__
        except RuntimeError as e:          # no node answers /v3/clusters (cluster id unknown yet)
            w["status"] = "fail"
            w["error"] = str(e)
        w["t_complete"] = self.history.now()
        if w["status"] != "ok":
            self.router.refresh()     # the leader may have moved
        self.history.add("writes", w)

    @staticmethod
    def _classify(w, r):
        try:
            report = r.json()
        except ValueError:
            report = {}
        code = report.get("error_code", r.status_code) if isinstance(report, dict) else r.status_code
        if r.status_code == 200 and code == 200 and isinstance(report.get("offset"), int):
            w["status"] = "ok"
            w["offset"] = report["offset"]
            return
        status = r.status_code if r.status_code != 200 else (code // 100 if code >= 1000 else code)
        message = report.get("message", r.text[:200]) if isinstance(report, dict) else r.text[:200]
        w["error"] = f"{r.status_code}/{code}: {message}"
        if 400 <= status < 500 and status != 408:
            w["status"] = "fail"
        elif NOTHING_WRITTEN in message:
            # NOT_ENOUGH_REPLICAS refuses before appending, and says so (http-api/openapi.yaml)
            w["status"] = "fail"
        else:
            w["status"] = "unknown"


class Reader(threading.Thread):
    """Tails one partition from offset 0; stops when told, or once past `target` when set."""

    def __init__(self, p, cluster, router, history, topic, stop):
        super().__init__(name=f"reader-{p}", daemon=True)
        self.p = p
        self.cluster = cluster
        self.router = router
        self.history = history
        self.topic = topic
        self.stop_event = stop
        self.next_offset = 0
        self.target = None
        self.session = requests.Session()

    def done(self):
        return self.target is not None and self.next_offset >= self.target

    def run(self):
        while not self.stop_event.is_set() and not self.done():
            node = self.router.pick(self.p)
            url = f"{node.url}/topics/{self.topic}/partitions/{self.p}/records"
            try:
                r = self.session.get(url, params={"offset": self.next_offset, "timeout": FETCH_WAIT_MS,
                                                  "max_bytes": FETCH_MAX_BYTES},
                                     headers={"Accept": V2_BINARY}, timeout=FETCH_TIMEOUT_S)
            except requests.RequestException:
                self.router.refresh()
                self.stop_event.wait(BACKOFF_S)
                continue
            if r.status_code == 200:
                self._take(r.json(), node)
                continue
            body = r.text[:300]
            if r.status_code == 422 and ("42202" in body or "out of range" in body):
                self._out_of_range(node, body)
            else:
                self.router.refresh()
            self.stop_event.wait(BACKOFF_S)

    def _take(self, records, node):
        t = self.history.now()
        for rec in records:
            offset = rec["offset"]
            if offset > self.next_offset:
                self.history.event("reader-skipped", partition=self.p, node=node.node_id,
                                   expected=self.next_offset, got=offset)
            value = base64.b64decode(rec["value"]).decode(errors="replace") if rec.get("value") is not None else None
            key = base64.b64decode(rec["key"]).decode(errors="replace") if rec.get("key") is not None else None
            self.history.add("reads", {"partition": self.p, "offset": offset, "value": value, "key": key,
                                       "node": node.node_id, "t": round(t, 3)})
            self.next_offset = max(self.next_offset, offset + 1)

    def _out_of_range(self, node, body):
        """The broker's log ends below where this reader is: go back to its high watermark.

        Re-reading offsets already read is harmless when they hold the same values; when the log
        lost records and took new ones at those offsets, the checker sees two values at one offset.
        """
        parts = self.cluster.partitions(node, self.topic, timeout_s=1.0) or {}
        pj = parts.get(self.p)
        hw = pj.get("high_watermark") if pj else None
        self.history.event("reader-out-of-range", partition=self.p, node=node.node_id, offset=self.next_offset,
                           high_watermark=hw, answer=body[:200])
        if hw is not None and hw < self.next_offset and self.cluster.leader_id(pj) == node.node_id:
            self.next_offset = hw
        self.router.refresh()


class NodePoller(threading.Thread):
    """A thread that asks one broker about the topic until `stop` is set (subclasses: run)."""

    def __init__(self, kind, node, cluster, history, topic, stop):
        super().__init__(name=f"{kind}-poller-{node.node_id}", daemon=True)
        self.node = node
        self.cluster = cluster
        self.history = history
        self.topic = topic
        self.stop_event = stop
        self.session = requests.Session()


class EndOffsetPoller(NodePoller):
    """Asks one broker, without pause, for the end of every partition: the v2 offsets route
    (GET /topics/{t}/partitions/{p}/offsets: the high watermark as the partition's leader answers
    ListOffsets latest, forwarded there from a broker that does not lead it). What a client is
    told there must never be at or below an offset already acknowledged (KAFKA-2334)."""

    def __init__(self, node, cluster, history, topic, stop):
        super().__init__("end", node, cluster, history, topic, stop)

    def run(self):
        while not self.stop_event.is_set():
            if not self.node.running() or self.node.paused or self.node.retired:
                self.stop_event.wait(POLL_INTERVAL_S)
                continue
            for p in self.history.partitions:
                self.ask(p)

    def ask(self, p):
        t_send = self.history.now()
        try:
            r = self.session.get(f"{self.node.url}/topics/{self.topic}/partitions/{p}/offsets",
                                 headers={"Accept": "application/vnd.kafka.v2+json"}, timeout=POLL_TIMEOUT_S)
        except requests.RequestException:
            self.stop_event.wait(BACKOFF_S)
            return
        t_recv = self.history.now()
        if r.status_code != 200:
            self.history.add("ends", {"partition": p, "node": self.node.node_id, "end_offset": None,
                                      "status": r.status_code, "error": r.text[:120], "t_send": round(t_send, 4),
                                      "t_recv": round(t_recv, 4)})
            self.stop_event.wait(BACKOFF_S)
            return
        try:
            end = r.json().get("end_offset")
        except ValueError:
            end = None
        self.history.add("ends", {"partition": p, "node": self.node.node_id, "end_offset": end, "status": 200,
                                  "t_send": round(t_send, 4), "t_recv": round(t_recv, 4)})


class KafkaFetchPoller(NodePoller):
    """Asks one broker's kafka:// listener, without pause, for every partition from offset 0 with
    a raw Fetch v4 (one record's worth of bytes; a broker that does not lead forwards it). Each
    answer's high watermark goes into history["fetch_ends"] (None with the error code when refused)."""

    FETCH_BYTES = 1024

    def __init__(self, node, cluster, history, topic, stop):
        super().__init__("fetch", node, cluster, history, topic, stop)
        self.correlation_id = 0

    def run(self):
        while not self.stop_event.is_set():
            if not self.node.running() or self.node.paused or self.node.retired:
                self.stop_event.wait(POLL_INTERVAL_S)
                continue
            for p in self.history.partitions:
                self.ask(p)

    def ask(self, p):
        t_send = self.history.now()
        self.correlation_id += 1
        body = kafka_wire.fetch_v4(self.topic, p, 0, max_bytes=self.FETCH_BYTES, partition_max_bytes=self.FETCH_BYTES)
        try:
            with kafka_wire.connect(self.node.bootstrap, timeout=POLL_TIMEOUT_S) as sock:
                _, answer = kafka_wire.exchange(sock, kafka_wire.API_FETCH, 4, self.correlation_id, body)
            [(_t, _p, error, hw, _records)] = kafka_wire.parse_fetch_v4(answer)
        except (OSError, ConnectionError, ValueError, TypeError):
            self.stop_event.wait(BACKOFF_S)
            return
        t_recv = self.history.now()
        self.history.add("fetch_ends", {"partition": p, "node": self.node.node_id,
                                        "high_watermark": hw if error == 0 else None, "error": error,
                                        "t_send": round(t_send, 4), "t_recv": round(t_recv, 4)})
        if error != 0:
            self.stop_event.wait(BACKOFF_S)


class HighWatermarkPoller(NodePoller):
    """Asks one broker, a few times a second, how it sees the topic's partitions."""

    def __init__(self, node, cluster, history, topic, stop):
        super().__init__("hw", node, cluster, history, topic, stop)

    def run(self):
        while not self.stop_event.wait(POLL_INTERVAL_S):
            if not self.node.running() or self.node.paused or self.node.retired:
                continue
            incarnation = self.node.incarnation
            t_send = self.history.now()
            parts = self.cluster.partitions(self.node, self.topic, timeout_s=POLL_TIMEOUT_S)
            t_recv = self.history.now()
            if not parts or self.node.incarnation != incarnation:
                continue
            for p, pj in parts.items():
                self.history.add("hw", {"partition": p, "node": self.node.node_id, "incarnation": incarnation,
                                        "leader": self.cluster.leader_id(pj), "leader_epoch": pj.get("leader_epoch"),
                                        "high_watermark": pj.get("high_watermark"),
                                        "log_end_offset": pj.get("log_end_offset"),
                                        "established": pj.get("high_watermark_established"),
                                        "t_send": round(t_send, 4), "t_recv": round(t_recv, 4)})
