"""The bench's report: per task and metric, the child against its base with the standard errors,
a verdict per row, and the "did it break general ability" line (`bench.json`, `bench.md`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from overbrainer.compare.bench_results import Score
from overbrainer.model import codec

BENCHES_DIR = "benches"
"""The benches of a run: `runs/<run>/benches/<bench-id>/`."""
BENCH_JSON = "bench.json"
Z = 1.96
"""A difference counts when it is beyond Z standard errors of the difference (95%, two-sided)."""
REGRESSED = "regressed"
IMPROVED = "improved"
WITHIN = "within error"
NO_BASE = "no base"
NO_ERROR = "no error"
"""A standard error is missing (lm-eval's `N/A`): the difference cannot be judged."""


@codec.record("bench value")
@attrs.frozen
class Value:
    """A model's score of a metric with its standard error."""

    value: float
    stderr: float | None


@codec.record("bench row")
@attrs.frozen
class Row:
    """One task × metric (× filter): the child, its base, the difference and its verdict."""

    task: str
    metric: str
    filter: str
    higher_is_better: bool
    child: Value
    base: Value | None
    difference: float | None
    """The child's value minus the base's."""
    bound: float | None
    """Z × sqrt(se_child² + se_base²): a difference beyond it counts."""
    verdict: str


@codec.record("bench report", style=codec.Style.PRETTY)
@attrs.frozen
class BenchReport(codec.JsonRecord):
    """`bench.json`: the run, the bench, the models benched, the rows and the regressed tasks."""

    run: str
    bench: str
    models: tuple[str, ...]
    tasks: tuple[str, ...]
    z: float
    rows: tuple[Row, ...]
    regressions: tuple[str, ...]
    """The tasks where the child is below its base by more than the error."""


def verdict(child: Score, base: Score | None) -> tuple[float | None, float | None, str]:
    """The difference (child − base), its bound, and the row's verdict."""
    if base is None:
        return None, None, NO_BASE
    difference = child.value - base.value
    if child.stderr is None or base.stderr is None:
        return difference, None, NO_ERROR
    bound = Z * math.sqrt(child.stderr**2 + base.stderr**2)
    better = difference if child.higher_is_better else -difference
    if better < -bound:
        return difference, bound, REGRESSED
    if better > bound:
        return difference, bound, IMPROVED
    return difference, bound, WITHIN


def build_rows(child: Iterable[Score], base: Iterable[Score] | None) -> tuple[Row, ...]:
    """A row per score of the child, matched with the base's score of the same task, metric
    and filter (none without a base)."""
    found = {(s.task, s.metric, s.filter): s for s in base or ()}
    rows = []
    for score in child:
        other = found.get((score.task, score.metric, score.filter))
        difference, bound, word = verdict(score, other)
        rows.append(
            Row(
                score.task,
                score.metric,
                score.filter,
                score.higher_is_better,
                Value(score.value, score.stderr),
                None if other is None else Value(other.value, other.stderr),
                difference,
                bound,
                word,
            )
        )
    return tuple(rows)


def regressions(rows: Sequence[Row]) -> tuple[str, ...]:
    """The tasks with a regressed row, in the rows' order, each once."""
    return tuple(dict.fromkeys(row.task for row in rows if row.verdict == REGRESSED))


def _value(value: Value | None) -> str:
    if value is None:
        return "–"
    if value.stderr is None:
        return f"{value.value:.4f}"
    return f"{value.value:.4f} ± {value.stderr:.4f}"


def _signed(number: float | None) -> str:
    return "–" if number is None else f"{number:+.4f}"


def ability_line(report: BenchReport) -> str:
    """The "did it break general ability" line."""
    if "base" not in report.models:
        return (
            "No base model was benched (the run has no GGUF of it: `overbrainer export RUN "
            "--base` makes one), so no regression can be told."
        )
    if report.regressions:
        names = ", ".join(f"`{task}`" for task in report.regressions)
        return (
            f"**Regressed beyond the error:** {names}: the child scores below its base by more "
            f"than {report.z} × the standard error of the difference."
        )
    return (
        f"No regression beyond the error: on no task is the child below its base by more than "
        f"{report.z} × the standard error of the difference."
    )


def ability_words(report: BenchReport) -> str:
    """The regression line in plain words, for the terminal."""
    if "base" not in report.models:
        return "no base model benched: no regression can be told"
    if report.regressions:
        return "regressed beyond the error on " + ", ".join(report.regressions)
    return "no regression beyond the error"


def bench_table(report: BenchReport) -> list[str]:
    """The regression line, the table and its legend: `bench.md`'s body, also the model
    card's benchmark section."""
    lines = [
        ability_line(report),
        "",
        "| task | metric | child ± se | base ± se | child − base | bound | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in report.rows:
        metric = row.metric if row.filter == "none" else f"{row.metric} ({row.filter})"
        arrow = "↑" if row.higher_is_better else "↓"
        lines.append(
            f"| {row.task} | {metric} {arrow} | {_value(row.child)} | {_value(row.base)} | "
            f"{_signed(row.difference)} | "
            f"{'–' if row.bound is None else f'{row.bound:.4f}'} | {row.verdict} |"
        )
    lines += [
        "",
        f"A row regressed when the child is worse than its base by more than the bound, "
        f"{report.z} × sqrt(se_child² + se_base²); improved when better by more; ↑ higher is "
        "better, ↓ lower is better. `no error`: lm-eval gave no standard error (one sample).",
    ]
    return lines


def bench_markdown(report: BenchReport) -> str:
    """`bench.md`: the table and the regression line."""
    lines = [
        f"# Bench {report.bench} of run {report.run}",
        "",
        f"lm-evaluation-harness tasks: {', '.join(f'`{t}`' for t in report.tasks)}.",
        "",
        *bench_table(report),
        "",
    ]
    return "\n".join(lines)


def bench_row_line(row: Row) -> str:
    """One row on one line, for the terminal (`tiny_qa exact_match ↑: child 0.5000 ± …`)."""
    metric = row.metric if row.filter == "none" else f"{row.metric} ({row.filter})"
    arrow = "↑" if row.higher_is_better else "↓"
    base = "" if row.base is None else f", base {_value(row.base)}"
    return f"{row.task} {metric} {arrow}: child {_value(row.child)}{base}: {row.verdict}"


def latest_bench_report(run_dir: Path) -> BenchReport | None:
    """The newest readable `benches/*/bench.json` of a run by name; None without one
    (blocking)."""
    for path in sorted((run_dir / BENCHES_DIR).glob(f"*/{BENCH_JSON}"), reverse=True):
        try:
            return BenchReport.from_json(path.read_bytes())
        except (OSError, ValueError):
            continue
    return None


@attrs.frozen
class BenchResult:
    """What `bench` hands its front end (`--json`'s `"bench"`): the report and its files."""

    run: str
    bench: str
    models: tuple[str, ...]
    tasks: tuple[str, ...]
    z: float
    rows: tuple[Row, ...]
    regressions: tuple[str, ...]
    report_md: str
    report_json: str
    """Both relative to the project."""


def bench_result(report: BenchReport, report_md: str, report_json: str) -> BenchResult:
    """The report's figures with the paths of its files."""
    return BenchResult(
        report.run,
        report.bench,
        report.models,
        report.tasks,
        report.z,
        report.rows,
        report.regressions,
        report_md,
        report_json,
    )
