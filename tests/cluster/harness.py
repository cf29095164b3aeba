"""N real `ringlog serve` processes on this machine, and the network between them.

Two networks:

- `NetnsNetwork` (the default when it works): each node runs in its own network namespace
  (`ip netns`), with one veth pair into a bridge the harness creates. Node i has the address
  10.A.B.i on a /24 chosen per run; the harness itself (the clients: producers, readers, the
  nemesis' HTTP calls) stays in the host namespace and reaches every node through the bridge
  address 10.A.B.254. A partition is an nftables rule inside the receiving node's namespace
  (`table inet ringlog_nemesis`, chain `input`: `ip saddr {...} drop`), so it cuts node-to-node
  traffic only, one direction at a time (a symmetric cut is two directed ones), while clients keep
  reaching every node (a deposed leader still hears producers: the interesting case). This kernel
  has no tc netem/gact; nftables needs only Debian's `nftables` package.
- `LoopbackNetwork` (fallback when namespaces are refused: not root, no `ip netns`, no nft):
  every node on 127.0.0.1 with its own ports. It cannot partition; the nemesis then schedules
  process faults only, and the run says so in its first lines.

Everything the harness creates is named rlj<pid>... and removed on exit, on failure and on
Ctrl-C (`teardown`, registered with atexit); `cleanup_stale()` removes what a run killed with
SIGKILL left behind (names whose pid is no longer alive).
"""
import atexit
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import requests

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))   # tests/ports.py, shared with tests/integration
from ports import free_port  # noqa: E402

# Generous deadlines: a loaded 2-core machine running 3 brokers next to the harness.
NODE_START_DEADLINE_S = 60.0
NODE_STOP_DEADLINE_S = 30.0
CLUSTER_READY_DEADLINE_S = 90.0
# Ports inside each namespace (every node has its own address there, so they can be the same).
NETNS_HTTP_PORT = 8082
NETNS_CLUSTER_PORT = 9093
NETNS_KAFKA_PORT = 9092
NFT_TABLE = "ringlog_nemesis"
NAME_PREFIX = "rlj"


def _run(argv, input_text=None, check=True):
    done = subprocess.run(argv, input=input_text, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip() or done.stdout.strip()}")
    return done


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


# free_port: tests/ports.py (ports 20000-32000, below the ephemeral range; see there why).


class LoopbackNetwork:
    """All nodes on 127.0.0.1, own ports; no partitions."""

    kind = "loopback"
    supports_partitions = False

    def __init__(self, size):
        self.size = size
        self._ports = {i: (free_port(), free_port(), free_port()) for i in range(1, size + 1)}

    def address(self, node_id):
        return "127.0.0.1"

    def http_port(self, node_id):
        return self._ports[node_id][0]

    def cluster_port(self, node_id):
        return self._ports[node_id][1]

    def kafka_port(self, node_id):
        return self._ports[node_id][2]

    def wrap(self, node_id, argv):
        return argv

    def set_blocked(self, edges):
        if edges:
            raise RuntimeError("the loopback network cannot partition")

    def teardown(self):
        pass

    def describe(self):
        return "loopback (127.0.0.1, own ports): no partitions possible, process faults only"


