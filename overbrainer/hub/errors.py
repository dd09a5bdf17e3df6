"""The errors of a push: bad input (exit 2), a Hub failure (exit 1), a cancelled push (130)."""

from __future__ import annotations

from overbrainer.model.errors import EXIT_INTERRUPTED, OverbrainerError, UsageError, WorkFailed

CANCELLED = "push cancelled: nothing was committed, run it again to resume"
TOKEN_MISSING = (
    "OVERBRAINER_HF_TOKEN is not set: a Hugging Face token with write access is needed to push"
)


class PushRefused(UsageError):
    """The push cannot start as asked: a bad repo name, a run without a model, no token."""


class HubFailed(WorkFailed):
    """The Hub refused or failed a request; the message never holds the token."""


class PushCancelled(OverbrainerError):
    """Ctrl-C before the commit: nothing was committed."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self, message: str = CANCELLED) -> None:
        super().__init__(message)
