"""`runs ls --json`, `runs show [--json]` and `runs logs --json` through the real command, on
records written by the project's own record code."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import attrs

from overbrainer.targets import PodRecord, PodState, save_pod_record
from overbrainer.training import RunRecord, Runs, RunState
from overbrainer.training.run_record import Job, Snapshot
from tests.test_runs_ls_pods import START, new_run
from tests.train_helpers import make_project, overbrainer


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}


def document(project: Path, *args: str, code: int = 0) -> dict[str, Any]:
    """The `--json` document of `overbrainer ARGS --json`: stdout holds it alone."""
    done = overbrainer(project, env(), *args, "--json")
    assert done.returncode == code, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    assert found["exit_code"] == code
    return found


def pod(runs: Runs, run: RunRecord, state: PodState, **fields: Any) -> None:
    save_pod_record(
        runs.dir_of(run.id), attrs.evolve(PodRecord(run_id=run.id, state=state), **fields)
    )


def test_ls_json_gives_every_run_as_its_line_does(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    runs = Runs(project / "runs")
    here = new_run(runs, 31, "local", RunState.SUCCEEDED)
    running = new_run(runs, 32, "gpu_cloud", RunState.RUNNING)
    pod(
        runs,
        running,
        PodState.RUNNING,
        pod_id="pod0002",
        gpu_type="NVIDIA A40",
        cost_per_hour=1.185,
    )
    stopped = new_run(runs, 33, "local", RunState.STOPPED)
    runs.save(attrs.evolve(stopped, snapshot=Snapshot("output/checkpoint-120", 120, "requested")))
    lost = new_run(runs, 34, "gpu_cloud", RunState.RUNNING)
    (runs.dir_of(lost.id) / "ssh").mkdir()
    (runs.dir_of(lost.id) / "ssh" / "id_ed25519").write_text("private\n")
    broken = runs.root / "demo_20260922-150000"
    broken.mkdir()
    (broken / "run.json").write_text("{")

    text = overbrainer(project, env(), "runs", "ls")
    done = overbrainer(project, env(), "runs", "ls", "--json")

    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert (found["command"], found["error"], found["skipped"]) == ("runs ls", None, [broken.name])
    listed = found["runs"]
    assert [run["id"] for run in listed] == [here.id, running.id, stopped.id, lost.id]
    assert len(listed) == len(text.stdout.splitlines())
    assert listed[0] == {
        "id": here.id,
        "state": "succeeded",
        "recorded_state": "succeeded",
        "pod_record_missing": False,
        "target": "local",
        "target_kind": "local",
        "created": "2026-09-22T14:31:05Z",
        "snapshot": None,
        "machine": None,
    }
    machine = listed[1]["machine"]
    assert (machine["kind"], machine["words"]) == ("runpod", "pod running pod0002 $1.19/h")
    assert machine["details"]["cost_per_hour"] == "1.185"  # exact, where the words round
    assert (machine["details"]["pod_id"], machine["details"]["state"]) == ("pod0002", "running")
    assert listed[1]["target_kind"] == "runpod"  # gone from the settings: the files say it
    assert listed[2]["snapshot"] == {
        "step": 120,
        "reason": "requested",
        "checkpoint": "output/checkpoint-120",
    }
    assert listed[3]["state"] == "unknown (pod record missing)"
    assert listed[3]["pod_record_missing"] is True
    assert listed[3]["machine"]["words"] == (
        f"check its pod with `overbrainer pod ls` (`overbrainer pod rm {lost.id}`)"
    )


def test_ls_json_with_no_runs_and_without_a_project(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    assert document(project, "runs", "ls")["runs"] == []
    elsewhere = tmp_path / "nothing"
    elsewhere.mkdir()
    found = document(elsewhere, "runs", "ls", code=2)
    assert found["error"].startswith("cannot read ")
    assert "runs" not in found


def test_show_gives_one_run_in_full(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    runs = Runs(project / "runs")
    run = new_run(runs, 31, "local", RunState.FAILED)
    runs.save(attrs.evolve(run, job=Job(f"/w/{run.id}", 4242), message="the job exited 1"))
    run_dir = runs.dir_of(run.id)
    (run_dir / "job.log").write_text("one\ntwo\n")
    (run_dir / "output").mkdir()
    (run_dir / "output" / "adapter.bin").write_bytes(b"x" * 1000)
    metrics = [
        {"event": "log", "time": START.timestamp() + 60, "step": 10, "loss": 1.5},
        {"event": "log", "time": START.timestamp() + 90, "step": 10, "eval_loss": 1.75},
        {"event": "log", "time": START.timestamp() + 120, "step": 20, "loss": 1.25},
    ]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))

    found = document(project, "runs", "show", run.id)["run"]
    text = overbrainer(project, env(), "runs", "show", run.id)

    assert (found["id"], found["state"], found["message"]) == (run.id, "failed", "the job exited 1")
    assert found["job"] == {"dir": f"/w/{run.id}", "pid": 4242, "ref": None, "container": None}
    sizes = {item["path"]: item["size_bytes"] for item in found["files"]}
    assert sizes["job.log"] == 8
    assert sizes["output/adapter.bin"] == 1000
    assert sizes["run.json"] == (run_dir / "run.json").stat().st_size
    assert found["metrics"] == {
        "step": 20,
        "time": "2026-09-22T14:32:05Z",
        "loss": 1.25,
        "eval_loss": 1.75,
    }
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[:6] == [
        f"run: {run.id}",
        "state: failed",
        "target: local (local)",
        "created: 2026-09-22T14:31:05Z",
        f"remote dir: /w/{run.id}",
        f"job: pid 4242 in /w/{run.id}",
    ]
    assert "metrics: step 20, loss 1.25, eval loss 1.75 (at 2026-09-22T14:32:05Z)" in lines
    assert "  output/adapter.bin  1,000 bytes" in lines


def test_show_of_an_unknown_run_is_exit_2_naming_it(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    done = overbrainer(project, env(), "runs", "show", "nope_1")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "error: no run nope_1 in runs/\n"
    found = document(project, "runs", "show", "nope_1", code=2)
    assert found["error"] == "no run nope_1 in runs/"
    assert "run" not in found


def test_logs_json_honours_tail(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    runs = Runs(project / "runs")
    run = new_run(runs, 31, "local", RunState.SUCCEEDED)
    (runs.dir_of(run.id) / "job.log").write_text("one\ntwo\r\nthree\n")
    assert document(project, "runs", "logs", run.id, "--tail", "2") == {
        "command": "runs logs",
        "version": 1,
        "exit_code": 0,
        "error": None,
        "run_id": run.id,
        "path": f"runs/{run.id}/job.log",
        "exists": True,
        "lines": ["two", "three"],
    }
    empty = new_run(runs, 32, "local", RunState.PREPARING)
    found = document(project, "runs", "logs", empty.id)
    assert (found["exists"], found["lines"]) == (False, [])
    assert document(project, "runs", "logs", "nope_1", code=2)["error"] == "no run nope_1 in runs/"


def test_ls_json_of_a_ray_run_gives_the_job_as_last_seen(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    runs = Runs(project / "runs")
    run = new_run(runs, 31, "cluster", RunState.RUNNING)
    seen = {"submission_id": "raysubmit_7", "state": "RUNNING", "seen": "2026-09-22T14:35:00Z"}
    (runs.dir_of(run.id) / "ray.json").write_text(json.dumps(seen) + "\n")
    (listed,) = document(project, "runs", "ls")["runs"]
    assert listed["target_kind"] == "ray"
    assert listed["machine"] == {
        "kind": "ray",
        "words": "ray RUNNING raysubmit_7 (seen 2026-09-22T14:35:00Z)",
        "details": seen,
    }
