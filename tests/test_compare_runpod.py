"""`overbrainer compare` of a run on a Runpod target end to end (§A.7): the loopback Runpod fake
whose pods boot for real here (bootstrap, watchdog, their own sshd), the GGUF uploaded with the
job as `model.gguf`, the real `llama-server` of the cached tools serving it on the "pod", the
pod deleted after the job, the child's hourly price taken from the pod."""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import pytest
import trio

from overbrainer.config.settings import DEFAULT_RUNPOD_IMAGE
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.targets import gguf_vram_floor
from tests.compare_support import (
    GGUF,
    RUN_ID,
    compare_env,
    make_compare_project,
    scripted_judge,
    standin_release,
)
from tests.llama_support import LlamaRelease
from tests.pipeline_support import overbrainer, start, wait_until
from tests.pod_host import open_pod_host
from tests.real_parts import needs
from tests.runpod_fake import KEY, RunpodFake, gpu, open_fake
from tests.sshd_support import SSHD

pytestmark = needs(
    not SSHD.exists() or shutil.which("ssh") is None or shutil.which("curl") is None,
    "needs the OpenSSH server and client and curl (the pod's watchdog)",
)

TARGET = """
[targets.gpu_cloud]
kind = "runpod"
gpu_types = "auto"
max_hours = 2
"""
SMALL = "NVIDIA RTX 2000 Ada"
A40 = "NVIDIA A40"


@attrs.frozen
class Setup:
    project: Path
    fake: RunpodFake
    pods_root: Path
    env: dict[str, str]


@pytest.fixture
async def pods(tmp_path: Path) -> AsyncIterator[tuple[RunpodFake, Path]]:
    pods_root = tmp_path / "pods"
    pods_root.mkdir()
    # A 2 GB type (below the GGUF's 3 GB floor, and cheaper) and a 48 GB one.
    fake = RunpodFake(gpus=[gpu(SMALL, 2, 0.19), gpu(A40, 48, 0.44)])
    with trio.fail_after(240):
        async with open_pod_host(pods_root) as host:
            fake.host = host
            async with open_fake(fake):
                yield fake, pods_root
    assert fake.violations == []


def _setup(
    tmp_path: Path, fake: RunpodFake, pods_root: Path, pin: dict[str, str], compare: str = ""
) -> Setup:
    root = make_compare_project(
        tmp_path / "p",
        questions=3,
        compare=compare,
        target="gpu_cloud",
        remote_dir=Path(f"/workspace/overbrainer/{RUN_ID}"),
    )
    config = root / "overbrainer.toml"
    text = config.read_text().replace("child_price_per_hour = 0.5\n", "")
    config.write_text(text + TARGET)
    env = {
        **pin,
        "OVERBRAINER_CACHE": str(tmp_path / "unused-cache"),
        "OVERBRAINER_TEST_POLL_S": "0.05",
        "OVERBRAINER_RUNPOD__API_KEY": KEY,
        "OVERBRAINER_RUNPOD__BASE_URL": fake.url,
        "OVERBRAINER_TEST_POD_ROOT": str(pods_root),
    }
    return Setup(root, fake, pods_root, env)


def messages(stderr: str) -> list[str]:
    """The log lines of stderr without their time and level."""
    return [line.split("  ", 1)[-1].split(" ", 1)[-1] for line in stderr.splitlines()]


def _compare_dir(root: Path) -> Path:
    (folder,) = (root / "runs" / RUN_ID / "compares").iterdir()
    return folder


