"""The Training view, pure: gauges and their history, a followed run's steps and ETA, the
layout at 80x24 and larger."""

from __future__ import annotations

import math

import attrs
import pytest

from overbrainer.events.frontend import RunCreated
from overbrainer.events.types import Metric, System
from overbrainer.model.system_sample import Cpu, Disk, Gpu, Memory, SystemSample
from overbrainer.model.train_metric import TrainMetric
from overbrainer.ui.logs import LogBuffer
from overbrainer.ui.tui import render
from overbrainer.ui.tui.compare_view import Row
from overbrainer.ui.tui.effects import Spawn
from overbrainer.ui.tui.followed import MAX_POINTS, Followed
from overbrainer.ui.tui.machine import HISTORY, Machine
from overbrainer.ui.tui.messages import Key, Loaded, Sampled, TaskDone, TaskEvent, TaskReport, Tick
from overbrainer.ui.tui.snapshot import RunRow, Snapshot
from overbrainer.ui.tui.state import State, View
from overbrainer.ui.tui.system_panel import level, mark, panel_rows
from overbrainer.ui.tui.task_spec import TaskKind, TaskSpec
from overbrainer.ui.tui.training_view import MIN_CHART, run_text
from tests.tui_app_support import feed

GIB = 1024**3


def text(row: Row) -> str:
    return "".join(part if isinstance(part, str) else part[1] for part in row)


def styles(row: Row) -> set[str]:
    return {part[0] for part in row if not isinstance(part, str)}


def machine_sample(gpus: int = 1, cpu: float | None = 0.42, disk_used: int = 430) -> SystemSample:
    return SystemSample(
        at=1.0,
        disks=(
            Disk("/work", "ext4", False, 500 * GIB, disk_used * GIB, (470 - disk_used) * GIB),
            Disk("/", "overlay", False, 100 * GIB, 20 * GIB, 80 * GIB),
        ),
        cpu=Cpu(cpu, 3.1, 8.0, False),
        memory=Memory(int(1.6 * GIB), 25 * GIB),
        gpus=tuple(
            Gpu(i, "NVIDIA H100 80GB HBM3", 0.97, 60 * GIB, 80 * GIB, 71.0, 312.4, 700.0)
            for i in range(gpus)
        ),
    )


def test_the_colour_thresholds_and_their_marks_without_colour() -> None:
    assert [level(r) for r in (None, 0.0, 0.849, 0.85, 0.949, 0.95, 1.2)] == [
        "gauge",
        "gauge",
        "gauge",
        "warn",
        "warn",
        "error",
        "error",
    ]
    assert [mark(r) for r in (None, 0.5, 0.9, 0.99)] == ["", "", "!", "!!"]


def test_the_panel_at_80_columns_with_a_gpu_and_a_nearly_full_disk() -> None:
    machine = Machine()
    for used in (300, 400, 430):
        machine = machine.add(machine_sample(disk_used=used))
    rows = panel_rows(machine, 80)
    assert [text(row) for row in rows] == [
        "  cpu    [█████░░░░░░░]  42%    8 CPUs, load 3.10                    ▃▃▃",
        "  mem    [█░░░░░░░░░░░]   6%    1.6/25G                              ▁▁▁",
        "  gpu0   [████████████]  97% !! 71°C 312/700W NVIDIA H100 80GB HBM3  ▇▇▇",
        "   vram  [█████████░░░]  75%    60/80G                               ▆▆▆",
        "  disk   [███████████░]  91% !  430/470G /work (ext4)                ▅▆▇",
        "  root   [██░░░░░░░░░░]  20%    20/100G / (overlay)                  ▂▂▂",
    ]
    assert [styles(row) - {"spark"} for row in rows] == [
        {"gauge"},
        {"gauge"},
        {"error"},
        {"gauge"},
        {"warn"},
        {"gauge"},
    ]


def test_an_unknown_figure_is_said_not_drawn_and_no_gpu_is_named() -> None:
    rows = panel_rows(Machine().add(machine_sample(gpus=0, cpu=None)), 80)
    assert text(rows[0]).startswith(
        "  cpu    [  unknown   ]  --%    8 CPUs, load 3.10, use: next sample"
    )
    assert text(rows[-1]).startswith("  gpu    none found")
    assert text(panel_rows(Machine(), 80)[0]) == "  no sample yet"


