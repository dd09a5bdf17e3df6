"""`train --json` and `train attach|stop|cancel --json` on the local target (stand-in trainer),
and `run --json`'s training: where the run stands, as one document on stdout."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from overbrainer.devtools.stub_provider import open_stub
from tests.pipeline_support import TRAINING
from tests.pipeline_support import make_project as make_pipeline_project
from tests.pipeline_support import overbrainer as pipeline_command
from tests.train_helpers import (  # noqa: F401 (the *_fixture are fixtures)
    bin_dir_fixture,
    hold_at,
    kill_jobs,
    only_run,
    overbrainer,
    project_fixture,
    record,
    standin_env,
    start,
    start_and_detach,
    wait_for_steps,
)


def document(text: str) -> dict[str, Any]:
    """The `--json` document: stdout holds it alone."""
    value = json.loads(text)
    assert isinstance(value, dict)
    return value


def test_train_json_gives_the_runs_end(project: Path, bin_dir: Path) -> None:
    env = standin_env(bin_dir, STANDIN_STEPS="4", STANDIN_EVAL_EVERY="0")
    done = overbrainer(project, env, "train", "--json", timeout=120)
    assert done.returncode == 0, done.stderr
    run_id = only_run(project)
    doc = document(done.stdout)
    assert (doc["command"], doc["exit_code"], doc["error"], doc["push"]) == ("train", 0, None, None)
    train = doc["train"]
    ended = train.pop("ended_at")
    assert train == {
        "run_id": run_id,
        "state": "succeeded",
        "target": "local",
        "message": None,
        "run_dir": f"runs/{run_id}",
        "output_dir": f"runs/{run_id}/output",
        "merged_dir": None,
        "step": 4,
        "max_steps": 4,
        "epoch": 1.0,
        "loss": 1.0,
        "eval_loss": None,
        "snapshot": None,
        "resumed_from": None,
        "pod_cost": None,
        "started_at": record(project, run_id)["created"],
    }
    assert ended.endswith("Z") and ended >= train["started_at"]
    # The text's lines went to stderr.
    assert f"train: adapter in runs/{run_id}/output" in done.stderr.splitlines()


def test_ctrl_c_detaches_with_the_run_listed_running_and_stop_collects_it(
    project: Path, bin_dir: Path, tmp_path: Path
) -> None:
    env = standin_env(bin_dir, STANDIN_STEPS="40", **hold_at(tmp_path, 2))
    train = start(project, env, tmp_path / "train.err", "train", "--json")
    try:
        wait_for_steps(project, 2)  # the job is held at step 2 until released
        train.send_signal(signal.SIGINT)
        out, _ = train.communicate(timeout=30)
    finally:
        train.kill()
        train.wait()
    assert train.returncode == 130
    run_id = only_run(project)
    doc = document(out)
    assert doc["exit_code"] == 130
    assert doc["error"] == (
        f"interrupted: run {run_id} keeps running on target `local`; "
        f"follow it again with `overbrainer train attach {run_id}`"
    )
    assert (doc["train"]["run_id"], doc["train"]["state"]) == (run_id, "running")
    assert (doc["train"]["step"], doc["train"]["ended_at"]) == (2, None)

    stop = overbrainer(project, env, "train", "stop", run_id, "--json")
    assert stop.returncode == 0, stop.stderr
    stopped = document(stop.stdout)
    assert stopped["command"] == "train stop"
    snapshot = record(project, run_id)["snapshot"]
    assert stopped["train"]["state"] == "stopped"
    assert stopped["train"]["snapshot"] == snapshot
    assert stopped["train"]["step"] == snapshot["step"]

    attach = overbrainer(project, env, "train", "attach", run_id, "--json")
    assert attach.returncode == 0, attach.stderr
    attached = document(attach.stdout)
    assert (attached["command"], attached["train"]) == ("train attach", stopped["train"])


def test_cancel_json_gives_the_cancelled_run(project: Path, bin_dir: Path, tmp_path: Path) -> None:
    env = standin_env(bin_dir, **hold_at(tmp_path, 2))
    run_id = start_and_detach(project, env, tmp_path / "train.err")
    done = overbrainer(project, env, "train", "cancel", run_id, "--json")
    assert done.returncode == 0, done.stderr
    doc = document(done.stdout)
    assert (doc["command"], doc["exit_code"], doc["error"]) == ("train cancel", 0, None)
    assert (doc["train"]["run_id"], doc["train"]["state"]) == (run_id, "cancelled")
    assert doc["train"]["ended_at"].endswith("Z")
    assert done.stderr.splitlines()[-1] == f"train: run {run_id} cancelled"


async def test_run_json_holds_the_stages_then_the_training(tmp_path: Path) -> None:
    root = make_pipeline_project(tmp_path / "p")
    with (root / "overbrainer.toml").open("a") as config:
        config.write(TRAINING)
    env = standin_env(tmp_path / "bin", STANDIN_STEPS="4", STANDIN_EVAL_EVERY="0")
    try:
        async with open_stub() as stub:
            done = await pipeline_command(root, "run", "--json", url=stub.url, env=env, limit=120)
    finally:
        kill_jobs(root)
    assert done.code == 0, done.stderr
    doc = document(done.stdout)
    assert [s["stage"] for s in doc["stages"]] == ["subtopics", "questions", "answers", "split"]
    run_id = only_run(root)
    assert (doc["train"]["run_id"], doc["train"]["state"]) == (run_id, "succeeded")
    assert doc["push"] is None
