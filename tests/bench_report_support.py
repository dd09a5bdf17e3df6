"""A finished bench's `bench.json` written by hand, for the views that read it (card, TUI)."""

from __future__ import annotations

from pathlib import Path

from overbrainer.compare.bench_report import BenchReport, build_rows, regressions
from overbrainer.compare.bench_results import Score


def write_bench(run_dir: Path, bench_id: str, child: float, base: float | None) -> None:
    """A `bench.json` of one task whose child scores `child` ± 0.02 and base `base` ± 0.02
    (None: the child was benched alone)."""
    rows = build_rows(
        [Score("tiny_qa", "exact_match", "none", child, 0.02)],
        None if base is None else [Score("tiny_qa", "exact_match", "none", base, 0.02)],
    )
    models = ("child",) if base is None else ("child", "base")
    tasks = ("tiny_qa",)
    report = BenchReport(run_dir.name, bench_id, models, tasks, 1.96, rows, regressions(rows))
    folder = run_dir / "benches" / bench_id
    folder.mkdir(parents=True)
    (folder / "bench.json").write_text(report.to_json())
