"""Front ends: how a flow gets its bus, its interruption and its stdout lines (CLI or TUI)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

import click
import trio

from overbrainer.events.bus import CAPACITY, EventBus, Observer, Observers, open_event_bus
from overbrainer.events.frontend import Line, Report, RunCreated, RunStopped
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.signal_interrupt import signal_interrupt
from overbrainer.model.error_groups import unwrapped
from overbrainer.model.redact import redact
from overbrainer.ui.bar import BarScreen, stderr_console
from overbrainer.ui.display import Display
from overbrainer.ui.json_report import JsonReport
from overbrainer.ui.progress import ProgressLines, render_until
from overbrainer.ui.stdout import silence_stdout

if TYPE_CHECKING:
    from rich.console import Console

log = logging.getLogger(__name__)

DRAIN_GRACE = 2.0
"""Seconds the TUI's renderer may take to log what is queued when its flow ends."""


class CliFrontend:
    """The terminal: its own bus rendered to stderr, Ctrl-C as the interrupt, lines on stdout.

    With a `report` (`--json`), results go into it and the result lines go to stderr: stdout
    holds the report's document alone.
    """

    def __init__(
        self,
        display: Display = Display.LINES,
        console: Console | None = None,
        report: JsonReport | None = None,
    ) -> None:
        self.display = display
        self.console = console
        self.report = report
        self._screen: BarScreen | None = None

    @contextlib.asynccontextmanager
    async def open_bus(self, observer: Observer | None = None) -> AsyncIterator[EventBus]:
        """A new bus, seen by `observer`, whose events are logged until it closes (all printed).

        With the bar display, a live bar per stage is drawn too, and the item lines it replaces
        (start, tenths, end) are not logged.
        """
        if self.display is not Display.BAR:
            async with (
                unwrapped(),
                open_event_bus(CAPACITY, Observers(observer, ProgressLines())) as bus,
            ):
                yield bus
            return
        screen = BarScreen(self.console or stderr_console())
        self._screen = screen
        try:
            async with (
                unwrapped(),
                trio.open_nursery() as nursery,
                open_event_bus(CAPACITY, Observers(observer, screen, ProgressLines(False))) as bus,
            ):
                nursery.start_soon(screen.run)
                yield bus
        finally:
            self._screen = None
            screen.freeze()

    @contextlib.asynccontextmanager
    async def interrupt(self) -> AsyncIterator[Interrupt]:
        """Catch Ctrl-C from now on: it no longer kills the process while inside."""
        async with signal_interrupt() as interrupt:
            yield interrupt

    def line(self, text: str) -> None:
        """Print a result line on stdout, secrets masked (dropped once its reader has gone).

        A live bar is frozen first, so the line comes below its last frame, never through it.
        """
        if self._screen is not None:
            self._screen.freeze()
        try:
            click.echo(redact(text), err=self.report is not None)
        except BrokenPipeError:
            # `overbrainer run | head -1`: the work and its history go on without stdout.
            silence_stdout()

    def result(self, key: str, value: object) -> None:
        """Keep `value` under `key` of the `--json` document; without `--json`, nothing."""
        if self.report is not None:
            self.report.put(key, value)

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
        report: Callable[[Report], None],
    ) -> None:
        self.bus = bus
        self.detach = detach
        self.report = report

    @contextlib.asynccontextmanager
    async def open_bus(self, observer: Observer | None = None) -> AsyncIterator[EventBus]:
        """The shared bus; its events are logged until the flow ends, then drained briefly.

        `observer` is not added: the app opened the shared bus with its own observers.
        """
        stop = trio.Event()
        async with unwrapped(), trio.open_nursery() as nursery:
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
        async with unwrapped(), trio.open_nursery() as nursery:

            async def watch_detach() -> None:
                await self.detach.wait()
                interrupt.fire()

            nursery.start_soon(watch_detach)
            try:
                yield interrupt
            finally:
                nursery.cancel_scope.cancel()

    def line(self, text: str) -> None:
        """Hand a result line to the app."""
        self.report(Line(text))

    def result(self, key: str, value: object) -> None:
        """The TUI shows results through its views: a `--json` result is dropped."""

    def run_created(self, run_id: str) -> None:
        """Tell the app a run was created."""
        self.report(RunCreated(run_id))

    def run_stopped(self, run_id: str) -> None:
        """Tell the app a run stops being followed."""
        self.report(RunStopped(run_id))
