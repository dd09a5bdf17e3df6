"""`overbrainer train` on the local target, with a stand-in `axolotl`: a run to its end.

Its outcome and summary, the merge, its metrics while it runs, and `runs logs` afterwards.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.ports import free_port
from tests.train_helpers import (  # noqa: F401 (the *_fixture are fixtures)
    bin_dir_fixture,
    event_kinds,
    hold_at,
    only_run,
    overbrainer,
    project_fixture,
    record,
    standin_env,
    train_sampled,
    training,
)


def metric_lines(stderr: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"INFO train: (step .*)", stderr)]


def test_a_run_that_succeeds_is_recorded_and_summarized(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    env = standin_env(bin_dir, **hold_at(tmp_path, 2))
    events = tmp_path / "events.jsonl"
    result = train_sampled(project, env, tmp_path, events)
    assert result.returncode == 0, result.stderr
    run_id = only_run(project)
    kinds = event_kinds(events)
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
