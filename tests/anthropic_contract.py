"""Checks of Anthropic-shaped traffic against the types of Anthropic's official Python SDK.

Anthropic publishes no OpenAPI file; its SDK (`anthropic` on PyPI, generated from its API
definition; version 2.17.0 when this was written, in the `test` extra) is the machine-readable
form. Requests are checked with pydantic's `TypeAdapter` on the SDK's request `TypedDict`s
(`message_create_params.MessageCreateParamsNonStreaming`, `batch_create_params.BatchCreateParams`),
plus a check that every top-level field is one they declare (a TypedDict lets extra keys pass);
answers with the SDK's models in strict mode (`Message`, `MessageBatch`,
`MessageBatchIndividualResponse` per results line, `ErrorResponse`), plus the fields Anthropic
always sends even where the SDK gives them a default (`stop_sequence`).
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Mapping
from typing import Any

import pydantic
from anthropic.types import ErrorResponse, Message
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse
from anthropic.types.messages.batch_create_params import BatchCreateParams

Json = Any

__all__ = ["Message", "check_request", "check_response", "model_errors", "params_errors"]

ALWAYS_SENT: dict[type[pydantic.BaseModel], tuple[str, ...]] = {
    Message: ("stop_reason", "stop_sequence", "usage")
}
"""Fields of an answer the SDK defaults to None that the API sends every time."""


@functools.cache
def _adapter(kind: type) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(kind)


def _drain(value: Any) -> None:
    """Consume what pydantic validates lazily (`Iterable[...]` fields), raising its errors."""
    if isinstance(value, dict):
        for item in value.values():
            _drain(item)
    elif isinstance(value, (list, tuple)) or hasattr(value, "__next__"):
        for item in value:
            _drain(item)


def params_errors(kind: type, value: Json) -> list[str]:
    """Why `value` is not a valid `kind` (a request TypedDict of the SDK)."""
    wrong: list[str] = []
    if isinstance(value, dict):
        extra = sorted(set(value) - set(typing.get_type_hints(kind)))
        if extra:
            wrong.append(f"fields the SDK's {kind.__name__} does not declare: {extra}")
    try:
        _drain(_adapter(kind).validate_python(value))
    except pydantic.ValidationError as error:
        wrong += [f"{'.'.join(map(str, e['loc'])) or '(body)'}: {e['msg']}" for e in error.errors()]
    return wrong


def model_errors(kind: type[pydantic.BaseModel], value: Json) -> list[str]:
    """Why `value` is not a valid `kind` (an answer model of the SDK), strictly."""
    wrong = [
        f"{name}: always sent, missing"
        for name in ALWAYS_SENT.get(kind, ())
        if not isinstance(value, dict) or name not in value
    ]
    try:
        # JSON mode: strict, yet a date is the ISO string the API sends.
        kind.model_validate_json(json.dumps(value), strict=True)
    except pydantic.ValidationError as error:
        wrong += [f"{'.'.join(map(str, e['loc'])) or '(body)'}: {e['msg']}" for e in error.errors()]
    return wrong


def _operation(method: str, path: str) -> str | None:
    """The operation a request is (`create`, `batch`, `poll`, `cancel`, `results`), if any."""
    parts = path.removeprefix("/v1/").strip("/").split("/")
    if parts == ["messages"] and method == "POST":
        return "create"
    if parts[:2] != ["messages", "batches"]:
        return None
    shapes = {
        (2, "POST", None): "batch",
        (3, "GET", None): "poll",
        (4, "POST", "cancel"): "cancel",
        (4, "GET", "results"): "results",
    }
    return shapes.get((len(parts), method, parts[3] if len(parts) == 4 else None))


def check_request(
    method: str, target: str, headers: Mapping[str, str], body: bytes, *, key: str | None = None
) -> list[str]:
    """Why a request does not match Anthropic's API (empty when it does)."""
    where = f"{method} {target}"
    path, _, query = target.partition("?")
    found = _operation(method, path)
    if found is None:
        return [f"{where}: not an operation of Anthropic's API"]
    wrong: list[str] = []
    if query:
        wrong.append(f"{where}: query parameters {query!r}")
    if key is not None and not headers.get("x-api-key"):
        wrong.append(f"{where}: no `x-api-key` header where a key is expected")
    if "anthropic-version" not in headers:
        wrong.append(f"{where}: no `anthropic-version` header")
    if found in ("poll", "cancel", "results"):
        return wrong + ([f"{where}: a body where the API takes none"] if body else [])
    try:
        value = json.loads(body)
    except ValueError:
        return [*wrong, f"{where}: the body is not JSON"]
    if found == "create":
        return wrong + [
            f"{where}: {e}" for e in params_errors(MessageCreateParamsNonStreaming, value)
        ]
    wrong += [f"{where}: {e}" for e in params_errors(BatchCreateParams, value)]
    return wrong


def check_response(method: str, target: str, status: int, body: bytes) -> list[str]:
    """Why an answer does not match Anthropic's API."""
    where = f"answer {status} to {method} {target}"
    found = _operation(method, target.partition("?")[0])
    if found is None:
        return []
    if found == "results" and status == 200:
        wrong: list[str] = []
        for number, raw in enumerate(body.decode(errors="replace").splitlines(), 1):
            try:
                line = json.loads(raw)
            except ValueError:
                wrong.append(f"{where}: line {number} is not JSON")
                continue
            errors = model_errors(MessageBatchIndividualResponse, line)
            message = line.get("result", {}).get("message") if isinstance(line, dict) else None
            if message is not None:
                errors += [f"result.message.{e}" for e in model_errors(Message, message)]
            wrong += [f"{where}: line {number}: {e}" for e in errors]
        return wrong
    try:
        value = json.loads(body)
    except ValueError:
        return [f"{where}: the body is not JSON"]
    kind: type[pydantic.BaseModel] = MessageBatch
    if status >= 400:
        kind = ErrorResponse
    elif found == "create":
        kind = Message
    return [f"{where}: {e}" for e in model_errors(kind, value)]
