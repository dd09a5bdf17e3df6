"""Read each run's newest bench (bench.json) for the Training and Compare views."""

from __future__ import annotations

from pathlib import Path

from overbrainer.compare.bench_report import ability_words, bench_row_line, latest_bench_report
from overbrainer.ui.tui.snapshot import BenchRow


def read_benches(runs_dir: Path) -> tuple[BenchRow, ...]:
    """The newest readable bench of every run under `runs_dir` that has one (blocking)."""
    rows = []
    for run_dir in sorted(path for path in runs_dir.iterdir() if path.is_dir()):
        report = latest_bench_report(run_dir)
        if report is None:
            continue
        rows.append(
            BenchRow(
                run=run_dir.name,
                id=report.bench,
                tasks=len(report.tasks),
                verdict=ability_words(report),
                lines=tuple(bench_row_line(row) for row in report.rows),
            )
        )
    return tuple(rows)
