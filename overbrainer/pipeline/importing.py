"""`import questions`: a user's own questions added to `data/questions.jsonl` like generated ones.

Each topic's questions go through the questions stage's deduplicator, seeded with the topic's
stored and rejected questions: an exact or near duplicate is skipped and counted. A question
rejected in the TUI (its ID, or its normalized text in its topic) stays rejected, and so does
every question of a rejected subtopic. Everything is read and checked before the first write.

The checking (`plan_import`) is CPU work of seconds to minutes for a large file: it runs in a
worker thread that a cancel (Ctrl-C) stops at its next row, so the event loop stays free to see
the signal and nothing is written; the writing (`write_import`) is one append per file.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from operator import itemgetter
from pathlib import Path

import attrs
import trio

from overbrainer.config.settings import Settings
from overbrainer.model.errors import EXIT_INTERRUPTED, OverbrainerError, UsageError
from overbrainer.pipeline.blocking import read_in_thread, write_in_thread
from overbrainer.pipeline.context import select_topics
from overbrainer.pipeline.dedup import Deduplicator
from overbrainer.pipeline.imported import IMPORTED, IMPORTED_FILE
from overbrainer.pipeline.question_file import QuestionRow, read_question_file
from overbrainer.project.directory import Project
from overbrainer.storage import (
    Question,
    RejectedQuestion,
    RejectedSubtopic,
    Subtopic,
    normalize,
    open_appender,
    question_id,
    read_current,
    read_records,
    rejected_from_json,
    subtopic_id,
)

log = logging.getLogger(__name__)

SEED_SLICE = 1_000
"""Stored questions remembered between two looks at the stop flag."""

PROGRESS_EVERY = 10_000
"""Rows checked between two progress lines (about a second of work)."""


class ImportInterrupted(OverbrainerError):
    """Ctrl-C (or SIGTERM) stopped the import before its write: nothing was added (exit 130)."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self) -> None:
        super().__init__("interrupted: nothing was imported; run the import again to add it")


class _Stopped(Exception):
    """The planning thread's way out once its caller has gone (a cancel)."""


@attrs.frozen
class ImportCounts:
    """What an import did: questions added, skipped as duplicates, skipped as rejected."""

    added: int
    duplicates: int
    rejected: int
    topics: tuple[str, ...]

    def line(self) -> str:
        """The summary line, e.g. `import: 120 added, 3 duplicates, 1 rejected; topic rust`."""
        label = "topic" if len(self.topics) == 1 else "topics"
        return (
            f"import: {self.added} added, {self.duplicates} duplicates, {self.rejected} rejected;"
            f" {label} {', '.join(self.topics)}"
        )


@attrs.frozen
class _Known:
    """The project's data the import checks against."""

    subtopics: dict[str, Subtopic]
    texts: dict[str, list[str]]
    rejected_ids: frozenset[str]
    rejected_texts: dict[str, set[str]]


def _read_known(project: Project, topics: frozenset[str]) -> _Known:
    """Stored subtopics, the `topics`' questions as readers see them, and the rejected ones
    (blocking).

    Only an ID (and the text in one of `topics`) is kept per stored question: at a million
    questions, holding them all whole cost 400 MB.
    """

    def head(line: str) -> tuple[str, str | None, str | None]:
        question = Question.from_json(line)
        if question.topic in topics:
            return question.id, question.topic, question.text
        return question.id, None, None

    subtopics = read_current(
        project.data_file("subtopics"),
        project.force_state("subtopics"),
        Subtopic.from_json,
        lambda subtopic: subtopic.id,
    )
    questions = read_current(
        project.data_file("questions"), project.force_state("questions"), head, itemgetter(0)
    )
    rejected = read_records(project.data_file("rejected"), rejected_from_json)
    texts: dict[str, list[str]] = {}
    for _, topic, text in questions:
        if topic is not None and text is not None:
            texts.setdefault(topic, []).append(text)
    rejected_texts: dict[str, set[str]] = {}
    for record in rejected:
        if isinstance(record, RejectedQuestion):
            rejected_texts.setdefault(record.topic, set()).add(normalize(record.text))
    return _Known(
        {s.id: s for s in subtopics},
        texts,
        frozenset(r.id for r in rejected if isinstance(r, (RejectedQuestion, RejectedSubtopic))),
        rejected_texts,
    )


def _topic_of(row: QuestionRow, given: str | None, known: frozenset[str], shown: str) -> str:
    topic = given if given is not None else row.topic
    if topic is None:
        raise UsageError(f"{shown}:{row.line}: no topic: give --topic NAME or a `topic` column")
    if topic not in known:
        raise UsageError(f"{shown}:{row.line}: unknown topic `{topic}`")
    return topic


