"""`overbrainer pod gpus|datacenters|volumes|templates` as real subprocesses against the fake."""

from __future__ import annotations

from pathlib import Path

from tests.pipeline_support import make_project
from tests.pod_support import fake_fixture, pod  # noqa: F401 (fake_fixture is the fixture)
from tests.runpod_fake import Fault, RunpodFake, template


async def test_gpus_table(tmp_path: Path, fake: RunpodFake) -> None:
    root = make_project(tmp_path)
    result = await pod(root, fake, "gpus")
    assert result.code == 0, result.stderr
    assert result.out_lines == [
        "ID                       VRAM GB   $/H  MAX COUNT  STOCK",
        "NVIDIA A40                    48  0.40          8  LOW",
        "NVIDIA RTX A6000              48  0.49          8  NONE",
        "NVIDIA GeForce RTX 4090       24  0.69          8  HIGH",
        "NVIDIA H100 80GB HBM3         80  2.69          8  HIGH",
    ]
    (request,) = fake.asked("GET", "catalog/gpus")
    assert "count=1" in request.query


async def test_gpus_filters_and_data_center_stock(tmp_path: Path, fake: RunpodFake) -> None:
    root = make_project(tmp_path)
    result = await pod(
        root, fake, "gpus", "--in-stock", "--data-center", "EU-RO-1", "--min-vram", "40"
    )
    assert result.code == 0, result.stderr
    assert result.out_lines == [
        "ID                     VRAM GB   $/H  MAX COUNT  STOCK",
        "NVIDIA A40                  48  0.40          8  LOW",
        "NVIDIA H100 80GB HBM3       80  2.69          8  HIGH",
    ]
    result = await pod(root, fake, "gpus", "--max-price", "0.1")
    assert (result.code, result.out_lines) == (0, ["pod: no GPU type matches"])


async def test_datacenters_volumes_templates(tmp_path: Path, fake: RunpodFake) -> None:
    root = make_project(tmp_path)
    fake.volumes = [
        {"id": "vol2", "name": "zeta", "size": 40, "dataCenter": "US-KS-2", "type": "STANDARD"},
        {"id": "vol1", "name": "data", "size": 100, "dataCenter": "EU-RO-1", "type": "STANDARD"},
    ]
    fake.templates = [
        template("t2", "Zed", "img:2"),
        template("t1", "Axolotl", "img:1"),
        template("s1", "Worker", "img:3", serverless=True),
    ]
    centers = await pod(root, fake, "datacenters")
    volumes = await pod(root, fake, "volumes")
    templates = await pod(root, fake, "templates")
    assert centers.out_lines == [
        "ID       NAME          REGION         GPU TYPES IN STOCK",
        "EU-RO-1  EU Romania 1  EUROPE         NVIDIA A40",
        "US-KS-2  US Kansas 2   NORTH_AMERICA  NVIDIA GeForce RTX 4090, NVIDIA H100 80GB HBM3",
    ]
    assert volumes.out_lines == [
        "ID    NAME  SIZE GB  DATA CENTER",
        "vol1  data      100  EU-RO-1",
        "vol2  zeta       40  US-KS-2",
    ]
    assert templates.out_lines == [
        "ID  NAME     IMAGE",
        "t1  Axolotl  img:1",
        "t2  Zed      img:2",
    ]
    assert (centers.code, volumes.code, templates.code) == (0, 0, 0)


async def test_empty_lists(tmp_path: Path, fake: RunpodFake) -> None:
    root = make_project(tmp_path)
    fake.data_centers = []
    assert (await pod(root, fake, "datacenters")).out_lines == ["pod: no data center found"]
    assert (await pod(root, fake, "volumes")).out_lines == [
        "pod: no network volume on this account"
    ]
    assert (await pod(root, fake, "templates")).out_lines == [
        "pod: no pod template on this account"
    ]


async def test_missing_key_is_a_usage_error(tmp_path: Path, fake: RunpodFake) -> None:
    root = make_project(tmp_path)
    result = await pod(root, fake, "gpus", key=None)
    assert result.code == 2
    assert result.stderr.splitlines()[-1] == (
        "error: runpod.api_key is not set: set OVERBRAINER_RUNPOD__API_KEY"
    )
    assert fake.requests == []


async def test_refused_key_is_the_fixed_message(tmp_path: Path, fake: RunpodFake) -> None:
    root = make_project(tmp_path)
    wrong = "rpa_SOMEOTHERKEY_abcdefghijklmnop"
    result = await pod(root, fake, "volumes", key=wrong)
    assert result.code == 2
    assert result.stderr.splitlines()[-1] == "error: Runpod refused the API key"
    assert wrong not in result.stdout + result.stderr


async def test_rate_limit_is_retried_and_a_lasting_5xx_fails(
    tmp_path: Path, fake: RunpodFake
) -> None:
    root = make_project(tmp_path)
    fake.fail(Fault("GET", "catalog/datacenters", status=429, retry_after="0"))
    assert (await pod(root, fake, "datacenters")).code == 0
    assert len(fake.asked("GET", "catalog/datacenters")) == 2
    fake.fail(*[Fault("GET", "network-volumes", status=500, retry_after="0") for _ in range(6)])
    result = await pod(root, fake, "volumes")
    assert result.code == 1
    assert result.stderr.splitlines()[-1] == (
        "error: Runpod answered GET network-volumes with HTTP 500: scripted fault"
    )
    assert result.stdout == ""
