"""Why a model stopped and what kind of reasoning came back (a leaf: imports nothing of ours)."""

from __future__ import annotations

import enum


class ReasoningKind(enum.Enum):
    """How much of the model's thinking a provider returned; only `raw` trains."""

    RAW = "raw"
    SUMMARY = "summary"
    REDACTED = "redacted"
    NONE = "none"


class FinishReason(enum.Enum):
    """Why the model stopped."""

    STOP = "stop"
    LENGTH = "length"
    CONTENT_FILTER = "content_filter"
    REFUSAL = "refusal"
    OTHER = "other"
