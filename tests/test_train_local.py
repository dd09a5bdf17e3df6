"""`overbrainer train` and friends end to end on the local target, with a stand-in `axolotl`."""

from __future__ import annotations

import collections.abc
import json
import os
import re
import signal
from pathlib import Path

import pytest

from overbrainer.training.run_store import Job, RunRecord, Runs, RunState
from tests.ports import free_port
from tests.train_helpers import (
    group_alive,
    hold_at,
    kill_jobs,
    make_project,
    only_run,
    overbrainer,
    record,
    release,
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


def metric_lines(stderr: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"INFO train: (step .*)", stderr)]


def test_a_run_that_succeeds_is_recorded_and_summarized(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    env = standin_env(bin_dir)
    events = tmp_path / "events.jsonl"
    result = overbrainer(project, env, "--events", str(events), "train")
    assert result.returncode == 0, result.stderr
    run_id = only_run(project)
    kinds = [json.loads(line)["event"] for line in events.read_text().splitlines()]
    assert kinds[0] == "run_watched"
    assert kinds.count("system") >= 1  # this machine, sampled at once and then every 10 s
    assert kinds.count("job_status") == 2  # running, then exited: only changes are published
    assert kinds.count("metric") == 24  # 20 training logs and 4 evaluations
    assert re.fullmatch(r"my_project_\d{8}-\d{6}", run_id)
    assert result.stdout.splitlines() == [
        f"train: run {run_id} succeeded; step 20/20, epoch 1.00, loss 1.0000, eval_loss 0.0476; "
        f"output in runs/{run_id}/output",
        f"train: adapter in runs/{run_id}/output",
    ]
    saved = record(project, run_id)
    assert saved["state"] == "succeeded"
    assert saved["message"] is None
    assert saved["snapshots"] is True
    assert saved["job"]["pid"] > 1
    assert saved["remote_dir"] == str((project / "runs" / run_id).resolve())
    # Training lines are throttled to one per 10 s; evaluations always show.
    assert metric_lines(result.stderr) == [
        "step 1/20 (5%), epoch 0.05, loss 1.9500, lr 2.00e-4, grad_norm 0.5000",
        "step 5/20 (25%), epoch 0.25, eval_loss 0.1667",
        "step 10/20 (50%), epoch 0.50, eval_loss 0.0909",
        "step 15/20 (75%), epoch 0.75, eval_loss 0.0625",
        "step 20/20 (100%), epoch 1.00, eval_loss 0.0476",
    ]
    assert f"INFO train: run {run_id} on target `local`, in " in result.stderr
    assert "INFO train: job running" in result.stderr
    assert "INFO train: job exited with code 0" in result.stderr
    assert result.stderr.rstrip().endswith("INFO train: retrieving results")
    run_dir = project / "runs" / run_id
    assert (run_dir / "output" / "adapter_model.safetensors").is_file()
    assert (run_dir / "exit_code").read_text().strip() == "0"
    assert (run_dir / "plugin" / "overbrainer_metrics.py").is_file()
    stages = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert stages[0]["event"] == "stage" and stages[0]["name"] == "train"
    assert stages[-1] == {"event": "end", "time": stages[-1]["time"], "step": 20}
    # `axolotl preprocess` ran first, so training found its dataset prepared and did not warn.
    assert (run_dir / "prepared" / "standin" / "dataset_info.json").is_file()
    log = (run_dir / "job.log").read_text()
    assert "standin: preprocessed into" in log
    assert "axolotl preprocess" not in log


def test_merge_runs_merge_lora_and_reports_the_merged_model(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "calls.jsonl"
    env = standin_env(bin_dir, STANDIN_LOG=str(trace), OVERBRAINER_TRAINING__MERGE="true")
    env["OVERBRAINER_TRAINING__ADAPTER"] = "lora"
    env |= {"STANDIN_ENV_FILE": str(tmp_path / "env.json"), "OVERBRAINER_HF_TOKEN": "hf_tok"}
    env |= {"VAULT_ADDR": "http://127.0.0.1:1", "PYTHONPATH": "/inherited"}
    result = overbrainer(project, env, "train")
    assert result.returncode == 0, result.stderr
    run_id = only_run(project)
    job_env = json.loads((tmp_path / "env.json").read_text())
    run_dir = (project / "runs" / run_id).resolve()
    assert job_env["HF_TOKEN"] == "hf_tok"
    assert "VAULT_ADDR" not in job_env
    assert sorted(k for k in job_env if k.startswith("OVERBRAINER_")) == [
        "OVERBRAINER_METRICS",
        "OVERBRAINER_SNAPSHOT",
    ]
    assert job_env["OVERBRAINER_METRICS"] == f"{run_dir}/metrics.jsonl"
    assert job_env["PYTHONPATH"] == f"{run_dir}/plugin:/inherited"
    assert job_env["AXOLOTL_DO_NOT_TRACK"] == "1"
    assert "hf_tok" not in result.stdout + result.stderr
    assert "hf_tok" not in (run_dir / "run.json").read_text() + (run_dir / "job.log").read_text()
    assert result.stdout.splitlines()[-1] == f"train: merged model in runs/{run_id}/output/merged"
    calls = [json.loads(line) for line in trace.read_text().splitlines()]
    assert calls == [
        ["preprocess", "axolotl.yaml"],
        ["train", "axolotl.yaml"],
        ["merge-lora", "axolotl.yaml"],
    ]
    assert "INFO train: merging adapter" in result.stderr


def test_a_job_exiting_3_fails_the_run(project: Path, bin_dir: Path) -> None:
    result = overbrainer(project, standin_env(bin_dir, STANDIN_EXIT="3"), "train")
    run_id = only_run(project)
    message = f"the job exited with code 3 (see runs/{run_id}/job.log)"
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == f"error: {message}"
    assert result.stdout.startswith(f"train: run {run_id} failed; step 20/20")
    assert record(project, run_id)["state"] == "failed"
    assert record(project, run_id)["message"] == message
    assert "INFO train: job exited with code 3" in result.stderr


def test_a_job_without_metric_lines_fails_the_run(project: Path, bin_dir: Path) -> None:
    result = overbrainer(project, standin_env(bin_dir, STANDIN_NO_PLUGIN="1"), "train")
    run_id = only_run(project)
    message = (
        "the job wrote no metrics: the overbrainer metrics plugin was not loaded "
        f"(see runs/{run_id}/job.log)"
    )
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == f"error: {message}"
    assert result.stdout == f"train: run {run_id} failed; step 0\n"
    assert record(project, run_id)["message"] == message


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


def test_runs_logs_prints_the_job_log_masked_and_tailed(project: Path, bin_dir: Path) -> None:
    env = standin_env(bin_dir)
    assert overbrainer(project, env, "train").returncode == 0
    run_id = only_run(project)
    log = project / "runs" / run_id / "job.log"
    log.write_text("one\ttab\r\ntoken hf_abcdefghijklmnopqrstuvwx\n\x1b[31mred\x1b[0m\nlast\n")
    result = overbrainer(project, env, "runs", "logs", run_id)
    assert result.stdout == "one tab\ntoken hf_***\nred\nlast\n"
    tail = overbrainer(project, env, "runs", "logs", run_id, "--tail", "2")
    assert tail.stdout == "red\nlast\n"
    log.unlink()
    missing = overbrainer(project, env, "runs", "logs", run_id)
    assert missing.stdout == f"runs: no job.log for run {run_id} yet\n"
    unknown = overbrainer(project, env, "runs", "logs", "nope")
    assert unknown.returncode == 2
    assert unknown.stderr.splitlines()[-1] == "error: no run nope in runs/"
    # A run without a pod has no pod log; the pod options go with --pod only.
    no_pod = overbrainer(project, env, "runs", "logs", run_id, "--pod")
    assert (no_pod.returncode, no_pod.stdout) == (0, f"runs: no pod log kept for run {run_id}\n")
    unknown = overbrainer(project, env, "runs", "logs", "nope", "--pod")
    assert unknown.stderr.splitlines()[-1] == "error: no run nope in runs/"
    # A kept pod log that cannot be read says so, naming it and why.
    (project / "runs" / run_id / ".pod" / "watchdog.log").mkdir(parents=True)
    unreadable = overbrainer(project, env, "runs", "logs", run_id, "--pod")
    assert (unreadable.returncode, unreadable.stdout.splitlines()) == (
        0,
        ["== .pod/watchdog.log ==", "runs: cannot read .pod/watchdog.log: Is a directory"],
    )
    alone = overbrainer(project, env, "runs", "logs", run_id, "--follow")
    assert alone.returncode == 2
    assert alone.stderr.splitlines()[-1] == (
        "error: --source and --follow go with --pod; see `overbrainer runs logs --help`"
    )


def test_train_refuses_an_empty_train_file(project: Path, bin_dir: Path) -> None:
    (project / "data" / "train.jsonl").write_text("")
    env = standin_env(bin_dir, OVERBRAINER_TRAINING__HUB_MODEL_ID="me/child")
    result = overbrainer(project, env, "train")
    assert result.returncode == 2
    assert (
        " WARN training.hub_model_id is set but OVERBRAINER_HF_TOKEN is not: the push will fail"
        in result.stderr
    )
    assert result.stderr.splitlines()[-1] == (
        "error: data/train.jsonl has no example: run `overbrainer split` first"
    )
    assert run_ids(project) == []


def save_succeeded(project: Path, *, snapshots: bool) -> None:
    """Record run `done_1`, succeeded, as if trained earlier."""
    Runs(project / "runs").save(
        RunRecord(
            id="done_1",
            target="local",
            created="2026-01-01T00:00:00Z",
            remote_dir=str(project / "runs" / "done_1"),
            job=Job(str(project / "runs" / "done_1"), 4242),
            state=RunState.SUCCEEDED,
            snapshots=snapshots,
        )
    )


def test_refusals_name_what_is_wrong(project: Path, bin_dir: Path) -> None:
    save_succeeded(project, snapshots=True)
    env = standin_env(bin_dir)
    cases = [
        (("train", "--target", "nope"), 2, "unknown target `nope`"),
        (("train", "--keep-pod"), 2, "--keep-pod only applies to a runpod target"),
        (
            ("train", "--resume-from", "done_1"),
            2,
            "cannot resume from run done_1: it is succeeded, not stopped with a snapshot "
            "(see `overbrainer train stop`)",
        ),
    ]
    for args, code, message in cases:
        result = overbrainer(project, env, *args)
        assert (result.returncode, result.stderr.splitlines()[-1]) == (code, f"error: {message}")
    assert run_ids(project) == ["done_1"]


def test_stop_and_attach_refusals_and_the_listing(project: Path, bin_dir: Path) -> None:
    save_succeeded(project, snapshots=False)
    env = standin_env(bin_dir)
    cases = [
        (("train", "stop", "done_1"), 2, "run done_1 already ended: succeeded"),
        (("train", "attach", "nope"), 2, "no run nope in runs/"),
    ]
    for args, code, message in cases:
        result = overbrainer(project, env, *args)
        assert (result.returncode, result.stderr.splitlines()[-1]) == (code, f"error: {message}")
    listed = overbrainer(project, env, "runs", "ls")
    assert listed.stdout == "done_1  succeeded  local  2026-01-01T00:00:00Z\n"


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


def test_a_missing_axolotl_refuses_the_training_and_creates_no_run(
    project: Path, tmp_path: Path
) -> None:
    env = standin_env(tmp_path / "bin")
    env["PATH"] = "/usr/bin:/bin"
    result = overbrainer(project, env, "train")
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        "error: target `local` cannot train: axolotl is not on PATH (set targets.local.venv to "
        "Axolotl's virtual environment)"
    )
    assert [line for line in result.stderr.splitlines() if "error" in line.lower()] == [
        result.stderr.splitlines()[-1]
    ]
    assert run_ids(project) == []


def test_a_venv_without_axolotl_refuses_the_training_and_creates_no_run(
    project: Path, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "axolotl").write_text("#!/bin/sh\n")  # not executable
    with open(project / "overbrainer.toml", "a") as config:
        config.write(f'venv = "{venv}"\n')
    result = overbrainer(project, standin_env(tmp_path / "bin"), "train")
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"error: target `local` cannot train: no axolotl in {venv}/bin (targets.local.venv)"
    )
    assert run_ids(project) == []


