"""How each dialect asks an OpenAI-wire server for tokens and reasoning (`config/dialects.py`)."""

from __future__ import annotations

import copy

from overbrainer.config.dialects import (
    DIALECTS,
    PROTOCOL_DEFAULT,
    Dialect,
    DialectSpec,
    EffortField,
    PriceSource,
)
from overbrainer.config.settings import Protocol
from overbrainer.llm.types import CompletionRequest, Effort, Json

__all__ = [
    "DIALECTS",
    "Dialect",
    "DialectSpec",
    "PriceSource",
    "default_dialect",
    "reasoning_fields",
    "spec_of",
]


def spec_of(dialect: Dialect) -> DialectSpec:
    """The record of `dialect`."""
    return DIALECTS[dialect]


def default_dialect(protocol: Protocol) -> DialectSpec:
    """The dialect a provider of `protocol` gets when nothing names or detects another."""
    return DIALECTS[PROTOCOL_DEFAULT[protocol]]


def reasoning_fields(dialect: DialectSpec, request: CompletionRequest) -> dict[str, Json]:
    """The fields that ask `dialect` for reasoning; none for a role without `reasoning`.

    The effort is the role's, else `medium` where the dialect defaults to one, else not sent.
    `none` is sent only when the role sets it, and then without `reasoning_on`, which would
    switch thinking back on.
    """
    if not request.reasoning:
        return {}
    effort = request.effort
    if effort is None and dialect.effort_default:
        effort = Effort.MEDIUM
    fields: dict[str, Json] = {}
    if effort is not Effort.NONE and dialect.reasoning_on:
        fields.update(copy.deepcopy(dict(dialect.reasoning_on)))
    if effort is not None:
        if dialect.effort_field is EffortField.TOP:
            fields["reasoning_effort"] = effort.value
        elif dialect.effort_field is EffortField.OBJECT:
            fields["reasoning"] = {"effort": effort.value}
    return fields
