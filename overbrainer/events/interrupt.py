"""The user's interruption (Ctrl-C, the TUI's detach) as plain Trio: flows shield or race."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio

from overbrainer.model.error_groups import unwrapped

T = TypeVar("T")


class Interrupt:
    """The user's interruption (Ctrl-C, or the TUI's detach): flows are shielded or raced."""

    def __init__(self, *, off: bool = False) -> None:
        self._off = off
        self._caught = trio.Event()
        self._next = trio.Event()
        self.count = 0

    @property
    def caught(self) -> bool:
        """Whether the interruption came."""
        return self._caught.is_set()

    @property
    def off(self) -> bool:
        """True when the interruption could not be hooked and Ctrl-C behaves as usual."""
        return self._off

    def fire(self) -> None:
        """Note one interruption (the signal watcher, the detach watcher and tests call this)."""
        self.count += 1
        self._caught.set()
        self._next.set()
        self._next = trio.Event()

    async def wait(self) -> int:
        """Wait for the next interruption after this call; the total count so far."""
        await self._next.wait()
        return self.count

    async def wait_caught(self) -> None:
        """Return once the interruption has come (at once if it already has)."""
        await self._caught.wait()

    async def shield(self, flow: Callable[[], Awaitable[T]]) -> T:
        """Run `flow` to its end; an interruption meanwhile is only noted."""
        with trio.CancelScope(shield=True):
            result = await flow()
        return result

    async def race(self, flow: Callable[[], Awaitable[T]]) -> T | None:
        """`flow`'s result, or None when the interruption comes first (or came already).

        An error of `flow` comes out as itself, not inside an exception group.
        """
        if self._off:
            return await flow()
        if self.caught:
            return None
        finished = False
        result: T | None = None
        async with unwrapped(), trio.open_nursery() as nursery:

            async def cancel_on_interrupt() -> None:
                await self._caught.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(cancel_on_interrupt)
            result = await flow()
            finished = True
            nursery.cancel_scope.cancel()
        return result if finished else None
