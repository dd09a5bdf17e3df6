"""The figures of a compare: verdict counts, timings, confidence, costs (§A.10, §A.11)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import attrs

from overbrainer.compare.answers import ChildAnswer, LoadFigures
from overbrainer.compare.verdicts import Verdict

# The 97.5th percentile of the standard normal distribution: a two-sided 95 % interval.
_Z95 = 1.959963984540054


def percentile(sorted_values: Sequence[float], p: float) -> float | None:
    """Nearest rank: the value of rank max(1, ceil(p·n/100)); None when empty."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p * len(sorted_values) / 100))
    return sorted_values[rank - 1]


def wilson(successes: int, trials: int, z: float = _Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion; None without trials."""
    if trials <= 0:
        return None
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


@attrs.frozen
class Summary:
    """`summary` of `compare.json`, plus the interval and position-inconsistent count."""

    questions: int
    wins: int
    ties: int
    losses: int
    unparsed: int
    errors: int
    truncated: int
    win_or_tie: float | None
    latency_p50: float | None
    latency_p95: float | None
    first_token_p50: float | None
    tokens_per_second: float | None
    mean_seconds: float | None
    inconsistent: int = 0
    win_or_tie_low: float | None = None
    win_or_tie_high: float | None = None


def summarize(verdicts: Sequence[Verdict], answers: Sequence[ChildAnswer]) -> Summary:
    """The summary of judged questions and every child answer."""
    count = {v: sum(1 for x in verdicts if x == v) for v in Verdict}
    # Unparsed and position-inconsistent verdicts say nothing about the child: not counted.
    denominator = len(verdicts) - count[Verdict.UNPARSED] - count[Verdict.INCONSISTENT]
    good = count[Verdict.WIN] + count[Verdict.TIE]
    interval = wilson(good, denominator)
    usable = [a for a in answers if not a.is_error]
    seconds = _finite(a.seconds for a in usable)
    first = _finite(a.first_token_seconds for a in usable)
    speed = _finite(a.tokens_per_second for a in usable)
    return Summary(
        questions=len(verdicts),
        wins=count[Verdict.WIN],
        ties=count[Verdict.TIE],
        losses=count[Verdict.LOSS],
        unparsed=count[Verdict.UNPARSED],
        errors=count[Verdict.ERROR],
        truncated=sum(1 for a in usable if a.finish == "length"),
        win_or_tie=good / denominator if denominator > 0 else None,
        latency_p50=percentile(seconds, 50),
        latency_p95=percentile(seconds, 95),
        first_token_p50=percentile(first, 50),
        tokens_per_second=_mean(speed),
        mean_seconds=_mean(seconds),
        inconsistent=count[Verdict.INCONSISTENT],
        win_or_tie_low=None if interval is None else interval[0],
        win_or_tie_high=None if interval is None else interval[1],
    )


def _finite(values: Iterable[float | None]) -> list[float]:
    return sorted(v for v in values if v is not None and math.isfinite(v))


@attrs.frozen
class Prices:
    """The prices the cost rows use; `child_from_pod` when the pod's price filled in."""

    parent_in: float | None
    parent_out: float | None
    child_per_hour: float | None
    child_from_pod: bool = False


@attrs.frozen
class Costs:
    """USD per 1,000 requests; `child_under_load_per_1k` beyond the reference."""

    parent_per_1k: float | None
    child_per_1k: float | None
    ratio: float | None
    child_under_load_per_1k: float | None = None
    ratio_under_load: float | None = None


def costs(
    prices: Prices,
    parent_tokens: Sequence[tuple[int, int]],
    mean_seconds: float | None,
    load: LoadFigures | None = None,
) -> Costs:
    """Parent cost from mean billed tokens of every question; child from the hourly price."""
    parent = None
    if prices.parent_in is not None and prices.parent_out is not None and parent_tokens:
        mean_in = sum(t[0] for t in parent_tokens) / len(parent_tokens)
        mean_out = sum(t[1] for t in parent_tokens) / len(parent_tokens)
        per_request = (mean_in * prices.parent_in + mean_out * prices.parent_out) / 1e6
        parent = round(per_request * 1000, 6)
    child = None
    if prices.child_per_hour is not None and mean_seconds is not None:
        child = round(prices.child_per_hour * mean_seconds / 3600 * 1000, 6)
    loaded = None
    if prices.child_per_hour is not None and load is not None and load.requests_per_second:
        loaded = round(prices.child_per_hour / (load.requests_per_second * 3600) * 1000, 6)
    return Costs(parent, child, _ratio(child, parent), loaded, _ratio(loaded, parent))


def _ratio(child: float | None, parent: float | None) -> float | None:
    return child / parent if child is not None and parent is not None and parent > 0 else None
