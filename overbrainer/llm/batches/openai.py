"""OpenAI's Batch API: a JSONL file uploaded to `/files`, a batch made of it at `/batches`."""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence

from overbrainer.config.dialects import DialectSpec
from overbrainer.llm import openai
from overbrainer.llm.batches.types import (
    BatchItem,
    BatchResult,
    BatchStatus,
    NotSubmitted,
    jsonl_results,
)
from overbrainer.llm.errors import InvalidResponse, LlmError
from overbrainer.llm.http import HttpClient
from overbrainer.llm.types import Json

ENDPOINT = "/v1/chat/completions"
"""The endpoint every line of a batch is sent to."""
TAG_KEY = "overbrainer_intent"
"""The batch metadata key holding the intent's tag."""
ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
"""States after which a batch changes no more (validating, in_progress, finalizing and
cancelling come before)."""
MAX_REQUESTS = 50_000
MAX_BYTES = 200 * 1024 * 1024
LIST_LIMIT = 100


def _obj(value: Json) -> dict[str, Json]:
    return value if isinstance(value, dict) else {}


def _text(value: Json) -> str | None:
    return value if isinstance(value, str) and value else None


def batch_line(dialect: DialectSpec, model: str, item: BatchItem) -> bytes:
    """One line of the input file: `{custom_id, method, url, body}` and a newline."""
    line = {
        "custom_id": item.custom_id,
        "method": "POST",
        "url": ENDPOINT,
        "body": openai.chat_body(dialect, model, item.request),
    }
    return json.dumps(line).encode("utf-8") + b"\n"


def multipart(fields: dict[str, str], filename: str, content: bytes) -> tuple[bytes, str]:
    """A `multipart/form-data` body with `fields` and one file; the body and content type."""
    boundary = f"overbrainer-{secrets.token_hex(12)}"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="{filename}"\r\nContent-Type: application/jsonl\r\n\r\n'.encode()
        + content
        + b"\r\n"
    )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def _id_of(answer: Json, what: str) -> str:
    found = _text(_obj(answer).get("id"))
    if found is None:
        raise InvalidResponse(f"the {what} has no id")
    return found


def result_of(line: Json) -> BatchResult | None:
    """One line of an output or error file; None for a line without a `custom_id`."""
    fields = _obj(line)
    custom_id = _text(fields.get("custom_id"))
    if custom_id is None:
        return None
    response = _obj(fields.get("response"))
    status = response.get("status_code")
    error = _obj(fields.get("error"))
    if status == 200 and not error:
        try:
            return BatchResult(custom_id, openai.parse_chat(response.get("body")))
        except LlmError as bad:
            return BatchResult(custom_id, None, f"unreadable answer: {bad}")
    body_error = _obj(_obj(response.get("body")).get("error"))
    message = _text(error.get("message")) or _text(body_error.get("message")) or "failed"
    prefix = f"HTTP {status}: " if isinstance(status, int) else ""
    return BatchResult(custom_id, None, prefix + message)


class OpenAiBatches:
    """OpenAI's Batch API for `model` on `http` (a base URL ending in `/v1`), its lines'
    bodies in `dialect`'s shape."""

    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES

    def __init__(self, http: HttpClient, model: str, dialect: DialectSpec) -> None:
        self.http = http
        self.model = model
        self.dialect = dialect

    def size(self, item: BatchItem) -> int:
        """The bytes `item`'s line takes in the input file."""
        return len(batch_line(self.dialect, self.model, item))

    async def submit(self, items: Sequence[BatchItem], tag: str) -> str:
        """Upload the input file (`purpose=batch`), then create the batch of it."""
        content = b"".join(batch_line(self.dialect, self.model, item) for item in items)
        body, content_type = multipart({"purpose": "batch"}, f"{tag}.jsonl", content)
        try:
            uploaded = await self.http.post_content("files", body, content_type)
            file_id = _id_of(uploaded, "uploaded file")
        except LlmError as error:
            raise NotSubmitted(error) from error
        created = await self.http.post(
            "batches",
            {
                "input_file_id": file_id,
                "endpoint": ENDPOINT,
                "completion_window": "24h",
                "metadata": {TAG_KEY: tag},
            },
        )
        return _id_of(created, "batch")

    async def status(self, batch_id: str) -> BatchStatus:
        """`GET /batches/{id}`."""
        answer = await self.http.get(f"batches/{batch_id}")
        state = _text(_obj(answer).get("status"))
        if state is None:
            raise InvalidResponse("the batch has no status")
        return BatchStatus(state, state in ENDED, answer)

    async def results(self, batch_id: str, status: BatchStatus) -> list[BatchResult]:
        """The lines of the output and error files (either may be absent)."""
        fields = _obj(status.raw)
        found: list[BatchResult] = []
        for key in ("output_file_id", "error_file_id"):
            file_id = _text(fields.get(key))
            if file_id is None:
                continue
            text = await self.http.get_text(f"files/{file_id}/content")
            found.extend(jsonl_results(text, result_of))
        return found

    async def cancel(self, batch_id: str) -> None:
        """`POST /batches/{id}/cancel`."""
        await self.http.post_empty(f"batches/{batch_id}/cancel")

    async def find(self, tag: str) -> str | None:
        """The batch among the latest `LIST_LIMIT` whose metadata holds `tag`."""
        answer = await self.http.get(f"batches?limit={LIST_LIMIT}")
        data = _obj(answer).get("data")
        for raw in data if isinstance(data, list) else []:
            batch = _obj(raw)
            if _obj(batch.get("metadata")).get(TAG_KEY) == tag:
                return _text(batch.get("id"))
        return None
