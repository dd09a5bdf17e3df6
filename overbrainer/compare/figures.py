"""How the report writes its figures: percentages, seconds, dollars, rates (`-` when unknown)."""

from __future__ import annotations


def pct(value: float | None) -> str:
    """`12.3%`, or `-`."""
    return "-" if value is None else f"{value * 100:.1f}%"


def secs(value: float | None) -> str:
    """`1.23 s`, or `-`."""
    return "-" if value is None else f"{value:.2f} s"


def usd(value: float | None) -> str:
    """`$0.0123`, or `-`."""
    return "-" if value is None else f"${value:.4f}"


def rate(value: float | None) -> str:
    """`12.3`, or `-`."""
    return "-" if value is None else f"{value:.1f}"


def interval(low: float | None, high: float | None) -> str:
    """`15.0% to 85.0%`, or `-` without one."""
    return "-" if low is None or high is None else f"{pct(low)} to {pct(high)}"