class NetnsNetwork:
    """One network namespace per node, veth pairs into one bridge, nftables drop rules."""

    kind = "netns"
    supports_partitions = True

    @staticmethod
    def available():
        """(True, "") when namespaces, veth, bridges and nft work here, else (False, why)."""
        if os.geteuid() != 0:
            return False, "not root"
        for tool in ("ip", "nft"):
            if shutil.which(tool) is None:
                return False, f"`{tool}` not found (Debian packages iproute2, nftables)"
        probe = f"{NAME_PREFIX}{os.getpid()}probe"
        try:
            _run(["ip", "netns", "add", probe])
            try:
                _run(["ip", "netns", "exec", probe, "nft", "add", "table", "inet", NFT_TABLE])
            finally:
                _run(["ip", "netns", "del", probe], check=False)
        except (RuntimeError, OSError) as e:
            return False, str(e)
        return True, ""

    @staticmethod
    def cleanup_stale():
        """Removes namespaces and bridges of earlier runs whose process is gone."""
        removed = []
        listed = _run(["ip", "netns", "list"], check=False).stdout
        for line in listed.splitlines():
            name = line.split()[0] if line.split() else ""
            m = re.fullmatch(NAME_PREFIX + r"(\d+)n\d+", name)
            if m and not _pid_alive(int(m.group(1))):
                _run(["ip", "netns", "del", name], check=False)
                removed.append(name)
        links = _run(["ip", "-o", "link", "show", "type", "bridge"], check=False).stdout
        for line in links.splitlines():
            parts = line.split(":")
            if len(parts) < 2:
                continue
            name = parts[1].strip().split("@")[0]
            m = re.fullmatch(NAME_PREFIX + r"(\d+)b", name)
            if m and not _pid_alive(int(m.group(1))):
                _run(["ip", "link", "del", name], check=False)
                removed.append(name)
        return removed

    def __init__(self, size):
        if size > 250:
            raise ValueError("at most 250 nodes on one /24")
        self.size = size
        self.tag = f"{NAME_PREFIX}{os.getpid()}"
        self.bridge = f"{self.tag}b"
        self._created_ns = []
        self._bridge_made = False
        self._blocked = set()
        self.subnet = self._choose_subnet()
        try:
            self._build()
        except Exception:
            self.teardown()
            raise

    def _choose_subnet(self):
        """A 10.A.B.0/24 no interface of this host uses, derived from the pid (parallel runs differ)."""
        used = _run(["ip", "-o", "-4", "addr", "show"], check=False).stdout
        pid = os.getpid()
        for attempt in range(256):
            a = 200 + ((pid >> 8) + attempt) % 50
            b = (pid + attempt) % 256
            prefix = f"10.{a}.{b}."
            if prefix not in used:
                return prefix
        raise RuntimeError("no free 10.x.y.0/24 subnet for the test bridge")

    def namespace(self, node_id):
        return f"{self.tag}n{node_id}"

    def address(self, node_id):
        return f"{self.subnet}{node_id}"

    def http_port(self, node_id):
        return NETNS_HTTP_PORT

    def cluster_port(self, node_id):
        return NETNS_CLUSTER_PORT

    def kafka_port(self, node_id):
        return NETNS_KAFKA_PORT

    def _build(self):
        _run(["ip", "link", "add", self.bridge, "type", "bridge"])
        self._bridge_made = True
        _run(["ip", "addr", "add", f"{self.subnet}254/24", "dev", self.bridge])
        _run(["ip", "link", "set", self.bridge, "up"])
        for i in range(1, self.size + 1):
            ns = self.namespace(i)
            veth = f"{self.tag}v{i}"
            _run(["ip", "netns", "add", ns])
            self._created_ns.append(ns)
            _run(["ip", "link", "del", veth], check=False)   # a pair a previous schedule's teardown left
            _run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns])
            _run(["ip", "link", "set", veth, "master", self.bridge, "up"])
            _run(["ip", "-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0"])
            _run(["ip", "-n", ns, "link", "set", "eth0", "up"])
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
            _run(["ip", "netns", "exec", ns, "nft", "-f", "-"], input_text=(
                f"table inet {NFT_TABLE} {{\n"
                f"  chain input {{ type filter hook input priority 0; policy accept; }}\n"
                f"}}\n"))

    def wrap(self, node_id, argv):
        # `ip netns exec` enters the namespace and execs argv: the pid is the broker's own.
        return ["ip", "netns", "exec", self.namespace(node_id), *argv]

    def set_blocked(self, edges):
        """Makes exactly `edges` (a set of (from_node, to_node)) drop; every other pair flows.

        A directed edge (a, b) drops packets from a's address arriving at b: a one-way cut.
        """
        edges = set(edges)
        for dst in range(1, self.size + 1):
            sources = sorted(a for (a, b) in edges if b == dst)
            before = sorted(a for (a, b) in self._blocked if b == dst)
            if sources == before:
                continue
            script = f"flush chain inet {NFT_TABLE} input\n"
            if sources:
                addrs = ", ".join(self.address(a) for a in sources)
                script += f"add rule inet {NFT_TABLE} input ip saddr {{ {addrs} }} drop\n"
            _run(["ip", "netns", "exec", self.namespace(dst), "nft", "-f", "-"], input_text=script)
        self._blocked = edges

    def rules(self):
        """The nft rules now in force, per node (for the run log)."""
        out = {}
        for i in range(1, self.size + 1):
            out[i] = _run(["ip", "netns", "exec", self.namespace(i), "nft", "list", "chain", "inet", NFT_TABLE,
                           "input"], check=False).stdout
        return out

    def teardown(self):
        # The host end first: deleting a namespace frees its veth only once no process holds the
        # namespace any more (a broker killed a moment ago may still), and the next schedule of
        # this run reuses the same names.
        for i in range(1, self.size + 1):
            _run(["ip", "link", "del", f"{self.tag}v{i}"], check=False)
        for ns in self._created_ns:
            _run(["ip", "netns", "del", ns], check=False)
        self._created_ns = []
        if self._bridge_made:
            _run(["ip", "link", "del", self.bridge], check=False)
            self._bridge_made = False

    def describe(self):
        return (f"netns: {self.size} namespaces {self.namespace(1)}..{self.namespace(self.size)}, "
                f"nodes at {self.subnet}1..{self.subnet}{self.size}, bridge {self.bridge} "
                f"({self.subnet}254), partitions by nftables drop rules")


