"""`overbrainer train` on a `kind = "ray"` target, for real: the command's one lifecycle opens the
Ray machine, the stand-in trainer runs as the job's Axolotl on a real two-node cluster, the run
succeeds with its results fetched from the storage, and `runs ls` lists it; Ctrl-C detaches
and `train attach` follows the cluster's job again.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.ray_support import TOKEN_ENV, RayCluster, shared_cluster
from tests.train_helpers import (
    hold_at,
    make_project,
    only_run,
    overbrainer,
    release,
    standin_env,
    start,
    wait_for,
)

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600), pytest.mark.xdist_group("ray")]


def ray_table(cluster: RayCluster, storage: Path, bin_dir: Path) -> str:
    """The project's `[targets.cluster]`: the stand-in first on the job's PATH on the nodes."""
    return f"""
[targets.cluster]
kind = "ray"
address = "{cluster.dashboard_url}"
storage = "{storage}"
token_env = "{TOKEN_ENV}"
num_workers = 2
resources_per_worker = {{ CPU = 1 }}
request_secs = 10
[targets.cluster.runtime_env]
env_vars = {{ PATH = "{bin_dir}:${{PATH}}", STANDIN_STEPS = "8", STANDIN_PACE = "0.05" }}
"""


def test_train_on_a_ray_target_runs_the_job_on_the_cluster(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    cluster = shared_cluster(pytestconfig)
    assert cluster.token is not None
    project = make_project(tmp_path / "p")
    bin_dir = tmp_path / "bin"
    env = standin_env(bin_dir)
    env[TOKEN_ENV] = cluster.token
    config = project / "overbrainer.toml"
    text = config.read_text(encoding="utf-8").replace('target = "local"', 'target = "cluster"')
    config.write_text(text + ray_table(cluster, tmp_path / "storage", bin_dir), encoding="utf-8")

    done = overbrainer(project, env, "train", timeout=300)

    assert done.returncode == 0, done.stderr[-4000:]
    run_id = only_run(project)
    assert done.stdout.startswith(f"train: run {run_id} succeeded"), done.stdout
    run = json.loads((project / "runs" / run_id / "run.json").read_text())
    assert run["job"]["dir"] == f"{tmp_path / 'storage'}/{run_id}"
    assert run["job"]["ref"].startswith(f"overbrainer-{run_id}-")
    assert run["job"].get("pid") is None  # the job is the cluster's, not a process of ours
    fetched = project / "runs" / run_id
    assert (fetched / "output" / "adapter_model.safetensors").read_bytes() == b"adapter at step 8"
    assert "standin: training 8 steps" in (fetched / "job.log").read_text()
    listed = overbrainer(project, env, "runs", "ls")
    assert listed.returncode == 0, listed.stderr
    (line,) = [line for line in listed.stdout.splitlines() if line.startswith(run_id)]
    assert line.split()[1:3] == ["succeeded", "cluster"], line
    # The cluster's own state of the job, as the follower last saw it (no API call).
    assert line.split()[4:7] == ["ray", "SUCCEEDED", run["job"]["ref"]], line


def logged_step(storage: Path, step: int) -> bool:
    """Whether a run's metrics on the storage have a log line of `step`."""
    for metrics in storage.glob("*/metrics.jsonl"):
        for line in metrics.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line still being written
            if record.get("event") == "log" and record.get("step") == step:
                return True
    return False


def detached(tmp_path: Path, pytestconfig: pytest.Config) -> tuple[Path, dict[str, str], str]:
    """A project whose `train` on the cluster was Ctrl-C'd while its job holds at step 2: the
    project, its environment, the run's ID."""
    cluster = shared_cluster(pytestconfig)
    assert cluster.token is not None
    project = make_project(tmp_path / "p")
    bin_dir = tmp_path / "bin"
    storage = tmp_path / "storage"
    env = standin_env(bin_dir)
    env[TOKEN_ENV] = cluster.token
    held = hold_at(tmp_path, 2)["STANDIN_HOLD"]
    table = ray_table(cluster, storage, bin_dir).replace(
        'STANDIN_PACE = "0.05"', f'STANDIN_PACE = "0.05", STANDIN_HOLD = "{held}"'
    )
    config = project / "overbrainer.toml"
    text = config.read_text(encoding="utf-8").replace('target = "local"', 'target = "cluster"')
    config.write_text(text + table, encoding="utf-8")

    err = tmp_path / "train.err"
    train = start(project, env, err, "train")
    try:
        # The job holds after step 2 (still honouring a stop request): wait for that step's
        # metrics line on the storage, not the first line, so a stop lands at step 2.
        wait_for(lambda: logged_step(storage, 2), 180)
        train.send_signal(signal.SIGINT)
        train.communicate(timeout=60)
    finally:
        train.kill()
    run_id = only_run(project)
    assert train.returncode == 130, err.read_text()[-3000:]
    assert err.read_text().splitlines()[-1] == (
        f"interrupted: run {run_id} keeps running on target `cluster`; "
        f"follow it again with `overbrainer train attach {run_id}`"
    )
    return project, env, run_id


def test_ctrl_c_detaches_and_attach_follows_the_cluster_job_to_its_end(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    project, env, run_id = detached(tmp_path, pytestconfig)
    listed = overbrainer(project, env, "runs", "ls")
    (line,) = [line for line in listed.stdout.splitlines() if line.startswith(run_id)]
    # As the follower last saw it before the Ctrl-C: Ray may not have said RUNNING to it yet.
    assert line.split()[1] == "running", line
    assert line.split()[4] == "ray" and line.split()[5] in ("PENDING", "RUNNING"), line
    release(tmp_path)
    attached = overbrainer(project, env, "train", "attach", run_id, timeout=300)
    assert attached.returncode == 0, attached.stderr[-3000:]
    assert attached.stdout.startswith(f"train: run {run_id} succeeded"), attached.stdout
    assert (project / "runs" / run_id / "output" / "adapter_model.safetensors").exists()


def test_stop_resume_and_cancel_of_a_detached_run_reach_the_cluster_job(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    project, env, run_id = detached(tmp_path / "stop", pytestconfig)
    # `train stop`: the request is written in R on the storage; the held plugin saves a snapshot.
    stopped = overbrainer(project, env, "train", "stop", run_id, timeout=300)
    assert stopped.returncode == 0, stopped.stderr[-3000:]
    assert f"train: run {run_id} stopped at step 2 (requested)" in stopped.stdout, stopped.stdout
    assert (project / "runs" / run_id / "output" / "checkpoint-2").is_dir()
    # `train --resume-from`: a new run on the cluster, the checkpoint staged with its inputs.
    resumed = overbrainer(project, env, "train", "--resume-from", run_id, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    (new_id,) = [line.split()[2] for line in resumed.stdout.splitlines() if " succeeded" in line]
    assert new_id != run_id
    assert (project / "runs" / new_id / "output" / "resumed_from.txt").exists()

    project, env, run_id = detached(tmp_path / "cancel", pytestconfig)
    # `train cancel`: the job is stopped through the Jobs API.
    cancelled = overbrainer(project, env, "train", "cancel", run_id, timeout=300)
    assert cancelled.returncode == 0, cancelled.stderr[-3000:]
    record = json.loads((project / "runs" / run_id / "run.json").read_text())
    assert record["state"] == "cancelled", record