@attrs.frozen
class ImportPlan:
    """What to append: new subtopics (also listed as imported) and new questions."""

    subtopics: list[Subtopic]
    questions: list[Question]
    counts: ImportCounts


def _plan(
    settings: Settings,
    known: _Known,
    rows: Sequence[tuple[QuestionRow, str]],
    stopped: Callable[[], bool],
) -> ImportPlan:
    """The plan (blocking CPU work); raises `_Stopped` at the next row once `stopped()`."""
    pipeline = settings.pipeline
    dedups: dict[str, Deduplicator] = {}
    new_subtopics: dict[str, Subtopic] = {}
    questions: list[Question] = []
    duplicates = rejected = 0
    for number, (row, topic) in enumerate(rows):
        if stopped():
            raise _Stopped
        if number and number % PROGRESS_EVERY == 0:
            log.info("import: %d of %d question(s) checked", number, len(rows))
        name = row.subtopic or IMPORTED
        sid = subtopic_id(topic, name)
        qid = question_id(sid, row.text)
        if (
            sid in known.rejected_ids
            or qid in known.rejected_ids
            or normalize(row.text) in known.rejected_texts.get(topic, set())
        ):
            rejected += 1
            continue
        dedup = dedups.get(topic)
        if dedup is None:
            # Lexical only: an import asks no provider, so the embedder is not used.
            dedup = Deduplicator(pipeline.dedup_threshold, pipeline.embedding_threshold)
            seen = known.texts.get(topic, []) + sorted(known.rejected_texts.get(topic, ()))
            for start in range(0, len(seen), SEED_SLICE):
                if stopped():
                    raise _Stopped
                dedup.record_lexically(seen[start : start + SEED_SLICE])
            dedups[topic] = dedup
        if not dedup.admit_lexically([row.text]):
            duplicates += 1
            continue
        subtopic = known.subtopics.get(sid) or new_subtopics.setdefault(
            sid, Subtopic(sid, topic, name)
        )
        questions.append(Question(qid, topic, sid, subtopic.name, row.text))
    topics = tuple(dict.fromkeys(topic for _, topic in rows))
    counts = ImportCounts(len(questions), duplicates, rejected, topics)
    return ImportPlan(list(new_subtopics.values()), questions, counts)


async def _plan_in_thread(
    settings: Settings, known: _Known, rows: Sequence[tuple[QuestionRow, str]]
) -> ImportPlan:
    """`_plan` in a worker thread; a cancel returns at once and stops the thread at its next row
    (its partial result is dropped: it wrote nothing)."""
    stop = threading.Event()
    try:
        return await trio.to_thread.run_sync(
            lambda: _plan(settings, known, rows, stop.is_set), abandon_on_cancel=True
        )
    finally:
        stop.set()


def _write(project: Project, plan: ImportPlan) -> None:
    """Append the plan: subtopics first, so a question never names a subtopic not stored."""
    project.data.mkdir(exist_ok=True)
    if plan.subtopics:
        with open_appender(project.data_file("subtopics")) as appender:
            appender.append_all(s.to_json() for s in plan.subtopics)
        with open_appender(project.data_file(IMPORTED_FILE)) as appender:
            appender.append_all(s.to_json() for s in plan.subtopics)
    if plan.questions:
        with open_appender(project.data_file("questions")) as appender:
            appender.append_all(q.to_json() for q in plan.questions)


async def plan_import(
    project: Project, settings: Settings, path: Path, topic: str | None
) -> ImportPlan:
    """Read and check the file and find its new questions, writing nothing; a bad row is a
    UsageError. A cancel (the command's Ctrl-C) stops it promptly."""
    if topic is not None:
        select_topics(settings, [topic])
    shown = str(path)
    rows = await read_in_thread(lambda: read_question_file(path, shown))
    configured = frozenset(t.name for t in settings.topics)
    placed = await read_in_thread(
        lambda: [(row, _topic_of(row, topic, configured, shown)) for row in rows]
    )
    topics = frozenset(topic for _, topic in placed)
    known = await read_in_thread(lambda: _read_known(project, topics))
    log.info("import: checking %d question(s) for duplicates", len(placed))
    return await _plan_in_thread(settings, known, placed)


async def write_import(project: Project, plan: ImportPlan) -> ImportCounts:
    """Append the plan's subtopics and questions (whole lines, one write per file)."""
    await write_in_thread(lambda: _write(project, plan))
    return plan.counts
