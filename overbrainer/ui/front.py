"""Front ends: how a flow gets its bus, its interruption and its stdout lines (CLI or TUI)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import attrs
import click
import trio

from overbrainer.events.bus import CAPACITY, EventBus, Observer, open_event_bus
from overbrainer.model.errors import OverbrainerError
from overbrainer.ui.progress import render, render_until

log = logging.getLogger(__name__)

T = TypeVar("T")

DRAIN_GRACE = 2.0
"""Seconds the TUI's renderer may take to log what is queued when its flow ends."""


def silence_stdout() -> None:
    """Point stdout at /dev/null once its reader has gone, so later writes and flushes pass."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


@attrs.frozen
class Line:
    """A line the CLI would print on stdout."""

    text: str


@attrs.frozen
class RunCreated:
    """A training run was created (the TUI follows it)."""

    run_id: str


@attrs.frozen
class RunStopped:
    """The flow stopped following a run (the TUI stops showing it as live)."""

    run_id: str


Report = Line | RunCreated | RunStopped


@attrs.define
class Flag:
    """A shared "the user asked to stop" flag, checked between provisioning steps."""

    interrupted: bool = False


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
        """`flow`'s result, or None when the interruption comes first (or came already)."""
        if self._off:
            return await flow()
        if self.caught:
            return None
        finished = False
        result: T | None = None
        async with trio.open_nursery() as nursery:

            async def cancel_on_interrupt() -> None:
                await self._caught.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(cancel_on_interrupt)
            result = await flow()
            finished = True
            nursery.cancel_scope.cancel()
        return result if finished else None


async def _watch_signals(receiver: AsyncIterator[int], on_signal: Callable[[], None]) -> None:
    async for _ in receiver:
        on_signal()


# SIGTERM (`kill`, a container or service stop) is a Ctrl-C too: the stage drains what is in
# flight, prints its summary and records its history line instead of dying mid-write.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.asynccontextmanager
async def _on_stop_signals(on_signal: Callable[[], None]) -> AsyncIterator[bool]:
    """Call `on_signal` for each SIGINT or SIGTERM inside; yields False when not catchable."""
    with contextlib.ExitStack() as stack:
        try:
            receiver = stack.enter_context(trio.open_signal_receiver(*STOP_SIGNALS))
        except (RuntimeError, ValueError) as error:
            log.warning("cannot catch Ctrl-C: %s", error)
            yield False
            return
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_watch_signals, receiver, on_signal)
            try:
                yield True
            finally:
                nursery.cancel_scope.cancel()


class CliFrontend:
    """The terminal: its own bus rendered to stderr, Ctrl-C as the interrupt, lines on stdout."""

    def __init__(self, observer: Observer | None = None) -> None:
        self.observer = observer

    @contextlib.asynccontextmanager
    async def open_bus(self) -> AsyncIterator[EventBus]:
        """A new bus whose events are logged until it closes (all queued lines printed)."""
        async with trio.open_nursery() as nursery, open_event_bus(CAPACITY, self.observer) as bus:
            nursery.start_soon(render, bus.subscribe())
            yield bus

    @contextlib.asynccontextmanager
    async def interrupt(self) -> AsyncIterator[Interrupt]:
        """Catch Ctrl-C from now on: it no longer kills the process while inside."""
        interrupt = Interrupt()
        async with _on_stop_signals(interrupt.fire) as caught:
            if not caught:
                interrupt = Interrupt(off=True)
            yield interrupt

    @contextlib.asynccontextmanager
    async def provisioning_flag(self) -> AsyncIterator[Flag]:
        """A flag that Ctrl-C sets while inside."""
        flag = Flag()

        def set_flag() -> None:
            flag.interrupted = True

        async with _on_stop_signals(set_flag) as caught:
            if not caught:
                raise OverbrainerError("cannot catch Ctrl-C")
            yield flag

    def line(self, text: str) -> None:
        """Print a result line on stdout (dropped once stdout's reader has gone)."""
        try:
            click.echo(text)
        except BrokenPipeError:
            # `overbrainer run | head -1`: the work and its history go on without stdout.
            silence_stdout()

    def run_created(self, run_id: str) -> None:
        """The CLI shows nothing more when a run is created."""

    def run_stopped(self, run_id: str) -> None:
        """The CLI shows nothing more when a run stops being followed."""


class TuiFrontend:
    """The TUI: a shared bus, the detach event as the interrupt, results as reports."""

    def __init__(
        self,
        bus: EventBus,
        detach: trio.Event,
        abandon: Flag,
        report: Callable[[Report], None],
    ) -> None:
        self.bus = bus
        self.detach = detach
        self.abandon = abandon
        self.report = report

    @contextlib.asynccontextmanager
    async def open_bus(self) -> AsyncIterator[EventBus]:
        """The shared bus; its events are logged until the flow ends, then drained briefly."""
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(render_until, self.bus.subscribe(), stop)
            try:
                yield self.bus
            finally:
                with trio.move_on_after(DRAIN_GRACE, shield=True):
                    await self.bus.delivered()
                stop.set()
                nursery.cancel_scope.deadline = trio.current_time() + DRAIN_GRACE

    @contextlib.asynccontextmanager
    async def interrupt(self) -> AsyncIterator[Interrupt]:
        """The interrupt is the detach event."""
        interrupt = Interrupt()
        async with trio.open_nursery() as nursery:

            async def watch_detach() -> None:
                await self.detach.wait()
                interrupt.fire()

            nursery.start_soon(watch_detach)
            try:
                yield interrupt
            finally:
                nursery.cancel_scope.cancel()

    @contextlib.asynccontextmanager
    async def provisioning_flag(self) -> AsyncIterator[Flag]:
        """The shared abandon flag."""
        yield self.abandon

    def line(self, text: str) -> None:
        """Hand a result line to the app."""
        self.report(Line(text))

    def run_created(self, run_id: str) -> None:
        """Tell the app a run was created."""
        self.report(RunCreated(run_id))

    def run_stopped(self, run_id: str) -> None:
        """Tell the app a run stops being followed."""
        self.report(RunStopped(run_id))


Frontend = CliFrontend | TuiFrontend
