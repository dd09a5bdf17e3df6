"""Anthropic's Message Batches API: `/messages/batches` with the requests inline."""

from __future__ import annotations

import json
from collections.abc import Sequence

from overbrainer.llm import anthropic
from overbrainer.llm.batches.types import BatchItem, BatchResult, BatchStatus, jsonl_results
from overbrainer.llm.errors import InvalidResponse
from overbrainer.llm.http import HttpClient
from overbrainer.llm.types import Json

PATH = "messages/batches"
MAX_REQUESTS = 100_000
MAX_BYTES = 256 * 1024 * 1024


def _obj(value: Json) -> dict[str, Json]:
    return value if isinstance(value, dict) else {}


def _text(value: Json) -> str | None:
    return value if isinstance(value, str) and value else None


def request_of(model: str, item: BatchItem) -> dict[str, Json]:
    """One entry of `requests`: `{custom_id, params}`, params as for `POST /messages`."""
    return {"custom_id": item.custom_id, "params": anthropic.messages_body(model, item.request)}


def result_of(line: Json) -> BatchResult | None:
    """One line of the results: `{custom_id, result: {type, message | error}}`."""
    fields = _obj(line)
    custom_id = _text(fields.get("custom_id"))
    if custom_id is None:
        return None
    result = _obj(fields.get("result"))
    kind = _text(result.get("type")) or "unknown"
    if kind == "succeeded":
        return BatchResult(custom_id, anthropic.parse_message(result.get("message")))
    if kind == "errored":
        error = _obj(result.get("error"))
        inner = _obj(error.get("error"))
        message = _text(inner.get("message")) or _text(error.get("message")) or "errored"
        return BatchResult(custom_id, None, f"errored: {message}")
    return BatchResult(custom_id, None, kind)


class AnthropicBatches:
    """Anthropic's Message Batches API for `model` on `http` (a base URL ending in `/v1`).

    It keeps no metadata, so `find` cannot match a batch to an intent.
    """

    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES

    def __init__(self, http: HttpClient, model: str) -> None:
        self.http = http
        self.model = model

    def size(self, item: BatchItem) -> int:
        """The bytes `item` takes in the request body."""
        return len(json.dumps(request_of(self.model, item)).encode("utf-8")) + 1

    async def submit(self, items: Sequence[BatchItem], tag: str) -> str:
        """`POST /messages/batches` with every request inline."""
        body: dict[str, Json] = {"requests": [request_of(self.model, item) for item in items]}
        answer = await self.http.post(PATH, body)
        batch_id = _text(_obj(answer).get("id"))
        if batch_id is None:
            raise InvalidResponse("the batch has no id")
        return batch_id

    async def status(self, batch_id: str) -> BatchStatus:
        """`GET /messages/batches/{id}`: in_progress, canceling or ended."""
        answer = await self.http.get(f"{PATH}/{batch_id}")
        state = _text(_obj(answer).get("processing_status"))
        if state is None:
            raise InvalidResponse("the batch has no processing_status")
        return BatchStatus(state, state == "ended", answer)

    async def results(self, batch_id: str, status: BatchStatus) -> list[BatchResult]:
        """The JSONL at `/messages/batches/{id}/results` (where `results_url` points)."""
        text = await self.http.get_text(f"{PATH}/{batch_id}/results")
        return jsonl_results(text, result_of)

    async def cancel(self, batch_id: str) -> None:
        """`POST /messages/batches/{id}/cancel`."""
        await self.http.post_empty(f"{PATH}/{batch_id}/cancel")

    async def find(self, tag: str) -> str | None:
        """None: Anthropic's batches carry no metadata to find `tag` by."""
        return None
