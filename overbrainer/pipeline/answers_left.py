"""What `answers` has left to do, read from the IDs and topics of the stored lines alone.

With a million answers stored, building every question and reading every answer record only
to find nothing left cost the stage most of its time and memory. This keeps the answered
ID keys (`Key`: a 64-bit hash each) and builds a `Question` only for a question to answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from itertools import repeat
from operator import itemgetter

import attrs

from overbrainer.project.directory import Project
from overbrainer.storage import (
    Key,
    Question,
    answer_ids,
    dropped_ids,
    fold_answer_keys,
    fold_lines,
    id_key,
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
    keys: set[Key] = set()
    _each_answer_key(project, keys.update, keys.clear)
    return keys


def _answered(project: Project) -> dict[Key, bool]:
    """`answered_keys`, each not yet counted (False). Blocking: reads `answers.jsonl`."""
    answered: dict[Key, bool] = {}

    def take(keys: Iterator[Key]) -> None:
        answered.update(zip(keys, repeat(False)))

    _each_answer_key(project, take, answered.clear)
    return answered


def _each_answer_key(
    project: Project, take: Callable[[Iterator[Key]], None], restart: Callable[[], None]
) -> None:
    """Give `take` the stored answers' ID keys: a block at a time for a file in our writer's
    shape, else (after `restart`) line by line."""
    path = project.data_file("answers")
    if not fold_answer_keys(path, take):
        restart()
        take(key for key, _, _, _ in answer_ids(path))


def answers_left(project: Project, selected: AbstractSet[str], redo: AbstractSet[str]) -> Left:
    """What `pending_questions` says, for the questions readers see (`read_current`): the
    last record of an ID at its own place, none that a questions force dropped.

    A question is answered when `answers.jsonl` has a record of its ID, unless it is in
    `redo` (an answers force is still to replace that record). Blocking: reads both files.
    """
    walk = _Walk(
        _answered(project),
        {id_key(found) for found in dropped_ids(project.force_state("questions"))},
        redo,
        {id_key(found) for found in redo},
    )
    topics = {topic.encode("utf-8") for topic in selected}
    path = project.data_file("questions")
    if not fold_lines(path, lambda lines: walk.block(lines, topics)):
        # Anew: the blocks read so far counted some answered keys.
        answered = dict.fromkeys(walk.answered, False)
        walk = _Walk(answered, walk.dropped, walk.redo, walk.redo_keys)
        for (key, topic), view, start, end in question_heads(path):
            walk.question(key, topic in selected, view[start:end])
    return Left(list(walk.pending.values()), walk.skipped, set(redo) - walk.seen)


# A question line's head as the record's writer lays it out (`question_heads`' shape).
_QUESTION = re.compile(rb'\{"id":"([0-9a-f]{32})","topic":"([^"\\]*)","subtopic_id":"')


@attrs.define
class _Walk:
    """The questions file read in order, against the answered keys (each True once a question
    of it is counted as answered: a later record of the same ID takes the earlier one's place,
    so its count is taken back)."""

    answered: dict[Key, bool]
    dropped: set[Key]
    redo: AbstractSet[str]
    redo_keys: set[Key]
    pending: dict[Key, Question] = attrs.Factory(dict)
    seen: set[str] = attrs.Factory(set)
    skipped: int = 0

    def question(self, key: Key, chosen: bool, line: bytes | memoryview) -> None:
        """A question line of ID key `key`, of a selected topic when `chosen`."""
        if key in self.dropped:
            return
        # Redoing is paid work again: decided on the exact ID, never on a shared key.
        again = False
        if key in self.redo_keys:
            exact = Question.from_json(bytes(line)).id
            again = exact in self.redo
            if again:
                self.seen.add(exact)
        if self.pending.pop(key, None) is None and self.answered.get(key):
            self.answered[key] = False
            self.skipped -= 1
        if not chosen:
            return
        if self.answered.get(key) is False and not again:
            self.answered[key] = True
            self.skipped += 1
        else:
            self.pending[key] = Question.from_json(bytes(line))

    def block(self, lines: list[bytes], topics: set[bytes]) -> bool:
        """A block of question lines (`fold_lines`), in a few calls when each is an answered
        question of a selected topic, counted once; False when a line is not in the shape."""
        heads = list(map(_QUESTION.match, lines))
        if None in heads or not all(map(bytes.endswith, lines, repeat(b'"}'))):
            return False
        keys = list(map(hash, map(itemgetter(1), heads)))  # type: ignore[arg-type]
        names = list(map(itemgetter(2), heads))  # type: ignore[arg-type]
        if not (self.dropped or self.redo_keys) and topics.issuperset(names):
            # A key counted False is never pending (see `question`): these are only counted.
            states = list(map(self.answered.get, keys))
            if True not in states and None not in states and len(set(keys)) == len(keys):
                self.answered.update(zip(keys, repeat(True)))
                self.skipped += len(keys)
                return True
        for key, name, line in zip(keys, names, lines, strict=True):
            self.question(key, name in topics, line)
        return True