def make_network(kind, size):
    """kind: "netns", "loopback" or "auto" (netns when it works here). Returns (network, note)."""
    if kind in ("netns", "auto"):
        ok, why = NetnsNetwork.available()
        if ok:
            NetnsNetwork.cleanup_stale()
            return NetnsNetwork(size), ""
        if kind == "netns":
            raise RuntimeError(f"network namespaces are not usable here: {why}")
        return LoopbackNetwork(size), f"network namespaces not usable ({why}): loopback, no partitions"
    if kind == "loopback":
        return LoopbackNetwork(size), ""
    raise ValueError(f"unknown network kind {kind!r}")


class Node:
    """One `ringlog serve` process; restartable. `incarnation` counts its starts (1 = first)."""

    def __init__(self, node_id, network, binary, run_dir, voters, extra_sets):
        self.node_id = node_id
        self.network = network
        self.binary = str(binary)
        self.data_dir = pathlib.Path(run_dir) / f"node{node_id}" / "data"
        self.log_path = pathlib.Path(run_dir) / f"node{node_id}" / "ringlog.log"
        self.voters = voters
        self.extra_sets = list(extra_sets)
        self.proc = None
        self.paused = False
        self.retired = False     # decommissioned (grow_shrink.py): pollers leave it alone
        self.incarnation = 0
        self._log = None
        self._lock = threading.Lock()

    @property
    def host(self):
        return self.network.address(self.node_id)

    @property
    def url(self):
        return f"http://{self.host}:{self.network.http_port(self.node_id)}"

    @property
    def bootstrap(self):
        """The node's kafka:// listener as host:port (the end pollers' raw Fetch)."""
        return f"{self.host}:{self.network.kafka_port(self.node_id)}"

    def argv(self):
        listeners = (f"http://{self.host}:{self.network.http_port(self.node_id)},"
                     f"kafka://{self.host}:{self.network.kafka_port(self.node_id)},"
                     f"cluster://{self.host}:{self.network.cluster_port(self.node_id)}")
        args = [self.binary, "serve",
                "--set", f"node.id={self.node_id}",
                "--set", f"controller.quorum.voters={self.voters}",
                "--set", f"listeners={listeners}",
                "--set", f"log.dirs={self.data_dir}"]
        for s in self.extra_sets:
            args += ["--set", s]
        return args

    def start(self):
        with self._lock:
            assert self.proc is None, f"node {self.node_id} already running"
            self.data_dir.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "ab")
            self._log.write(f"\n==== harness: start incarnation {self.incarnation + 1} at {time.time():.3f}\n".encode())
            self._log.flush()
            # Own session: Ctrl-C in the terminal reaches the harness, which stops the nodes itself.
            self.proc = subprocess.Popen(self.network.wrap(self.node_id, self.argv()), stdout=self._log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
            self.paused = False
            self.incarnation += 1

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def exited(self):
        """The exit status when the process ended by itself (not by the harness), else None."""
        return self.proc.poll() if self.proc is not None else None

    def _reap(self):
        self.proc.wait()
        self.proc = None
        self.paused = False
        if self._log:
            self._log.close()
            self._log = None

    def kill(self):
        with self._lock:
            if self.proc is None:
                return
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGKILL)
            self._reap()

    def stop(self, deadline_s=NODE_STOP_DEADLINE_S):
        """SIGTERM (a controlled shutdown); SIGKILL after the deadline. Returns the exit status."""
        with self._lock:
            if self.proc is None:
                return None
            if self.proc.poll() is None:
                if self.paused:
                    self.proc.send_signal(signal.SIGCONT)
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=deadline_s)
                except subprocess.TimeoutExpired:
                    self.proc.send_signal(signal.SIGKILL)
            code = self.proc.wait()
            self._reap()
            return code

    def pause(self):
        with self._lock:
            if self.proc is not None and self.proc.poll() is None and not self.paused:
                self.proc.send_signal(signal.SIGSTOP)
                self.paused = True

    def resume(self):
        with self._lock:
            if self.proc is not None and self.paused:
                if self.proc.poll() is None:
                    self.proc.send_signal(signal.SIGCONT)
                self.paused = False

    def healthy(self):
        if not self.running():
            return False
        try:
            return requests.get(self.url + "/v1/health", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    def log_tail(self, chars=3000):
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def wait_until(predicate, deadline_s, what, interval_s=0.1):
    """Polls predicate() until truthy; raises TimeoutError naming `what` after the deadline."""
    end = time.monotonic() + deadline_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= end:
            raise TimeoutError(f"timed out after {deadline_s:.0f}s waiting for {what}")
        time.sleep(interval_s)


class Cluster:
    """`size` nodes, each a broker and a controller voter (KRaft combined mode)."""

    def __init__(self, binary, size, run_dir, network, extra_sets=()):
        self.binary = binary
        self.size = size
        self.run_dir = pathlib.Path(run_dir)
        self.network = network
        voters = ",".join(f"{i}@{network.address(i)}:{network.cluster_port(i)}" for i in range(1, size + 1))
        self.voters = set(range(1, size + 1))
        self.voters_spec = voters
        self.extra_sets = list(extra_sets)
        # Replaced, never changed in place: client and poller threads iterate it while a plan adds
        # or retires a broker (grow_shrink.py).
        self.nodes = {i: Node(i, network, binary, self.run_dir, voters, extra_sets) for i in range(1, size + 1)}
        self.retired = {}   # decommissioned brokers: out of `nodes`, still torn down and read from disk
        self._cluster_id = None
        self._torn_down = False
        atexit.register(self.teardown)

    def node(self, node_id):
        return self.nodes[node_id] if node_id in self.nodes else self.retired[node_id]

    def add_broker(self, node_id, deadline_s):
        """Starts node `node_id` with process.roles=broker and the voters' controller.quorum.voters
        (a raft observer, as tests/integration/test_add_broker.py does); returns it once it answers
        /v1/health and every node lists it unfenced. The network must have room for it (its
        namespace or ports were made with the others)."""
        if node_id in self.nodes or node_id in self.retired:
            raise ValueError(f"node {node_id} exists already")
        node = Node(node_id, self.network, self.binary, self.run_dir, self.voters_spec,
                    [*self.extra_sets, "process.roles=broker"])
        node.start()
        everyone = [*self.nodes.values(), node]

        def joined():
            if node.exited() is not None:
                raise RuntimeError(f"broker {node_id} exited with {node.exited()}:\n{node.log_tail()}")
            if not node.healthy():
                return False
            for n in everyone:
                if not n.running() or n.paused:
                    continue
                b = self.brokers(n)
                if b is None or b.get(node_id, {}).get("state") != "unfenced":
                    return False
            return True
        try:
            wait_until(joined, deadline_s, f"broker {node_id} healthy and unfenced on every node", 0.25)
        finally:
            self.nodes = {**self.nodes, node_id: node}
        return node

    def retire(self, node_id):
        """Takes a decommissioned broker out of `nodes` (clients and pollers stop using it); its
        process is left as it is (the caller stops it)."""
        node = self.nodes[node_id]
        node.retired = True
        self.nodes = {k: v for k, v in self.nodes.items() if k != node_id}
        self.retired = {**self.retired, node_id: node}
        return node

    def all_nodes(self):
        """Every node this run started, retired ones included: {id: Node}."""
        return {**self.retired, **self.nodes}

    def brokers(self, node):
        """{broker_id: broker json} as `node` lists them, or None when it does not answer."""
        try:
            r = requests.get(self.v3(node, "/brokers"), timeout=2)
            if r.status_code != 200:
                return None
            return {b["broker_id"]: b for b in r.json()["data"]}
        except (requests.RequestException, ValueError, KeyError, TypeError):
            return None

    def reassignments(self, node, timeout_s=2.0):
        """[reassignment json] under way as `node`'s image shows them, or None."""
        try:
            r = requests.get(self.v3(node, "/topics/-/partitions/-/reassignment"), timeout=timeout_s)
            if r.status_code != 200:
                return None
            return r.json()["data"]
        except (requests.RequestException, ValueError, KeyError):
            return None

    def live(self):
        return [n for n in self.nodes.values() if n.running() and not n.paused]

    def start(self):
        for n in self.nodes.values():
            n.start()
        self.wait_ready(CLUSTER_READY_DEADLINE_S)
        return self

    def _check_exits(self):
        for n in self.nodes.values():
            code = n.exited()
            if code is not None:
                raise RuntimeError(f"node {n.node_id} exited with {code}:\n{n.log_tail()}")

    def cluster_id(self):
        if self._cluster_id is None:
            for n in self.live():
                try:
                    r = requests.get(n.url + "/v3/clusters", timeout=2)
                    self._cluster_id = r.json()["data"][0]["cluster_id"]
                    break
                except (requests.RequestException, ValueError, KeyError, IndexError):
                    continue
        if self._cluster_id is None:
            raise RuntimeError("no node answers /v3/clusters")
        return self._cluster_id

    def v3(self, node, path=""):
        return f"{node.url}/v3/clusters/{self.cluster_id()}{path}"

    def controller(self):
        """The quorum leader every live node names, or None."""
        seen = set()
        for n in self.live():
            try:
                seen.add(requests.get(self.v3(n, "/quorum"), timeout=2).json().get("leader_id"))
            except (requests.RequestException, ValueError):
                return None
        return seen.pop() if len(seen) == 1 and None not in seen else None

    def brokers_unfenced(self, node):
        try:
            data = requests.get(self.v3(node, "/brokers"), timeout=2).json()["data"]
        except (requests.RequestException, ValueError, KeyError):
            return False
        return len(data) == self.size and all(b.get("state") == "unfenced" for b in data)

    def wait_ready(self, deadline_s):
        def ready():
            self._check_exits()
            if not all(n.healthy() for n in self.nodes.values()):
                return False
            if self.controller() is None:
                return False
            return all(self.brokers_unfenced(n) for n in self.nodes.values())
        wait_until(ready, deadline_s, "every node healthy, one controller, every broker unfenced", 0.25)

    def create_topic(self, name, partitions, replication_factor, configs, deadline_s=60.0):
        body = {"topic_name": name, "partitions_count": partitions, "replication_factor": replication_factor,
                "configs": [{"name": k, "value": str(v)} for k, v in configs.items()]}
        last = None

        def created():
            nonlocal last
            for n in self.live():
                try:
                    r = requests.post(self.v3(n, "/topics"), json=body, timeout=40)
                except requests.RequestException as e:
                    last = str(e)
                    continue
                if r.status_code == 201:
                    return True
                last = f"{r.status_code} {r.text}"
                if r.status_code not in (500, 503, 408):
                    raise RuntimeError(f"creating topic {name}: {last}")
            return False
        wait_until(created, deadline_s, f"topic {name} created (last answer: {last})", 0.5)

        def all_led():
            for n in self.nodes.values():
                parts = self.partitions(n, name)
                if parts is None or len(parts) != partitions or any(p["leader"] is None for p in parts.values()):
                    return False
            return True
        wait_until(all_led, deadline_s, f"every partition of {name} led, on every node")

    def partitions(self, node, topic, timeout_s=2.0):
        """{partition_id: partition json} as `node` describes them, or None when it does not answer."""
        try:
            r = requests.get(self.v3(node, f"/topics/{topic}/partitions"), timeout=timeout_s)
        except requests.RequestException:
            return None
        if r.status_code != 200:
            return None
        try:
            return {p["partition_id"]: p for p in r.json()["data"]}
        except (ValueError, KeyError):
            return None

    def own_log_ends(self, node, topic, timeout_s=2.0):
        """{partition_id: log end offset of `node`'s own replica} from its /metrics (per node; the
        partitions route shows the leader's figures), or None when it does not answer."""
        prefix = f'ringlog_partition_log_end_offset{{topic="{topic}",partition="'
        try:
            r = requests.get(f"{node.url}/metrics", timeout=timeout_s)
        except requests.RequestException:
            return None
        if r.status_code != 200:
            return None
        out = {}
        for line in r.text.splitlines():
            if line.startswith(prefix):
                p, _, value = line[len(prefix):].partition('"} ')
                out[int(p)] = int(float(value))
        return out

    def replicas(self, node, topic, partition, timeout_s=2.0):
        """[{broker_id, is_leader, is_in_sync}] as `node` describes them, or None."""
        try:
            r = requests.get(self.v3(node, f"/topics/{topic}/partitions/{partition}/replicas"), timeout=timeout_s)
            if r.status_code != 200:
                return None
            return r.json()["data"]
        except (requests.RequestException, ValueError, KeyError):
            return None

    @staticmethod
    def leader_id(partition_json):
        leader = partition_json.get("leader")
        if not leader:
            return None
        return int(leader["related"].rsplit("/", 1)[1])

    def teardown(self):
        """Stops every node (SIGKILL) and removes the network. Safe to call twice."""
        if self._torn_down:
            return
        self._torn_down = True
        try:
            self.network.set_blocked(set()) if self.network.supports_partitions else None
        except Exception:
            pass
        for n in self.all_nodes().values():
            try:
                n.resume()
                n.kill()
            except Exception:
                pass
        self.network.teardown()
