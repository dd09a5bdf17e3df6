"""What `answers` has left to do, read from the IDs and topics of the stored lines alone.

With a million answers stored, building every question and reading every answer record only
to find nothing left cost the stage most of its time and memory. This keeps a set of the
answered ID keys and builds a `Question` only for a question still to answer.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

import attrs

from overbrainer.project.directory import Project
from overbrainer.storage import (
    Key,
    Question,
    answer_ids,
    dropped_ids,
    id_key,
    key_id,
    question_heads,
)

__all__ = ["Left", "answers_left"]


@attrs.frozen
class Left:
    """The selected questions to answer, in file order (as `current` places them); how many
    are answered; which of a force's `redo` IDs no longer have a question."""

    pending: list[Question]
    skipped: int
    gone: set[str]


def answered_keys(project: Project) -> set[Key]:
    """The ID key of every stored answer. Blocking: reads `answers.jsonl`."""
    return {key for key, _, _, _ in answer_ids(project.data_file("answers"))}


def answers_left(project: Project, selected: AbstractSet[str], redo: AbstractSet[str]) -> Left:
    """What `pending_questions` says, for the questions readers see (`read_current`): the
    last record of an ID at its own place, none that a questions force dropped.

    A question is answered when `answers.jsonl` has a record of its ID, unless it is in
    `redo` (an answers force is still to replace that record). Blocking: reads both files.
    """
    answered = answered_keys(project)
    dropped = {id_key(found) for found in dropped_ids(project.force_state("questions"))}
    redo_keys = {id_key(found) for found in redo}
    pending: dict[Key, Question] = {}
    # Questions counted as answered, moved out of `answered`: a later record of the same ID
    # takes the earlier one's place, so its count is taken back.
    counted: set[Key] = set()
    seen: set[Key] = set()
    skipped = 0
    for (key, topic), view, start, end in question_heads(project.data_file("questions")):
        if key in dropped:
            continue
        if key in redo_keys:
            seen.add(key)
        if pending.pop(key, None) is None and key in counted:
            counted.remove(key)
            answered.add(key)
            skipped -= 1
        if topic not in selected:
            continue
        if key in answered and key not in redo_keys:
            answered.remove(key)
            counted.add(key)
            skipped += 1
        else:
            pending[key] = Question.from_json(bytes(view[start:end]))
    gone = {key_id(key) for key in redo_keys - seen}
    return Left(list(pending.values()), skipped, gone)
