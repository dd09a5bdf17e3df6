"""`import questions`: a user's own questions added to `data/questions.jsonl` like generated ones.

Each topic's questions go through the questions stage's deduplicator, seeded with the topic's
stored and rejected questions: an exact or near duplicate is skipped and counted. A question
rejected in the TUI (its ID, or its normalized text in its topic) stays rejected, and so does
every question of a rejected subtopic. Everything is read and checked before the first write.

The reading of the stored questions and the checking (`plan_import`) are CPU work of seconds to
minutes for a big project or file: they run in worker threads that look for a cancel (Ctrl-C)
every few milliseconds (`trio.from_thread.check_cancelled`) and stop there, so the event loop
stays free to see the signal, nothing is left running and nothing is written; the writing
(`write_import`) is one append per file.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

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
    dropped_ids,
    id_key,
    normalize,
    open_appender,
    question_heads,
    question_id,
    read_current,
    read_records,
    rejected_from_json,
    subtopic_id,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

CHECK_EVERY = 1_000
"""Stored lines read between two looks for a cancel (a few milliseconds at most)."""

PROGRESS_EVERY = 10_000
"""Rows checked between two progress lines (about a second of work)."""


class ImportInterrupted(OverbrainerError):
    """Ctrl-C (or SIGTERM) stopped the import before its write: nothing was added (exit 130)."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self) -> None:
        super().__init__("interrupted: nothing was imported; run the import again to add it")


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
    dedups: dict[str, Deduplicator]
    """Each of the import's topics' deduplicator, seeded with its stored and rejected
    questions and ranked."""
    rejected_ids: frozenset[str]
    rejected_texts: dict[str, set[str]]


def _read_known(
    project: Project, topics: frozenset[str], settings: Settings, checkpoint: Callable[[], None]
) -> _Known:
    """Stored subtopics, the rejected questions, and the `topics`' deduplicators seeded with
    their stored questions as readers see them (blocking; `checkpoint` is called every
    `CHECK_EVERY` lines and through the ranking: what it raises stops the read).

    Nothing is kept of a stored question but its bigrams, in its topic's index, and a line of
    another topic is not parsed past its ID and topic (`question_heads`). A question stored
    twice under one ID (a `--force` not yet settled: the same subtopic and text) is seeded
    twice, which changes no decision.
    """
    pipeline = settings.pipeline
    subtopics = read_current(
        project.data_file("subtopics"),
        project.force_state("subtopics"),
        Subtopic.from_json,
        lambda subtopic: subtopic.id,
    )
    rejected = read_records(project.data_file("rejected"), rejected_from_json)
    rejected_texts: dict[str, set[str]] = {}
    for record in rejected:
        if isinstance(record, RejectedQuestion):
            rejected_texts.setdefault(record.topic, set()).add(normalize(record.text))
    # Lexical only: an import asks no provider, so the embedder is not used.
    dedups = {
        topic: Deduplicator(pipeline.dedup_threshold, pipeline.embedding_threshold)
        for topic in sorted(topics)
    }
    dropped = {id_key(gone) for gone in dropped_ids(project.force_state("questions"))}
    lines = question_heads(project.data_file("questions"))
    for number, ((key, topic), view, start, end) in enumerate(lines):
        if number % CHECK_EVERY == 0:
            checkpoint()
        dedup = dedups.get(topic)
        if dedup is not None and key not in dropped:
            line = bytes(view[start:end]).decode("utf-8")
            dedup.record_lexically((Question.from_json(line).text,))
    for topic, dedup in dedups.items():
        dedup.record_lexically(sorted(rejected_texts.get(topic, ())))
        checkpoint()
        dedup.prepare_lexically(checkpoint)
    return _Known(
        {s.id: s for s in subtopics},
        dedups,
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
    known: _Known, rows: Sequence[tuple[QuestionRow, str]], checkpoint: Callable[[], None]
) -> ImportPlan:
    """The plan (blocking CPU work); `checkpoint` is called at every row and through a
    ranking: what it raises stops the plan."""
    new_subtopics: dict[str, Subtopic] = {}
    questions: list[Question] = []
    duplicates = rejected = 0
    for number, (row, topic) in enumerate(rows):
        checkpoint()
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
        dedup = known.dedups[topic]
        # The index ranks itself again as the admitted rows double it: seconds at a time.
        dedup.prepare_lexically(checkpoint)
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


async def _checked_in_thread(work: Callable[[Callable[[], None]], T]) -> T:
    """`work(checkpoint)` in a worker thread that a cancel stops at its next checkpoint (and
    is waited for: nothing keeps running once the command has stopped)."""
    return await trio.to_thread.run_sync(lambda: work(trio.from_thread.check_cancelled))


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
    log.info("import: reading the stored questions of %s", ", ".join(sorted(topics)))
    known = await _checked_in_thread(lambda check: _read_known(project, topics, settings, check))
    log.info("import: checking %d question(s) for duplicates", len(placed))
    return await _checked_in_thread(lambda check: _plan(known, placed, check))


async def write_import(project: Project, plan: ImportPlan) -> ImportCounts:
    """Append the plan's subtopics and questions (whole lines, one write per file)."""
    await write_in_thread(lambda: _write(project, plan))
    return plan.counts
