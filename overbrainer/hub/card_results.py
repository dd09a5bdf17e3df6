"""The model card's results: the child against the parent and its base (the newest compare),
and the benchmark table (the newest bench)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from overbrainer.compare.bench_report import bench_table, latest_bench_report
from overbrainer.hub.compare_summary import latest_base_summary, latest_compare_summary


def compare_text(run_dir: Path) -> str:
    """The "Compared with the parent" section's text; "" without a compare (blocking)."""
    parts = (
        _compare(latest_compare_summary(run_dir)),
        _compare_base(latest_base_summary(run_dir)),
    )
    return " ".join(part for part in parts if part)


def bench_text(run_dir: Path) -> str:
    """The benchmark section's text from the newest bench; "" without one (blocking)."""
    report = latest_bench_report(run_dir)
    if report is None:
        return ""
    tasks = ", ".join(f"`{task}`" for task in report.tasks)
    intro = f"lm-evaluation-harness tasks {tasks} ({report.bench}), served from the GGUFs:"
    return "\n".join([intro, "", *bench_table(report)])


def _compare(summary: dict[str, Any] | None) -> str:
    """The card's lines on the child against the parent, from a compare's `summary`."""
    if summary is None:
        return ""
    lines = win_rate_lines(summary, "the parent")
    latency = _number(summary.get("latency_p50"))
    if latency is not None:
        lines.append(f"Median latency {latency:.2f} s.")
    return " ".join(lines)


def win_rate_lines(summary: dict[str, Any], against: str) -> list[str]:
    """The win-or-tie rate on its own denominator, its interval, and what it leaves out."""
    questions, errors = _count(summary, "questions"), _count(summary, "errors")
    unparsed, inconsistent = _count(summary, "unparsed"), _count(summary, "inconsistent")
    # The rate's denominator: unparsed and position-inconsistent verdicts are left out of it.
    judged, left_out = questions - unparsed - inconsistent, unparsed + inconsistent
    pairs = ((unparsed, "unparsed"), (inconsistent, "position-inconsistent"))
    why = ", ".join(f"{n} {kind} verdict{'' if n == 1 else 's'}" for n, kind in pairs if n)
    rate = _number(summary.get("win_or_tie"))
    if rate is None:
        why = f" ({why})" if why else ""
        which = (
            "The only question could not"
            if questions == 1
            else f"None of the {questions} questions could"
        )
        none = f"{which} be judged against {against}{why}"
        return [none + ": no win rate."] if questions else []
    of = f"{judged} judged questions" if judged > 0 else "the judged questions"
    line = f"The child won or tied {rate * 100:.1f}% of {of} against {against}"
    low, high = _number(summary.get("win_or_tie_low")), _number(summary.get("win_or_tie_high"))
    if low is not None and high is not None:
        line += f" (95% interval {low * 100:.1f}% to {high * 100:.1f}%)"
    lines = [line + "."]
    if errors:
        lines.append(
            "1 of them was a child error (no answer), counted as a loss."
            if errors == 1
            else f"{errors} of them were child errors (no answer), counted as losses."
        )
    if left_out and judged > 0:
        verb = "is" if left_out == 1 else "are"
        lines.append(
            f"{left_out} of the {questions} questions could not be judged ({why})"
            f" and {verb} left out."
        )
    return lines


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(summary: dict[str, Any], key: str) -> int:
    value = summary.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _compare_base(summary: dict[str, Any] | None) -> str:
    """The lines of the child against its base model (`compare --base`); "" without one."""
    return "" if summary is None else " ".join(win_rate_lines(summary, "its base model"))
