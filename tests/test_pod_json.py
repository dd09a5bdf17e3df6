"""`pod ls|gpus|datacenters|volumes|templates --json` as real subprocesses against the fake."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from overbrainer.targets.runpod.pod_record import PodRecord, PodState, save_pod_record
from overbrainer.targets.runpod.types import RUN_MARKER
from overbrainer.training.run_record import RunRecord, RunState
from tests.pipeline_support import Result, make_project
from tests.pod_support import fake_fixture, pod  # noqa: F401 (fake_fixture is the fixture)
from tests.runpod_fake import RunpodFake, pod_json, template

LIVE = "p_20261001-120000"
GONE = "p_20261001-090000"
CREATED = "2026-10-01T11:00:00Z"


def document(result: Result) -> dict[str, Any]:
    """The `--json` document: stdout holds it and nothing else."""
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def add_run(root: Path, run_id: str, pod: PodRecord) -> None:
    run_dir = root / "runs" / run_id
    run_dir.mkdir(parents=True)
    record = RunRecord(run_id, "gpu_cloud", CREATED, f"/w/{run_id}", None, RunState.RUNNING)
    (run_dir / "run.json").write_text(record.to_json())
    save_pod_record(run_dir, pod)


async def test_gpus_json_has_every_row_with_money_and_bytes(
    tmp_path: Path, fake: RunpodFake
) -> None:
    root = make_project(tmp_path)
    text = await pod(root, fake, "gpus", "--data-center", "EU-RO-1")
    result = await pod(root, fake, "gpus", "--json", "--data-center", "EU-RO-1")
    assert result.code == 0, result.stderr
    found = document(result)
    assert (found["command"], found["exit_code"], found["error"]) == ("pod gpus", 0, None)
    gpus = found["gpus"]
    assert isinstance(gpus, list)
    # The same rows as the table, in its order; the table's lines go to stderr.
    assert [gpu["id"] for gpu in gpus] == [line[:24].strip() for line in text.out_lines[1:]]
    assert text.out_lines[0] in result.stderr
    assert gpus[0] == {
        "id": "NVIDIA A40",
        "name": gpus[0]["name"],
        "manufacturer": gpus[0]["manufacturer"],
        "memory_gb": 48,
        "memory_bytes": 48 * 2**30,
        "cost_per_hour": "0.4",
        "max_count": 8,
        "stock": "low",
    }
    none = document(await pod(root, fake, "gpus", "--json", "--max-price", "0.1"))
    assert (none["exit_code"], none["gpus"]) == (0, [])


async def test_catalog_tables_as_json(tmp_path: Path, fake: RunpodFake) -> None:
    root = make_project(tmp_path)
    fake.volumes = [
        {"id": "vol1", "name": "data", "size": 100, "dataCenter": "EU-RO-1", "type": "STANDARD"}
    ]
    fake.templates = [template("t1", "Axolotl", "img:1"), template("s1", "W", "i", serverless=True)]
    centers = document(await pod(root, fake, "datacenters", "--json"))
    volumes = document(await pod(root, fake, "volumes", "--json"))
    templates = document(await pod(root, fake, "templates", "--json"))
    assert centers["data_centers"][0] == {
        "id": "EU-RO-1",
        "name": "EU Romania 1",
        "region": "EUROPE",
        "gpus_in_stock": ["NVIDIA A40"],
    }
    assert volumes["volumes"] == [
        {
            "id": "vol1",
            "name": "data",
            "size_gb": 100,
            "size_bytes": 100 * 2**30,
            "data_center": "EU-RO-1",
        }
    ]
    assert templates["templates"] == [{"id": "t1", "name": "Axolotl", "image": "img:1"}]


async def test_pod_ls_json_rows(tmp_path: Path, fake: RunpodFake) -> None:
    root = make_project(tmp_path / "p")
    record = PodRecord(
        run_id=LIVE,
        state=PodState.RUNNING,
        pod_id="podlive",
        gpu_type="NVIDIA A40",
        cost_per_hour=0.44,
        created_at=CREATED,
    )
    add_run(root, LIVE, record)
    fake.pods["podlive"] = pod_json(
        "podlive", f"overbrainer-{LIVE}-1", "NVIDIA A40", {RUN_MARKER: LIVE}, "RUNNING"
    )
    fake.pods["podlive"]["createdAt"] = CREATED
    fake.pods["podnomark"] = pod_json(
        "podnomark", "overbrainer-by-hand", "NVIDIA A40", {}, "RUNNING"
    )
    fake.pods["podnomark"]["createdAt"] = CREATED
    result = await pod(root, fake, "ls", "--json")
    assert result.code == 0, result.stderr
    found = document(result)
    assert found["command"] == "pod ls"
    assert found["pods"] == [
        {
            "run_id": LIVE,
            "pod_id": "podlive",
            "status": "running",
            "gpu": "NVIDIA A40",
            "cost_per_hour": "0.44",
            "created": CREATED,
            "note": "run running",
        },
        {
            "run_id": None,
            "pod_id": "podnomark",
            "status": "running",
            "gpu": "NVIDIA A40",
            "cost_per_hour": "0.44",
            "created": CREATED,
            "note": "no run marker",
        },
    ]
    assert "RUN " in result.stderr  # the table went to stderr


async def test_pod_ls_json_empty(tmp_path: Path, fake: RunpodFake) -> None:
    found = document(await pod(make_project(tmp_path), fake, "ls", "--json"))
    assert (found["exit_code"], found["pods"]) == (0, [])


async def test_missing_key_is_a_document_with_exit_2(tmp_path: Path, fake: RunpodFake) -> None:
    result = await pod(make_project(tmp_path), fake, "gpus", "--json", key=None)
    assert result.code == 2
    found = document(result)
    assert found["exit_code"] == 2
    assert found["error"] == "runpod.api_key is not set: set OVERBRAINER_RUNPOD__API_KEY"
    assert "gpus" not in found
    refused = await pod(
        make_project(tmp_path / "b"), fake, "ls", "--json", key="rpa_WRONGKEY_abcdefghijklmnop"
    )
    assert refused.code == 2
    assert document(refused)["error"] == "Runpod refused the API key"
