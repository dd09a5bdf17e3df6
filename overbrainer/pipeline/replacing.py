"""A stage's side of `--force`: begin or continue a force, mark items replaced, settle at the end.

The file work is `overbrainer.storage.replacement`'s; this wraps it for a stage body: off the
event loop, one state write at a time, and a settle on every exit path that is shielded and
bounded, so an interrupted stage still compacts what it replaced but a hung disk cannot hold
the command (an unsettled file is settled by the next run).
"""

from __future__ import annotations

import collections
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import trio

from overbrainer.pipeline.blocking import write_in_thread
from overbrainer.pipeline.context import StageContext
from overbrainer.pipeline.stage_run import StageRun
from overbrainer.project.directory import Project
from overbrainer.storage import (
    ForceState,
    Head,
    Question,
    RecordKind,
    Subtopic,
    answer_ids,
    begin,
    example_head,
    id_key,
    load_force_state,
    save_force_state,
    settle,
    utc_now,
)

log = logging.getLogger(__name__)

SETTLE_BOUND = 30.0
"""Seconds an ending stage waits for its compaction before leaving it to its thread."""


def _subtopic_head(line: str) -> Head:
    record = Subtopic.from_json(line)
    return record.id, record.topic, record.topic


def _question_head(line: str) -> Head:
    record = Question.from_json(line)
    return record.id, record.topic, record.subtopic_id


def _answer_head(line: str) -> Head:
    record_id, topic, _, _ = example_head(line)
    return record_id, topic, record_id


_HEADS: dict[str, tuple[Callable[[str], Head], bool]] = {
    "subtopics": (_subtopic_head, False),
    "questions": (_question_head, False),
    "answers": (_answer_head, True),
}


def record_kind(ctx: StageContext, name: str) -> RecordKind:
    """The replaceable data file `data/<name>.jsonl` of the context's project."""
    return kind_of(ctx.project, name)


def kind_of(project: Project, name: str) -> RecordKind:
    """The replaceable data file `data/<name>.jsonl` (subtopics, questions, answers)."""
    head, single = _HEADS[name]
    return RecordKind(project.data_file(name), project.force_state(name), head, single)


def replaced_ids(project: Project, name: str) -> set[str]:
    """The old record IDs an unfinished `--force` of stage `name` is still to replace (they
    count for nothing: their items are done again). Blocking: reads the state."""
    state = load_force_state(project.force_state(name))
    return set() if state is None else state.old_ids(set(state.pending))


def answers_to_redo(project: Project, topics: frozenset[str]) -> set[str]:
    """The question IDs of `topics` an unfinished `answers --force` still has to answer again:
    pending ones whose new answer is not stored yet (a killed run may not have settled those
    it did: an ID stored twice has its new answer). Blocking: reads the state, and then the
    IDs of `answers.jsonl`, counting only the pending ones."""
    state = load_force_state(project.force_state("answers"))
    if state is None:
        return set()
    pending = {id_key(key): key for key in state.pending_keys(topics)}
    counts = collections.Counter(
        key for key, _, _, _ in answer_ids(project.data_file("answers")) if key in pending
    )
    return {found for key, found in pending.items() if counts[key] < 2}


class Replacement:
    """An unfinished force of one stage, as its body sees it (`state` None: no force).

    A new force lives in memory until `arm`, which the stage's `StageRun` calls before its
    first request: only then is it saved, for the next run to continue.
    """

    def __init__(self, path: Path, state: ForceState | None, saved: bool) -> None:
        self.path = path
        self.state = state
        self.saved = saved
        """Whether the state file holds this force (False: not armed yet)."""
        self._lock = trio.Lock()

    def pending(self, topics: frozenset[str]) -> dict[str, list[str]]:
        """The items of `topics` still to replace, with their old record IDs."""
        return {} if self.state is None else self.state.pending_keys(topics)

    def old_ids(self, topics: frozenset[str]) -> set[str]:
        """The old record IDs of the items of `topics` still to replace."""
        return set() if self.state is None else self.state.old_ids(topics)

    def forget(self, keys: set[str]) -> None:
        """Stop replacing these items (gone upstream); saved by the next save or settle."""
        if self.state is not None:
            for key in keys:
                self.state.forget(key)

    async def arm(self) -> None:
        """Save a new force, stamped with the time: the stage is about to send its first
        request, so from now on the next run continues the force."""
        if self.saved or self.state is None:
            return
        async with self._lock:
            state = self.state
            if self.saved or state is None:
                return
            state.started = state.started or utc_now()
            await write_in_thread(lambda: save_force_state(self.path, state))
            self.saved = True

    async def complete(self, topic: str, key: str, kept: set[str]) -> None:
        """Item `key` has its new records (their IDs `kept`): drop its other old ones, durably."""
        state = self.state
        if state is None or key not in state.pending.get(topic, {}):
            return
        async with self._lock:
            state.complete(topic, key, kept)
            if self.saved:
                await write_in_thread(lambda: save_force_state(self.path, state))


def say_continuing(stage: str, replacement: Replacement, topics: frozenset[str]) -> None:
    """Say that this run goes on with an earlier `--force` of `stage`, and how much it redoes."""
    state = replacement.state
    if state is None or not replacement.saved:
        return
    redo = len(state.pending_keys(topics))
    if redo:
        started = state.started or "earlier"
        log.info("%s: continuing the --force run started %s: %d to redo", stage, started, redo)


@contextlib.asynccontextmanager
async def replacing(ctx: StageContext, run: StageRun, name: str) -> AsyncIterator[Replacement]:
    """Begin (with `--force`) or continue the stage's force; settle it however the body ends.

    A new force is saved only when `run` sends its first request (`Replacement.arm`). Enter
    it before the stage's appender, so that the appender is closed before the settle
    rewrites the file.
    """
    kind = record_kind(ctx, name)
    configured = frozenset(topic.name for topic in ctx.settings.topics)
    state, saved = await write_in_thread(
        lambda: begin(kind, ctx.selected_topic_names, configured, ctx.force)
    )
    replacement = Replacement(kind.state, state, saved)
    say_continuing(name, replacement, ctx.selected_topic_names)
    run.before_send = replacement.arm
    try:
        yield replacement
    except BaseException:
        if replacement.saved:
            with trio.move_on_after(SETTLE_BOUND, shield=True) as bound:
                try:
                    await trio.to_thread.run_sync(settle, kind, state, abandon_on_cancel=True)
                except Exception as error:  # the stage's own error matters more
                    log.warning("%s: not compacted: %s", kind.data, error)
            if bound.cancelled_caught:
                log.warning(
                    "%s: not compacted within %gs; the next run does it", kind.data, SETTLE_BOUND
                )
        raise
    if replacement.saved:
        await write_in_thread(lambda: settle(kind, state))
