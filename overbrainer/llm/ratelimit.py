"""A provider's rate-limit headers read into one shape: OpenAI, Anthropic and the IETF draft.

- OpenAI (and OpenRouter, Groq, ...): `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`,
  the reset a Go-style duration (`1s`, `6m0s`, `250ms`).
- Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,
  reset}`, the reset an RFC 3339 time. Input and output tokens are separate budgets; both are
  kept as they are named (never swapped), and the tightest one gates admission.
- IETF `draft-ietf-httpapi-ratelimit-headers`: the structured form `RateLimit: "p";r=50;t=30`
  with `RateLimit-Policy: "p";q=100;w=60`, and the older `RateLimit-Limit`/`-Remaining`/`-Reset`
  (also combined as `RateLimit: limit=100, remaining=50, reset=30`). These count requests.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping

import attrs

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


@attrs.frozen
class Budget:
    """One limit: how many per window, how many are left, and seconds until it refills."""

    limit: int | None = None
    remaining: int | None = None
    """What is left; negative when the provider counts more than its limit (LiteLLM's `-4`: none
    left, 4 over)."""
    reset_after: float | None = None


@attrs.frozen
class RateLimitInfo:
    """What one reply said about the caller's limits; None where it said nothing."""

    requests: Budget | None = None
    tokens: Budget | None = None
    input_tokens: Budget | None = None
    output_tokens: Budget | None = None

    def token_budgets(self) -> dict[str, Budget]:
        """The token budgets present by name (`tokens`, `input_tokens`, `output_tokens`)."""
        named = {
            "tokens": self.tokens,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }
        return {name: budget for name, budget in named.items() if budget is not None}


def parse_duration(text: str) -> float | None:
    """Seconds from `1s`, `6m0s`, `1h2m3.5s`, `250ms` or a bare number; None when unreadable."""
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    total = 0.0
    position = 0
    for match in _DURATION_PART.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position == 0 or position != len(text):
        return None
    return total


def _seconds_until(text: str, now: dt.datetime) -> float | None:
    """Seconds from `now` to an RFC 3339 time (0 when it has passed); None when unreadable."""
    try:
        moment = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return max((moment - now).total_seconds(), 0.0)


def _int(text: str | None, *, signed: bool = False) -> int | None:
    """A whole number; a negative one only where `signed` (what is left may be overdrawn)."""
    if text is None:
        return None
    try:
        number = float(text.strip())
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    value = int(number)
    return value if value >= 0 or signed else None


def _left(text: str | None) -> int | None:
    return _int(text, signed=True)


def _budget(limit: int | None, remaining: int | None, reset: float | None) -> Budget | None:
    if limit is None and remaining is None:
        return None
    return Budget(limit=limit, remaining=remaining, reset_after=reset)


def _openai(headers: Mapping[str, str], kind: str) -> Budget | None:
    reset = headers.get(f"x-ratelimit-reset-{kind}")
    return _budget(
        _int(headers.get(f"x-ratelimit-limit-{kind}")),
        _left(headers.get(f"x-ratelimit-remaining-{kind}")),
        None if reset is None else parse_duration(reset),
    )


def _anthropic(headers: Mapping[str, str], kind: str, now: dt.datetime) -> Budget | None:
    reset = headers.get(f"anthropic-ratelimit-{kind}-reset")
    return _budget(
        _int(headers.get(f"anthropic-ratelimit-{kind}-limit")),
        _left(headers.get(f"anthropic-ratelimit-{kind}-remaining")),
        None if reset is None else _seconds_until(reset, now),
    )


def _sf_params(member: str) -> dict[str, str]:
    """`"name";r=50;t=30` → {"r": "50", "t": "30"} (the item's parameters)."""
    params: dict[str, str] = {}
    for part in member.split(";")[1:]:
        key, _, value = part.partition("=")
        params[key.strip().lower()] = value.strip().strip('"')
    return params


def _ietf(headers: Mapping[str, str]) -> Budget | None:
    combined = headers.get("ratelimit")
    policy = headers.get("ratelimit-policy")
    if combined is not None and ";" in combined:
        # Structured form: the first item of each field (one policy is what servers send).
        state = _sf_params(combined.split(",")[0])
        quota = _sf_params(policy.split(",")[0]) if policy else {}
        return _budget(_int(quota.get("q")), _left(state.get("r")), _float(state.get("t")))
    if combined is not None:
        fields: dict[str, str] = {}
        for part in combined.split(","):
            key, _, value = part.partition("=")
            fields[key.strip().lower()] = value.strip()
        return _budget(
            _int(fields.get("limit")), _left(fields.get("remaining")), _float(fields.get("reset"))
        )
    limit = headers.get("ratelimit-limit")
    if limit is not None:
        limit = limit.split(",")[0].split(";")[0]
    return _budget(
        _int(limit),
        _left(headers.get("ratelimit-remaining")),
        _float(headers.get("ratelimit-reset")),
    )


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def parse_rate_limits(
    headers: Mapping[str, str], now: dt.datetime | None = None
) -> RateLimitInfo | None:
    """The limits a reply's headers state (names matched case-insensitively); None if none."""
    lowered = {name.lower(): value for name, value in headers.items()}
    if not any("ratelimit" in name for name in lowered):
        return None  # every name read below contains it; a reply without one costs no more
    moment = now or dt.datetime.now(dt.UTC)
    info = RateLimitInfo(
        requests=_openai(lowered, "requests") or _anthropic(lowered, "requests", moment),
        tokens=_openai(lowered, "tokens") or _anthropic(lowered, "tokens", moment),
        input_tokens=_anthropic(lowered, "input-tokens", moment),
        output_tokens=_anthropic(lowered, "output-tokens", moment),
    )
    if info.requests is None:
        info = attrs.evolve(info, requests=_ietf(lowered))
    if info == RateLimitInfo():
        return None
    return info
