"""The Training view's pod notice: a pod an ended run left on Runpod, and `p` dismissing it."""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from overbrainer.project.directory import open_project
from overbrainer.targets.runpod.pod_record import PodRecord, PodState, save_pod_record
from overbrainer.ui.logs import LogBuffer
from overbrainer.ui.tui import logs_keys, render, training_keys
from overbrainer.ui.tui.effects import Cancel, Spawn
from overbrainer.ui.tui.load import load_snapshot
from overbrainer.ui.tui.messages import Loaded, Notice, PodLogLines, TaskDone
from overbrainer.ui.tui.snapshot import RunRow, Snapshot
from overbrainer.ui.tui.state import State, View
from overbrainer.ui.tui.task_spec import TaskKind, TaskSpec
from tests.hub_support import RUN_ID, make_run
from tests.tui_app_support import add_job, feed, keys

NOTICE = "pod pod123 kept: overbrainer pod rm run_b"


def shown(state: State) -> str:
    lines = render.body(state, LogBuffer(), 100, 30)
    return "\n".join("".join(p if isinstance(p, str) else p[1] for p in line) for line in lines)


def test_an_ended_run_with_a_pod_not_deleted_lists_it(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "p")
    project = open_project(tmp_path / "p")
    assert load_snapshot(project).runs[0].pod == ""  # no pod.json: a local run
    save_pod_record(run_dir, PodRecord(RUN_ID, PodState.KEPT, keep=True, pod_id="pod123"))
    assert load_snapshot(project).runs[0].pod == "pod123"
    save_pod_record(run_dir, PodRecord(RUN_ID, PodState.AWAITING_RETRIEVAL, pod_id="pod123"))
    assert load_snapshot(project).runs[0].pod == "pod123"  # its deletion did not happen
    save_pod_record(run_dir, PodRecord(RUN_ID, PodState.DELETED, pod_id="pod123"))
    assert load_snapshot(project).runs[0].pod == ""
    save_pod_record(run_dir, PodRecord(RUN_ID, PodState.RUNNING, pod_id="pod123"))
    record = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**record, "state": "running"}))
    assert load_snapshot(project).runs[0].pod == ""  # a running run's pod is in use
    (run_dir / "run.json").write_text(json.dumps(record))
    (run_dir / "pod.json").write_text("{torn")
    assert load_snapshot(project).runs[0].pod == ""  # unreadable: no notice, no crash


def test_p_dismisses_the_selected_runs_pod_notice_for_the_session() -> None:
    runs = (
        RunRow("run_a", "succeeded", "local", "t1"),
        RunRow("run_b", "succeeded", "gpu_cloud", "t2", pod="pod123"),
    )
    state, _ = feed(State(view=View.TRAINING), Loaded(0, Snapshot(runs=runs)))
    assert NOTICE in shown(state)
    state, effects = keys(state, "p")  # run_a has no pod
    assert (effects, state.status, state.dismissed_pods) == ([], training_keys.POD_HINT, ())
    state, effects = keys(state, "j", "p")
    assert (effects, state.dismissed_pods) == ([], ("run_b",))
    assert state.status == "pod notice of run run_b dismissed: pod pod123 stays until `pod rm`"
    assert NOTICE not in shown(state)
    assert "run_b  succeeded" in shown(state)
    state, _ = feed(state, Loaded(0, Snapshot(runs=runs)))  # read again: still dismissed
    assert NOTICE not in shown(state)
    state, effects = keys(state, "p")
    assert (effects, state.status) == ([], training_keys.POD_HINT)


def test_the_pods_of_ended_compares_and_exports_are_listed_with_their_pod_rm(
    tmp_path: Path,
) -> None:
    run_dir = make_run(tmp_path / "p")
    project = open_project(tmp_path / "p")
    add_job(run_dir, "compares", "compare_20261203-130000", "succeeded", PodState.KEPT)
    add_job(run_dir, "compares", "compare_20261203-140000", "running", PodState.RUNNING)
    add_job(run_dir, "exports", "export_20261203-130000", "failed", PodState.AWAITING_RETRIEVAL)
    add_job(run_dir, "exports", "export_20261203-140000", "succeeded", PodState.DELETED)
    add_job(run_dir, "exports", "export_20261203-150000", "succeeded", None)
    (run_dir / "exports" / "export_20261203-160000").mkdir()
    (run_dir / "exports" / "export_20261203-160000" / "run.json").write_text("{torn")
    run = load_snapshot(project).runs[0]
    assert (run.pod, run.pod_log) == ("", False)
    assert run.job_pods == (  # exports, then compares
        ("export_20261203-130000", "pod_expfai"),
        ("compare_20261203-130000", "pod_comsuc"),
    )
    (run_dir / ".pod").mkdir()
    assert load_snapshot(project).runs[0].pod_log


JOB_RUN = RunRow(
    "run_b",
    "succeeded",
    "gpu_cloud",
    "t2",
    pod="pod123",
    job_pods=(("compare_20261203-130000", "pod456"), ("export_20261203-130000", "pod789")),
)


