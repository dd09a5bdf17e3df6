"""Every test is bounded: pytest-timeout's limit for all, a Trio cancellation before it for Trio.

pytest-timeout (`timeout` in pyproject.toml) fails a test that runs past its limit, but from a
signal handler that lands anywhere, Trio's run loop included. So a Trio test is cancelled
first, at `TRIO_SHARE` of that limit (`REPORT_MARGIN` before it at least): it fails with
`TrioTestTimeout` chained to the `Cancelled` that shows where it waited, and its fixtures are
torn down as usual.

The bound is wall-clock time even on `autojump_clock`, whose virtual time jumps whenever the
run is idle: a worker thread waits out the seconds and cancels the test's scope.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import outcome
import pytest
import trio

SLOW_SECONDS = 2400
"""The limit of a test that builds or runs a real tool (llama.cpp, Axolotl, Trainer, LiteLLM)."""
SLOW_MARKERS = ("axolotl", "gguf", "trainer", "realserver")
SLOW_FIXTURES = ("llama_tools", "axolotl_venv")
TRIO_SHARE = 0.9
"""A Trio test is cancelled at this share of its pytest-timeout limit..."""
REPORT_MARGIN = 1.0
"""...or this many seconds before it, whichever is sooner: the failure must be reported before
pytest-timeout fires (pytest's traceback formatting alone took over 0.2 s on a busy machine)."""

LIMIT = pytest.StashKey[float]()


class TrioTestTimeout(Exception):
    """A Trio test ran past its share of the pytest-timeout limit and was cancelled."""


@pytest.hookimpl(trylast=True)  # after pytest-trio has marked the Trio tests
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow tests get their longer limit; Trio tests their Trio bound."""
    give_slow_tests_time(items)
    bound_trio_tests(items)


@pytest.hookimpl(optionalhook=True)  # a venv without pytest-timeout still runs the suite
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> None:
    """Note the item's pytest-timeout limit for `bounded_run`; the timer stays pytest-timeout's."""
    item.stash[LIMIT] = float(settings.timeout)


def give_slow_tests_time(items: Iterable[pytest.Item]) -> None:
    """A test that builds or runs a real tool gets `SLOW_SECONDS` unless it names its own."""
    for item in items:
        slow = any(item.get_closest_marker(name) for name in SLOW_MARKERS) or any(
            name in getattr(item, "fixturenames", ()) for name in SLOW_FIXTURES
        )
        if slow and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(SLOW_SECONDS))


def bound_trio_tests(items: Iterable[pytest.Item]) -> None:
    """Each Trio test runs under `bounded_run` (pytest-trio takes the `run` of its first mark)."""
    for item in items:
        if item.get_closest_marker("trio") is not None:
            run = functools.partial(bounded_run, item)
            item.add_marker(pytest.mark.trio(run=run), append=False)


def bounded_run(
    item: pytest.Item,
    test: Callable[[], Awaitable[object]],
    *,
    clock: trio.abc.Clock | None,
    instruments: Sequence[trio.abc.Instrument],
) -> object:
    """`trio.run` for pytest-trio, with the test cancelled after `trio_bound(limit)`."""
    limit = item.stash.get(LIMIT, 0.0)
    if not limit:
        return trio.run(test, clock=clock, instruments=instruments)
    return trio.run(cancel_after, test, limit, clock=clock, instruments=instruments)


def trio_bound(limit: float) -> float:
    """The wall-clock seconds a Trio test with pytest-timeout's `limit` runs before its cancel:
    `TRIO_SHARE` of it, `REPORT_MARGIN` before it at least, half of it at least."""
    return max(limit / 2, min(limit * TRIO_SHARE, limit - REPORT_MARGIN))


async def cancel_after(test: Callable[[], Awaitable[object]], limit: float) -> object:
    """Run `test`, cancelled once `trio_bound(limit)` wall-clock seconds have passed."""
    seconds = trio_bound(limit)
    token = trio.lowlevel.current_trio_token()
    finished = threading.Event()
    with trio.CancelScope() as scope:

        def deliver(waited: outcome.Outcome[bool]) -> None:
            if not waited.unwrap():
                # The test may end just as the time is up: then there is nothing to cancel.
                with contextlib.suppress(trio.RunFinishedError):
                    token.run_sync_soon(scope.cancel)

        trio.lowlevel.start_thread_soon(functools.partial(finished.wait, seconds), deliver)
        try:
            return await test()
        except BaseException as error:
            if scope.cancel_called:
                raise TrioTestTimeout(message(seconds, limit)) from error
            raise
        finally:
            finished.set()
    raise TrioTestTimeout(message(seconds, limit))


def message(seconds: float, limit: float) -> str:
    """Why the test failed, and where to look."""
    return (
        f"still running after {seconds:g} s of wall-clock time ({seconds / limit:.0%} of its "
        f"{limit:g} s timeout): cancelled; the Cancelled above shows where it waited"
    )
