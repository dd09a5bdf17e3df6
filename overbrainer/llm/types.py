"""Values of the LLM layer: requests, completions, reasoning and finish reasons."""

from __future__ import annotations

from typing import TypeAlias

import attrs

from overbrainer.config.settings import DEFAULT_MAX_TOKENS, Effort, Protocol
from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.model.usage import Usage

Json: TypeAlias = dict[str, "Json"] | list["Json"] | str | int | float | bool | None
"""A decoded JSON value."""

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "Completion",
    "CompletionRequest",
    "Effort",
    "FinishReason",
    "Json",
    "Protocol",
    "Reasoning",
    "ReasoningKind",
]


@attrs.frozen
class CompletionRequest:
    """One chat request: optional system prompt, one user prompt, and the role's knobs."""

    prompt: str
    system: str | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float | None = None
    reasoning: bool = False
    effort: Effort | None = None
    thinking_budget: int | None = None
    json_list: bool = False


@attrs.frozen
class Reasoning:
    """The thinking that came with an answer, and what kind of trace it is."""

    text: str | None = None
    kind: ReasoningKind = ReasoningKind.NONE

    @classmethod
    def none(cls) -> Reasoning:
        """No reasoning at all."""
        return cls(None, ReasoningKind.NONE)


@attrs.frozen
class Completion:
    """An answer with its reasoning removed from the content, its usage and finish reason."""

    content: str
    reasoning: Reasoning = attrs.field(factory=Reasoning.none)
    usage: Usage = attrs.field(factory=Usage)
    finish: FinishReason = FinishReason.STOP
    usage_reported: bool = True
    """False when the reply carried no token counts (`usage` is then all zeros)."""