def test_the_training_view_names_each_kept_pod_and_p_dismisses_the_runs_all() -> None:
    state, _ = feed(State(view=View.TRAINING), Loaded(0, Snapshot(runs=(JOB_RUN,))))
    screen = shown(state)
    assert NOTICE in screen
    assert "pod pod456 kept: overbrainer pod rm compare_20261203-130000" in screen
    assert "pod pod789 kept: overbrainer pod rm export_20261203-130000" in screen
    state, effects = keys(state, "p")
    assert effects == []
    assert state.status == (
        "pod notices of run run_b dismissed: pods pod123, pod456, pod789 stay until `pod rm`"
    )
    assert "kept: overbrainer pod rm" not in shown(state)
    state, _ = feed(state, Loaded(0, Snapshot(runs=(JOB_RUN,))))
    assert "kept: overbrainer pod rm" not in shown(state)
    new = attrs.evolve(JOB_RUN, job_pods=(*JOB_RUN.job_pods, ("compare_20261203-150000", "pod9")))
    state, _ = feed(state, Loaded(0, Snapshot(runs=(new,))))  # a new one shows
    assert shown(state).count("kept: overbrainer pod rm") == 1
    state, _ = keys(state, "p")
    assert state.status == "pod notice of run run_b dismissed: pod pod9 stays until `pod rm`"


RUNS = (
    RunRow("run_a", "succeeded", "gpu_cloud", "t1", pod_log=True),
    RunRow("run_b", "succeeded", "local", "t2"),
)


def logs_state() -> State:
    state, _ = feed(State(view=View.LOGS), Loaded(0, Snapshot(runs=RUNS)))
    return state


def test_s_reads_the_newest_runs_pod_log_unless_one_was_selected() -> None:
    state, effects = keys(logs_state(), "s")
    assert effects == [Spawn(1, TaskSpec(TaskKind.POD_LOG, run_id="run_a"))]
    assert state.status == "reading the pod log of run run_a..."
    assert state.reading_pod_log() is not None
    picked, _ = keys(attrs.evolve(logs_state(), view=View.TRAINING), "j", "5", "s")
    assert picked.tasks[-1].spec == TaskSpec(TaskKind.POD_LOG, run_id="run_b")
    first, _ = keys(attrs.evolve(logs_state(), view=View.TRAINING), "j", "k", "5", "s")
    assert first.tasks[-1].spec.run_id == "run_a"
    assert TaskSpec(TaskKind.POD_LOG, run_id="run_b").label == ("overbrainer runs logs run_b --pod")


def test_the_pod_log_shows_scrolls_and_s_or_esc_goes_back() -> None:
    state, _ = keys(logs_state(), "s")
    lines = tuple(f"line {n}" for n in range(40))
    state, _ = feed(state, PodLogLines(1, "run_a", ("== .pod/bootstrap.log ==", *lines), True))
    assert state.status == "pod log of run run_a: s or Esc goes back to the app's own log"
    screen = shown(state)
    assert "Pod log of run run_a: 41 lines (s or Esc: the app's log)" in screen
    assert "line 39" in screen and "line 10" not in screen
    state, _ = feed(state, PodLogLines(1, "run_a", ("2026 container catch-up",)))
    assert state.pod_log is not None and state.pod_log[-1] == "2026 container catch-up"
    assert "2026 container catch-up" in shown(state)
    state, _ = keys(state, "page up", "page up", "page up", "page up", "page up")
    assert state.log_offset == 41  # never past the first line
    assert "== .pod/bootstrap.log ==" in shown(state)
    state, effects = keys(state, "s")  # the task still reads: stopped
    assert effects == [Cancel(1)]
    assert (state.pod_log, state.log_offset, state.status) == (None, 0, logs_keys.APP_LOG)
    assert "Logs: INFO and above" in shown(state)
    state, _ = feed(state, PodLogLines(1, "run_a", ("late",)))  # after `s`: not shown
    assert state.pod_log is None
    state, effects = feed(state, TaskDone(1))
    assert (state.tasks, effects) == ((), [])  # a read: no reload after it
    state, effects = keys(state, "s")
    assert effects == [Spawn(2, TaskSpec(TaskKind.POD_LOG, run_id="run_a"))]
    state, _ = feed(state, PodLogLines(2, "run_a", ("== pod ==",), True), TaskDone(2))
    state, effects = keys(state, "esc")
    assert (state.pod_log, effects) == (None, [])
    state, effects = keys(state, "esc")  # the app's log already
    assert effects == []


def test_a_run_without_a_pod_log_says_so_in_the_status_line() -> None:
    state, _ = keys(logs_state(), "s")
    state, _ = feed(state, Notice("runs: no pod log kept for run run_a"), TaskDone(1))
    assert state.status == "runs: no pod log kept for run run_a"
    assert (state.pod_log, state.tasks) == (None, ())
