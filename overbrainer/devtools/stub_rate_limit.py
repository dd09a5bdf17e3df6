"""A stand-in responder with a provider's per-window rate limit (requests and tokens)."""

from __future__ import annotations

import math

import attrs
import trio

from overbrainer.devtools.stub_script import Recorded, Reply


@attrs.define
class RateLimited:
    """A responder with a provider's per-window budget of requests (and tokens, if set).

    Windows are fixed, `window` seconds long, from the first request. Every reply carries
    OpenAI's `x-ratelimit-*` headers; a request over budget gets a 429 with `Retry-After` (the
    seconds left in its window). `answered` and `refused` count what happened.
    """

    requests: int
    window: float
    tokens: int | None = None
    latency: float = 0.0
    usage: tuple[int, int] = (10, 5)
    answered: int = 0
    refused: int = 0
    _start: float | None = None
    _counts: dict[int, tuple[int, int]] = attrs.Factory(dict)

    def __call__(self, request: Recorded) -> Reply:
        """The reply to one request, by the budget of its window."""
        now = trio.current_time()
        if self._start is None:
            self._start = now
        index = math.floor((now - self._start) / self.window)
        left = self._start + (index + 1) * self.window - now
        used_requests, used_tokens = self._counts.get(index, (0, 0))
        cost = sum(self.usage)
        over = used_requests >= self.requests or (
            self.tokens is not None and used_tokens + cost > self.tokens
        )
        if not over:
            used_requests, used_tokens = used_requests + 1, used_tokens + cost
            self._counts[index] = (used_requests, used_tokens)
        headers = {
            "x-ratelimit-limit-requests": str(self.requests),
            "x-ratelimit-remaining-requests": str(max(self.requests - used_requests, 0)),
            "x-ratelimit-reset-requests": f"{left * 1000:.0f}ms",
        }
        if self.tokens is not None:
            headers |= {
                "x-ratelimit-limit-tokens": str(self.tokens),
                "x-ratelimit-remaining-tokens": str(max(self.tokens - used_tokens, 0)),
                "x-ratelimit-reset-tokens": f"{left * 1000:.0f}ms",
            }
        if over:
            self.refused += 1
            headers["retry-after"] = f"{left:.3f}"
            return Reply(status=429, headers=headers)
        self.answered += 1
        return Reply(
            content=f"Answer to {request.prompt}",
            reasoning_content="Thinking it through.",
            usage=self.usage,
            delay=self.latency,
            headers=headers,
        )
