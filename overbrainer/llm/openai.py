"""The OpenAI chat-completions protocol: request bodies and reading answers back."""

from __future__ import annotations

import httpx2

from overbrainer.config.dialects import DialectSpec
from overbrainer.config.settings import Settings
from overbrainer.llm.dialects import reasoning_fields
from overbrainer.llm.errors import InvalidResponse
from overbrainer.llm.http import HttpClient, Observe
from overbrainer.llm.types import (
    Completion,
    CompletionRequest,
    FinishReason,
    Json,
    Reasoning,
    ReasoningKind,
)
from overbrainer.model.rust_text import trim
from overbrainer.model.usage import Usage

CHAT_PATH = "chat/completions"
EMBEDDINGS_PATH = "embeddings"

STRING_LIST_FORMAT: dict[str, Json] = {
    "type": "json_schema",
    "json_schema": {
        "name": "string_list",
        "strict": False,
        "schema": {
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "string"}}},
            "required": ["items"],
            "additionalProperties": False,
        },
    },
}
"""`response_format` of a `json_list` request; the answer is `{"items": [...]}`."""

_FINISH = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
}


def auth_headers(api_key: str | None) -> dict[str, str]:
    """`Authorization: Bearer <key>`, or nothing for a keyless local server."""
    return {} if api_key is None else {"authorization": f"Bearer {api_key}"}


def chat_body(dialect: DialectSpec, model: str, request: CompletionRequest) -> dict[str, Json]:
    """The JSON body of `POST {base}/chat/completions`, shaped by the provider's dialect."""
    messages: list[Json] = []
    if request.system is not None:
        messages.append({"role": "system", "content": request.system})
    messages.append({"role": "user", "content": request.prompt})
    body: dict[str, Json] = {
        "model": model,
        "messages": messages,
        dialect.token_limit: request.max_tokens,
    }
    if request.temperature is not None:
        body["temperature"] = request.temperature
    body.update(reasoning_fields(dialect, request))
    if request.json_list:
        body["response_format"] = STRING_LIST_FORMAT
    return body


def _obj(value: Json) -> dict[str, Json]:
    return value if isinstance(value, dict) else {}


def _count(value: Json) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _nonblank(value: Json) -> str | None:
    return value if isinstance(value, str) and trim(value) else None


def read_usage(usage: Json, input_key: str, output_key: str) -> Usage:
    """Token counts from a usage object; missing fields count 0."""
    fields = _obj(usage)
    return Usage(_count(fields.get(input_key)), _count(fields.get(output_key)))


def reports_usage(usage: Json, input_key: str, output_key: str) -> bool:
    """Whether a usage object counts any tokens at all (some providers leave it out)."""
    fields = _obj(usage)
    return any(
        isinstance(fields.get(key), int) and not isinstance(fields.get(key), bool)
        for key in (input_key, output_key)
    )


def parse_chat(answer: Json) -> Completion:
    """A `Completion` from a chat-completions answer."""
    choices = _obj(answer).get("choices")
    if not isinstance(choices, list) or not choices:
        raise InvalidResponse("no choices")
    choice = _obj(choices[0])
    message = _obj(choice.get("message"))
    if _nonblank(message.get("refusal")) is not None:
        finish = FinishReason.REFUSAL
    else:
        reason = choice.get("finish_reason")
        finish = (
            _FINISH.get(reason, FinishReason.OTHER)
            if isinstance(reason, str)
            else (FinishReason.OTHER)
        )
    content, reasoning = split_message(message)
    counts = _obj(answer).get("usage")
    usage = read_usage(counts, "prompt_tokens", "completion_tokens")
    reported = reports_usage(counts, "prompt_tokens", "completion_tokens")
    return Completion(content, reasoning, usage, finish, reported)


