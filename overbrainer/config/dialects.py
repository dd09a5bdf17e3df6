"""Provider dialects: what each API a provider really is asks for and sends back, as data.

A wire protocol (openai, anthropic, stub) says how bytes are framed; a dialect, on top of it,
says how reasoning is asked for and where it comes back, which field caps the tokens, where
prices come from, which batch API it has and which rate-limit headers it sends. The request
bodies are built from these records in `overbrainer/llm/dialects.py`; the configuration reads
`[providers.<name>] dialect` into `Dialect` and detects it from a well-known base URL.
"""

from __future__ import annotations

import enum
import urllib.parse
from collections.abc import Mapping
from types import MappingProxyType
from typing import TypeAlias

import attrs

JsonValue: TypeAlias = dict[str, "JsonValue"] | list["JsonValue"] | str | int | float | bool | None
"""A JSON value a dialect adds to a request body."""


class Protocol(enum.Enum):
    """Wire protocol of a provider: OpenAI chat completions, the Anthropic Messages API, or
    `stub`: the deterministic stand-in run inside the process (OpenAI's wire format, no network).
    """

    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    STUB = "stub"


class BatchApi(enum.Enum):
    """`[providers.<name>] batch_api`: which batch API shape a provider speaks.

    `openai`: a JSONL file and `/batches`; `anthropic`: `/messages/batches`; `inline`: OpenAI's
    batch objects with the requests inline (`{endpoint, model, requests: [{custom_id, body}]}`)
    and the results in the batch, as OpenRouter's Batch API has them.
    """

    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    INLINE = "inline"


class Dialect(enum.Enum):
    """`[providers.<name>] dialect`: which API a provider really is."""

    OPENAI = "openai"
    OPENROUTER = "openrouter"
    OPENAI_COMPATIBLE = "openai-compatible"
    VLLM = "vllm"
    LLAMA_CPP = "llama.cpp"
    OLLAMA = "ollama"
    LITELLM = "litellm"
    DEEPSEEK = "deepseek"
    TOGETHER = "together"
    GROQ = "groq"
    FIREWORKS = "fireworks"
    ANTHROPIC = "anthropic"


class EffortField(enum.Enum):
    """Where a chat request carries the reasoning effort."""

    NONE = "none"
    """Not sent: the server decides (its chat template, its reasoning parser)."""
    TOP = "reasoning_effort"
    """`reasoning_effort: "<effort>"`, as OpenAI declares it."""
    OBJECT = "reasoning"
    """`reasoning: {"effort": "<effort>"}`, OpenRouter's unified object."""
    THINKING = "thinking"
    """Anthropic's `thinking` (adaptive, or a token budget) and `output_config.effort`."""


class PriceSource(enum.Enum):
    """Where a model's price comes from."""

    LISTING = "listing"
    """The provider's `/models` listing (`pricing`), else the role's `price_in`/`price_out`."""
    ROLE = "role"
    """Only the role's `price_in`/`price_out`: the listing states no prices."""


@attrs.frozen
class DialectSpec:
    """What one dialect asks for and sends back.

    - `protocol`: the wire it rides on (a stub provider speaks OpenAI's wire, so any dialect of
      the openai protocol fits it too).
    - `token_limit`: the body field that caps generated tokens, reasoning included.
    - `effort_field`: where the effort goes; `effort_default`: whether `reasoning = true` alone
      sends `medium` (else the effort is sent only when the role sets `reasoning_effort`).
    - `reasoning_on`: fields added to a request of a role with `reasoning = true` (not with
      effort `none`), e.g. DeepSeek's `thinking: {type: enabled}`.
    - `reasoning_returned`: where the trace comes back (documentation; the parser reads every
      known place whatever the dialect); empty when the API never returns it.
    - `prices`, `batch_api` (None: no batch API), `hosts` (base URL hosts it is detected by; a
      leading `.` matches subdomains), `rate_limit_headers` (those it is known to send) and
      `unstated_reset_secs` (when a budget comes without a reset: the window it refills after,
      None when unknown), `models_path` (the model listing below the base URL).
    """

    dialect: Dialect
    protocol: Protocol
    token_limit: str
    effort_field: EffortField
    effort_default: bool
    reasoning_returned: tuple[str, ...]
    prices: PriceSource
    batch_api: BatchApi | None
    reasoning_on: Mapping[str, JsonValue] = attrs.field(factory=dict)
    hosts: tuple[str, ...] = ()
    rate_limit_headers: tuple[str, ...] = ()
    unstated_reset_secs: float | None = None
    models_path: str = "models"


