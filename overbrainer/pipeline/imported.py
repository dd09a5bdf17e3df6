"""Which subtopics hold a user's imported questions, so the generating stages leave them be.

`data/imported.jsonl` lists them as subtopic records (the format of `data/subtopics.jsonl`).
They do not count toward a topic's `subtopics`, `subtopics --force` keeps them, and
`questions` never asks the generator to fill them.
"""

from __future__ import annotations

from overbrainer.project.directory import Project
from overbrainer.storage import Subtopic, read_records

IMPORTED = "Imported"
"""The subtopic of imported questions whose file names none."""

IMPORTED_FILE = "imported"
"""The data file (`data/imported.jsonl`) listing the subtopics the import made."""


def imported_ids(project: Project) -> frozenset[str]:
    """The IDs of the subtopics an import made (blocking: reads)."""
    path = project.data_file(IMPORTED_FILE)
    return frozenset(subtopic.id for subtopic in read_records(path, Subtopic.from_json))
