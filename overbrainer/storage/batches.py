"""Batch records: which provider batch holds which questions, under `.overbrainer/batches/`.

An intent (`intent-<tag>.json`) is written before a batch is submitted; the record
(`<batch id>.json`) right after the provider answers with its ID, then the intent is removed.
A record is removed once the batch's results are stored. Both are written atomically.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from overbrainer.model import codec
from overbrainer.storage.atomic import sync_directory, write_atomic
from overbrainer.storage.errors import InvalidRecord

_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,200}$")
INTENT_PREFIX = "intent-"


class BadBatchId(ValueError):
    """A provider's batch ID that cannot name a file."""


@codec.record(
    "batch record",
    style=codec.Style.SPACED,
    strict=False,
    order=("id", "tag", "provider", "model", "created", "questions"),
)
@attrs.frozen
class BatchRecord(codec.JsonRecord):
    """A submitted batch (`id` set) or an intent to submit one (`id` None).

    `tag`: the intent's unique name, sent with the batch where the API keeps metadata, so a
    batch submitted just before a crash can be found again.
    """

    tag: str
    provider: str
    model: str
    questions: tuple[str, ...]
    created: str
    id: str | None = None

    def path(self, directory: Path) -> Path:
        """Where the record (or intent) lives in `directory`."""
        if self.id is None:
            return directory / f"{INTENT_PREFIX}{self.tag}.json"
        if not _SAFE_ID.match(self.id):
            raise BadBatchId(f"the provider's batch ID {self.id!r} cannot name a file")
        return directory / f"{self.id}.json"


def write_batch(directory: Path, record: BatchRecord) -> None:
    """Store `record` (an intent without an ID) atomically, creating `directory` if needed."""
    directory.mkdir(parents=True, exist_ok=True)
    write_atomic(record.path(directory), record.to_json() + "\n")


def submitted(directory: Path, record: BatchRecord, batch_id: str) -> BatchRecord:
    """Record the batch `record` intended under its provider ID, then drop the intent."""
    stored = attrs.evolve(record, id=batch_id)
    write_batch(directory, stored)
    remove_batch(directory, record)
    return stored


def remove_batch(directory: Path, record: BatchRecord) -> None:
    """Remove a record or intent (missing is fine), durably."""
    record.path(directory).unlink(missing_ok=True)
    sync_directory(directory)


def read_batches(directory: Path) -> list[BatchRecord]:
    """Every record and intent in `directory`, oldest first; `DataError` names a bad file."""
    if not directory.is_dir():
        return []
    records = []
    for path in sorted(directory.glob("*.json")):
        try:
            records.append(BatchRecord.from_json(path.read_text(encoding="utf-8")))
        except ValueError as error:
            raise InvalidRecord(f"{path}: not a batch record", str(error)) from None
    return sorted(records, key=lambda record: (record.created, record.tag))


def batched_questions(directory: Path) -> set[str]:
    """The IDs of every question in a recorded batch or intent of `directory`."""
    return {question for record in read_batches(directory) for question in record.questions}
