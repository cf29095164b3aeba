"""Loopback ports for the servers a test starts: shared by tests/integration (conftest.py) and
tests/cluster (harness.py), so both follow one rule.

Ports come from below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768-60999 by
default): a port taken from that range (bind to port 0) is released before the server binds it,
and meanwhile any outgoing connection on the machine (a client, a broker's connection to a peer)
may get it as its local port; the server's bind then succeeds (SO_REUSEADDR) and its listen()
fails with "Address already in use" (seen in CI). Ports handed out once are not handed out again
by this process.
"""
import random
import socket

PORTS_LOW, PORTS_HIGH = 20000, 32000   # inclusive; capped below the ephemeral range's start
_ports_given = set()


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port():
    """A port in [PORTS_LOW, min(PORTS_HIGH, ephemeral start - 1)] that 127.0.0.1 can bind now and
    that this process has not handed out before."""
    high = min(PORTS_HIGH, _ephemeral_low() - 1)
    for _ in range(2000):
        port = random.randint(PORTS_LOW, high)
        if port in _ports_given:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _ports_given.add(port)
        return port
    raise AssertionError(f"no free port in {PORTS_LOW}-{high}")
