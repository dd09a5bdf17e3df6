"""The stand-in provider's answers in each API's shape (OpenAI and Anthropic), and what the
real APIs refuse."""

from __future__ import annotations

import json

from overbrainer.devtools.stub_script import Json, Reply
from overbrainer.net.http_server import Response

JSON_HEADERS = (("content-type", "application/json"),)
CREATED = 1_767_225_600
"""The `created` time of every answer (2026-01-01, fixed so that replies are reproducible)."""
OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
ANTHROPIC_ROLES = frozenset({"user", "assistant"})
REASONING_EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "xhigh", "max"})

_ANTHROPIC_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "refusal": "refusal",
    "content_filter": "refusal",
}


def openai_body(reply: Reply, model: str, serial: int) -> Json:
    """`reply` as a chat-completions answer from `model`, the `serial`th request."""
    message: dict[str, Json] = {
        "role": "assistant",
        "content": reply.content,
        "refusal": reply.refusal,
    }
    if reply.reasoning is not None:
        message["reasoning"] = reply.reasoning
    if reply.reasoning_content is not None:
        message["reasoning_content"] = reply.reasoning_content
    if reply.reasoning_details is not None:
        message["reasoning_details"] = reply.reasoning_details
    choice: dict[str, Json] = {
        "index": 0,
        "message": message,
        "finish_reason": reply.finish_reason,
        "logprobs": None,
    }
    body: dict[str, Json] = {
        "id": f"chatcmpl-stub-{serial}",
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [choice],
    }
    if reply.usage is not None:
        tokens_in, tokens_out = reply.usage
        body["usage"] = {
            "prompt_tokens": tokens_in,
            "completion_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
        }
    return body


def anthropic_body(reply: Reply, model: str, serial: int) -> Json:
    """`reply` as a Messages answer from `model`, the `serial`th request."""
    blocks: list[Json] = []
    if reply.thinking is not None:
        blocks.append({"type": "thinking", "thinking": reply.thinking, "signature": "stub"})
    blocks.append({"type": "text", "text": reply.content})
    body: dict[str, Json] = {
        "id": f"msg_stub_{serial}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": _ANTHROPIC_STOP.get(reply.finish_reason, reply.finish_reason),
        "stop_sequence": None,
    }
    if reply.usage is not None:
        tokens_in, tokens_out = reply.usage
        body["usage"] = {"input_tokens": tokens_in, "output_tokens": tokens_out}
    return body


def openai_error(message: str, status: int, param: str | None = None) -> Response:
    """An error answer in OpenAI's shape (`{"error": {message, type, param, code}}`)."""
    kind = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error"}
    error: Json = {
        "message": message,
        "type": kind.get(status, "invalid_request_error" if status < 500 else "server_error"),
        "param": param,
        "code": None,
    }
    return json_response({"error": error}, status)


def anthropic_error(message: str, status: int) -> Response:
    """An error answer in Anthropic's shape (`{"type": "error", "error": {type, message}}`)."""
    kind = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error"}
    error: Json = {"type": kind.get(status, "invalid_request_error"), "message": message}
    return json_response({"type": "error", "error": error}, status)


def refusal(path: str, body: Json) -> tuple[str, str] | None:
    """What a real API refuses in a completion request: `(parameter, why)`, None if nothing."""
    anthropic = path.endswith("/messages")
    if not isinstance(body, dict):
        return "body", "the body must be a JSON object"
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return "model", "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages", "`messages` must be a non-empty array"
    roles = ANTHROPIC_ROLES if anthropic else OPENAI_ROLES
    for n, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in roles:
            return f"messages[{n}].role", f"invalid role {role!r}, expected one of {sorted(roles)}"
    if anthropic and not isinstance(body.get("max_tokens"), int):
        return "max_tokens", "max_tokens: field required"
    effort = body.get("reasoning_effort")
    if not anthropic and effort is not None and effort not in REASONING_EFFORTS:
        return "reasoning_effort", f"invalid value {effort!r}, expected {sorted(REASONING_EFFORTS)}"
    return None


def json_response(
    value: Json, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """`value` as a JSON answer with `status` and extra `headers`."""
    extra = tuple((headers or {}).items())
    return Response(status, json.dumps(value).encode(), JSON_HEADERS + extra)


def model_listing(models: Json) -> Json:
    """`models` as OpenAI lists them: each entry completed with the fields OpenAI requires."""
    entries = models.get("data") if isinstance(models, dict) else None
    if not isinstance(models, dict) or not isinstance(entries, list):
        return models
    data: list[Json] = [
        {"object": "model", "created": CREATED, "owned_by": "stub", **entry}
        if isinstance(entry, dict)
        else entry
        for entry in entries
    ]
    return {"object": "list", **models, "data": data}
