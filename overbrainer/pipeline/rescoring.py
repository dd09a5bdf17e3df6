"""`quality --force`: the answers to score again, kept in the stage's force state until scored.

The same mechanism as the other stages' `--force` (`pipeline/replacing.py`): the state file
`.overbrainer/force-quality.json` is written only once the stage sends its first request, a
plain run continues it and says so, `estimate` counts it. Scores are only ever appended (the
latest score of an answer is the one that counts), so nothing is replaced in place: the
state's `pending` holds the answers still to score again, and `since` the size of
`quality.jsonl` up to which its scores were taken into account. A score written after
`since` for a pending answer is its new score, even when the run that wrote it was killed
before it could say so.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import trio

from overbrainer.pipeline.blocking import write_in_thread
from overbrainer.pipeline.context import StageContext
from overbrainer.pipeline.quality_scores import QualityScore
from overbrainer.pipeline.replacing import SETTLE_BOUND, Replacement, say_continuing
from overbrainer.pipeline.stage_run import StageRun
from overbrainer.project.directory import Project
from overbrainer.storage import (
    DataError,
    ForceState,
    load_force_state,
    open_force_state,
    read_records_at,
    save_force_state,
)

log = logging.getLogger(__name__)

STAGE = "quality"


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0
    except OSError as error:
        raise DataError(f"cannot read {path}", error.strerror or type(error).__name__) from None


def _scored_after(path: Path, offset: int) -> set[str]:
    """The answer IDs with a score line starting at `offset` or later. Blocking."""

    def parse(line: str, start: int, _length: int) -> str | None:
        return QualityScore.from_json(line).id if start >= offset else None

    return {found for found in read_records_at(path, parse) if found is not None}


def take_scores(state: ForceState, scores: Path) -> None:
    """Drop from `pending` the answers scored since `state.since`; `since` moves to the end."""
    size = _size(scores)
    if state.since is not None and size > state.since:
        for answer_id in _scored_after(scores, state.since):
            state.forget(answer_id)
    state.since = size


def begin(
    project: Project,
    selected: frozenset[str],
    configured: frozenset[str],
    force: bool,
    answers: Iterable[tuple[str, str]],
) -> tuple[ForceState | None, bool]:
    """Take in an unfinished force's new scores; with `force`, extend it to the selected
    topics it does not cover yet (each of their usable `answers`, `(id, topic)`, becomes
    pending). The state and whether the file holds it all (as `replacement.begin`). Blocking.
    """
    path = project.force_state(STAGE)
    state, saved = open_force_state(path, force, configured)
    if state is None:
        return None, False
    take_scores(state, project.data_file(STAGE))
    if saved:
        save_force_state(path, state)
    new = selected - state.topics if force else frozenset()
    if new:
        for answer_id, topic in answers:
            if topic in new:
                state.items(topic)[answer_id] = []
        state.topics |= new
    if state.finished and not force:
        return None, saved
    return state, saved and not new


def pending_rescores(project: Project, topics: frozenset[str]) -> set[str]:
    """The answers of `topics` an unfinished `quality --force` still has to score (what the
    next run redoes). Blocking: reads the state and the scores written since it was saved."""
    state = load_force_state(project.force_state(STAGE))
    if state is None:
        return set()
    take_scores(state, project.data_file(STAGE))
    return set(state.pending_keys(topics))


def _settle(project: Project, state: ForceState | None) -> None:
    if state is not None:
        take_scores(state, project.data_file(STAGE))
        save_force_state(project.force_state(STAGE), state)


@contextlib.asynccontextmanager
async def rescoring(
    ctx: StageContext, run: StageRun, answers: Iterable[tuple[str, str]]
) -> AsyncIterator[Replacement]:
    """Begin (with `--force`) or continue the quality force; settle it however the body ends.

    Enter it before the stage's appender, so that the scores are all written when it settles.
    """
    project = ctx.project
    configured = frozenset(topic.name for topic in ctx.settings.topics)
    state, saved = await write_in_thread(
        lambda: begin(project, ctx.selected_topic_names, configured, ctx.force, answers)
    )
    replacement = Replacement(project.force_state(STAGE), state, saved)
    say_continuing(STAGE, replacement, ctx.selected_topic_names)
    run.before_send = replacement.arm
    try:
        yield replacement
    except BaseException:
        if replacement.saved:
            with trio.move_on_after(SETTLE_BOUND, shield=True):
                try:
                    await trio.to_thread.run_sync(_settle, project, state, abandon_on_cancel=True)
                except Exception as error:  # the stage's own error matters more
                    log.warning("quality: force state not saved: %s", error)
        raise
    if replacement.saved:
        await write_in_thread(lambda: _settle(project, state))
