"""Batches with the requests inline and the results in the batch: OpenRouter's Batch API.

`POST /batches` with `{endpoint, model, completion_window, requests: [{custom_id, body}]}`
(endpoint and model before the requests: OpenRouter parses the body as a stream), `GET
/batches/{id}` (OpenAI's states; an ended batch holds `results`, lines shaped as OpenAI's
output file), `GET /batches/{id}/results` pages when it does not, `POST /batches/{id}/cancel`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from urllib.parse import quote

from overbrainer.config.dialects import DialectSpec
from overbrainer.llm import openai
from overbrainer.llm.batches.openai import ENDED, ENDPOINT, result_of
from overbrainer.llm.batches.types import BatchItem, BatchResult, BatchStatus
from overbrainer.llm.errors import InvalidResponse
from overbrainer.llm.http import HttpClient
from overbrainer.llm.types import Json

MAX_REQUESTS = 50_000
MAX_BYTES = 100 * 1024 * 1024
MAX_PAGES = 10_000
"""A bound on the result pages followed (a server repeating its cursor cannot loop us)."""


def _obj(value: Json) -> dict[str, Json]:
    return value if isinstance(value, dict) else {}


def request_of(dialect: DialectSpec, model: str, item: BatchItem) -> dict[str, Json]:
    """One entry of `requests`: `{custom_id, body}`, body as for `POST /chat/completions`."""
    return {"custom_id": item.custom_id, "body": openai.chat_body(dialect, model, item.request)}


def _lines(results: Json) -> list[BatchResult]:
    found = []
    for line in results if isinstance(results, list) else []:
        result = result_of(line)
        if result is not None:
            found.append(result)
    return found


class InlineBatches:
    """The inline batch API for `model` on `http` (OpenRouter: `https://openrouter.ai/api/v1`).

    It keeps no metadata of ours, so `find` cannot match a batch to an intent.
    """

    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES

    def __init__(self, http: HttpClient, model: str, dialect: DialectSpec) -> None:
        self.http = http
        self.model = model
        self.dialect = dialect

    def size(self, item: BatchItem) -> int:
        """The bytes `item` takes in the request body."""
        return len(json.dumps(request_of(self.dialect, self.model, item)).encode("utf-8")) + 1

    async def submit(self, items: Sequence[BatchItem], tag: str) -> str:
        """`POST /batches` with every request inline."""
        body: dict[str, Json] = {
            "endpoint": ENDPOINT,
            "model": self.model,
            "completion_window": "24h",
            "requests": [request_of(self.dialect, self.model, item) for item in items],
        }
        answer = await self.http.post("batches", body)
        batch_id = _obj(answer).get("id")
        if not isinstance(batch_id, str) or not batch_id:
            raise InvalidResponse("the batch has no id")
        return batch_id

    async def status(self, batch_id: str) -> BatchStatus:
        """`GET /batches/{id}`."""
        answer = await self.http.get(f"batches/{batch_id}")
        state = _obj(answer).get("status")
        if not isinstance(state, str) or not state:
            raise InvalidResponse("the batch has no status")
        return BatchStatus(state, state in ENDED, answer)

    async def results(self, batch_id: str, status: BatchStatus) -> list[BatchResult]:
        """The ended batch's `results`, else the pages of `/batches/{id}/results`."""
        inline = _obj(status.raw).get("results")
        if isinstance(inline, list):
            return _lines(inline)
        found: list[BatchResult] = []
        path = f"batches/{batch_id}/results"
        for _ in range(MAX_PAGES):
            page = _obj(await self.http.get(path))
            found += _lines(page.get("data", page.get("results")))
            cursor = page.get("next_cursor")
            if not isinstance(cursor, str) or not cursor:
                break
            path = f"batches/{batch_id}/results?cursor={quote(cursor)}"
        return found

    async def cancel(self, batch_id: str) -> None:
        """`POST /batches/{id}/cancel`."""
        await self.http.post_empty(f"batches/{batch_id}/cancel")

    async def find(self, tag: str) -> str | None:
        """None: the batch carries no metadata of ours to find `tag` by."""
        return None
