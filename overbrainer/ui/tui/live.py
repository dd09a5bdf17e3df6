"""The Pipeline view's live progress: each stage's counts, rates and spend in this session."""

from __future__ import annotations

import attrs

from overbrainer.events.types import Stage
from overbrainer.ui.progress import per_second


@attrs.frozen
class Live:
    """A stage's progress as its events tell it: for rate and spend."""

    total: int = 0
    done: int = 0
    """Items stored by a request in this session."""
    skipped: int = 0
    """Items already stored, skipped without a request."""
    failed: int = 0
    requests: int = 0
    """Requests answered (items done by a request, failures and retries alike)."""
    cost: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    started: float = 0.0
    now: float = 0.0
    running: bool = False

    @property
    def rate(self) -> float:
        """Items per second since the stage started."""
        return per_second(self.done, self.started, self.now) or 0.0

    @property
    def request_rate(self) -> float | None:
        """Requests per second since the stage started; None before the first."""
        return per_second(self.requests, self.started, self.now)

    @property
    def token_rate(self) -> float:
        """Tokens (in and out) per second since the stage started."""
        return per_second(self.tokens_in + self.tokens_out, self.started, self.now) or 0.0

    def plus(self, other: Live) -> Live:
        """Two stages' counts together, over the sum of their times (a role's totals)."""
        return Live(
            done=self.done + other.done,
            skipped=self.skipped + other.skipped,
            failed=self.failed + other.failed,
            requests=self.requests + other.requests,
            cost=self.cost + other.cost,
            tokens_in=self.tokens_in + other.tokens_in,
            tokens_out=self.tokens_out + other.tokens_out,
            now=(self.now - self.started) + (other.now - other.started),
            running=self.running or other.running,
        )


ROLES = (
    ("generator", (Stage.SUBTOPICS, Stage.QUESTIONS)),
    ("parent", (Stage.ANSWERS,)),
    ("quality", (Stage.QUALITY,)),
)
"""The roles whose requests the Pipeline view counts, with the stages that ask them."""