_OPENAI_HEADERS = ("x-ratelimit-{limit,remaining,reset}-{requests,tokens}",)

DIALECTS: Mapping[Dialect, DialectSpec] = MappingProxyType(
    {
        spec.dialect: spec
        for spec in (
            DialectSpec(
                Dialect.OPENAI,
                Protocol.OPENAI,
                token_limit="max_completion_tokens",
                effort_field=EffortField.TOP,
                effort_default=True,
                reasoning_returned=(),
                prices=PriceSource.ROLE,
                batch_api=BatchApi.OPENAI,
                hosts=("api.openai.com",),
                rate_limit_headers=_OPENAI_HEADERS,
            ),
            DialectSpec(
                Dialect.OPENROUTER,
                Protocol.OPENAI,
                token_limit="max_tokens",
                effort_field=EffortField.OBJECT,
                effort_default=True,
                reasoning_returned=("reasoning", "reasoning_details"),
                prices=PriceSource.LISTING,
                batch_api=BatchApi.INLINE,
                hosts=("openrouter.ai", ".openrouter.ai"),
            ),
            DialectSpec(
                Dialect.OPENAI_COMPATIBLE,
                Protocol.OPENAI,
                token_limit="max_tokens",
                effort_field=EffortField.TOP,
                effort_default=False,
                reasoning_returned=("reasoning_content", "reasoning", "<think>"),
                prices=PriceSource.LISTING,
                batch_api=BatchApi.OPENAI,
                # The reference's listing: the query adds prices on NanoGPT, others ignore it.
                models_path="models?detailed=true",
            ),
            DialectSpec(
                Dialect.VLLM,
                Protocol.OPENAI,
                token_limit="max_tokens",
                effort_field=EffortField.TOP,
                effort_default=False,
                reasoning_returned=("reasoning", "reasoning_content"),
                prices=PriceSource.ROLE,
                batch_api=None,
                reasoning_on={"chat_template_kwargs": {"enable_thinking": True}},
            ),
            DialectSpec(
                Dialect.LLAMA_CPP,
                Protocol.OPENAI,
                token_limit="max_tokens",
                effort_field=EffortField.NONE,
                effort_default=False,
                reasoning_returned=("reasoning_content", "<think>"),
                prices=PriceSource.ROLE,
                batch_api=None,
                reasoning_on={"chat_template_kwargs": {"enable_thinking": True}},
            ),
            DialectSpec(
                Dialect.OLLAMA,
                Protocol.OPENAI,
                token_limit="max_tokens",
                effort_field=EffortField.TOP,
                effort_default=True,
                reasoning_returned=("reasoning",),
                prices=PriceSource.ROLE,
                batch_api=None,
            ),
            DialectSpec(
                Dialect.LITELLM,
                Protocol.OPENAI,
                token_limit="max_tokens",
                effort_field=EffortField.TOP,
                effort_default=False,
                reasoning_returned=("reasoning_content",),
                prices=PriceSource.ROLE,
                batch_api=BatchApi.OPENAI,
                rate_limit_headers=("x-ratelimit-{limit,remaining}-{requests,tokens}",),
                unstated_reset_secs=60.0,
            ),
            DialectSpec(
                Dialect.DEEPSEEK,
                Protocol.OPENAI,
                token_limit="max_tokens",
                effort_field=EffortField.TOP,
                effort_default=False,
                reasoning_returned=("reasoning_content",),
                prices=PriceSource.ROLE,
                batch_api=None,
                reasoning_on={"thinking": {"type": "enabled"}},
                hosts=("api.deepseek.com",),
            ),
            DialectSpec(
                Dialect.TOGETHER,
                Protocol.OPENAI,
                token_limit="max_tokens",
                effort_field=EffortField.TOP,
                effort_default=False,
                reasoning_returned=("reasoning", "<think>"),
                prices=PriceSource.ROLE,
                batch_api=None,
                reasoning_on={"reasoning": {"enabled": True}},
                hosts=("api.together.xyz", "api.together.ai"),
            ),
            DialectSpec(
                Dialect.GROQ,
                Protocol.OPENAI,
                token_limit="max_completion_tokens",
                effort_field=EffortField.TOP,
                effort_default=False,
                reasoning_returned=("reasoning", "<think>"),
                prices=PriceSource.ROLE,
                batch_api=BatchApi.OPENAI,
                hosts=("api.groq.com",),
                rate_limit_headers=(*_OPENAI_HEADERS, "retry-after"),
            ),
            DialectSpec(
                Dialect.FIREWORKS,
                Protocol.OPENAI,
                token_limit="max_tokens",
                effort_field=EffortField.TOP,
                effort_default=False,
                reasoning_returned=("reasoning_content", "<think>"),
                prices=PriceSource.ROLE,
                batch_api=None,
                hosts=("api.fireworks.ai",),
            ),
            DialectSpec(
                Dialect.ANTHROPIC,
                Protocol.ANTHROPIC,
                token_limit="max_tokens",
                effort_field=EffortField.THINKING,
                effort_default=False,
                reasoning_returned=("thinking blocks",),
                prices=PriceSource.LISTING,
                batch_api=BatchApi.ANTHROPIC,
                hosts=("api.anthropic.com",),
                rate_limit_headers=(
                    "anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-"
                    "{limit,remaining,reset}",
                    "retry-after",
                ),
            ),
        )
    }
)
"""Every dialect's record, by name."""

