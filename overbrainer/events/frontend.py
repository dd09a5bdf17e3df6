"""What a flow needs from a front end (CLI or TUI): a bus, the interrupt and a result sink.

Flows are typed against `Frontend` only; `overbrainer.ui.front` holds the two front ends that
satisfy it. The core (pipeline, training) never sees a front end: it gets a bus and an
`Interrupt`, and returns its results for the flow to hand to the sink.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

import attrs

from overbrainer.events.bus import EventBus, Observer
from overbrainer.events.interrupt import Interrupt


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
"""What a result sink is told, as one value (the TUI queues these for its app)."""


class ResultSink(Protocol):
    """Where a flow hands its results: stdout lines and the runs it starts and stops following."""

    def line(self, text: str) -> None:
        """A result line (the CLI prints it on stdout)."""
        ...

    def result(self, key: str, value: object) -> None:
        """A result of the command under `key` of its `--json` document (the API keeps it too).

        `value` is a typed value (an attrs record, a list of them, plain data); the CLI writes
        it with `ui.json_report.json_value` when run with `--json` and drops it otherwise. A
        key given twice keeps its last value.
        """
        ...

    def run_created(self, run_id: str) -> None:
        """A training run was created; called while the work goes on, before it is followed."""
        ...

    def run_stopped(self, run_id: str) -> None:
        """The flow stopped following a run."""
        ...


class Frontend(ResultSink, Protocol):
    """A front end as flows use it: its bus, its interrupt and its result sink."""

    def open_bus(self, observer: Observer | None = None) -> AbstractAsyncContextManager[EventBus]:
        """The bus a command publishes on, rendered until the block ends.

        `observer` sees every event (the events file, the metrics) on a bus the front end opens
        for the command; a front end sharing one bus between flows keeps its own observers.
        """
        ...

    def interrupt(self) -> AbstractAsyncContextManager[Interrupt]:
        """The user's interruption, caught while inside."""
        ...
