"""Rate-limit headers of OpenAI, Anthropic and the IETF draft, from literal examples."""

from __future__ import annotations

import datetime as dt

import pytest

from overbrainer.llm.ratelimit import Budget, RateLimitInfo, parse_duration, parse_rate_limits

NOW = dt.datetime(2026, 12, 3, 18, 0, 0, tzinfo=dt.UTC)


def test_openai_headers() -> None:
    # As OpenAI documents them (platform.openai.com, "Rate limits": headers).
    headers = {
        "x-ratelimit-limit-requests": "60",
        "x-ratelimit-limit-tokens": "150000",
        "x-ratelimit-remaining-requests": "59",
        "x-ratelimit-remaining-tokens": "149984",
        "x-ratelimit-reset-requests": "1s",
        "x-ratelimit-reset-tokens": "6m0s",
    }
    assert parse_rate_limits(headers, NOW) == RateLimitInfo(
        requests=Budget(limit=60, remaining=59, reset_after=1.0),
        tokens=Budget(limit=150000, remaining=149984, reset_after=360.0),
    )


def test_anthropic_headers_keep_input_and_output_apart() -> None:
    # As Anthropic documents them (docs.anthropic.com, "Rate limits": response headers).
    headers = {
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-requests-remaining": "49",
        "anthropic-ratelimit-requests-reset": "2026-12-03T18:00:01Z",
        "anthropic-ratelimit-input-tokens-limit": "30000",
        "anthropic-ratelimit-input-tokens-remaining": "29000",
        "anthropic-ratelimit-input-tokens-reset": "2026-12-03T18:00:02Z",
        "anthropic-ratelimit-output-tokens-limit": "8000",
        "anthropic-ratelimit-output-tokens-remaining": "7000",
        "anthropic-ratelimit-output-tokens-reset": "2026-12-03T18:00:07.500000Z",
        "anthropic-ratelimit-tokens-limit": "38000",
        "anthropic-ratelimit-tokens-remaining": "36000",
        "anthropic-ratelimit-tokens-reset": "2026-12-03T18:00:02Z",
        "retry-after": "1",
    }
    assert parse_rate_limits(headers, NOW) == RateLimitInfo(
        requests=Budget(limit=50, remaining=49, reset_after=1.0),
        tokens=Budget(limit=38000, remaining=36000, reset_after=2.0),
        input_tokens=Budget(limit=30000, remaining=29000, reset_after=2.0),
        output_tokens=Budget(limit=8000, remaining=7000, reset_after=7.5),
    )


def test_ietf_structured_fields() -> None:
    # draft-ietf-httpapi-ratelimit-headers-09 §5 example.
    headers = {"RateLimit-Policy": '"default";q=100;w=10', "RateLimit": '"default";r=50;t=30'}
    assert parse_rate_limits(headers, NOW) == RateLimitInfo(
        requests=Budget(limit=100, remaining=50, reset_after=30.0)
    )


def test_ietf_older_fields() -> None:
    # draft-ietf-httpapi-ratelimit-headers-03 examples: separate and combined.
    separate = {"RateLimit-Limit": "10", "RateLimit-Remaining": "1", "RateLimit-Reset": "7"}
    combined = {"RateLimit": "limit=10, remaining=1, reset=7"}
    expected = RateLimitInfo(requests=Budget(limit=10, remaining=1, reset_after=7.0))
    assert parse_rate_limits(separate, NOW) == expected
    assert parse_rate_limits(combined, NOW) == expected


def test_no_rate_limit_headers() -> None:
    assert parse_rate_limits({"content-type": "application/json"}, NOW) is None


def test_past_anthropic_reset_is_zero() -> None:
    headers = {
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": "2026-12-03T17:59:00Z",
    }
    info = parse_rate_limits(headers, NOW)
    assert info is not None and info.requests == Budget(None, 0, 0.0)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1s", 1.0), ("6m0s", 360.0), ("1h2m3.5s", 3723.5), ("250ms", 0.25), ("0.5", 0.5)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "1x", "-1", "s1"])
def test_unreadable_durations(text: str) -> None:
    assert parse_duration(text) is None


@pytest.mark.parametrize(
    "headers",
    [
        {"x-ratelimit-limit-requests": "30", "x-ratelimit-remaining-requests": "-4"},
        {
            "anthropic-ratelimit-requests-limit": "30",
            "anthropic-ratelimit-requests-remaining": "-4",
        },
        {"ratelimit-limit": "30", "ratelimit-remaining": "-4"},
    ],
)
def test_an_overdrawn_budget_is_read_as_it_is(headers: dict[str, str]) -> None:
    # LiteLLM's proxy counts past its limit: -4 is none left and 4 over, not unreadable.
    info = parse_rate_limits(headers, NOW)
    assert info is not None and info.requests == Budget(30, -4, None)


def test_a_negative_limit_is_unreadable() -> None:
    info = parse_rate_limits({"x-ratelimit-limit-requests": "-30"}, NOW)
    assert info is None
