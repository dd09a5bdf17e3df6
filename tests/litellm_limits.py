"""A stand-in responder limited the way LiteLLM's proxy limits a model with `rpm`.

What LiteLLM (1.110, read in its source) does, and this responder with it:
- usage is counted per calendar minute (a cache key `%H-%M`): fixed windows of `window`
  seconds here, aligned on the clock, not on the first request;
- every reply states `x-ratelimit-limit-requests` and `x-ratelimit-remaining-requests` (the
  limit less the usage counted so far, negative once over) and **no reset header**; the usage
  is recorded after the call, so a reply does not count its own request;
- with `enforce_model_rate_limits`, a request past the limit gets a 429 whose `retry-after:
  60` (the window) the proxy passes on only as `llm_provider-retry-after`; without it
  (`enforce=False`), nothing is refused and the remaining count goes below zero.
"""

from __future__ import annotations

import math

import attrs
import trio

from overbrainer.devtools.stub_script import Recorded, Reply


@attrs.define
class LiteLlmLimits:
    """LiteLLM's `rpm` on one model: `answered`, `refused` and `sent` (request times) recorded."""

    rpm: int
    window: float = 60.0
    enforce: bool = True
    latency: float = 0.05
    answered: int = 0
    refused: int = 0
    sent: list[float] = attrs.Factory(list)
    _started: dict[int, int] = attrs.Factory(dict)
    _recorded: dict[int, int] = attrs.Factory(dict)

    def __call__(self, request: Recorded) -> Reply:
        """The reply to one request, by the usage of its window."""
        now = trio.current_time()
        self.sent.append(now)
        index = math.floor(now / self.window)
        started = self._started.get(index, 0) + 1
        if self.enforce and started > self.rpm:
            self.refused += 1
            headers = {"llm_provider-retry-after": f"{self.window:g}"}
            return Reply(status=429, headers=headers)
        self._started[index] = started
        recorded = self._recorded.get(index, 0)
        self._recorded[index] = recorded + 1
        self.answered += 1
        headers = {
            "x-ratelimit-limit-requests": str(self.rpm),
            "x-ratelimit-remaining-requests": str(self.rpm - recorded),
        }
        return Reply(content=f"Answer to {request.prompt}", delay=self.latency, headers=headers)
