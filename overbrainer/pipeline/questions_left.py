"""Whether `questions` has anything left to do, from the IDs and places of the stored lines.

The stage needs every stored question's text only to seed a topic's duplicate check, and only
for a topic with a subtopic still to fill; with every subtopic full, counting the questions
of each is enough, and a million questions are counted without building one.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from operator import itemgetter
from pathlib import Path

from overbrainer.project.directory import Project
from overbrainer.storage import Key, Subtopic, fold_matches, id_key, question_places

__all__ = ["all_filled"]


def all_filled(
    project: Project,
    selected: AbstractSet[str],
    targets: Mapping[str, int],
    subtopics: Sequence[Subtopic],
) -> dict[str, int] | None:
    """The stored questions of each of `subtopics` when each has its topic's target, else
    None. Also None when an ID is stored twice (only a force or a hand edit leaves that: the
    full read places such records). Blocking: reads `questions.jsonl`."""
    path = project.data_file("questions")
    counts = _counted_in_blocks(path, selected)
    if counts is _NOT_IN_SHAPE:
        counts = _counted(path, selected)
    if counts is None:
        return None
    filled = {subtopic.id: counts[id_key(subtopic.id)] for subtopic in subtopics}
    if all(filled[subtopic.id] >= targets[subtopic.topic] for subtopic in subtopics):
        return filled
    return None


_NOT_IN_SHAPE: collections.Counter[Key] = collections.Counter()
"""`_counted_in_blocks`' answer for a file it cannot read a block at a time."""

# A whole question line as the record's writer lays it out (`fast_place`'s shape).
_PLACE_LINE = re.compile(
    rb'\n\{"id":"([0-9a-f]{32})","topic":"([^"\\\n]*)","subtopic_id":"([0-9a-f]{32})",'
    rb'"subtopic":"[^\n]*"\}(?=\n|\Z)'
)


def _counted_in_blocks(path: Path, selected: AbstractSet[str]) -> collections.Counter[Key] | None:
    """`_counted`, a block of lines at a time; `_NOT_IN_SHAPE` for a file not in the shape."""
    topics = {topic.encode("utf-8") for topic in selected}
    counts: collections.Counter[Key] = collections.Counter()
    seen: set[Key] = set()
    twice = False

    def take(found: list[tuple[bytes, ...]]) -> None:
        nonlocal twice
        before = len(seen)
        seen.update(map(hash, map(itemgetter(0), found)))
        twice = twice or len(seen) - before < len(found)
        counts.update(hash(sub) for _, topic, sub in found if topic in topics)

    if not fold_matches(path, _PLACE_LINE, take):
        return _NOT_IN_SHAPE
    return None if twice else counts


def _counted(path: Path, selected: AbstractSet[str]) -> collections.Counter[Key] | None:
    """The stored questions of `selected` of each subtopic key; None when an ID is stored
    twice."""
    counts: collections.Counter[Key] = collections.Counter()
    seen: set[Key] = set()
    for (key, topic, subtopic), _, _, _ in question_places(path):
        if key in seen:
            return None
        seen.add(key)
        if topic in selected:
            counts[subtopic] += 1
    return counts