def test_each_gauge_keeps_its_last_samples_and_forgets_gone_ones() -> None:
    machine = Machine()
    for _ in range(HISTORY + 5):
        machine = machine.add(machine_sample(gpus=1))
    assert len(machine.recent("gpu0")) == HISTORY
    assert len(machine.recent("disk /work")) == HISTORY
    machine = machine.add(machine_sample(gpus=0))
    assert machine.recent("gpu0") == ()
    unknown = machine.add(machine_sample(cpu=None))
    assert unknown.recent("cpu") == machine.recent("cpu")  # an unknown share adds nothing


def log(step: int, at: float, loss: float | None = 1.0, **more: float) -> Metric:
    return Metric(TrainMetric(time=at, step=step, max_steps=400, loss=loss, **more))


def test_steps_and_the_eta_from_the_recent_step_rate() -> None:
    followed = Followed("r1")
    assert followed.progress_words(0.0, running=True) == ""
    followed = followed.take(log(100, 1000.0), now=50.0)
    assert followed.progress_words(50.0, running=True) == "step 100/400"  # no rate yet
    followed = followed.take(log(120, 1010.0), now=60.0)
    # 20 steps in 10 s of the job's clock: 2 steps/s, 280 left: 140 s, counting down on ours.
    assert followed.progress_words(60.0, running=True) == "step 120/400  eta 2m20s"
    assert followed.progress_words(100.0, running=True) == "step 120/400  eta 1m40s"
    assert followed.progress_words(100.0, running=False) == "step 120/400"
    followed = followed.take(log(120, 1011.0, loss=None, eval_loss=0.5), now=61.0)
    assert followed.evals == ((120.0, 0.5),)
    assert followed.losses == ((100.0, 1.0), (120.0, 1.0))


def test_a_job_back_at_an_earlier_step_redraws_from_there() -> None:
    followed = Followed("r1")
    for step in range(1, 11):
        followed = followed.take(log(step, float(step), loss=float(step)), now=float(step))
    followed = followed.take(log(4, 20.0, loss=9.0), now=20.0)
    assert followed.losses[-2:] == ((3.0, 3.0), (4.0, 9.0))
    assert followed.step == 4 and followed.eta(20.0) is None  # its pace starts again


def test_a_long_run_keeps_its_whole_curve_in_bounded_points() -> None:
    followed = Followed("r1")
    for step in range(1, 3 * MAX_POINTS):
        followed = followed.take(log(step, float(step)), now=float(step))
    assert len(followed.losses) <= MAX_POINTS
    assert followed.losses[0][0] < 10 and followed.losses[-1][0] == 3 * MAX_POINTS - 1


def test_a_running_row_shows_its_step_and_eta_and_fits_80_columns() -> None:
    run = RunRow("my_project_20261203-182315", "running", "local", "2026-12-03T18:23:15Z")
    followed = Followed("x").take(log(100, 0.0), 0.0).take(log(120, 10.0), 0.0)
    row = run_text(run, followed, 0.0, 78)
    assert row == "my_project_20261203-182315  running    local  step 120/400  eta 2m20s"
    wide = run_text(run, followed, 0.0, 120)
    assert wide.endswith("local      2026-12-03T18:23:15Z  step 120/400  eta 2m20s")
    assert run_text(run, None, 0.0, 78).endswith("local      2026-12-03T18:23:15Z")


def followed_state(runs: int, gpus: int) -> State:
    """The Training view following the newest of `runs` runs, 120 steps in, on `gpus` GPUs."""
    rows = tuple(
        RunRow(f"demo_202612{day:02}-120000", "succeeded", "local", f"2026-12-{day:02}")
        for day in range(1, runs)
    )
    rows += (RunRow("demo_20261231-120000", "running", "runpod", "2026-12-31"),)
    state = State(view=View.TRAINING, snapshot=Snapshot(name="demo", runs=rows, training=True))
    state, _ = feed(state, Key("t"), TaskReport(1, RunCreated("demo_20261231-120000")))
    state, _ = feed(state, Loaded(2, state.snapshot))
    for step in range(1, 121):
        loss = 2.5 * math.exp(-step / 40) + 0.3
        evals = {"eval_loss": loss + 0.1} if step % 40 == 0 else {}
        state, _ = feed(state, TaskEvent(1, log(step, 2.0 * step, loss, **evals), 100.0 + step))
    state, _ = feed(state, TaskEvent(1, System(machine_sample(gpus=gpus)), 220.0), Tick(221.0))
    return attrs.evolve(state, run_index=len(rows) - 1)


