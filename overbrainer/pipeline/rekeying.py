"""Edits that may change IDs: a question's text, a subtopic's name (the reference's rules).

An ID is a hash of the normalized text (`overbrainer.storage.ids`), so an edit that keeps the
normalized text keeps the ID, and its dependants only take the new wording. Otherwise the
record is re-keyed: the new records are appended parents first, then the old ones are
compacted away dependants first. A crash in between leaves both old and new records, each
answer with its question and each question with its subtopic; never an answer whose question
is gone. Blocking: call them in a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from overbrainer.model.errors import UsageError
from overbrainer.pipeline.dataset_files import (
    REJECTED,
    add,
    counted,
    drop,
    rejected,
    replace,
    stored,
)
from overbrainer.project.directory import Project
from overbrainer.storage import (
    Example,
    Question,
    RejectedQuestion,
    Subtopic,
    question_id,
    subtopic_id,
)

ASKS_AGAIN = "its answer dropped (overbrainer answers asks again)"


def _only(noun: str, field: str, old: object, new: object, fields: Iterable[str]) -> None:
    """Refuse an edit of any of `fields` but `field`: they follow from the record's parent."""
    for name in fields:
        if name != field and getattr(old, name) != getattr(new, name):
            raise UsageError(f"the edited {noun} changes its {name}: only its {field} can change")
    if not str(getattr(new, field)).strip():
        raise UsageError(f"the edited {noun} has an empty {field}")


def _answers(project: Project, ids: set[str]) -> list[Example]:
    return [r for r in stored(project, "answers") if isinstance(r, Example) and r.id in ids]


def _asking(answer: Example, text: str) -> Example:
    """`answer` with `text` as its user message (the question it answers)."""
    messages = tuple(
        attrs.evolve(m, content=text) if m.role == "user" else m for m in answer.messages
    )
    return attrs.evolve(answer, messages=messages)


def _user_text(answer: Example) -> str | None:
    return next((m.content for m in answer.messages if m.role == "user"), None)


def edit_question(project: Project, old: Question, new: Question) -> tuple[str, str]:
    """Store the edited question `new` (only its text may change): its ID and the edit's
    rest of line (`: new id …, its answer dropped …`)."""
    _only("question", "text", old, new, ("topic", "subtopic_id", "subtopic", "text"))
    new_id = question_id(old.subtopic_id, new.text)
    answers = _answers(project, {old.id})
    if new_id == old.id:
        replace(project, "questions", [new])
        updated = [_asking(a, new.text) for a in answers if _user_text(a) != new.text]
        replace(project, "answers", updated)
        return old.id, ": same id, its answer's user message updated" if updated else ": same id"
    if any(r.id == new_id for r in stored(project, "questions")):
        raise UsageError(f"the edited question has the text of question {new_id}")
    # The answer goes first: a crash then leaves the old question unanswered, never an
    # answer without its question.
    drop(project, "answers", {old.id})
    add(project, "questions", [attrs.evolve(new, id=new_id)])
    drop(project, "questions", {old.id})
    return new_id, f": new id {new_id}" + (f", {ASKS_AGAIN}" if answers else "")


def edit_subtopic(project: Project, old: Subtopic, new: Subtopic) -> tuple[str, str]:
    """Store the edited subtopic `new` (only its name may change): its ID and the edit's rest
    of line. A new normalized name re-keys its questions, their answers and its rejected
    questions."""
    _only("subtopic", "name", old, new, ("topic", "name"))
    new_id = subtopic_id(old.topic, new.name)
    questions = [
        r
        for r in stored(project, "questions")
        if isinstance(r, Question) and r.subtopic_id == old.id
    ]
    if new_id == old.id:
        return old.id, _rename(project, new, questions)
    if any(r.id == new_id for r in stored(project, "subtopics")):
        raise UsageError(f"the edited subtopic has the name of subtopic {new_id}")
    return new_id, _rekey(project, old, attrs.evolve(new, id=new_id), questions)


def _rename(project: Project, new: Subtopic, questions: list[Question]) -> str:
    """The same ID under a new wording: its questions and answers take the new name."""
    renamed = [attrs.evolve(q, subtopic=new.name) for q in questions if q.subtopic != new.name]
    answers = [
        attrs.evolve(a, subtopic=new.name)
        for a in _answers(project, {q.id for q in questions})
        if a.subtopic != new.name
    ]
    replace(project, "subtopics", [new])
    replace(project, "questions", renamed)
    replace(project, "answers", answers)
    parts = [
        counted(len(records), noun)
        for records, noun in ((renamed, "question"), (answers, "answer"))
        if records
    ]
    return ": same id" + (f", its name updated in {', '.join(parts)}" if parts else "")


def _rekey(project: Project, old: Subtopic, new: Subtopic, questions: list[Question]) -> str:
    """Move the subtopic, its questions, their answers and its rejected questions to new IDs:
    the new records are added parents first, the old ones dropped dependants first."""
    moved = {
        q.id: attrs.evolve(q, id=question_id(new.id, q.text), subtopic_id=new.id, subtopic=new.name)
        for q in questions
    }
    answers = [
        attrs.evolve(a, id=moved[a.id].id, subtopic=new.name) for a in _answers(project, set(moved))
    ]
    refused = [r for r in rejected(project) if isinstance(r, RejectedQuestion)]
    refused = [r for r in refused if r.subtopic_id == old.id]
    rekeyed = [
        RejectedQuestion(question_id(new.id, r.text), r.topic, new.id, r.text) for r in refused
    ]
    add(project, "subtopics", [new])
    add(project, REJECTED, rekeyed)
    add(project, "questions", moved.values())
    add(project, "answers", answers)
    drop(project, "answers", set(moved))
    drop(project, "questions", set(moved))
    drop(project, REJECTED, {r.id for r in refused})
    drop(project, "subtopics", {old.id})
    parts = [counted(len(moved), "question"), counted(len(answers), "answer")]
    if rekeyed:
        parts.append(counted(len(rekeyed), "rejected question"))
    return f": new id {new.id}, re-keyed {', '.join(parts)}"
