"""Plain-sync calls of the API's async ones, each in its own `trio.run`."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TypeVar

import trio

T = TypeVar("T")


class InsideTrio(RuntimeError):
    """A sync wrapper was called from inside a running Trio loop (await the async call)."""


def run_sync(name: str, call: Callable[[], Coroutine[object, object, T]]) -> T:
    """`call()` run to its end in a new `trio.run`; refused inside a running Trio loop."""
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:
        return trio.run(call)
    raise InsideTrio(
        f"{name}_sync cannot run inside a running Trio loop: use `await project.{name}(...)`"
    )