def _from_details(details: list[Json]) -> Reasoning | None:
    """What typed `reasoning_details` say; None when no entry is of a known type."""
    texts: list[str] = []
    summaries: list[str] = []
    known = False
    for raw in details:
        entry = _obj(raw)
        kind = entry.get("type")
        if kind == "reasoning.text":
            known = True
            text = _nonblank(entry.get("text"))
            if text is not None:
                texts.append(text)
        elif kind == "reasoning.summary":
            known = True
            summary = _nonblank(entry.get("summary"))
            if summary is not None:
                summaries.append(summary)
        elif kind == "reasoning.encrypted":
            known = True
    if texts:
        return Reasoning("\n".join(texts), ReasoningKind.RAW)
    if summaries:
        return Reasoning("\n".join(summaries), ReasoningKind.SUMMARY)
    if known:
        return Reasoning(None, ReasoningKind.REDACTED)
    return None


def split_message(message: dict[str, Json]) -> tuple[str, Reasoning]:
    """The answer text and its reasoning, from the fields providers use or `<think>` tags."""
    raw_content = message.get("content")
    content = raw_content if isinstance(raw_content, str) else ""
    details_value = message.get("reasoning_details")
    details = _from_details(details_value) if isinstance(details_value, list) else None
    direct = _nonblank(message.get("reasoning")) or _nonblank(message.get("reasoning_content"))
    if direct is not None:
        kind = details.kind if details is not None else ReasoningKind.RAW
        return content, Reasoning(direct, kind)
    if details is not None:
        return content, details
    return split_think(content)


def split_think(content: str) -> tuple[str, Reasoning]:
    """Split an inline `<think>…</think>` block off the content."""
    before, marker, after = content.partition("</think>")
    if not marker:
        return content, Reasoning.none()
    thought = trim(trim(before).removeprefix("<think>"))
    answer = trim(after)
    if not thought:
        return answer, Reasoning.none()
    return answer, Reasoning(thought, ReasoningKind.RAW)


def embeddings_body(model: str, inputs: list[str]) -> dict[str, Json]:
    """The JSON body of `POST {base}/embeddings`."""
    return {"model": model, "input": list[Json](inputs), "encoding_format": "float"}


def parse_embeddings(answer: Json, count: int) -> list[list[float]]:
    """The vectors of an embeddings answer in input order."""
    data = _obj(answer).get("data")
    if not isinstance(data, list):
        raise InvalidResponse("no data")
    indexed: list[tuple[int, list[float]]] = []
    for raw in data:
        entry = _obj(raw)
        vector = entry.get("embedding")
        if not isinstance(vector, list) or not all(
            isinstance(x, int | float) and not isinstance(x, bool) for x in vector
        ):
            raise InvalidResponse("an embedding is not a list of numbers")
        floats = [float(x) for x in vector if isinstance(x, int | float)]
        indexed.append((_count(entry.get("index")), floats))
    indexed.sort(key=lambda pair: pair[0])
    if len(indexed) != count:
        raise InvalidResponse(f"{len(indexed)} embeddings for {count} inputs")
    return [vector for _, vector in indexed]


class OpenAiWire:
    """The OpenAI chat-completions protocol as a `WireProtocol`."""

    embedded = False
    embeddings = True
    raw_reasoning = True

    def headers(self, api_key: str | None) -> tuple[dict[str, str], dict[str, str]]:
        """No plain headers; the key as a bearer token."""
        return {}, auth_headers(api_key)

    def transport(self, settings: Settings, provider: str) -> httpx2.AsyncBaseTransport | None:
        """None: requests go over the network."""
        return None

    async def complete(
        self,
        http: HttpClient,
        dialect: DialectSpec,
        model: str,
        request: CompletionRequest,
        observe: Observe | None,
    ) -> Completion:
        """`POST {base}/chat/completions` in `dialect`'s shape, read back."""
        body = chat_body(dialect, model, request)
        return parse_chat(await http.post(CHAT_PATH, body, observe))

    async def embed(self, http: HttpClient, model: str, inputs: list[str]) -> list[list[float]]:
        """`POST {base}/embeddings`, read back in input order."""
        answer = await http.post(EMBEDDINGS_PATH, embeddings_body(model, inputs))
        return parse_embeddings(answer, len(inputs))


WIRE = OpenAiWire()
