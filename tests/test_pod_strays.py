"""`pod ls`, `pod rm` (real subprocesses) and the stray warnings, against the Runpod fake."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from overbrainer.flows.pods import list_rows, row_line, stray_pod_warnings
from overbrainer.targets.runpod.api import open_runpod
from overbrainer.targets.runpod.pod_record import (
    PodRecord,
    PodState,
    load_pod_record,
    save_pod_record,
)
from overbrainer.targets.runpod.types import RUN_MARKER
from overbrainer.training.run_record import RunRecord, RunState
from overbrainer.training.run_store import Runs
from tests.pipeline_support import make_project
from tests.pod_support import fake_fixture, pod  # noqa: F401 (fake_fixture is the fixture)
from tests.runpod_fake import KEY, RunpodFake, pod_json

LIVE = "p_20261001-120000"
DONE = "p_20261001-090000"
OTHER = "q_20261001-080000"
EMPTY = "p_20261001-070000"
STARTING = "p_20261001-060000"


def _hour_ago() -> tuple[str, int]:
    moment = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(hours=1)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ"), int(moment.timestamp())


HOUR_AGO = _hour_ago()
"""When every pod of a test was created (fixed per test, so its lines compare exactly)."""


@pytest.fixture(autouse=True)
def _fresh_hour_ago() -> None:
    global HOUR_AGO
    HOUR_AGO = _hour_ago()


def hour_ago() -> tuple[str, int]:
    return HOUR_AGO


def add_run(root: Path, run_id: str, state: RunState, pod: PodRecord | None) -> Path:
    run_dir = root / "runs" / run_id
    (run_dir / "ssh").mkdir(parents=True)
    (run_dir / "ssh" / "id_ed25519").write_text("private\n")
    record = RunRecord(run_id, "gpu_cloud", "2026-10-01T12:00:00Z", f"/w/{run_id}", None, state)
    (run_dir / "run.json").write_text(record.to_json())
    if pod is not None:
        save_pod_record(run_dir, pod)
    return run_dir


def add_pod(fake: RunpodFake, pod_id: str, name: str, run_id: str | None, gpu: str) -> None:
    env = {} if run_id is None else {RUN_MARKER: run_id}
    fake.pods[pod_id] = pod_json(pod_id, name, gpu, env, "RUNNING")
    fake.pods[pod_id]["createdAt"] = hour_ago()[0]


def recorded(run_id: str, pod_id: str, state: PodState = PodState.RUNNING) -> PodRecord:
    created_at, created_unix = hour_ago()
    return PodRecord(
        run_id=run_id,
        state=state,
        pod_id=pod_id,
        gpu_type="NVIDIA A40",
        cost_per_hour=0.44,
        created_at=created_at,
        created_unix=created_unix,
    )


@pytest.fixture
def project(tmp_path: Path, fake: RunpodFake) -> Path:
    """Runs: LIVE in progress on podlive (plus a stray), DONE ended with its pod left, EMPTY
    with no pod; pods: OTHER's (not in runs/), an unmarked one, and one that is not ours."""
    root = make_project(tmp_path / "p")
    add_run(root, LIVE, RunState.RUNNING, recorded(LIVE, "podlive"))
    add_run(root, DONE, RunState.SUCCEEDED, recorded(DONE, "poddone"))
    add_run(root, EMPTY, RunState.FAILED, None)
    add_pod(fake, "podlive", f"overbrainer-{LIVE}-1", LIVE, "NVIDIA A40")
    add_pod(fake, "podstray", f"overbrainer-{LIVE}-2", LIVE, "NVIDIA A40")
    add_pod(fake, "poddone", f"overbrainer-{DONE}-1", DONE, "NVIDIA GeForce RTX 4090")
    add_pod(fake, "podother", f"overbrainer-{OTHER}-1", OTHER, "NVIDIA A40")
    add_pod(fake, "podnomark", "overbrainer-by-hand", None, "NVIDIA A40")
    add_pod(fake, "podmine", "my-notebook", None, "NVIDIA A40")
    return root


async def test_pod_ls_classifies_the_accounts_pods(project: Path, fake: RunpodFake) -> None:
    result = await pod(project, fake, "ls")
    assert result.code == 0, result.stderr
    created = hour_ago()[0]
    assert result.out_lines == [
        "RUN                  POD            STATUS       GPU                        $/H "
        "CREATED              NOTE",
        f"{LIVE}    podlive        RUNNING      NVIDIA A40                0.44 {created} "
        "run running",
        f"{LIVE}    podstray       RUNNING      NVIDIA A40                0.44 {created} "
        "stray, not deleted",
        f"{DONE}    poddone        RUNNING      NVIDIA GeForce RTX 4090   0.44 {created} "
        "run succeeded, not deleted",
        f"{OTHER}    podother       RUNNING      NVIDIA A40                0.44 {created} "
        f"not in this project's runs/; if no other checkout owns it, "
        f"`overbrainer pod rm {OTHER} --force`",
        "-                    podnomark      RUNNING      NVIDIA A40                0.44 "
        f"{created} no run marker",
    ]


async def test_stray_warnings_name_every_orphan(project: Path, fake: RunpodFake) -> None:
    async with open_runpod(fake.url, KEY) as api:
        warnings = await stray_pod_warnings(api, project / "runs")
    assert warnings == [
        "pod podstray is still on Runpod at $0.44/h: stray, not deleted",
        "pod poddone is still on Runpod at $0.44/h: run succeeded, not deleted",
        f"pod podother is still on Runpod at $0.44/h: not in this project's runs/; if no other "
        f"checkout owns it, `overbrainer pod rm {OTHER} --force`",
        "pod podnomark is named like an overbrainer pod but has no run marker; if it is yours, "
        "delete it from the Runpod console",
    ]
    assert [r.method for r in fake.requests] == ["GET"]