def test_the_axolotl_of_the_venv_trains(project: Path, tmp_path: Path) -> None:
    env = standin_env(tmp_path / "bin")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (tmp_path / "bin" / "axolotl").rename(venv / "bin" / "axolotl")
    with open(project / "overbrainer.toml", "a") as config:
        config.write(f'venv = "{venv}"\n')
    result = overbrainer(project, env, "train", timeout=60)
    assert result.returncode == 0, result.stderr
    assert record(project, only_run(project))["state"] == "succeeded"


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


def test_train_serves_metrics_while_it_follows_the_job(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    import urllib.request

    port = free_port()
    env = standin_env(bin_dir, STANDIN_STEPS="200", STANDIN_PACE="0.02")
    env["OVERBRAINER_METRICS__LISTEN"] = f"127.0.0.1:{port}"
    with training(project, env, tmp_path / "err.txt", steps=5) as process:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            text = reply.read().decode()
        assert "overbrainer_build_info" in text
        step = re.search(r"^overbrainer_train_step\{[^}]*\} ([\d.]+)$", text, re.MULTILINE)
        assert step is not None and float(step.group(1)) >= 1, text
        assert process.wait(timeout=30) == 0
    assert f"metrics at http://127.0.0.1:{port}/metrics" in (tmp_path / "err.txt").read_text()


def test_a_venv_target_puts_the_venv_first_on_path_for_axolotls_own_launchers(
    project: Path, tmp_path: Path
) -> None:
    # Axolotl's `axolotl train` launches `accelerate` by name: a venv that is not on PATH
    # fails with FileNotFoundError. This venv's axolotl does the same.
    env = standin_env(tmp_path / "standin")
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (tmp_path / "standin" / "axolotl").rename(venv_bin / "launched")
    (venv_bin / "axolotl").write_text('#!/bin/sh\nexec launched "$@"\n')
    (venv_bin / "axolotl").chmod(0o755)
    env["OVERBRAINER_TARGETS__LOCAL__VENV"] = str(tmp_path / "venv")
    result = overbrainer(project, env, "train")
    assert result.returncode == 0, result.stderr
    run_id = only_run(project)
    assert result.stdout.startswith(f"train: run {run_id} succeeded; step 20/20")
    assert "launched: not found" not in (project / "runs" / run_id / "job.log").read_text()


def test_a_target_without_a_gpu_is_refused_until_the_cpu_settings_are_set(
    project: Path, tmp_path: Path
) -> None:
    env = standin_env(tmp_path / "bin")
    (tmp_path / "bin" / "nvidia-smi").unlink()  # this machine: no GPU
    result = overbrainer(project, env, "train")
    assert result.returncode == 2
    keys = ", ".join(
        f"training.axolotl_extra.{key}"
        for key in ("lora_mlp_kernel", "lora_qkv_kernel", "lora_o_kernel", "bf16", "fp16")
    )
    assert result.stderr.splitlines()[-1] == (
        f"error: target `local` has no GPU: to train on its CPU set {keys} = false "
        '(docs/training.md, "Training on a CPU")'
    )
    assert run_ids(project) == []
    for key in ("LORA_MLP_KERNEL", "LORA_QKV_KERNEL", "LORA_O_KERNEL", "BF16", "FP16"):
        env[f"OVERBRAINER_TRAINING__AXOLOTL_EXTRA__{key}"] = "false"
    result = overbrainer(project, env, "train")
    assert result.returncode == 0, result.stderr
    assert " INFO target `local` has no GPU: training on its CPU" in result.stderr
    config = (project / "runs" / only_run(project) / "axolotl.yaml").read_text()
    assert "lora_mlp_kernel: false" in config and "fp16: false" in config
