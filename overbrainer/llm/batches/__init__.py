"""Provider batch APIs: many answers submitted at once, at a discount, collected later."""

from __future__ import annotations

from overbrainer.llm.batches.anthropic import AnthropicBatches
from overbrainer.llm.batches.openai import OpenAiBatches
from overbrainer.llm.batches.types import BatchApi, BatchItem, BatchResult, BatchStatus
from overbrainer.llm.http import HttpClient
from overbrainer.llm.types import Protocol

__all__ = ["BatchApi", "BatchItem", "BatchResult", "BatchStatus", "batch_api"]


def batch_api(protocol: Protocol, http: HttpClient, model: str) -> BatchApi:
    """The batch API of `protocol` on `http` for `model`; ValueError for a protocol without."""
    if protocol is Protocol.OPENAI:
        return OpenAiBatches(http, model)
    if protocol is Protocol.ANTHROPIC:
        return AnthropicBatches(http, model)
    raise ValueError(f"the {protocol.value} protocol has no batch API")
