"""The one way tests pick a loopback port by number: for a server in another process that must be
told its port up front, or for a port where nothing listens (a refused connection).

A server in this process binds port 0 instead and reports what it got.
"""

from __future__ import annotations

import os
import random
import socket
import threading
from pathlib import Path

LOWEST = 10_000
"""The lowest port handed out: above the well-known and most registered services' ports."""
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
TRIES = 100
STRIPES = 64
"""Ports are dealt in stripes: a parallel test process takes only the ports of its own stripe."""

_handed_out: set[int] = set()
_lock = threading.Lock()


def ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (32768 where it cannot be read)."""
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A port on 127.0.0.1 where nothing listens now, not handed out before in this process.

    The usual «bind port 0, close, use the number» races: the kernel hands the same ephemeral
    port to the next bind(0) or outgoing connection, here or in a test run beside this one.
    This port is picked at random below the ephemeral range, where the kernel never hands out
    ports on its own; a bind checks that nothing holds it, and this process reuses none until it
    has dealt every port of its stripe.
    Under pytest-xdist each worker draws from its own stripe (`port % STRIPES`), so two workers
    never hand out the same port between its check and its use.
    """
    top = ephemeral_start()
    if top - LOWEST < TRIES * STRIPES:
        raise RuntimeError(f"no room below the ephemeral range (it starts at {top})")
    stripe = worker_stripe()
    with _lock:
        stripe_ports = range(in_stripe(LOWEST + STRIPES, stripe), top, STRIPES)
        unused = [port for port in stripe_ports if port not in _handed_out]
        # A worker that has dealt its whole stripe (about 350 ports) deals it again: the tests
        # that had those ports have ended, and the bind below still refuses a port in use.
        pool = unused or list(stripe_ports)
        for port in random.sample(pool, min(TRIES, len(pool))):
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _handed_out.add(port)
            return port
    raise RuntimeError(f"no free port on 127.0.0.1 in {TRIES} tries")


def in_stripe(port: int, stripe: int) -> int:
    """The highest port of `stripe` at or below `port`."""
    return port - (port - stripe) % STRIPES


def worker_stripe() -> int:
    """This test process's stripe: its pytest-xdist worker number (`gw3` → 3), 0 when serial."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(worker.removeprefix("gw") or 0) % STRIPES
