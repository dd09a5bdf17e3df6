"""The Training view's pod notice: a pod an ended run left on Runpod, and `p` dismissing it."""

from __future__ import annotations

import json
from pathlib import Path

from overbrainer.project.directory import open_project
from overbrainer.targets.runpod.pod_record import PodRecord, PodState, save_pod_record
from overbrainer.ui.logs import LogBuffer
from overbrainer.ui.tui import app, render
from overbrainer.ui.tui.load import load_snapshot
from overbrainer.ui.tui.state import Loaded, RunRow, Snapshot, State, View
from tests.hub_support import RUN_ID, make_run
from tests.tui_app_support import feed, keys

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
    assert (effects, state.status, state.dismissed_pods) == ([], app.POD_HINT, ())
    state, effects = keys(state, "j", "p")
    assert (effects, state.dismissed_pods) == ([], ("run_b",))
    assert state.status == "pod notice of run run_b dismissed: pod pod123 stays until `pod rm`"
    assert NOTICE not in shown(state)
    assert "run_b  succeeded" in shown(state)
    state, _ = feed(state, Loaded(0, Snapshot(runs=runs)))  # read again: still dismissed
    assert NOTICE not in shown(state)
    state, effects = keys(state, "p")
    assert (effects, state.status) == ([], app.POD_HINT)
