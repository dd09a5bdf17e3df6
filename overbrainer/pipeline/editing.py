"""Editing the dataset one record at a time: the TUI's Dataset view `e` and `d`.

A record is replaced the way `--force` replaces one (`overbrainer.storage.replacement`): the
new record is appended under the same ID, then the file is compacted through the one atomic
writer, so a reader sees the old record or the new one, never neither. A delete compacts the
record away, with what hangs from it: a subtopic's questions, and a question's answer (an
answer has its question's ID). Blocking: call them in a worker thread.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import attrs

from overbrainer.model.errors import UsageError
from overbrainer.pipeline.replacing import kind_of
from overbrainer.project.directory import Project
from overbrainer.storage import Example, Question, Subtopic, compact, open_appender, read_current

Record = Subtopic | Question | Example

PARSERS: dict[str, Callable[[str], Record]] = {
    "subtopics": Subtopic.from_json,
    "questions": Question.from_json,
    "answers": Example.from_json,
}
"""The data files a record of which can be edited or deleted, with their parsers."""

NOUNS = {"subtopics": "subtopic", "questions": "question", "answers": "answer"}


def _records(project: Project, name: str) -> list[Record]:
    kind = kind_of(project, name)
    return read_current(kind.data, kind.state, PARSERS[name], lambda record: record.id)


def _find(project: Project, name: str, record_id: str) -> Record:
    if name not in PARSERS:
        raise UsageError(f"data/{name}.jsonl has no editable records")
    found = next((r for r in _records(project, name) if r.id == record_id), None)
    if found is None:
        raise UsageError(f"{NOUNS[name]} {record_id} is no longer in data/{name}.jsonl")
    return found


def record_text(project: Project, name: str, record_id: str) -> str:
    """The record `record_id` of `data/<name>.jsonl` as pretty JSON, for an editor."""
    line = _find(project, name, record_id).to_json()
    return json.dumps(json.loads(line), indent=2, ensure_ascii=False) + "\n"


def replace_record(project: Project, name: str, record_id: str, text: str) -> bool:
    """Store `text` (the edited record) in place of `record_id`; False when it is unchanged.

    An invalid record, or one whose ID changed, is refused (UsageError) and nothing is written.
    """
    old = _find(project, name, record_id)
    try:
        try:
            value = json.loads(text)
        except ValueError as error:
            raise ValueError(f"not JSON: {error}") from None
        new = PARSERS[name](json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    except ValueError as error:
        raise UsageError(f"the edited {NOUNS[name]} is not valid: {error}") from None
    if new.id != record_id:
        raise UsageError(f"the edited {NOUNS[name]} changes its id: it must stay {record_id}")
    if new == old:
        return False
    kind = kind_of(project, name)
    with open_appender(kind.data) as out:
        out.append(new.to_json())  # the later record of an ID wins, then compact drops the old
    compact(kind, set())
    return True


@attrs.frozen
class Deleted:
    """What a delete removed, per data file."""

    subtopics: int = 0
    questions: int = 0
    answers: int = 0

    def line(self, name: str, record_id: str) -> str:
        """The delete in words: `deleted question ID (and 1 answer)`."""
        more = [
            f"{count} {noun}{'s' if count != 1 else ''}"
            for count, noun in ((self.questions, "question"), (self.answers, "answer"))
            if count and noun != NOUNS[name]
        ]
        extra = f" (and {', '.join(more)})" if more else ""
        return f"deleted {NOUNS[name]} {record_id}{extra}"


def delete_record(project: Project, name: str, record_id: str) -> Deleted:
    """Remove `record_id` from `data/<name>.jsonl` with what hangs from it (see the module).

    The dependants go first: an interruption leaves the record with fewer dependants, never
    a dependant whose parent is gone.
    """
    _find(project, name, record_id)
    questions: set[str] = set()
    if name == "subtopics":
        questions = {
            r.id
            for r in _records(project, "questions")
            if isinstance(r, Question) and r.subtopic_id == record_id
        }
    elif name == "questions":
        questions = {record_id}
    answers = {r.id for r in _records(project, "answers") if r.id in questions | {record_id}}
    if answers:
        compact(kind_of(project, "answers"), answers)
    if name == "subtopics" and questions:
        compact(kind_of(project, "questions"), questions)
    if name != "answers":
        compact(kind_of(project, name), {record_id})
    return Deleted(
        subtopics=int(name == "subtopics"),
        questions=len(questions),
        answers=len(answers),
    )