async def test_a_recorded_pod_runpod_no_longer_has_is_recorded_deleted(
    project: Path, fake: RunpodFake
) -> None:
    del fake.pods["poddone"]
    async with open_runpod(fake.url, KEY) as api:
        rows = await list_rows(api, Runs(project / "runs"), gone_interval=0)
    gone = [row_line(r) for r in rows if r.pod == "poddone"]
    assert gone == [
        f"{DONE}    poddone        GONE         NVIDIA A40                0.44 "
        f"{hour_ago()[0]} no longer on Runpod: recorded deleted"
    ]
    record = load_pod_record(project / "runs" / DONE)
    assert record is not None and record.state is PodState.DELETED
    assert record.deleted_by is not None and record.deleted_by.value == "unknown"


async def test_pod_rm_keeps_the_training_pod_of_a_run_in_progress(
    project: Path, fake: RunpodFake
) -> None:
    result = await pod(project, fake, "rm", LIVE)
    assert result.code == 1
    assert result.out_lines == ["pod: podstray deleted after 1h00m, about $0.44"]
    assert result.stderr.splitlines()[-1] == (
        f"error: run {LIVE} is in progress on pod podlive, which was not deleted; "
        f"delete it too with `overbrainer pod rm {LIVE} --force`"
    )
    assert "podlive" in fake.pods and "podstray" not in fake.pods
    run_dir = project / "runs" / LIVE
    assert json.loads((run_dir / "run.json").read_text())["state"] == "running"
    assert (run_dir / "ssh" / "id_ed25519").exists()


async def test_pod_rm_force_deletes_it_and_fails_the_run(project: Path, fake: RunpodFake) -> None:
    result = await pod(project, fake, "rm", LIVE, "--force")
    assert result.code == 0, result.stderr
    assert sorted(result.out_lines) == [
        "pod: podlive deleted after 1h00m, about $0.44",
        "pod: podstray deleted after 1h00m, about $0.44",
    ]
    run_dir = project / "runs" / LIVE
    run = json.loads((run_dir / "run.json").read_text())
    assert (run["state"], run["message"]) == (
        "failed",
        "pod deleted by `pod rm` before its results were retrieved",
    )
    record = load_pod_record(run_dir)
    assert record is not None
    assert (record.state, record.deleted_by and record.deleted_by.value) == (
        PodState.DELETED,
        "pod_rm",
    )
    assert record.estimated_spend is not None and 0.43 < record.estimated_spend < 0.46
    assert not (run_dir / "ssh" / "id_ed25519").exists()
    assert "podlive" not in fake.pods


async def test_pod_rm_of_an_ended_run_needs_no_force(project: Path, fake: RunpodFake) -> None:
    result = await pod(project, fake, "rm", DONE)
    assert (result.code, result.out_lines) == (
        0,
        ["pod: poddone deleted after 1h00m, about $0.44"],
    ), result.stderr
    assert json.loads((project / "runs" / DONE / "run.json").read_text())["state"] == "succeeded"


async def test_pod_rm_refusals_and_nothing_to_do(project: Path, fake: RunpodFake) -> None:
    add_run(project, STARTING, RunState.PREPARING, recorded(STARTING, "x", PodState.CREATING))
    refused = await pod(project, fake, "rm", OTHER)
    starting = await pod(project, fake, "rm", STARTING)
    empty = await pod(project, fake, "rm", EMPTY)
    bad = await pod(project, fake, "rm", "../etc")
    assert (refused.code, refused.stderr.splitlines()[-1]) == (
        2,
        f"error: run {OTHER} is not in this project's runs/; if no other checkout owns it, "
        f"`overbrainer pod rm {OTHER} --force`",
    )
    assert (starting.code, starting.stderr.splitlines()[-1]) == (
        2,
        f"error: run {STARTING} is still starting its pod: let `overbrainer train` finish, "
        f"or `overbrainer pod rm {STARTING} --force`",
    )
    assert (empty.code, empty.out_lines) == (0, [f"pod: no pod for run {EMPTY}"])
    assert (bad.code, bad.stderr.splitlines()[-1]) == (2, "error: '../etc' is not a run ID")
    assert not [r for r in fake.requests if r.method == "DELETE"]
    forced = await pod(project, fake, "rm", OTHER, "--force")
    assert (forced.code, forced.out_lines) == (
        0,
        ["pod: podother deleted after 1h00m, about $0.44"],
    ), forced.stderr


async def test_pod_rm_json_lists_what_it_deleted_and_kept(project: Path, fake: RunpodFake) -> None:
    kept = await pod(project, fake, "rm", LIVE, "--json")
    assert kept.code == 1
    document = json.loads(kept.stdout)
    assert document["command"] == "pod rm"
    [stray] = document["deleted"]
    assert stray["pod_id"] == "podstray"
    assert 3590 < stray["uptime_secs"] < 3700
    assert 0.43 < float(stray["cost"]) < 0.46
    assert document["kept"] == "podlive"
    assert document["error"].startswith(f"run {LIVE} is in progress on pod podlive")
    empty = await pod(project, fake, "rm", EMPTY, "--json")
    assert (empty.code, json.loads(empty.stdout)["deleted"]) == (0, [])
