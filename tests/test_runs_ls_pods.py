"""`overbrainer runs ls` shows each Runpod run's pod from its `pod.json` (reference §6.7), with
records written by the project's own record code, read by the real command."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import attrs

from overbrainer.targets import DeletedBy, PodRecord, PodState, save_pod_record, spend
from overbrainer.training import RunRecord, Runs, RunState
from overbrainer.training.run_record import Snapshot
from tests.train_helpers import make_project, overbrainer

START = dt.datetime(2026, 9, 22, 14, 30, 5, tzinfo=dt.UTC)


def new_run(runs: Runs, minute: int, target: str, state: RunState) -> RunRecord:
    """A run created `minute` minutes after START, saved in `state`."""
    moment = START.replace(minute=minute)
    created = runs.create("demo", target, lambda run_id: f"/w/{run_id}", moment)
    record = attrs.evolve(created, state=state)
    runs.save(record)
    return record


def pod(runs: Runs, run: RunRecord, state: PodState, **fields: Any) -> None:
    """Save the run's `pod.json` through the record code."""
    record = attrs.evolve(PodRecord(run_id=run.id, state=state), **fields)
    save_pod_record(runs.dir_of(run.id), record)


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}


def test_each_pod_summary_form(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    runs = Runs(project / "runs")
    on_this_machine = new_run(runs, 31, "local", RunState.SUCCEEDED)
    never_got_one = new_run(runs, 32, "gpu_cloud", RunState.FAILED)
    pod(runs, never_got_one, PodState.CREATING)
    provisioning = new_run(runs, 33, "gpu_cloud", RunState.PREPARING)
    pod(runs, provisioning, PodState.PROVISIONING, pod_id="pod0002", cost_per_hour=0.44)
    running = new_run(runs, 34, "gpu_cloud", RunState.RUNNING)
    pod(runs, running, PodState.RUNNING, pod_id="pod0003", cost_per_hour=1.185)
    no_rate_yet = new_run(runs, 35, "gpu_cloud", RunState.PREPARING)
    pod(runs, no_rate_yet, PodState.READY, pod_id="pod0004")
    awaiting = new_run(runs, 36, "gpu_cloud", RunState.RUNNING)
    pod(runs, awaiting, PodState.AWAITING_RETRIEVAL, pod_id="pod0005", cost_per_hour=0.44)
    kept = new_run(runs, 37, "gpu_cloud", RunState.SUCCEEDED)
    pod(runs, kept, PodState.KEPT, keep=True, pod_id="pod0006", cost_per_hour=0.44)
    deleted = new_run(runs, 38, "gpu_cloud", RunState.SUCCEEDED)
    pod(
        runs,
        deleted,
        PodState.DELETED,
        pod_id="pod0007",
        cost_per_hour=0.44,
        deleted_by=DeletedBy.CLIENT,
        estimated_spend=spend(0.44, 72 * 60),
    )
    gone_unknown = new_run(runs, 39, "gpu_cloud", RunState.FAILED)
    pod(runs, gone_unknown, PodState.DELETED, pod_id="pod0008", deleted_by=DeletedBy.UNKNOWN)
    stopped = new_run(runs, 40, "gpu_cloud", RunState.STOPPED)
    runs.save(attrs.evolve(stopped, snapshot=Snapshot("output/checkpoint-120", 120, "requested")))
    pod(runs, stopped, PodState.DELETING, pod_id="pod0009", cost_per_hour=0.44)

    listed = overbrainer(project, env(), "runs", "ls")

    assert (listed.returncode, listed.stderr) == (0, "")
    assert listed.stdout.splitlines() == [
        f"{on_this_machine.id}  succeeded  local  2026-09-22T14:31:05Z",
        f"{never_got_one.id}  failed     gpu_cloud  2026-09-22T14:32:05Z  (no pod)",
        f"{provisioning.id}  preparing  gpu_cloud  2026-09-22T14:33:05Z"
        "  pod provisioning pod0002 $0.44/h",
        f"{running.id}  running    gpu_cloud  2026-09-22T14:34:05Z  pod running pod0003 $1.19/h",
        f"{no_rate_yet.id}  preparing  gpu_cloud  2026-09-22T14:35:05Z  pod ready pod0004",
        f"{awaiting.id}  running    gpu_cloud  2026-09-22T14:36:05Z"
        "  pod awaiting retrieval pod0005",
        f"{kept.id}  succeeded  gpu_cloud  2026-09-22T14:37:05Z  pod kept pod0006",
        f"{deleted.id}  succeeded  gpu_cloud  2026-09-22T14:38:05Z  pod deleted about $0.53",
        f"{gone_unknown.id}  failed     gpu_cloud  2026-09-22T14:39:05Z  pod deleted",
        f"{stopped.id}  stopped    gpu_cloud  2026-09-22T14:40:05Z"
        "  step 120 (requested): partial model in output/  pod deleting pod0009 $0.44/h",
    ]


def test_an_unreadable_pod_record_is_named_on_its_line_and_the_listing_goes_on(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "p")
    runs = Runs(project / "runs")
    torn = new_run(runs, 31, "gpu_cloud", RunState.RUNNING)
    pod(runs, torn, PodState.RUNNING, pod_id="pod0001", cost_per_hour=0.44)
    path = runs.dir_of(torn.id) / "pod.json"
    path.write_bytes(path.read_bytes()[:40])  # as a crash of another tool might leave it
    foreign = new_run(runs, 32, "gpu_cloud", RunState.RUNNING)
    (runs.dir_of(foreign.id) / "pod.json").write_text('{"version": 2, "secret": "MARKER-9f3a"}')
    unreadable = new_run(runs, 33, "gpu_cloud", RunState.RUNNING)
    (runs.dir_of(unreadable.id) / "pod.json").mkdir()
    after = new_run(runs, 34, "gpu_cloud", RunState.SUCCEEDED)
    pod(runs, after, PodState.KEPT, pod_id="pod0004")

    listed = overbrainer(project, env(), "runs", "ls")

    assert (listed.returncode, listed.stderr) == (0, "")
    assert listed.stdout.splitlines() == [
        f"{torn.id}  running    gpu_cloud  2026-09-22T14:31:05Z  pod unknown: "
        f"runs/{torn.id}/pod.json is not a valid pod record (line 3, column 13)",
        f"{foreign.id}  running    gpu_cloud  2026-09-22T14:32:05Z  pod unknown: "
        f"runs/{foreign.id}/pod.json is not a valid pod record: "
        "`version` is not 1 (written by another overbrainer?)",
        f"{unreadable.id}  running    gpu_cloud  2026-09-22T14:33:05Z  pod unknown: "
        f"cannot read runs/{unreadable.id}/pod.json: Is a directory",
        f"{after.id}  succeeded  gpu_cloud  2026-09-22T14:34:05Z  pod kept pod0004",
    ]
    assert "MARKER" not in listed.stdout
