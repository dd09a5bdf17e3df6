"""Checks of OpenAI-shaped traffic against OpenAI's own published API description.

The description is `tests/fixtures/openai-openapi.json`: `openapi.json` of the public repository
openai/openai-openapi (commit f85dbe2, 2026-08-21), unmodified. The checks run on the
description's component schemas with `jsonschema` (Draft 2020-12, the dialect of OpenAPI 3.1),
the whole document registered as one resource so every `$ref` resolves inside it: it loads in
~0.3 s once per test process, then checks a chat request in ~2 ms and an answer in ~1 ms.
openapi-core (what tests/runpod_fake.py uses) cannot be used on this file: its own spec check
refuses it (duplicate entries in a `required` list), and with that check off it rejects a valid
chat request (`reference '#/components/schemas/user' could not be resolved`: the messages'
discriminator maps roles to bare names).

What a schema alone would let through, and is checked here too:
- OpenAPI 3.0's `nullable: true`, which 24 schemas of this 3.1 file still use (some with no
  `type`): a null is accepted where a schema says `nullable`, and nothing else is skipped.
- A request field the operation does not declare (the schemas allow extra properties; the live
  API answers `400 Unrecognized request argument`), unless the dialect the stand-in pretends to
  be declares it (`DIALECT_FIELDS`); a query parameter the operation does not declare.
- `max_tokens` beside `reasoning_effort` (reasoning models refuse it for `max_completion_tokens`).
- No `Authorization: Bearer` header when the stand-in expects a key (a wrong key is answered
  401, as the API does, and is no violation).
- Batch files, which the description does not describe (`GET /files/{id}/content` is declared a
  JSON string): each input line is `{custom_id, method, url, body}` with `body` checked as a
  request to `url`; each output line is `{id, custom_id, response, error}` with a 200
  `response.body` checked as the endpoint's answer (OpenAI's Batch guide, "request input" and
  "request output" objects).
"""

from __future__ import annotations

import functools
import json
import re
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema.validators
import referencing
import referencing.jsonschema

SPEC = Path(__file__).parent / "fixtures" / "openai-openapi.json"
_URI = "https://api.openai.com/openapi.json"

Json = Any

DIALECT_QUERY: dict[str, frozenset[str]] = {
    # The reference's `GET /models?detailed=true` (NanoGPT lists prices with it), sent only to
    # servers of unknown make: OpenAI and the named dialects get the plain listing.
    "openai-compatible": frozenset({"detailed"}),
}
"""Query parameters a server of a dialect takes beyond what OpenAI's description declares."""

DIALECT_FIELDS: dict[str, frozenset[str]] = {
    "openai": frozenset(),
    "openai-compatible": frozenset(),
    # OpenRouter: https://openrouter.ai/docs/api-reference/parameters and provider routing.
    "openrouter": frozenset(
        {"reasoning", "provider", "transforms", "models", "route", "usage", "plugins"}
        | {"top_k", "min_p", "top_a", "repetition_penalty", "include_reasoning"}
    ),
    # vLLM's and SGLang's OpenAI server: extra sampling parameters, chat template kwargs.
    "vllm": frozenset(
        {"chat_template_kwargs", "top_k", "min_p", "repetition_penalty", "include_reasoning"}
        | {"skip_special_tokens", "separate_reasoning", "guided_json"}
    ),
    # llama.cpp's llama-server: tools/server/README.md, `POST /v1/chat/completions`.
    "llama.cpp": frozenset(
        {"chat_template_kwargs", "reasoning_format", "top_k", "min_p", "repeat_penalty"}
        | {"cache_prompt", "n_predict", "thinking_forced_open"}
    ),
    # Ollama's OpenAI compatibility: `reasoning` ({effort}) besides `reasoning_effort`.
    "ollama": frozenset({"reasoning", "think", "keep_alive"}),
    # LiteLLM's proxy passes provider parameters on (`thinking`, `mock_response` in tests).
    "litellm": frozenset({"thinking", "mock_response", "drop_params", "reasoning"}),
    # DeepSeek: `thinking` ({type: enabled|disabled}) on its OpenAI-format API.
    "deepseek": frozenset({"thinking"}),
    # Together, Groq, Fireworks: a `reasoning` switch and a reasoning output format.
    "together": frozenset({"reasoning", "top_k", "repetition_penalty", "min_p"}),
    "groq": frozenset({"reasoning_format", "include_reasoning"}),
    "fireworks": frozenset({"reasoning", "top_k", "min_p", "repetition_penalty"}),
    "anthropic": frozenset(),
}
"""Top-level request fields a dialect declares beyond OpenAI's own, by the provider's docs."""

