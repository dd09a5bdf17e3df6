"""A project as the API sees it: open it, run its stages or its whole `run`, read its records."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from overbrainer.api.events import EventCallback
from overbrainer.api.results import RunResult, StagesResult
from overbrainer.api.running import Ended, run_request
from overbrainer.api.sync import run_sync
from overbrainer.events.frontend import Frontend
from overbrainer.events.types import PIPELINE_STAGES, Stage
from overbrainer.flows.pipeline import PipelineRequest
from overbrainer.model.errors import OverbrainerError, UsageError
from overbrainer.project import directory

if TYPE_CHECKING:
    from overbrainer.storage import HistoryRecord
    from overbrainer.training import RunRecord

RUNNABLE = (Stage.SUBTOPICS, Stage.QUESTIONS, Stage.ANSWERS, Stage.QUALITY, Stage.SPLIT)
"""The stages `run_stages` runs (`judge` is `compare`'s)."""


def open_project(path: str | os.PathLike[str] = ".") -> Project:
    """The project holding `path`: the nearest `overbrainer.toml` at or above it, as `-C` finds
    it. Raises `UsageError` (exit code 2) when there is none or its format is too new."""
    return Project(directory.open_project(Path(path)).root)


def _stages(stages: Iterable[Stage | str]) -> tuple[Stage, ...]:
    """The stages asked for, in pipeline order; an unknown or non-pipeline one is refused."""
    chosen: set[Stage] = set()
    for stage in stages:
        try:
            found = stage if isinstance(stage, Stage) else Stage(stage)
        except ValueError:
            found = None
        if found not in RUNNABLE:
            names = ", ".join(s.value for s in RUNNABLE)
            raise UsageError(f"not a pipeline stage: {str(stage)!r} (run_stages runs {names})")
        assert found is not None
        chosen.add(found)
    if not chosen:
        raise UsageError("no stage to run: name at least one")
    return tuple(sorted(chosen))


def _topics(topics: Iterable[str]) -> tuple[str, ...]:
    """The topic names asked for (one name given as a plain string is one topic)."""
    return (topics,) if isinstance(topics, str) else tuple(topics)


def _check_max_cost(max_cost: float | None) -> None:
    if max_cost is not None and not max_cost >= 0:
        raise UsageError(f"max_cost must be at least 0, not {max_cost}")


def _refused(error: OverbrainerError) -> StagesResult:
    return StagesResult(error.exit_code, error)


@attrs.frozen
class Project:
    """An overbrainer project directory (see `open_project`).

    `run_stages` and `run` take the project's lock for the call, as the command line does, and
    return how the work ended; `history` and `runs` read the records without the lock.
    """

    root: Path
    """The directory holding `overbrainer.toml`."""

    async def run_stages(
        self,
        stages: Iterable[Stage | str],
        *,
        topics: Iterable[str] = (),
        force: bool = False,
        max_cost: float | None = None,
        batch: bool = False,
        cancel_batches: bool = False,
        on_event: EventCallback | None = None,
        events_file: str | os.PathLike[str] | None = None,
        front: Frontend | None = None,
    ) -> StagesResult:
        """Run `stages` (in pipeline order) as `overbrainer <stage>` does; see docs/api.md.

        `topics`: only these (all when empty); `force`: make the stage's output again;
        `max_cost`: the spend cap in USD (`--max-cost`); `batch`/`cancel_batches`: answers
        through the batch API (`answers --batch [--cancel]`); `on_event`: called with each
        event in order; `events_file`: every event as a JSON line (`--events FILE`); `front`:
        the command line's own front end (private: leave it out).
        """
        try:
            chosen = _stages(stages)
            _check_max_cost(max_cost)
            if cancel_batches and not batch:
                raise UsageError("cancel_batches needs batch")
            if batch and force:
                raise UsageError("force cannot be combined with batch")
        except UsageError as error:
            return _refused(error)
        request = PipelineRequest(
            chosen, _topics(topics), force, max_cost, batch=batch, cancel=cancel_batches
        )
        ended = await self._run(request, on_event, events_file, front)
        return StagesResult(
            ended.exit_code,
            ended.error,
            dict(ended.collected.results),
            tuple(ended.collected.lines),
        )

    async def run(
        self,
        *,
        train: bool = True,
        max_cost: float | None = None,
        on_event: EventCallback | None = None,
        events_file: str | os.PathLike[str] | None = None,
        front: Frontend | None = None,
    ) -> RunResult:
        """Every stage, then the training and push `overbrainer.toml` asks for, as
        `overbrainer run` does (`train=False`: `run --no-train`)."""
        try:
            _check_max_cost(max_cost)
        except UsageError as error:
            return RunResult(error.exit_code, error)
        request = PipelineRequest(PIPELINE_STAGES, max_cost=max_cost, whole_run=True, train=train)
        ended = await self._run(request, on_event, events_file, front)
        return RunResult(
            ended.exit_code,
            ended.error,
            dict(ended.collected.results),
            tuple(ended.collected.lines),
        )

    async def _run(
        self,
        request: PipelineRequest,
        on_event: EventCallback | None,
        events_file: str | os.PathLike[str] | None,
        front: Frontend | None,
    ) -> Ended:
        events = None if events_file is None else Path(events_file)
        return await run_request(
            self.root, request, front=front, on_event=on_event, events_file=events
        )

    def run_stages_sync(
        self,
        stages: Iterable[Stage | str],
        *,
        topics: Iterable[str] = (),
        force: bool = False,
        max_cost: float | None = None,
        batch: bool = False,
        cancel_batches: bool = False,
        on_event: EventCallback | None = None,
        events_file: str | os.PathLike[str] | None = None,
    ) -> StagesResult:
        """`run_stages` from plain (non-async) code; refused inside a running Trio loop."""
        stage_list = list(stages)
        topic_list = _topics(topics)

        async def call() -> StagesResult:
            return await self.run_stages(
                stage_list,
                topics=topic_list,
                force=force,
                max_cost=max_cost,
                batch=batch,
                cancel_batches=cancel_batches,
                on_event=on_event,
                events_file=events_file,
            )

        return run_sync("run_stages", call)

    def run_sync(
        self,
        *,
        train: bool = True,
        max_cost: float | None = None,
        on_event: EventCallback | None = None,
        events_file: str | os.PathLike[str] | None = None,
    ) -> RunResult:
        """`run` from plain (non-async) code; refused inside a running Trio loop."""

        async def call() -> RunResult:
            return await self.run(
                train=train, max_cost=max_cost, on_event=on_event, events_file=events_file
            )

        return run_sync("run", call)

    def history(self) -> list[HistoryRecord]:
        """Every stage run of the project's history, oldest first (`overbrainer history --all`)."""
        # Imported on use, as `runs`: a stage command never reads the whole history.
        from overbrainer.storage import read_history

        path = directory.Project(self.root).history
        try:
            return read_history(path)
        except OSError as error:
            raise OverbrainerError(f"cannot read {path}: {error.strerror}") from None

    def runs(self) -> list[RunRecord]:
        """Every readable training run, oldest first (`overbrainer runs ls`; an unreadable
        record is skipped with a logged warning)."""
        # Imported on use: the training layer is a third of a stage command's start-up.
        from overbrainer.training import Runs

        records, _skipped = Runs(directory.Project(self.root).runs).scan()
        return records
