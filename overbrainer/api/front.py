"""The API's front ends: a quiet one by default, and the collector every call runs through."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from overbrainer.api.events import CallbackObserver, EventCallback
from overbrainer.events.bus import CAPACITY, EventBus, Observer, Observers, open_event_bus
from overbrainer.events.frontend import Frontend
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.signal_interrupt import signal_interrupt
from overbrainer.model.error_groups import unwrapped


class QuietFrontend:
    """A front end that prints nothing: a plain bus, Ctrl-C and SIGTERM as the interrupt while
    the call runs (the caller's handlers put back after), results kept by `Collector`."""

    @contextlib.asynccontextmanager
    async def open_bus(self, observer: Observer | None = None) -> AsyncIterator[EventBus]:
        """A new bus seen by `observer`; nothing renders it."""
        async with unwrapped(), open_event_bus(CAPACITY, observer) as bus:
            yield bus

    @contextlib.asynccontextmanager
    async def interrupt(self) -> AsyncIterator[Interrupt]:
        """Catch Ctrl-C and SIGTERM while inside (from the main thread; elsewhere they behave
        as usual and a warning says so)."""
        async with signal_interrupt(process_exits=False) as interrupt:
            yield interrupt

    def line(self, text: str) -> None:
        """A result line: not printed."""

    def result(self, key: str, value: object) -> None:
        """A result: not printed."""

    def run_created(self, run_id: str) -> None:
        """Nothing to show."""

    def run_stopped(self, run_id: str) -> None:
        """Nothing to show."""


class Collector:
    """A front end around another (the quiet one, or the command line's): it keeps the lines
    and results handed to it, and adds the caller's event callback to the bus."""

    def __init__(self, front: Frontend, on_event: EventCallback | None = None) -> None:
        self.front = front
        self.on_event = on_event
        self.lines: list[str] = []
        self.results: dict[str, object] = {}

    def open_bus(
        self, observer: Observer | None = None
    ) -> contextlib.AbstractAsyncContextManager[EventBus]:
        """The wrapped front end's bus, seen by the callback too (after `observer`)."""
        if self.on_event is not None:
            observer = Observers(observer, CallbackObserver(self.on_event))
        return self.front.open_bus(observer)

    def interrupt(self) -> contextlib.AbstractAsyncContextManager[Interrupt]:
        """The wrapped front end's interrupt."""
        return self.front.interrupt()

    def line(self, text: str) -> None:
        """Kept, then handed on."""
        self.lines.append(text)
        self.front.line(text)

    def result(self, key: str, value: object) -> None:
        """Kept (a key given twice keeps its last value), then handed on."""
        self.results[key] = value
        self.front.result(key, value)

    def run_created(self, run_id: str) -> None:
        """Handed on."""
        self.front.run_created(run_id)

    def run_stopped(self, run_id: str) -> None:
        """Handed on."""
        self.front.run_stopped(run_id)
