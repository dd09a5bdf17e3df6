"""Read every run's finished compares (compare.json) for the Compare and Training views."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from overbrainer.ui.tui.snapshot import CompareItem, CompareRow

log = logging.getLogger(__name__)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _rate(summary: dict[str, Any]) -> str:
    """`50.0% (95%: 15-85%)`: the win-or-tie rate and its interval."""
    pct = _number(summary.get("win_or_tie"))
    low, high = _number(summary.get("win_or_tie_low")), _number(summary.get("win_or_tie_high"))
    rate = "-" if pct is None else f"{pct * 100:.1f}%"
    interval = "" if low is None or high is None else f" (95%: {low * 100:.0f}-{high * 100:.0f}%)"
    return rate + interval


def _base_summary(data: dict[str, Any]) -> dict[str, Any] | None:
    """The summary of the child against its base (`compare --base`), when the compare has one."""
    base = data.get("base")
    summary = base.get("summary") if isinstance(base, dict) else None
    return summary if isinstance(summary, dict) else None


def _base_line(summary: dict[str, Any]) -> str:
    """The child against its base: its rate, interval and counts, beside the parent's line."""
    return (
        f"against its base: win or tie {_rate(summary)}: {summary.get('wins', 0)} wins, "
        f"{summary.get('ties', 0)} ties, {summary.get('losses', 0)} losses, "
        f"{summary.get('unparsed', 0)} unparsed"
    )


def _summary_lines(data: dict[str, Any]) -> tuple[str, ...]:
    summary = data.get("summary") or {}
    p50 = _number(summary.get("latency_p50"))
    tps = _number(summary.get("tokens_per_second"))
    judge = _text(data.get("judge")) + (" (the parent)" if data.get("judge_is_parent") else "")
    base = _base_summary(data)
    return (
        f"{_text(data.get('compare'))} of run {_text(data.get('run'))}, "
        f"{_text(data.get('quantize'))}, judge {judge}",
        f"win or tie {_rate(summary)}: {summary.get('wins', 0)} wins, "
        f"{summary.get('ties', 0)} ties, {summary.get('losses', 0)} losses, "
        f"{summary.get('errors', 0)} errors, {summary.get('unparsed', 0)} unparsed",
        *(() if base is None else (_base_line(base),)),
        "latency p50 "
        + ("-" if p50 is None else f"{p50:.2f} s")
        + ", "
        + ("-" if tps is None else f"{tps:.1f}")
        + " tokens/s",
    )


def _item(entry: dict[str, Any]) -> CompareItem:
    return CompareItem(
        id=_text(entry.get("id")),
        verdict=_text(entry.get("verdict")),
        question=_text(entry.get("question")),
        child=_text(entry.get("child")),
        parent=_text(entry.get("parent")),
        reason=_text(entry.get("reason")),
        error=_text(entry.get("error")),
    )


def read_compare(path: Path) -> CompareRow:
    """One compare.json as a row (blocking); ValueError or OSError when unreadable."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    summary = data.get("summary") or {}
    entries = data.get("questions") or []
    base = _base_summary(data)
    return CompareRow(
        id=_text(data.get("compare")) or path.parent.name,
        run=_text(data.get("run")) or path.parent.parent.parent.name,
        quantize=_text(data.get("quantize")),
        win_or_tie=_number(summary.get("win_or_tie")),
        questions=int(summary.get("questions") or len(entries)),
        judge=_text(data.get("judge")),
        created=_text(data.get("created")),
        summary=_summary_lines(data),
        items=tuple(_item(e) for e in entries if isinstance(e, dict)),
        base_win_or_tie=None if base is None else _number(base.get("win_or_tie")),
        has_base=base is not None,
    )


def read_compares(runs_dir: Path) -> tuple[CompareRow, ...]:
    """Every `runs/*/compares/*/compare.json`, newest first (blocking; unreadable ones logged)."""
    rows = []
    for path in runs_dir.glob("*/compares/*/compare.json"):
        try:
            rows.append(read_compare(path))
        except (OSError, ValueError, TypeError, AttributeError) as error:
            log.warning("cannot read %s: %s", path, error)
    return tuple(sorted(rows, key=lambda r: (r.created, r.id), reverse=True))


def latest_compare_line(rows: tuple[CompareRow, ...], run_id: str) -> str:
    """The Training view's line for `run_id`'s newest compare ("" when it has none)."""
    row = next((r for r in rows if r.run == run_id), None)
    if row is None:
        return ""
    return f"compare: {row.percent} win or tie ({row.id}, {row.questions} questions)"
