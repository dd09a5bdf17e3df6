"""Training safeguards: no second job beside a live run, cancel beside a follower, ended runs."""

from __future__ import annotations

import collections.abc
import os
import signal
from pathlib import Path

import pytest

from overbrainer.training.run_store import Job, RunRecord, Runs, RunState
from tests.pipeline_support import TRAINING, write_answered
from tests.pipeline_support import make_project as pipeline_project
from tests.train_helpers import (
    group_alive,
    kill_jobs,
    make_project,
    only_run,
    overbrainer,
    record,
    run_ids,
    standin_env,
    start_and_detach,
    training,
    wait_for,
)


@pytest.fixture
def project(tmp_path: Path) -> collections.abc.Iterator[Path]:
    root = make_project(tmp_path / "p")
    yield root
    kill_jobs(root)


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    return tmp_path / "bin"


def still_training(run_id: str) -> str:
    return (
        f"error: run {run_id} is still training on target `local`: follow it with "
        f"`overbrainer train attach {run_id}` or cancel it with "
        f"`overbrainer train cancel {run_id}`; `overbrainer train --force` starts another run "
        "beside it"
    )


def test_a_second_train_beside_a_detached_run_is_refused_and_force_starts_it(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    env = standin_env(bin_dir, STANDIN_PACE="0.1", STANDIN_STEPS="400")
    run_id = start_and_detach(project, env, tmp_path / "train.err")
    pid = record(project, run_id)["job"]["pid"]
    before = sorted(p.name for p in (project / "runs").iterdir())

    refused = overbrainer(project, env, "train")
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.splitlines()[-1] == still_training(run_id)
    assert refused.stdout == ""
    assert sorted(p.name for p in (project / "runs").iterdir()) == before  # nothing created

    fast = env | {"STANDIN_PACE": "0.01", "STANDIN_STEPS": "10"}
    forced = overbrainer(project, fast, "train", "--force")
    assert forced.returncode == 0, forced.stderr
    new_id = next(i for i in run_ids(project) if i != run_id)
    assert forced.stdout.startswith(f"train: run {new_id} succeeded; step 10/10")
    assert record(project, run_id)["state"] == "running"  # the first run was left alone
    assert group_alive(pid)


def test_a_run_recorded_running_whose_job_died_does_not_block_train(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    env = standin_env(bin_dir, STANDIN_PACE="0.1", STANDIN_STEPS="400")
    run_id = start_and_detach(project, env, tmp_path / "train.err")
    pid = record(project, run_id)["job"]["pid"]
    os.killpg(pid, signal.SIGKILL)
    wait_for(lambda: not group_alive(pid), 5)
    assert record(project, run_id)["state"] == "running"  # only the status check can tell

    result = overbrainer(project, env | {"STANDIN_PACE": "0.01", "STANDIN_STEPS": "10"}, "train")
    assert result.returncode == 0, result.stderr


def test_run_warns_then_refuses_to_train_beside_a_live_run(tmp_path: Path, bin_dir: Path) -> None:
    root = pipeline_project(tmp_path / "p")
    with (root / "overbrainer.toml").open("a") as config:
        config.write(TRAINING)
    write_answered(root, 40, topics=("ownership", "async"))
    # Every stage is done: `run` asks the (unreachable) provider nothing.
    env = standin_env(bin_dir, STANDIN_PACE="0.1", STANDIN_STEPS="400")
    env["OVERBRAINER_PROVIDERS__STUB__BASE_URL"] = "http://127.0.0.1:9/v1"
    split = overbrainer(root, env, "run", "--no-train")
    assert split.returncode == 0, split.stderr
    assert "still training" not in split.stderr
    try:
        run_id = start_and_detach(root, env, tmp_path / "train.err")
        result = overbrainer(root, env, "run")
    finally:
        kill_jobs(root)
    assert result.returncode == 2, result.stderr
    warning = still_training(run_id).removeprefix("error: ")
    lines = result.stderr.splitlines()
    assert any(
        line.endswith(f" WARN {warning}; `run` trains after split only if it has ended by then")
        for line in lines
    ), result.stderr
    assert lines[-1] == still_training(run_id)
    assert run_ids(root) == [run_id]


def test_cancel_beside_the_follower_cancels_and_the_follower_reports_it(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    env = standin_env(bin_dir, STANDIN_PACE="0.1", STANDIN_STEPS="400")
    err = tmp_path / "train.err"
    with training(project, env, err) as train:
        run_id = only_run(project)
        pid = record(project, run_id)["job"]["pid"]
        cancel = overbrainer(project, env, "train", "cancel", run_id)
        out, _ = train.communicate(timeout=20)
    assert cancel.returncode == 0, cancel.stderr
    assert cancel.stdout == f"train: run {run_id} cancelled\n"
    assert (
        f"INFO train: overbrainer (pid {train.pid}) is using this project: cancelling run "
        f"{run_id} beside it" in cancel.stderr
    )
    assert train.returncode == 1
    assert out.startswith(f"train: run {run_id} cancelled; step ")
    assert err.read_text().splitlines()[-1] == f"error: run {run_id} was cancelled"
    assert not group_alive(pid)
    assert (project / "runs" / run_id / "cancelled").exists()
    saved = record(project, run_id)
    assert (saved["state"], saved.get("message")) == ("cancelled", None)


def save_run(project: Path, state: RunState, *, job: bool = True) -> bytes:
    """Record run `r_1` in `state` as if it ran earlier; the bytes of its `run.json`."""
    runs = Runs(project / "runs")
    runs.save(
        RunRecord(
            id="r_1",
            target="local",
            created="2026-01-01T00:00:00Z",
            remote_dir=str(project / "runs" / "r_1"),
            job=Job(str(project / "runs" / "r_1"), 4242) if job else None,
            state=state,
            snapshots=True,
        )
    )
    return runs.record_path("r_1").read_bytes()


@pytest.mark.parametrize(
    "state", [RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED, RunState.STOPPED]
)
def test_stop_and_cancel_of_an_ended_run_say_so_and_exit_2(
    project: Path, bin_dir: Path, state: RunState
) -> None:
    saved = save_run(project, state)
    env = standin_env(bin_dir)
    for verb in ("stop", "cancel"):
        result = overbrainer(project, env, "train", verb, "r_1")
        assert (result.returncode, result.stderr.splitlines()[-1]) == (
            2,
            f"error: run r_1 already ended: {state.value}",
        ), verb
        assert result.stdout == ""
    assert (project / "runs" / "r_1" / "run.json").read_bytes() == saved
    assert not (project / "runs" / "r_1" / "snapshot.request").exists()
    assert not (project / "runs" / "r_1" / "cancelling").exists()


def test_stop_and_cancel_of_a_run_without_a_job_exit_2(project: Path, bin_dir: Path) -> None:
    saved = save_run(project, RunState.PREPARING, job=False)
    env = standin_env(bin_dir)
    cases = [
        ("stop", "run r_1 has not started: there is no job to snapshot yet"),
        ("cancel", "run r_1 has not started: there is no job to cancel yet"),
    ]
    for verb, message in cases:
        result = overbrainer(project, env, "train", verb, "r_1")
        assert (result.returncode, result.stderr.splitlines()[-1]) == (2, f"error: {message}")
    assert (project / "runs" / "r_1" / "run.json").read_bytes() == saved