@pytest.mark.parametrize("cols, rows", [(80, 24), (100, 30), (120, 40), (200, 60)])
@pytest.mark.parametrize("runs, gpus", [(1, 0), (2, 1), (12, 8)])
def test_the_view_fits_the_screen_and_keeps_chart_panel_and_selection(
    cols: int, rows: int, runs: int, gpus: int
) -> None:
    lines = [text(row) for row in render.body(followed_state(runs, gpus), LogBuffer(), cols, rows)]
    assert len(lines) <= rows - 4
    assert max(len(line) for line in lines) <= cols
    shown = "\n".join(lines)
    assert "▶ demo_20261231-120000  running    runpod" in shown
    assert "step 120/400  eta " in shown
    chart = [line for line in lines if "┤" in line or "│" in line]
    assert len(chart) >= MIN_CHART
    assert "└1" in shown and shown.count("x") >= 1  # the step axis, the evaluations
    assert "System of run demo_20261231-120000 on runpod" in shown
    assert "  cpu    [█████░░░░░░░]  42%" in shown
    if gpus == 8 and rows == 24:
        assert lines[-1].startswith("  … ") and lines[-1].endswith(
            " more gauges (a taller terminal shows them)"
        )


def test_with_no_run_followed_the_panel_shows_this_machine() -> None:
    state = State(view=View.TRAINING, snapshot=Snapshot(name="demo"))
    lines = [text(row) for row in render.body(state, LogBuffer(), 80, 24)]
    assert lines[-2:] == ["System of this machine", "  no sample yet"]
    state, _ = feed(state, Sampled(machine_sample(gpus=0)))
    lines = [text(row) for row in render.body(state, LogBuffer(), 80, 24)]
    assert "System of this machine" in lines
    assert any(line.startswith("  mem    [█░░░░░░░░░░░]   6%") for line in lines)


def test_a_detached_run_keeps_its_chart_and_the_panel_goes_back_to_this_machine() -> None:
    state = followed_state(1, 1)
    state, _ = feed(state, Sampled(machine_sample(gpus=0, disk_used=100)))
    state, _ = feed(state, TaskDone(1))
    lines = [text(row) for row in render.body(state, LogBuffer(), 80, 24)]
    assert any(line.startswith("Loss of run demo_20261231-120000  last 0.4245") for line in lines)
    assert "System of this machine" in lines
    assert not any(line.startswith("  gpu0") for line in lines)


def test_attach_reads_the_run_afresh_but_a_followed_stop_keeps_what_was_seen() -> None:
    state = followed_state(1, 1)
    run = "demo_20261231-120000"
    state, effects = feed(state, Key("s"))
    assert effects[-1] == Spawn(3, TaskSpec(TaskKind.STOP, run_id=run, followed=True))
    followed = state.followed_of(run)
    assert followed is not None and len(followed.losses) == 120
    state, _ = feed(state, TaskDone(3), TaskDone(1))
    state, effects = feed(state, Key("a"))
    attach = effects[-1]
    assert isinstance(attach, Spawn)
    assert attach.spec == TaskSpec(TaskKind.ATTACH, run_id=run)
    assert state.followed_of(run) == Followed(run)  # its metrics are read from the start again
    state, _ = feed(state, TaskEvent(attach.task, log(1, 1.0, 2.0), 300.0))
    again = state.followed_of(run)
    assert again is not None and again.losses == ((1.0, 2.0),)
    state, _ = feed(state, TaskEvent(99, log(2, 2.0, 1.0), 301.0))  # no run of its own: dropped
    assert state.followed_of(run) == again
