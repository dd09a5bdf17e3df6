"""The dataset files as the TUI's edits write them: each write one append or one compaction.

An append is one `write` then an fsync (a crash keeps all of its records or none); a drop is
one compaction through the atomic writer. Blocking: call them in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from overbrainer.pipeline.replacing import kind_of
from overbrainer.project.directory import Project
from overbrainer.storage import (
    Example,
    Head,
    Question,
    RecordKind,
    RejectedQuestion,
    RejectedSubtopic,
    Subtopic,
    compact,
    open_appender,
    read_current,
    read_records,
    rejected_from_json,
)

Record = Subtopic | Question | Example
Rejected = RejectedSubtopic | RejectedQuestion

PARSERS: dict[str, Callable[[str], Record]] = {
    "subtopics": Subtopic.from_json,
    "questions": Question.from_json,
    "answers": Example.from_json,
}
"""The data files a record of which can be edited or deleted, with their parsers."""

NOUNS = {"subtopics": "subtopic", "questions": "question", "answers": "answer"}

REJECTED = "rejected"


def counted(count: int, noun: str) -> str:
    """`1 question`, `3 questions`."""
    return f"{count} {noun}{'s' if count != 1 else ''}"


def stored(project: Project, name: str) -> list[Record]:
    """The records of `data/<name>.jsonl` as the stages read them."""
    kind = kind_of(project, name)
    return read_current(kind.data, kind.state, PARSERS[name], lambda record: record.id)


def rejected(project: Project) -> list[Rejected]:
    """Every record of `data/rejected.jsonl`."""
    return read_records(project.data_file(REJECTED), rejected_from_json)


def add(project: Project, name: str, records: Iterable[Record | Rejected]) -> None:
    """Append `records` to `data/<name>.jsonl` in one write, synced before this returns."""
    lines = [record.to_json() for record in records]
    if lines:
        with open_appender(project.data_file(name)) as out:
            out.append_all(lines)


def replace(project: Project, name: str, records: Iterable[Record]) -> None:
    """Store `records` in place of the records of their IDs (the later line of an ID wins,
    then the compaction drops the earlier one)."""
    new = list(records)
    if new:
        add(project, name, new)
        compact(kind_of(project, name), set())


def drop(project: Project, name: str, ids: set[str]) -> None:
    """Compact the records of `ids` out of `data/<name>.jsonl` (subtopics, questions,
    answers or rejected)."""
    if ids:
        compact(_rejected_kind(project) if name == REJECTED else kind_of(project, name), ids)


def reject(project: Project, record: Subtopic | Question) -> None:
    """Record `record` in `data/rejected.jsonl` (once), synced before this returns."""
    entry: Rejected
    if isinstance(record, Subtopic):
        entry = RejectedSubtopic(record.id, record.topic, record.name)
    else:
        entry = RejectedQuestion(record.id, record.topic, record.subtopic_id, record.text)
    if entry not in rejected(project):
        add(project, REJECTED, [entry])


def _rejected_head(line: str) -> Head:
    record = rejected_from_json(line)
    key = record.subtopic_id if isinstance(record, RejectedQuestion) else record.topic
    return record.id, record.topic, key


def _rejected_kind(project: Project) -> RecordKind:
    # The compaction reads only `data` and `head`: rejected records are never forced.
    return RecordKind(
        project.data_file(REJECTED), project.force_state(REJECTED), _rejected_head, False
    )
