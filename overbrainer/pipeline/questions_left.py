"""Whether `questions` has anything left to do, from the IDs and places of the stored lines.

The stage needs every stored question's text only to seed a topic's duplicate check, and only
for a topic with a subtopic still to fill; with every subtopic full, counting the questions
of each is enough, and a million questions are counted without building one.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

from overbrainer.project.directory import Project
from overbrainer.storage import Key, Subtopic, id_key, question_places

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
    counts: collections.Counter[Key] = collections.Counter()
    seen: set[Key] = set()
    for (key, topic, subtopic), _, _, _ in question_places(project.data_file("questions")):
        if key in seen:
            return None
        seen.add(key)
        if topic in selected:
            counts[subtopic] += 1
    filled = {subtopic.id: counts[id_key(subtopic.id)] for subtopic in subtopics}
    if all(filled[subtopic.id] >= targets[subtopic.topic] for subtopic in subtopics):
        return filled
    return None
