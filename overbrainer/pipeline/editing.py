"""Editing the dataset one record at a time: the TUI's Dataset view `e` and `d`.

A record is replaced the way `--force` replaces one (`overbrainer.storage.replacement`): the
new record is appended under the same ID, then the file is compacted through the one atomic
writer, so a reader sees the old record or the new one, never neither. An edit that changes
an ID (a question's text, a subtopic's name: `overbrainer.pipeline.rekeying`) appends the new
records parents first and drops the old ones dependants first, so an answer never points to a
missing question. A delete records the deleted subtopic or question in `data/rejected.jsonl`
(durably, before anything is removed: the stages never make it again), then compacts the
record away with what hangs from it: a subtopic's questions, and a question's answer (an
answer has its question's ID). Blocking: call them in a worker thread.
"""

from __future__ import annotations

import json

import attrs

from overbrainer.model.errors import UsageError
from overbrainer.pipeline.dataset_files import (
    NOUNS,
    PARSERS,
    Record,
    counted,
    drop,
    reject,
    replace,
    stored,
)
from overbrainer.pipeline.rekeying import edit_question, edit_subtopic
from overbrainer.project.directory import Project
from overbrainer.storage import Example, Question, Subtopic


def _find(project: Project, name: str, record_id: str) -> Record:
    if name not in PARSERS:
        raise UsageError(f"data/{name}.jsonl has no editable records")
    found = next((r for r in stored(project, name) if r.id == record_id), None)
    if found is None:
        raise UsageError(f"{NOUNS[name]} {record_id} is no longer in data/{name}.jsonl")
    return found


def record_text(project: Project, name: str, record_id: str) -> str:
    """The record `record_id` of `data/<name>.jsonl` as pretty JSON, for an editor."""
    line = _find(project, name, record_id).to_json()
    return json.dumps(json.loads(line), indent=2, ensure_ascii=False) + "\n"


@attrs.frozen
class Edited:
    """What an edit did: `line` says it in words; `new_id` differs from `old_id` when the
    edit gave the record a new ID; `changed` is False when nothing was written."""

    old_id: str
    new_id: str
    line: str
    changed: bool = True


def _parsed(name: str, text: str) -> Record:
    try:
        try:
            value = json.loads(text)
        except ValueError as error:
            raise ValueError(f"not JSON: {error}") from None
        return PARSERS[name](json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    except ValueError as error:
        raise UsageError(f"the edited {NOUNS[name]} is not valid: {error}") from None


def replace_record(project: Project, name: str, record_id: str, text: str) -> Edited:
    """Store `text` (the edited record) in place of `record_id`, keeping the IDs consistent.

    A question whose text no longer normalizes the same gets a new ID (its answer is dropped);
    a subtopic renamed so gets a new ID, and so do its questions, their answers and its
    rejected questions. An invalid record, or one whose `id` the user changed, is refused
    (UsageError) and nothing is written.
    """
    old = _find(project, name, record_id)
    new = _parsed(name, text)
    noun = NOUNS[name]
    if new.id != record_id:
        raise UsageError(f"the edited {noun} changes its id: it must stay {record_id}")
    if new == old:
        return Edited(record_id, record_id, f"{noun} {record_id} unchanged", changed=False)
    if isinstance(old, Question) and isinstance(new, Question):
        new_id, what = edit_question(project, old, new)
    elif isinstance(old, Subtopic) and isinstance(new, Subtopic):
        new_id, what = edit_subtopic(project, old, new)
    else:
        replace(project, name, [new])
        new_id, what = record_id, ""
    return Edited(record_id, new_id, f"{noun} {record_id} edited{what}")


@attrs.frozen
class Deleted:
    """What a delete removed, per data file, and whether it was recorded as rejected."""

    subtopics: int = 0
    questions: int = 0
    answers: int = 0
    rejected: bool = False

    def line(self, name: str, record_id: str) -> str:
        """The delete in words: `deleted question ID (and 1 answer), now rejected`."""
        more = [
            counted(count, noun)
            for count, noun in ((self.questions, "question"), (self.answers, "answer"))
            if count and noun != NOUNS[name]
        ]
        extra = f" (and {', '.join(more)})" if more else ""
        rejected = ", now rejected" if self.rejected else ""
        return f"deleted {NOUNS[name]} {record_id}{extra}{rejected}"


def delete_record(project: Project, name: str, record_id: str) -> Deleted:
    """Remove `record_id` from `data/<name>.jsonl` with what hangs from it (see the module).

    A subtopic or question is first recorded in `data/rejected.jsonl`: a crash then leaves it
    rejected and still stored, never deleted and made again by the next stage. The dependants
    go first: an interruption leaves the record with fewer dependants, never a dependant
    whose parent is gone.
    """
    record = _find(project, name, record_id)
    if isinstance(record, Subtopic | Question):
        reject(project, record)
    questions: set[str] = set()
    if isinstance(record, Subtopic):
        questions = {
            r.id
            for r in stored(project, "questions")
            if isinstance(r, Question) and r.subtopic_id == record_id
        }
    elif isinstance(record, Question):
        questions = {record_id}
    answers = {
        r.id
        for r in stored(project, "answers")
        if isinstance(r, Example) and r.id in questions | {record_id}
    }
    drop(project, "answers", answers)
    if isinstance(record, Subtopic):
        drop(project, "questions", questions)
    if not isinstance(record, Example):
        drop(project, name, {record_id})
    return Deleted(
        subtopics=int(isinstance(record, Subtopic)),
        questions=len(questions),
        answers=len(answers),
        rejected=not isinstance(record, Example),
    )