BATCH_INPUT_LINE = {"custom_id", "method", "url", "body"}
BATCH_OUTPUT_LINE = {"id", "custom_id", "response", "error"}


@functools.cache
def description() -> Json:
    """OpenAI's description as JSON (read once per test process)."""
    return json.loads(SPEC.read_text(encoding="utf-8"))


def _nullable(rule: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    """`rule`, except that a null is valid where the schema says `nullable: true` (OAS 3.0)."""

    def checked(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if instance is None and isinstance(schema, dict) and schema.get("nullable") is True:
            return iter(())
        return iter(rule(validator, value, instance, schema) or ())

    return checked


_Validator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft202012Validator,
    {
        name: _nullable(rule)
        for name, rule in jsonschema.Draft202012Validator.VALIDATORS.items()
        if name not in ("$ref", "$dynamicRef")
    },
)


@functools.cache
def _registry() -> referencing.Registry[Any]:
    resource = referencing.Resource.from_contents(
        description(), default_specification=referencing.jsonschema.DRAFT202012
    )
    registry: referencing.Registry[Any] = referencing.Registry().with_resource(_URI, resource)
    return registry


@functools.cache
def _validator(pointer: str) -> Any:
    """A validator of the schema at `pointer` (`#/components/schemas/X` or a deeper one)."""
    return _Validator({"$ref": _URI + pointer}, registry=_registry())


def schema_errors(pointer: str, instance: Json) -> list[str]:
    """Why `instance` does not match the schema at `pointer` (empty when it does)."""
    errors = sorted(_validator(pointer).iter_errors(instance), key=lambda e: list(e.path))
    return [f"{'/'.join(map(str, e.absolute_path)) or '(body)'}: {_short(e)}" for e in errors]


def _short(error: jsonschema.ValidationError) -> str:
    best = jsonschema.exceptions.best_match([error])
    assert best is not None
    message = str(best.message)
    return message if len(message) < 300 else message[:300] + "…"


def _pointer(*parts: str) -> str:
    return "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def resolve(node: Json) -> Json:
    """`node`, or what its `$ref` points to inside the description."""
    while isinstance(node, dict) and "$ref" in node:
        found = description()
        for part in node["$ref"].removeprefix("#/").split("/"):
            found = found[part.replace("~1", "/").replace("~0", "~")]
        node = found
    return node


def declared_fields(schema: Json) -> set[str]:
    """The properties a schema declares, with those of its `allOf` parts."""
    schema = resolve(schema)
    fields = set(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        fields |= declared_fields(part)
    return fields


def operation(method: str, path: str) -> tuple[str, Json] | None:
    """The description's path template and operation for a request (`/v1` stripped)."""
    path = path.removeprefix("/v1")
    for template, item in description()["paths"].items():
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
        if re.match(pattern, path) and method.lower() in item:
            return template, item
    return None


def _query_names(item: Json, method: str) -> set[str]:
    declared = item.get("parameters", []) + item[method.lower()].get("parameters", [])
    return {p["name"] for p in map(resolve, declared) if p.get("in") == "query"}


def check_request(
    method: str,
    target: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    dialect: str = "openai",
    key: str | None = None,
) -> list[str]:
    """Why a request does not match the description (empty when it does)."""
    path, _, query = target.partition("?")
    where = f"{method} {target}"
    found = operation(method, path)
    if found is None:
        return [f"{where}: not an operation of the description"]
    template, item = found
    wrong: list[str] = []
    # A wrong key is the caller's mistake the API answers 401; no key at all is a bad request.
    if key is not None and not headers.get("authorization", "").startswith("Bearer "):
        wrong.append(f"{where}: no `Authorization: Bearer` header where a key is expected")
    allowed = _query_names(item, method) | DIALECT_QUERY.get(dialect, frozenset())
    undeclared = sorted(set(urllib.parse.parse_qs(query)) - allowed)
    if undeclared:
        wrong.append(f"{where}: undeclared query parameters {undeclared}")
    declared_body = item[method.lower()].get("requestBody")
    if declared_body is None:
        if body:
            wrong.append(f"{where}: a body where the operation declares none")
        return wrong
    content = resolve(declared_body)["content"]
    kind = headers.get("content-type", "").split(";")[0].strip()
    if kind not in content:
        return [*wrong, f"{where}: content type {kind!r}, declared {sorted(content)}"]
    schema = content[kind]["schema"]
    pointer = _pointer("paths", template, method.lower(), "requestBody", "content", kind, "schema")
    if "$ref" in declared_body:
        pointer = declared_body["$ref"].removeprefix("#") + f"/content/{kind}/schema"
        pointer = "#" + pointer
    if kind == "multipart/form-data":
        fields = _form_fields(headers.get("content-type", ""), body)
        wrong += [f"{where}: {e}" for e in schema_errors(pointer, fields)]
        if fields.get("purpose") == "batch" and "file" in fields:
            wrong += [f"{where}: {e}" for e in check_batch_input(fields["file"], dialect=dialect)]
        return wrong
    try:
        value = json.loads(body)
    except ValueError:
        return [*wrong, f"{where}: the body is not JSON"]
    wrong += [
        f"{where}: {e}" for e in check_body(template, method, pointer, schema, value, dialect)
    ]
    return wrong


def check_body(
    template: str, method: str, pointer: str, schema: Json, value: Json, dialect: str
) -> list[str]:
    """Why a JSON request body does not match its operation (schema, fields, dialect rules)."""
    wrong = schema_errors(pointer, value)
    if isinstance(value, dict):
        extra = sorted(set(value) - declared_fields(schema) - DIALECT_FIELDS[dialect])
        if extra:
            wrong.append(f"fields the description does not declare ({dialect}): {extra}")
        if (
            template == "/chat/completions"
            and "max_tokens" in value
            and "reasoning_effort" in value
            and dialect == "openai"
        ):
            wrong.append("`max_tokens` with `reasoning_effort` (reasoning models refuse it)")
    return wrong


def check_chat_request(value: Json, dialect: str = "openai") -> list[str]:
    """Why a chat-completions request body is not valid."""
    return _check_endpoint_body("/v1/chat/completions", value, dialect)


def _check_endpoint_body(url: str, value: Json, dialect: str) -> list[str]:
    found = operation("POST", url)
    if found is None:
        return [f"{url}: not an operation of the description"]
    template, item = found
    declared = resolve(item["post"]["requestBody"])["content"]["application/json"]
    pointer = _pointer("paths", template, "post", "requestBody", "content", "application/json")
    return check_body(template, "POST", pointer + "/schema", declared["schema"], value, dialect)


def _form_fields(content_type: str, body: bytes) -> dict[str, str]:
    boundary = content_type.partition("boundary=")[2].strip('"')
    fields: dict[str, str] = {}
    for part in body.split(b"--" + boundary.encode())[1:]:
        head, _, content = part.partition(b"\r\n\r\n")
        name = re.search(rb'name="([^"]+)"', head)
        if name is not None:
            fields[name[1].decode()] = content.removesuffix(b"\r\n").decode(errors="replace")
    return fields


def _jsonl_lines(
    content: str, kind: str, keys: set[str], wrong: list[str]
) -> Iterator[tuple[str, dict[str, Json]]]:
    """Each line of a batch file that is a JSON object with exactly `keys`, with where it
    stands; what is wrong with the others goes to `wrong`."""
    for number, raw in enumerate(content.splitlines(), 1):
        where = f"{kind} line {number}"
        try:
            line = json.loads(raw)
        except ValueError:
            wrong.append(f"{where}: not JSON")
            continue
        if not isinstance(line, dict) or set(line) != keys:
            found = sorted(line) if isinstance(line, dict) else type(line).__name__
            wrong.append(f"{where}: keys {found}, expected {sorted(keys)}")
            continue
        yield where, line


def check_batch_input(content: str, *, dialect: str = "openai") -> list[str]:
    """Why a batch input file (JSONL) is not what the Batch API takes (empty when it is)."""
    wrong: list[str] = []
    seen: set[str] = set()
    for where, line in _jsonl_lines(content, "batch input", BATCH_INPUT_LINE, wrong):
        if not isinstance(line["custom_id"], str) or line["custom_id"] in seen:
            wrong.append(f"{where}: custom_id must be a unique string")
        seen.add(str(line["custom_id"]))
        if line["method"] != "POST":
            wrong.append(f"{where}: method {line['method']!r}, only POST")
        wrong += [f"{where}: {e}" for e in _check_endpoint_body(line["url"], line["body"], dialect)]
    return wrong


def check_batch_output(content: str) -> list[str]:
    """Why a batch output or error file (JSONL) is not what the Batch API writes."""
    wrong: list[str] = []
    for where, line in _jsonl_lines(content, "batch output", BATCH_OUTPUT_LINE, wrong):
        response, error = line["response"], line["error"]
        if (response is None) == (error is None):
            wrong.append(f"{where}: exactly one of response and error")
        if isinstance(response, dict):
            if set(response) != {"status_code", "request_id", "body"}:
                wrong.append(f"{where}: response keys {sorted(response)}")
            elif response["status_code"] == 200:
                pointer = _response_pointer("/chat/completions", "post", 200)
                wrong += [f"{where}: {e}" for e in schema_errors(pointer, response["body"])]
            else:
                wrong += [f"{where}: {e}" for e in _error_errors(response["body"])]
        if isinstance(error, dict) and not (
            isinstance(error.get("code"), str) and isinstance(error.get("message"), str)
        ):
            wrong.append(f"{where}: error must have a code and a message")
    return wrong


def _response_pointer(template: str, method: str, status: int) -> str:
    return (
        _pointer("paths", template, method, "responses", str(status), "content", "application/json")
        + "/schema"
    )


def _error_errors(body: Json) -> list[str]:
    return schema_errors("#/components/schemas/ErrorResponse", body)


def check_response(method: str, target: str, status: int, body: bytes) -> list[str]:
    """Why an answer does not match the description (errors: OpenAI's error object)."""
    path = target.partition("?")[0]
    where = f"answer {status} to {method} {target}"
    found = operation(method, path)
    if found is None:
        return []  # the request was already reported
    template, item = found
    try:
        value = json.loads(body) if template != "/files/{file_id}/content" else None
    except ValueError:
        return [f"{where}: the body is not JSON"]
    if status >= 400:
        return [f"{where}: {e}" for e in _error_errors(value)]
    if template == "/files/{file_id}/content":
        text = body.decode(errors="replace")
        first = text.lstrip()[:200]
        if '"response"' in first or '"error"' in first:
            return [f"{where}: {e}" for e in check_batch_output(text)]
        return [f"{where}: {e}" for e in check_batch_input(text)]
    responses = item[method.lower()]["responses"]
    if str(status) not in responses:
        return [f"{where}: status not declared ({sorted(responses)})"]
    content = resolve(responses[str(status)]).get("content", {})
    if "application/json" not in content:
        return []
    pointer = _response_pointer(template, method.lower(), status)
    return [f"{where}: {e}" for e in schema_errors(pointer, value)]
