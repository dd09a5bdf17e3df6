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
    """A socket bound to some port below the ephemeral range (as another program's would be)."""
    while True:
        held = socket.socket()
        try:
            port = random.randrange(LOWEST + ports.STRIPES, ephemeral_start())
            held.bind(("127.0.0.1", ports.in_stripe(port, ports.worker_stripe())))
        except OSError:
            held.close()
        else:
            return held


def test_a_port_in_use_or_already_handed_out_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    handed = free_port()
    draw = random.randrange
    with bound_below_the_ephemeral_range() as held:
        held.listen()
        busy = held.getsockname()[1]
        # The draw proposes the busy port, the handed-out one, the busy one again, then at random.
        picks = iter([busy, handed, busy])
        proposed: list[int] = []

        def scripted(low: int, high: int) -> int:
            proposed.append(next(picks, None) or draw(low, high))
            return proposed[-1]

        monkeypatch.setattr(random, "randrange", scripted)
        port = free_port()
    assert proposed[:3] == [busy, handed, busy]
    assert port == ports.in_stripe(proposed[-1], ports.worker_stripe())
    assert port not in (busy, handed)


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