async def test_a_compare_on_a_new_pod_end_to_end(
    tmp_path: Path, pods: tuple[RunpodFake, Path], llama_release: LlamaRelease
) -> None:
    fake, pods_root = pods
    image = 'image = "example/llama-server:1"'
    env = compare_env(llama_release, tmp_path / "c")
    setup = _setup(tmp_path, fake, pods_root, env, compare=image)
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(setup.project, "compare", url=stub.url, env=setup.env, limit=200)
    assert result.code == 0, result.stderr
    folder = _compare_dir(setup.project)
    compare_id = folder.name
    assert result.out_lines == [f"runs/{RUN_ID}/compares/{compare_id}/compare.md"]
    lines = messages(result.stderr)
    # The floor of the tiny GGUF (3 GB) keeps the 2 GB type out of the price and the pick.
    size = (setup.project / "runs" / RUN_ID / GGUF).stat().st_size
    assert gguf_vram_floor(size) == 3
    assert (
        "compare: 3 questions on a new Runpod pod at about $0.44/h "
        f"({A40}, the cheapest GPU type in stock)"
    ) in lines, result.stderr
    (create,) = fake.asked("POST", "pods")
    body = json.loads(create.body)
    assert (body["gpu"]["id"], body["image"]) == (A40, "example/llama-server:1")
    assert body["name"] == f"overbrainer-{compare_id}-1"
    assert body["env"]["OVERBRAINER_RUN_DIR"].endswith(f"/workspace/overbrainer/{compare_id}")
    pod_lines = [line for line in lines if line.startswith("pod: ")]
    assert pod_lines[-2] == "pod: deleting pod0001 (results retrieved)"
    assert pod_lines[-1].startswith("pod: pod0001 deleted after ")
    # The pod record is the compare's; nothing is left on the fake.
    pod = json.loads((folder / "pod.json").read_text())
    assert (pod["state"], pod["deleted_by"], pod["cost_per_hour"]) == ("deleted", "client", 0.44)
    assert fake.pods == {}
    assert not (folder / "ssh" / "id_ed25519").exists()
    # The GGUF went as model.gguf and is gone on both sides; the answers came back.
    remote = pods_root / "workspace" / "overbrainer" / compare_id
    assert not (remote / "model.gguf").exists()
    assert not (folder / "model.gguf").exists()
    assert (remote / ".pod" / "retrieved").exists()
    answers = (folder / "child_answers.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in answers] == ["q0", "q1", "q2"]
    assert all(json.loads(line)["seconds"] > 0 for line in answers)
    assert (folder / "server.log").read_bytes() == (remote / "server.log").read_bytes()
    record = json.loads((folder / "run.json").read_text())
    assert (record["state"], record["remote_dir"]) == ("succeeded", str(remote))
    report = json.loads((folder / "compare.json").read_text())
    assert report["child_price_from_pod"] is True
    assert report["costs"]["child_per_1k"] is not None
    markdown = (folder / "compare.md").read_text()
    assert "The child's hourly price is the Runpod pod's." in markdown


@pytest.mark.sigint
async def test_ctrl_c_during_the_job_deletes_the_pod(
    tmp_path: Path, pods: tuple[RunpodFake, Path]
) -> None:
    fake, pods_root = pods
    with standin_release(tmp_path / "release", mode="hang") as pin:
        setup = _setup(tmp_path, fake, pods_root, pin)
        async with open_stub(scripted_judge) as stub, trio.open_nursery() as nursery:
            process = await start(nursery, setup.project, "compare", url=stub.url, env=setup.env)

            def answering() -> bool:
                logs = list((pods_root / "workspace" / "overbrainer").glob("*/server.log"))
                return bool(logs) and "standin: answering" in logs[0].read_text()

            await wait_until(answering, limit=120, every=0.1)
            os.kill(process.pid, signal.SIGINT)
            with trio.fail_after(90):
                await process.wait()
            # The judge is connected (its model list read) before the job; it is never asked.
            assert [r.path for r in stub.requests if r.method == "POST"] == []
    assert process.returncode == 130
    folder = _compare_dir(setup.project)
    stderr = (setup.project / "stderr.txt").read_text()
    assert stderr.splitlines()[-1] == (
        f"interrupted: compare {folder.name} of run {RUN_ID} cancelled"
    )
    assert json.loads((folder / "run.json").read_text())["state"] == "cancelled"
    pod = json.loads((folder / "pod.json").read_text())
    assert (pod["state"], pod["deleted_by"]) == ("deleted", "client")
    assert "pod: deleting pod0001 (its job was cancelled)" in messages(stderr)
    assert fake.pods == {}
    assert not (folder / "model.gguf").exists()


async def test_keep_pod_keeps_it_until_pod_rm_of_the_compare(
    tmp_path: Path, pods: tuple[RunpodFake, Path], llama_release: LlamaRelease
) -> None:
    fake, pods_root = pods
    setup = _setup(tmp_path, fake, pods_root, compare_env(llama_release, tmp_path / "c"))
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(
            setup.project, "compare", "--keep-pod", url=stub.url, env=setup.env, limit=200
        )
        assert result.code == 0, result.stderr
        folder = _compare_dir(setup.project)
        compare_id = folder.name
        lines = messages(result.stderr)
        assert (
            f"pod pod0001 kept (--keep-pod): `ssh -F runs/{RUN_ID}/compares/{compare_id}/ssh/"
            f"config overbrainer-{compare_id}`; remove it with `overbrainer pod rm {compare_id}`; "
            "nothing deletes it automatically"
        ) in lines, result.stderr
        assert list(fake.pods) == ["pod0001"]
        assert json.loads((folder / "pod.json").read_text())["state"] == "kept"
        body = json.loads(fake.asked("POST", "pods")[0].body)
        assert body["env"]["OVERBRAINER_KEEP_POD"] == "1"
        assert body["image"] == DEFAULT_RUNPOD_IMAGE  # neither [compare] nor the target sets one
        removed = await overbrainer(
            setup.project, "pod", "rm", compare_id, url=stub.url, env=setup.env, limit=120
        )
    assert removed.code == 0, removed.stderr
    assert removed.out_lines[-1].startswith("pod: pod0001 deleted after ")
    assert fake.pods == {}
    pod = json.loads((folder / "pod.json").read_text())
    assert (pod["state"], pod["deleted_by"]) == ("deleted", "pod_rm")
    assert json.loads((folder / "run.json").read_text())["state"] == "succeeded"


async def test_no_api_key_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=1, target="gpu_cloud")
    config = root / "overbrainer.toml"
    config.write_text(config.read_text() + TARGET)
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(root, "compare", url=stub.url, limit=60)
    assert result.code == 2, result.stderr
    assert result.stderr.splitlines()[-1] == (
        "error: runpod.api_key is not set: set OVERBRAINER_RUNPOD__API_KEY"
    )
    assert not (root / "runs" / RUN_ID / "compares").exists()
    assert stub.requests == []
