"""Events for API callers: a callable that sees each event of the work, in order."""

from __future__ import annotations

from collections.abc import Callable

from overbrainer.events.types import Event

EventCallback = Callable[[Event], None]
"""Called with each event as it is published, in order, on the task that publishes it: it must
return quickly and never block (hand slow work to a channel of your own). An exception it
raises is logged and the work goes on."""


class CallbackObserver:
    """A bus observer (`events.bus.Observer`) that hands each event to a callback."""

    def __init__(self, on_event: EventCallback) -> None:
        self._on_event = on_event

    def event(self, bus: int, event: Event) -> None:
        """One event of the work, handed on."""
        self._on_event(event)

    def closed(self, bus: int) -> None:
        """The work's bus closed: nothing to hand on."""
