"""A local training run's job controlled from outside: detach, attach, stop and resume, cancel."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.train_helpers import (  # noqa: F401 (the *_fixture are fixtures)
    bin_dir_fixture,
    group_alive,
    hold_at,
    only_run,
    overbrainer,
    project_fixture,
    record,
    release,
    run_ids,
    standin_env,
    start_and_detach,
    training,
    wait_for,
)


@pytest.mark.quick  # an end-to-end path of the quick tier
def test_ctrl_c_detaches_and_attach_collects_the_end(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    env = standin_env(bin_dir, STANDIN_STEPS="30", **hold_at(tmp_path, 2))
    run_id = start_and_detach(project, env, tmp_path / "train.err")
    pid = record(project, run_id)["job"]["pid"]
    assert group_alive(pid)
    assert record(project, run_id)["state"] == "running"
    release(tmp_path)
    result = overbrainer(project, env, "train", "attach", run_id)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == (
        f"train: run {run_id} succeeded; step 30/30, epoch 1.00, loss 1.0000, eval_loss 0.0323; "
        f"output in runs/{run_id}/output"
    )
    assert record(project, run_id)["state"] == "succeeded"
    wait_for(lambda: not group_alive(pid), 5)  # the wrapper exits right after `exit_code`
    again = overbrainer(project, env, "train", "attach", run_id)  # ended: summarized from files
    assert (again.returncode, again.stdout) == (0, result.stdout)


def test_stop_saves_a_snapshot_and_resume_continues_from_it(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    env = standin_env(bin_dir, STANDIN_STEPS="40", **hold_at(tmp_path, 2))
    run_id = start_and_detach(project, env, tmp_path / "train.err")
    stop = overbrainer(project, env, "train", "stop", run_id)
    assert stop.returncode == 0, stop.stderr
    saved = record(project, run_id)
    assert saved["state"] == "stopped"
    step = saved["snapshot"]["step"]
    assert saved["snapshot"] == {
        "checkpoint": f"output/checkpoint-{step}",
        "step": step,
        "reason": "requested",
    }
    assert stop.stdout.splitlines() == [
        f"train: snapshot of run {run_id} requested: its job saves a checkpoint at the end of "
        "its current step, then stops",
        f"train: run {run_id} stopped at step {step} (requested): snapshot in "
        f"runs/{run_id}/output/checkpoint-{step}; resume with "
        f"`overbrainer train --resume-from {run_id}`",
        f"train: runs/{run_id}/output also holds the partial model at step {step}, "
        "not a finished one",
    ]
    listed = overbrainer(project, env, "runs", "ls")
    assert listed.stdout.splitlines() == [
        f"{run_id}  stopped    local  {saved['created']}  step {step} (requested): "
        "partial model in output/"
    ]

    resumed = overbrainer(project, env | {"STANDIN_PACE": "0.01"}, "train", "--resume-from", run_id)
    assert resumed.returncode == 0, resumed.stderr
    new_id = next(i for i in run_ids(project) if i != run_id)
    assert record(project, new_id)["resumed_from"] == run_id
    assert (
        f"INFO train: run {new_id} resumes from the snapshot of run {run_id} "
        f"(output/checkpoint-{step})" in resumed.stderr
    )
    new_dir = project / "runs" / new_id
    copied = new_dir / "resume" / f"checkpoint-{step}" / "trainer_state.json"
    original = project / "runs" / run_id / "output" / f"checkpoint-{step}" / "trainer_state.json"
    assert copied.stat().st_ino == original.stat().st_ino  # hard-linked, not copied
    config = (new_dir / "axolotl.yaml").read_text().replace('"', "")
    assert f"resume_from_checkpoint: {new_dir.resolve()}/resume/checkpoint-{step}" in config
    assert (new_dir / "output" / "resumed_from.txt").is_file()
    assert resumed.stdout.startswith(f"train: run {new_id} succeeded; step 40/40")


def test_stop_while_another_process_follows_leaves_the_snapshot_to_it(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    env = standin_env(bin_dir, STANDIN_STEPS="40", **hold_at(tmp_path, 2))
    with training(project, env, tmp_path / "train.err") as train:
        run_id = only_run(project)
        stop = overbrainer(project, env, "train", "stop", run_id)
        out, _ = train.communicate(timeout=15)
    assert stop.returncode == 0, stop.stderr
    assert stop.stdout == (
        f"train: overbrainer (pid {train.pid}) is using this project: if it follows run "
        f"{run_id}, it collects the snapshot; if not, collect it with "
        f"`overbrainer train attach {run_id}`\n"
    )
    assert train.returncode == 0
    assert f"train: run {run_id} stopped at step" in out
    assert record(project, run_id)["state"] == "stopped"


def test_stop_cancels_a_job_that_never_saves_its_snapshot(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    env = standin_env(bin_dir, **hold_at(tmp_path, 2))
    env |= {"STANDIN_IGNORE_SNAPSHOT": "1", "OVERBRAINER_TEST_STOP_LIMITS_S": "1,1"}
    run_id = start_and_detach(project, env, tmp_path / "train.err")
    result = overbrainer(project, env, "train", "stop", run_id)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[-1] == f"error: run {run_id} was cancelled"
    assert any(
        line.endswith(" WARN no snapshot 30 min after it was asked for: the job was cancelled")
        for line in lines
    )
    assert record(project, run_id)["state"] == "cancelled"
    assert not group_alive(record(project, run_id)["job"]["pid"])


def test_cancel_stops_the_group_and_records_it(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    env = standin_env(bin_dir, **hold_at(tmp_path, 2))
    run_id = start_and_detach(project, env, tmp_path / "train.err")
    pid = record(project, run_id)["job"]["pid"]
    result = overbrainer(project, env, "train", "cancel", run_id)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"train: run {run_id} cancelled\n"
    assert not group_alive(pid)
    assert (project / "runs" / run_id / "cancelled").exists()
    assert record(project, run_id)["state"] == "cancelled"
    again = overbrainer(project, env, "train", "cancel", run_id)
    assert again.returncode == 2
    assert again.stderr.splitlines()[-1] == f"error: run {run_id} already ended: cancelled"


def test_a_job_killed_outside_overbrainer_is_lost(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    env = standin_env(bin_dir, **hold_at(tmp_path, 2))
    err = tmp_path / "train.err"
    with training(project, env, err) as train:
        run_id = only_run(project)
        os.killpg(record(project, run_id)["job"]["pid"], signal.SIGKILL)
        train.communicate(timeout=10)
    message = f"the job stopped without an exit code (see runs/{run_id}/job.log)"
    assert train.returncode == 1
    lines = err.read_text().splitlines()
    assert lines[-1] == f"error: {message}"
    lost = "INFO train: job lost (stopped without an exit code)"
    assert any(line.endswith(lost) for line in lines)
    assert record(project, run_id)["state"] == "failed"
    assert record(project, run_id)["message"] == message


def test_kill_9_of_the_follower_leaves_the_job_training(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    env = standin_env(bin_dir, STANDIN_STEPS="30", **hold_at(tmp_path, 2))
    with training(project, env, tmp_path / "train.err") as train:
        train.kill()
        train.wait(timeout=10)
    run_id = only_run(project)
    assert record(project, run_id)["state"] == "running"
    assert group_alive(record(project, run_id)["job"]["pid"])
    release(tmp_path)
    result = overbrainer(project, env, "train", "attach", run_id)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"train: run {run_id} succeeded; step 30/30")


def test_attach_adopts_a_job_started_but_not_recorded(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    env = standin_env(bin_dir, STANDIN_STEPS="30", **hold_at(tmp_path, 2))
    run_id = start_and_detach(project, env, tmp_path / "train.err")
    # As if overbrainer was killed -9 between spawning the job and saving the record.
    path = project / "runs" / run_id / "run.json"
    saved = json.loads(path.read_text())
    path.write_text(json.dumps(saved | {"state": "preparing", "job": None}))
    release(tmp_path)
    result = overbrainer(project, env, "train", "attach", run_id)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"train: run {run_id} succeeded; step 30/30")
    assert (
        f" WARN train: run {run_id} was left preparing, but its job had started (process group "
        f"{saved['job']['pid']}): recording it as running" in result.stderr
    )
    assert record(project, run_id)["job"]["pid"] == saved["job"]["pid"]
