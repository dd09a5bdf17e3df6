"""Provider batch APIs: many answers submitted at once, at a discount, collected later."""

from __future__ import annotations

from overbrainer.config.dialects import DialectSpec
from overbrainer.config.settings import BatchApi as Kind
from overbrainer.llm.batches.anthropic import AnthropicBatches
from overbrainer.llm.batches.inline import InlineBatches
from overbrainer.llm.batches.openai import OpenAiBatches
from overbrainer.llm.batches.types import (
    BatchApi,
    BatchItem,
    BatchResult,
    BatchStatus,
    NotSubmitted,
)
from overbrainer.llm.http import HttpClient

__all__ = [
    "BatchApi",
    "BatchItem",
    "BatchResult",
    "BatchStatus",
    "NotSubmitted",
    "batch_api",
]


def batch_api(kind: Kind, http: HttpClient, model: str, dialect: DialectSpec) -> BatchApi:
    """The batch API of shape `kind` on `http` for `model`, its bodies in `dialect`'s shape."""
    if kind is Kind.ANTHROPIC:
        return AnthropicBatches(http, model)
    if kind is Kind.INLINE:
        return InlineBatches(http, model, dialect)
    return OpenAiBatches(http, model, dialect)