PROTOCOL_DEFAULT: Mapping[Protocol, Dialect] = MappingProxyType(
    {
        Protocol.OPENAI: Dialect.OPENAI_COMPATIBLE,
        Protocol.ANTHROPIC: Dialect.ANTHROPIC,
        Protocol.STUB: Dialect.OPENAI_COMPATIBLE,
    }
)
"""The dialect of a provider whose base URL names no well-known host."""


class DialectSource(enum.Enum):
    """How a provider's dialect was chosen."""

    SET = "set"
    DETECTED = "detected from the base URL"
    DEFAULT = "the protocol's default"


def wire_of_dialect(protocol: Protocol) -> Protocol:
    """The wire a protocol's dialects ride on: a stub speaks OpenAI's."""
    return Protocol.OPENAI if protocol is Protocol.STUB else protocol


def fits(dialect: Dialect, protocol: Protocol) -> bool:
    """Whether `dialect` can be spoken over `protocol`."""
    return DIALECTS[dialect].protocol is wire_of_dialect(protocol)


def _host_matches(host: str, pattern: str) -> bool:
    return host.endswith(pattern) if pattern.startswith(".") else host == pattern


def detect(protocol: Protocol, base_url: str | None) -> Dialect | None:
    """The dialect whose well-known host `base_url` is on, among `protocol`'s; None if none.

    Only public API hosts are known: a loopback or private address says nothing (the port of a
    local server is no evidence of what it runs), so it gets the protocol's default.
    """
    if base_url is None or protocol is Protocol.STUB:
        return None
    try:
        host = (urllib.parse.urlsplit(base_url).hostname or "").lower().rstrip(".")
    except ValueError:  # an unparsable URL is the base URL check's to report, not ours
        return None
    for spec in DIALECTS.values():
        if spec.protocol is protocol and any(_host_matches(host, p) for p in spec.hosts):
            return spec.dialect
    return None


def resolve(
    protocol: Protocol, base_url: str | None, dialect: Dialect | None
) -> tuple[DialectSpec, DialectSource]:
    """The dialect of a provider: the one set, else the detected one, else the default."""
    if dialect is not None:
        return DIALECTS[dialect], DialectSource.SET
    found = detect(protocol, base_url)
    if found is not None:
        return DIALECTS[found], DialectSource.DETECTED
    return DIALECTS[PROTOCOL_DEFAULT[protocol]], DialectSource.DEFAULT
