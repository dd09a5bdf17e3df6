"""What `overbrainer train` on the local target refuses, naming what is wrong."""

from __future__ import annotations

from pathlib import Path

from overbrainer.training.run_store import Job, RunRecord, Runs, RunState
from tests.train_helpers import (  # noqa: F401 (the *_fixture are fixtures)
    bin_dir_fixture,
    overbrainer,
    project_fixture,
    run_ids,
    standin_env,
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
