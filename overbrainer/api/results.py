"""What an API call that runs work returns: how it ended and the results the command gave."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from overbrainer.model.errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    OverbrainerError,
)

if TYPE_CHECKING:
    from overbrainer.hub.push_summary import PushSummary
    from overbrainer.storage import HistoryRecord
    from overbrainer.training import TrainResult


class Outcome(enum.Enum):
    """How a call ended, one per exit code of the command line."""

    DONE = "done"
    """Exit 0: the work finished."""
    FAILED = "failed"
    """Exit 1: the work ran but did not succeed (items failed, a job failed, a remote error)."""
    REFUSED = "refused"
    """Exit 2: bad input or configuration; refused before any work it concerns."""
    INTERRUPTED = "interrupted"
    """Exit 130: Ctrl-C or SIGTERM; what was stored stays and a rerun resumes."""


def outcome_of(exit_code: int) -> Outcome:
    """The outcome the command line's exit code stands for."""
    if exit_code == EXIT_OK:
        return Outcome.DONE
    if exit_code == EXIT_USAGE:
        return Outcome.REFUSED
    if exit_code == EXIT_INTERRUPTED:
        return Outcome.INTERRUPTED
    return Outcome.FAILED


def _stage_records(results: Mapping[str, object]) -> tuple[HistoryRecord, ...]:
    # Imported on use: a stage command that never asks pays nothing for the history's reader.
    from overbrainer.storage import HistoryRecord

    value = results.get("stages", ())
    if not isinstance(value, tuple | list):
        return ()
    return tuple(record for record in value if isinstance(record, HistoryRecord))


@attrs.frozen
class StagesResult:
    """How `run_stages` ended: its outcome, exit code, error and the results it handed over."""

    exit_code: int
    """The exit code the command line gives for the same work: 0, 1, 2 or 130."""
    error: OverbrainerError | None = attrs.field(default=None, eq=False)
    """Why it did not finish (its `message` is the command line's `error:` line); None when done."""
    results: Mapping[str, object] = attrs.field(factory=dict, eq=False)
    """Every result the work handed over, by the key `--json` writes it under."""
    lines: tuple[str, ...] = ()
    """The lines the command line prints on stdout (each stage's summary line)."""

    @property
    def outcome(self) -> Outcome:
        """How the call ended (see `Outcome`)."""
        return outcome_of(self.exit_code)

    @property
    def ok(self) -> bool:
        """Whether the work finished (exit code 0)."""
        return self.exit_code == EXIT_OK

    @property
    def stages(self) -> tuple[HistoryRecord, ...]:
        """The history record of each stage run, in order, as written to the history."""
        return _stage_records(self.results)

    def check(self) -> None:
        """Raise the error unless the work finished (for callers who prefer exceptions)."""
        if self.error is not None:
            raise self.error


@attrs.frozen
class RunResult(StagesResult):
    """How `run` ended: as `StagesResult`, plus its training and push when they ran."""

    @property
    def train(self) -> TrainResult | None:
        """Where the training left its run (the `--json` document's `train`); None when none
        ran."""
        from overbrainer.training import TrainResult

        value = self.results.get("train")
        return value if isinstance(value, TrainResult) else None

    @property
    def push(self) -> PushSummary | None:
        """What the push after training sent (`--json`'s `push`); None when none ran."""
        from overbrainer.hub.push_summary import PushSummary

        value = self.results.get("push")
        return value if isinstance(value, PushSummary) else None
