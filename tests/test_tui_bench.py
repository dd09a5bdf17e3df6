"""The TUI shows each run's newest bench: a line under the run in the Training view, and the
regression line and a line per task under the run's compare in the Compare view."""

from __future__ import annotations

from pathlib import Path

from overbrainer.compare.verdicts import Verdict
from overbrainer.project.directory import open_project
from overbrainer.ui.tui.benches import read_benches
from overbrainer.ui.tui.compares import read_compares
from overbrainer.ui.tui.load import load_snapshot
from overbrainer.ui.tui.snapshot import RunRow, Snapshot
from overbrainer.ui.tui.state import State, View
from tests.bench_report_support import write_bench
from tests.test_tui_compare import shown
from tests.tui_compare_support import write_compare


def test_the_views_show_each_runs_newest_bench(tmp_path: Path) -> None:
    for run in ("run_a", "run_b"):
        write_compare(
            tmp_path / run,
            f"compare_2026100{1 if run == 'run_a' else 2}-000000",
            "2026-10-01T00:00:00Z" if run == "run_a" else "2026-10-02T00:00:00Z",
            (Verdict.WIN, Verdict.TIE, Verdict.LOSS, Verdict.LOSS),
        )
    write_bench(tmp_path / "run_a", "bench_20261001-000000", 0.50, 0.52)
    write_bench(tmp_path / "run_a", "bench_20261002-000000", 0.40, 0.60)
    (tmp_path / "run_a" / "benches" / "bench_20261003-000000").mkdir()  # unfinished: no report
    benches = read_benches(tmp_path)
    assert [(b.run, b.id, b.verdict) for b in benches] == [
        ("run_a", "bench_20261002-000000", "regressed beyond the error on tiny_qa")
    ]

    runs = (
        RunRow("run_a", "succeeded", "local", "t1"),
        RunRow("run_b", "succeeded", "local", "t2"),
    )
    snapshot = Snapshot(runs=runs, compares=read_compares(tmp_path), benches=benches)
    training = shown(State(view=View.TRAINING, snapshot=snapshot), cols=140)
    assert (
        "    bench: regressed beyond the error on tiny_qa (bench_20261002-000000, 1 task)"
        in training
    )
    assert training.count("bench: ") == 1  # run_b has no bench

    # The Compare view: run_a's compare (the second, older one) shows its run's bench.
    compare = shown(State(view=View.COMPARE, snapshot=snapshot, compare_index=1), cols=140)
    assert "  benchmarks (bench_20261002-000000): regressed beyond the error on tiny_qa" in compare
    assert (
        "    tiny_qa exact_match ↑: child 0.4000 ± 0.0200, base 0.6000 ± 0.0200: regressed"
        in compare
    )
    assert "benchmarks (" not in shown(State(view=View.COMPARE, snapshot=snapshot), cols=140)


def test_a_bench_of_the_child_alone_says_no_regression_can_be_told(tmp_path: Path) -> None:
    write_bench(tmp_path / "run_a", "bench_20261001-000000", 0.40, None)
    (bench,) = read_benches(tmp_path)
    assert bench.line == (
        "bench: no base model benched: no regression can be told (bench_20261001-000000, 1 task)"
    )
    assert bench.lines == ("tiny_qa exact_match ↑: child 0.4000 ± 0.0200: no base",)


def test_the_snapshot_of_a_project_reads_its_benches(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / "runs").mkdir(parents=True)
    (root / "overbrainer.toml").write_text('[project]\nname = "p"\n')
    write_bench(root / "runs" / "run_a", "bench_20261001-000000", 0.50, 0.50)
    snapshot = load_snapshot(open_project(root))
    assert [(b.run, b.verdict) for b in snapshot.benches] == [
        ("run_a", "no regression beyond the error")
    ]
