"""Loopback fakes of OpenAI's and Anthropic's batch APIs (real HTTP on 127.0.0.1).

Shapes from each provider's documentation: OpenAI's `/v1/files` (multipart, `purpose=batch`,
a JSONL of `{custom_id, method, url, body}`), `/v1/batches` (validating, in_progress,
finalizing, completed | expired | cancelling, cancelled; output and error files read at
`/v1/files/{id}/content`); Anthropic's `/v1/messages/batches` (in_progress, canceling, ended;
`request_counts`; results JSONL of `{custom_id, result: {type, message | error}}`).

Every exchange is checked as the stand-in provider's are (tests/standin_contract.py: OpenAI's
published description, Anthropic's SDK types, the request bodies inside batch files too): a
request the API would refuse is answered 400 and kept in `violations`, and a block of
`open_fake` that ends with a violation left fails. OpenRouter's inline batches
(`POST /batches` with `requests`) are not in OpenAI's description: each request inside one is
checked as a chat request of the `openrouter` dialect, and the envelope by the fake itself.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import trio

from overbrainer.devtools.stub_wire import model_listing
from overbrainer.net.http_server import Request, Response, serve_http
from tests import openai_contract
from tests.pipeline_support import PRICES
from tests.standin_contract import check_request, check_response

Outcome = Callable[[str, str], str]
"""`(custom_id, prompt)` → `succeeded`, `errored` or `expired`."""

OPENAI_STEPS = ("validating", "in_progress", "finalizing")
"""The states an OpenAI batch passes through, one per poll, before it ends."""
USAGE = (100, 50)
CREATED = 1_767_225_600


def all_succeed(_custom_id: str, _prompt: str) -> str:
    """Every item is answered."""
    return "succeeded"


def _json(body: object, status: int = 200) -> Response:
    return Response(status, json.dumps(body).encode(), (("content-type", "application/json"),))


def _jsonl(lines: list[dict[str, Any]]) -> Response:
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return Response(200, data, (("content-type", "application/binary"),))


def _error(message: str, status: int) -> Response:
    kind = "not_found_error" if status == 404 else "invalid_request_error"
    return _json({"error": {"message": message, "type": kind, "param": None, "code": None}}, status)


def _not_found() -> Response:
    return _error("not found", 404)


def _anthropic_not_found() -> Response:
    return _json(
        {"type": "error", "error": {"type": "not_found_error", "message": "not found"}}, 404
    )


def _prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


@attrs.define
class FakeBatch:
    """One batch the fake holds: its requests (custom_id → body), state and polls."""

    id: str
    kind: str
    requests: dict[str, dict[str, Any]]
    metadata: dict[str, Any] = attrs.Factory(dict)
    polls: int = 0
    state: str = ""
    cancelled: bool = False
    results: list[dict[str, Any]] = attrs.Factory(list)
    input_file_id: str = ""


class FakeBatches:
    """Both batch APIs on one server; `url` is the base (`http://127.0.0.1:PORT/v1`).

    `outcome` decides each item's fate; `hold` keeps every batch running until cleared;
    `submissions`, `cancels` and `requests` count what it got.
    """

    def __init__(self, outcome: Outcome = all_succeed, dialect: str = "openai-compatible") -> None:
        self.outcome = outcome
        self.dialect = dialect
        """The API the fakes pretend to be: by default what the product assumes of a loopback
        base URL (`openai-compatible`: OpenAI's declared fields, and the reference's listing)."""
        self.hold = False
        self.refuse: int | None = None
        """A status every batch creation is answered with (no batch is made)."""
        self.drop_uploads = False
        """Close the connection on every file upload without answering (no file is kept)."""
        self.listing = True
        """False: `GET /batches` is 404, as on a provider that cannot list its batches."""
        self.url = ""
        self.batches: dict[str, FakeBatch] = {}
        self.files: dict[str, bytes] = {}
        self.requests: list[tuple[str, str]] = []
        self.submissions = 0
        self.singles = 0
        """Chat completions answered one by one (OpenAI's synchronous API)."""
        self.cancels = 0
        self.headers: list[dict[str, str]] = []
        self.violations: list[str] = []

    async def handle(self, request: Request) -> Response:
        """Check `request`, route it to the API it belongs to, check the answer."""
        self.requests.append((request.method, request.target))
        self.headers.append(request.headers)
        inline = request.path == "/v1/batches" and b'"requests"' in request.body
        wrong = (
            _check_inline(request.body)
            if inline
            else check_request(request, dialect=self.dialect, key=None)
        )
        self.violations += wrong
        if wrong:
            return _error("; ".join(wrong)[:2000], 400)
        response = self._route(request)
        parts = request.path.split("/")
        batch = self.batches.get(parts[3]) if parts[2:3] == ["batches"] and len(parts) > 3 else None
        inline_batch = batch is not None and batch.kind == "inline"
        if not (inline or inline_batch or response.drop):
            self.violations += check_response(request, response)
        return response

    def _route(self, request: Request) -> Response:
        path = request.path.removeprefix("/v1/")
        if request.method == "GET" and path == "models":
            return _json(model_listing(PRICES))
        if path.startswith("messages/batches"):
            return self._anthropic(request, path.removeprefix("messages/batches").strip("/"))
        return self._openai(request, path)

    # OpenAI

    def _openai(self, request: Request, path: str) -> Response:
        method = request.method
        if method == "POST" and path == "chat/completions":
            self.singles += 1
            body = json.loads(request.body)
            return _json(self._chat_answer(body, self.singles))
        if method == "POST" and path == "files":
            return Response(drop=True) if self.drop_uploads else self._upload(request)
        match = re.fullmatch(r"files/([\w-]+)/content", path)
        if method == "GET" and match:
            content = self.files.get(match[1])
            return _not_found() if content is None else Response(200, content)
        if method == "POST" and path == "batches":
            body = json.loads(request.body)
            if "requests" in body:
                return self._create_inline(request.body)
            return self._create_openai(body)
        if method == "GET" and path == "batches":
            if not self.listing:
                return _not_found()
            data = [self._openai_object(b) for b in self.batches.values() if b.kind == "openai"]
            return _json({"object": "list", "data": data, "has_more": False})
        match = re.fullmatch(r"batches/([\w-]+)(/cancel)?", path)
        batch = None if match is None else self.batches.get(match[1])
        if batch is None or batch.kind not in ("openai", "inline"):
            return _not_found()
        if method == "POST" and match and match[2]:
            self.cancels += 1
            batch.cancelled = True
            batch.state = "cancelling"
            return _json(self._openai_object(batch))
        if method == "GET" and not (match and match[2]):
            self._advance_openai(batch)
            return _json(self._openai_object(batch))
        return _not_found()

    def _upload(self, request: Request) -> Response:
        boundary = request.headers["content-type"].split("boundary=", 1)[1]
        fields: dict[str, bytes] = {}
        for part in request.body.split(b"--" + boundary.encode()):
            head, _, content = part.partition(b"\r\n\r\n")
            name = re.search(rb'name="([^"]+)"', head)
            if name is not None:
                fields[name[1].decode()] = content.removesuffix(b"\r\n")
        if fields.get("purpose") != b"batch" or "file" not in fields:
            return _error("purpose must be batch, with a file", 400)
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = fields["file"]
        return _json(
            {
                "id": file_id,
                "object": "file",
                "bytes": len(fields["file"]),
                "created_at": CREATED,
                "filename": "batch.jsonl",
                "purpose": "batch",
                "status": "processed",
            }
        )

    def _create_openai(self, body: dict[str, Any]) -> Response:
        if self.refuse is not None:
            return _error("batch refused", self.refuse)
        content = self.files.get(body.get("input_file_id", ""))
        if content is None or body.get("completion_window") != "24h":
            return _error("bad batch", 400)
        endpoint = body.get("endpoint")
        requests: dict[str, dict[str, Any]] = {}
        for raw in content.decode().splitlines():
            line = json.loads(raw)
            if line["method"] != "POST" or line["url"] != endpoint:
                return _error("line does not match endpoint", 400)
            requests[line["custom_id"]] = line["body"]
        self.submissions += 1
        batch = FakeBatch(
            f"batch_{self.submissions}",
            "openai",
            requests,
            body.get("metadata") or {},
            state="validating",
            input_file_id=body["input_file_id"],
        )
        self.batches[batch.id] = batch
        return _json(self._openai_object(batch))

    def _create_inline(self, raw: bytes) -> Response:
        if self.refuse is not None:
            return _error("batch refused", self.refuse)
        body = json.loads(raw)
        # OpenRouter parses the body as a stream: endpoint and model come before the requests.
        if list(body)[:2] != ["endpoint", "model"] or body.get("completion_window") != "24h":
            return _error("endpoint and model must come first", 400)
        requests = {entry["custom_id"]: entry["body"] for entry in body["requests"]}
        self.submissions += 1
        batch = FakeBatch(f"batch_{self.submissions}", "inline", requests, state="validating")
        self.batches[batch.id] = batch
        return Response(202, json.dumps(self._openai_object(batch)).encode())

    def _advance_openai(self, batch: FakeBatch) -> None:
        if batch.state in ("completed", "expired", "cancelled", "failed"):
            return
        if batch.cancelled:
            batch.state = "cancelled"
            self._finish_openai(batch, "cancelled")
            return
        if self.hold:
            batch.state = "in_progress"
            return
        batch.polls += 1
        if batch.polls < len(OPENAI_STEPS):
            batch.state = OPENAI_STEPS[batch.polls]
            return
        fates = {cid: self.outcome(cid, _prompt(body)) for cid, body in batch.requests.items()}
        batch.state = "expired" if "expired" in fates.values() else "completed"
        self._finish_openai(batch, batch.state, fates)

    def _finish_openai(
        self, batch: FakeBatch, state: str, fates: dict[str, str] | None = None
    ) -> None:
        output: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for n, (cid, body) in enumerate(batch.requests.items()):
            fate = "cancelled" if fates is None else fates[cid]
            if fate == "succeeded":
                answer = self._chat_answer(body, n)
                response = {"status_code": 200, "request_id": f"req_{n}", "body": answer}
                output.append(
                    {"id": f"batch_req_{n}", "custom_id": cid, "response": response, "error": None}
                )
            elif fate == "errored":
                response = {
                    "status_code": 400,
                    "request_id": f"req_{n}",
                    "body": {
                        "error": {
                            "message": "invalid request",
                            "type": "invalid_request_error",
                            "param": None,
                            "code": None,
                        }
                    },
                }
                errors.append(
                    {"id": f"batch_req_{n}", "custom_id": cid, "response": response, "error": None}
                )
            else:
                code = "batch_expired" if fate == "expired" else "batch_cancelled"
                error = {"code": code, "message": f"This request was {fate}."}
                errors.append(
                    {"id": f"batch_req_{n}", "custom_id": cid, "response": None, "error": error}
                )
        for key, lines in (("output", output), ("error", errors)):
            if lines:
                file_id = f"file-{batch.id}-{key}"
                self.files[file_id] = "".join(json.dumps(x) + "\n" for x in lines).encode()
        batch.results = output + errors

    @staticmethod
    def _chat_answer(body: dict[str, Any], n: int) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": CREATED,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": f"Answer to {_prompt(body)}",
                        "refusal": None,
                        "reasoning": "thinking",
                    },
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": USAGE[0],
                "completion_tokens": USAGE[1],
                "total_tokens": sum(USAGE),
            },
        }

    def _openai_object(self, batch: FakeBatch) -> dict[str, Any]:
        done = [r for r in batch.results if r.get("response", {}) and "body" in r["response"]]
        ended = batch.state in ("completed", "expired", "cancelled")
        ok = sum(1 for r in done if r["response"]["status_code"] == 200)
        counts = {"total": len(batch.requests), "completed": ok, "failed": len(batch.results) - ok}
        if batch.kind == "inline":
            return {
                "id": batch.id,
                "object": "batch",
                "endpoint": "/v1/chat/completions",
                "status": batch.state,
                "request_counts": counts,
                "results": batch.results if ended else None,
            }
        files = {
            f"{key}_file_id": f"file-{batch.id}-{key}"
            for key in ("output", "error")
            if ended and f"file-{batch.id}-{key}" in self.files
        }
        return files | {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "input_file_id": batch.input_file_id,
            "created_at": CREATED,
            "status": batch.state,
            "completion_window": "24h",
            "metadata": batch.metadata,
            "request_counts": {
                "total": len(batch.requests),
                "completed": ok,
                "failed": len(batch.results) - ok,
            },
        }

    # Anthropic

    def _anthropic(self, request: Request, rest: str) -> Response:
        method = request.method
        if method == "POST" and rest == "":
            return self._create_anthropic(json.loads(request.body))
        batch_id, _, action = rest.partition("/")
        batch = self.batches.get(batch_id)
        if batch is None or batch.kind != "anthropic":
            return _anthropic_not_found()
        if method == "POST" and action == "cancel":
            self.cancels += 1
            batch.cancelled = True
            batch.state = "canceling"
            return _json(self._anthropic_object(batch))
        if method == "GET" and action == "results":
            if batch.state != "ended":
                return _json(
                    {
                        "type": "error",
                        "error": {"type": "invalid_request_error", "message": "not ended"},
                    },
                    400,
                )
            return _jsonl(batch.results)
        if method == "GET" and action == "":
            self._advance_anthropic(batch)
            return _json(self._anthropic_object(batch))
        return _anthropic_not_found()

    def _create_anthropic(self, body: dict[str, Any]) -> Response:
        if self.refuse is not None:
            return _error("batch refused", self.refuse)
        requests = {entry["custom_id"]: entry["params"] for entry in body["requests"]}
        self.submissions += 1
        batch = FakeBatch(f"msgbatch_{self.submissions}", "anthropic", requests)
        batch.state = "in_progress"
        self.batches[batch.id] = batch
        return _json(self._anthropic_object(batch))

    def _advance_anthropic(self, batch: FakeBatch) -> None:
        if batch.state == "ended":
            return
        if not batch.cancelled:
            if self.hold:
                return
            batch.polls += 1
            if batch.polls < 2:
                return
        for n, (cid, params) in enumerate(batch.requests.items()):
            fate = "canceled" if batch.cancelled else self.outcome(cid, _prompt(params))
            result: dict[str, Any] = {"type": fate}
            if fate == "succeeded":
                result["message"] = {
                    "id": f"msg_{n}",
                    "type": "message",
                    "role": "assistant",
                    "model": params["model"],
                    "content": [{"type": "text", "text": f"Answer to {_prompt(params)}"}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": USAGE[0], "output_tokens": USAGE[1]},
                }
            elif fate == "errored":
                result["error"] = {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": "invalid request"},
                }
            batch.results.append({"custom_id": cid, "result": result})
        batch.state = "ended"

    def _anthropic_object(self, batch: FakeBatch) -> dict[str, Any]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for line in batch.results:
            counts[line["result"]["type"]] += 1
        counts["processing"] = len(batch.requests) - len(batch.results)
        ended = batch.state == "ended"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": batch.state,
            "request_counts": counts,
            "results_url": f"{self.url}/messages/batches/{batch.id}/results" if ended else None,
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": "2026-01-01T00:10:00Z" if ended else None,
            "cancel_initiated_at": "2026-01-01T00:05:00Z" if batch.cancelled else None,
            "archived_at": None,
        }


@contextlib.asynccontextmanager
async def open_fake(outcome: Outcome = all_succeed) -> AsyncIterator[FakeBatches]:
    """The fakes serving on 127.0.0.1 for the duration of the block."""
    fake = FakeBatches(outcome)
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(serve_http, fake.handle, "127.0.0.1", 0)
        fake.url = f"http://{host}:{port}/v1"
        try:
            yield fake
        finally:
            nursery.cancel_scope.cancel()
    assert fake.violations == [], f"exchanges off the provider's API: {fake.violations}"


def _check_inline(raw: bytes) -> list[str]:
    """Why an inline batch's requests are not chat requests OpenRouter takes."""
    try:
        body = json.loads(raw)
        entries = body["requests"]
    except (ValueError, KeyError, TypeError):
        return ["POST /v1/batches: an inline batch without a `requests` list"]
    return [
        f"inline batch request {n}: {e}"
        for n, entry in enumerate(entries)
        for e in openai_contract.check_chat_request(entry.get("body"), "openrouter")
    ]
