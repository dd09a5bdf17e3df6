"""What every batch API module speaks: items, statuses, results and the `BatchApi` protocol."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Protocol as TypingProtocol

import attrs

from overbrainer.llm.errors import LlmError
from overbrainer.llm.types import Completion, CompletionRequest, Json


@attrs.frozen
class BatchItem:
    """One request of a batch; `custom_id` names it in the results (a question's ID)."""

    custom_id: str
    request: CompletionRequest


@attrs.frozen
class BatchStatus:
    """Where a batch stands: the provider's state word, whether it ended, its raw object."""

    state: str
    ended: bool
    raw: Json = None


@attrs.frozen
class BatchResult:
    """One item of an ended batch: its answer, or why it has none."""

    custom_id: str
    completion: Completion | None
    error: str | None = None


class BatchApi(TypingProtocol):
    """What the batch stage needs of a provider's batch API."""

    max_requests: int
    """The most requests one batch may hold."""
    max_bytes: int
    """The most bytes of encoded requests one batch may hold."""

    def size(self, item: BatchItem) -> int:
        """The bytes `item` takes in a batch."""
        ...

    async def submit(self, items: Sequence[BatchItem], tag: str) -> str:
        """Submit `items` as one batch; its ID. `tag` goes along where the API keeps it."""
        ...

    async def status(self, batch_id: str) -> BatchStatus:
        """The batch's state now."""
        ...

    async def results(self, batch_id: str, status: BatchStatus) -> list[BatchResult]:
        """The items of an ended batch that have a result line."""
        ...

    async def cancel(self, batch_id: str) -> None:
        """Ask the provider to cancel the batch (it ends later)."""
        ...

    async def find(self, tag: str) -> str | None:
        """The ID of a batch submitted with `tag`, when the API can list batches by it."""
        ...


def jsonl_results(text: str, result_of: Callable[[Json], BatchResult | None]) -> list[BatchResult]:
    """The results of a JSONL result file: each line `result_of` reads (blank, non-JSON and
    unreadable lines skipped)."""
    found = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        try:
            line: Json = json.loads(raw)
        except ValueError:
            continue
        result = result_of(line)
        if result is not None:
            found.append(result)
    return found


class NotSubmitted(LlmError):
    """A submit that failed before the provider could make the batch (its input file never
    got there): unlike a create with no answer, nothing may be running to reconcile later."""

    def __init__(self, cause: LlmError) -> None:
        super().__init__(cause.message)
        self.cause = cause

    @property
    def stops_stage(self) -> bool:
        return self.cause.stops_stage
