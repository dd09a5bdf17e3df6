"""The tests' one free-port helper (tests/ports.py)."""

from __future__ import annotations

import random
import socket

import pytest

from tests import ports
from tests.ports import LOWEST, ephemeral_start, free_port


def test_a_free_port_refuses_connections_then_can_be_listened_on() -> None:
    port = free_port()
    assert LOWEST <= port < ephemeral_start()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_no_port_is_handed_out_twice() -> None:
    handed = [free_port() for _ in range(300)]
    assert len(set(handed)) == len(handed)


def bound_below_the_ephemeral_range() -> socket.socket:
    """A socket bound to some port of this process's stripe below the ephemeral range, not dealt
    yet (as another program's would be)."""
    while True:
        port = random.randrange(LOWEST + ports.STRIPES, ephemeral_start())
        port = ports.in_stripe(port, ports.worker_stripe())
        if port in ports._handed_out:
            continue
        held = socket.socket()
        try:
            held.bind(("127.0.0.1", port))
        except OSError:
            held.close()
        else:
            return held


def test_a_port_in_use_or_already_handed_out_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    handed = free_port()
    sample = random.sample
    with bound_below_the_ephemeral_range() as held:
        held.listen()
        busy = held.getsockname()[1]
        pools: list[list[int]] = []

        def busy_first(pool: list[int], count: int) -> list[int]:
            # The draw proposes the busy port first, then the stripe's others at random.
            pools.append(pool)
            return [busy, *sample([p for p in pool if p != busy], count - 1)]

        monkeypatch.setattr(random, "sample", busy_first)
        port = free_port()
    [pool] = pools
    assert handed not in pool  # a port dealt before is not proposed again
    assert busy in pool
    assert port not in (busy, handed)
    assert port % ports.STRIPES == ports.worker_stripe()


def test_without_room_below_the_ephemeral_range_it_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ports, "ephemeral_start", lambda: LOWEST + 10)
    with pytest.raises(RuntimeError, match="no room below the ephemeral range"):
        free_port()


def test_parallel_test_processes_draw_from_their_own_stripe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for worker in ("gw0", "gw1", "gw7"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        stripe = int(worker[2:])
        drawn = [free_port() for _ in range(20)]
        assert all(port % ports.STRIPES == stripe for port in drawn), drawn


def test_a_worker_that_dealt_its_whole_stripe_deals_it_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw5")
    top = ports.ephemeral_start()
    stripe = range(ports.in_stripe(ports.LOWEST + ports.STRIPES, 5), top, ports.STRIPES)
    dealt = set(stripe)
    monkeypatch.setattr(ports, "_handed_out", set(dealt))
    again = free_port()  # every port of the stripe was dealt: before, 100 tries then an error
    assert again in dealt
    assert again % ports.STRIPES == 5
