"""The Anthropic Messages protocol: request bodies and reading answers back."""

from __future__ import annotations

import httpx2

from overbrainer.config.dialects import DialectSpec
from overbrainer.config.settings import Settings
from overbrainer.llm.errors import Unsupported
from overbrainer.llm.http import HttpClient, Observe
from overbrainer.llm.openai import read_usage, reports_usage
from overbrainer.llm.types import (
    Completion,
    CompletionRequest,
    FinishReason,
    Json,
    Reasoning,
    ReasoningKind,
)
from overbrainer.model.rust_text import trim

MESSAGES_PATH = "messages"
ANTHROPIC_VERSION = "2023-06-01"

_STOP = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "refusal": FinishReason.REFUSAL,
}


def plain_headers() -> dict[str, str]:
    """Headers every Anthropic request carries."""
    return {"anthropic-version": ANTHROPIC_VERSION}


def auth_headers(api_key: str | None) -> dict[str, str]:
    """`x-api-key: <key>` when a key is set."""
    return {} if api_key is None else {"x-api-key": api_key}


def messages_body(model: str, request: CompletionRequest) -> dict[str, Json]:
    """The JSON body of `POST {base}/messages`."""
    body: dict[str, Json] = {"model": model, "max_tokens": request.max_tokens}
    if request.system is not None:
        body["system"] = request.system
    body["messages"] = [{"role": "user", "content": request.prompt}]
    if request.reasoning:
        if request.thinking_budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": request.thinking_budget}
        else:
            body["thinking"] = {"type": "adaptive"}
            if request.effort is not None:
                body["output_config"] = {"effort": request.effort.value}
    return body


def parse_message(answer: Json) -> Completion:
    """A `Completion` from a Messages answer; Claude's thinking counts as a summary."""
    fields = answer if isinstance(answer, dict) else {}
    texts: list[str] = []
    thoughts: list[str] = []
    redacted = False
    blocks = fields.get("content")
    for raw in blocks if isinstance(blocks, list) else []:
        block = raw if isinstance(raw, dict) else {}
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str):
                texts.append(text)
        elif kind == "thinking":
            thought = block.get("thinking")
            if isinstance(thought, str) and trim(thought):
                thoughts.append(thought)
            else:
                redacted = True
        elif kind == "redacted_thinking":
            redacted = True
    if thoughts:
        reasoning = Reasoning("\n".join(thoughts), ReasoningKind.SUMMARY)
    elif redacted:
        reasoning = Reasoning(None, ReasoningKind.REDACTED)
    else:
        reasoning = Reasoning.none()
    stop = fields.get("stop_reason")
    finish = _STOP.get(stop, FinishReason.OTHER) if isinstance(stop, str) else FinishReason.OTHER
    counts = fields.get("usage")
    usage = read_usage(counts, "input_tokens", "output_tokens")
    reported = reports_usage(counts, "input_tokens", "output_tokens")
    return Completion("".join(texts), reasoning, usage, finish, reported)


class AnthropicWire:
    """The Anthropic Messages protocol as a `WireProtocol`: no embeddings, no raw reasoning."""

    embedded = False
    embeddings = False
    raw_reasoning = False

    def headers(self, api_key: str | None) -> tuple[dict[str, str], dict[str, str]]:
        """The API version, and the key as `x-api-key`."""
        return plain_headers(), auth_headers(api_key)

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
        """`POST {base}/messages`, read back (the Messages API has one dialect)."""
        return parse_message(await http.post(MESSAGES_PATH, messages_body(model, request), observe))

    async def embed(self, http: HttpClient, model: str, inputs: list[str]) -> list[list[float]]:
        """Always `Unsupported`: the Messages API has no embeddings."""
        raise Unsupported("embeddings")


WIRE = AnthropicWire()
