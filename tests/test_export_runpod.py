"""`overbrainer export` of a run on a Runpod target end to end (§B.2): a new pod of the loopback
Runpod fake that boots for real here, the model and config staged and uploaded, a real
conversion on the "pod", the GGUF delivered as on a local target, the pod deleted after.

Needs torch (the conversion): run with `pytest -m gguf` (CI's torch step).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from overbrainer.model.sizes import format_size
from overbrainer.net.http_server import Request, Response, serve_http
from tests.export_support import GGUF_PARTS, RUN_ID, gguf_reader, pod_env, pod_export_project
from tests.llama_support import LlamaRelease
from tests.pod_host import open_pod_host
from tests.real_parts import needs
from tests.runpod_fake import RunpodFake, gpu, open_fake
from tests.sshd_support import SSHD
from tests.tiny_model import make_tiny_model
from tests.train_helpers import command

pytestmark = [
    pytest.mark.gguf,
    GGUF_PARTS,
    needs(
        not SSHD.exists() or shutil.which("ssh") is None or shutil.which("curl") is None,
        "needs the OpenSSH server and client and curl (the pod's watchdog)",
    ),
]


RUN = RUN_ID
TARGET = """
[targets.gpu_cloud]
kind = "runpod"
gpu_types = "auto"
max_hours = 2
container_disk_gb = 20
venv = "{venv}"
"""
SMALL = "NVIDIA RTX A4000"
A40 = "NVIDIA A40"
# 8e9 parameters: an export floor of (2·P + 2 GB) × 1.2 = 21.6 GB (the 16 GB type is out), and
# (2·P + P·8.5/8) × 1.1 = 26.95 GB written, more than the 20 GB container disk.
INFO = {"safetensors": {"total": 8_000_000_000}}
CONFIG = {"hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 32000}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture
async def pods(tmp_path: Path) -> AsyncIterator[tuple[RunpodFake, Path, str]]:
    pods_root = tmp_path / "pods"
    pods_root.mkdir()
    fake = RunpodFake(gpus=[gpu(SMALL, 16, 0.17), gpu(A40, 48, 0.44)])

    async def hub(request: Request) -> Response:
        body = INFO if request.path.startswith("/api/models/") else CONFIG
        return Response(200, json.dumps(body).encode(), (("content-type", "application/json"),))

    with trio.fail_after(300):
        async with trio.open_nursery() as nursery, open_pod_host(pods_root) as host:
            fake.host = host
            hub_host, hub_port = await nursery.start(serve_http, hub, "127.0.0.1", 0)
            async with open_fake(fake):
                yield fake, pods_root, f"http://{hub_host}:{hub_port}"
            nursery.cancel_scope.cancel()
    assert fake.violations == []


def messages(stderr: str) -> list[str]:
    """The log lines of stderr without their time and level."""
    return [line.split("  ", 1)[-1].split(" ", 1)[-1] for line in stderr.splitlines()]


async def test_an_export_on_a_new_pod_converts_there_and_delivers_here(
    tmp_path: Path,
    tiny_model: Path,
    llama_release: LlamaRelease,
    pods: tuple[RunpodFake, Path, str],
) -> None:
    fake, pods_root, hub_url = pods
    # The job gets no environment of ours over SSH: its python3 is the venv's.
    env = llama_release.env() | pod_env(fake.url, pods_root)
    env["OVERBRAINER_HUB__BASE_URL"] = hub_url
    project, run_dir, env = pod_export_project(
        tmp_path, TARGET, tiny_model, f'exec {sys.executable} "$@"', env
    )
    config = run_dir / "axolotl.yaml"
    config.write_text(config.read_text().replace(f"base_model: {tiny_model}", "base_model: a/b"))
    with trio.fail_after(280):
        done = await trio.run_process(
            command(project, "export", RUN, "--quantize", "Q8_0"),
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    said = messages(err)
    assert (
        "export: the export writes about 27.0 GB on the pod (estimate), more than its "
        "container_disk_gb = 20: it may run out of disk; raise container_disk_gb or set "
        "network_volume_id"
    ) in said, err
    assert (
        'export: the export needs about 21.6 GB of VRAM (estimate): gpu_types = "auto" keeps '
        "GPU types with at least 22 GB"
    ) in said, err
    (create,) = fake.asked("POST", "pods")
    body = json.loads(create.body)
    assert body["gpu"]["id"] == A40
    (job,) = (run_dir / "exports").iterdir()
    assert body["name"] == f"overbrainer-{job.name}-1"
    file = f"{RUN}-Q8_0.gguf"
    delivered = run_dir / "output" / "gguf" / file
    assert out.splitlines()[0].startswith(f"export: GGUF in runs/{RUN}/output/gguf/{file} (Q8_0, ")
    reader = gguf_reader(str(delivered))
    assert "tokenizer.chat_template" in reader.fields
    exported = json.loads((job / "export.json").read_text())
    assert exported["size"] == delivered.stat().st_size
    # The job ran on the pod with the staged model; nothing staged is left on either side.
    remote_job = pods_root / "workspace" / "overbrainer" / job.name
    assert "export: converting output to GGUF (auto)" in (job / "job.log").read_text()
    assert (remote_job / "export.sh").is_file()
    assert not (remote_job / "output" / "config.json").exists()
    assert not (job / "output").exists() and not (job / "axolotl.yaml").exists()
    assert json.loads((job / "run.json").read_text())["state"] == "succeeded"
    pod = json.loads((job / "pod.json").read_text())
    assert (pod["state"], pod["deleted_by"]) == ("deleted", "client")
    assert fake.pods == {}


async def test_a_base_export_on_a_new_pod_gets_the_token_and_converts_the_base_model(
    tmp_path: Path,
    tiny_model: Path,
    llama_release: LlamaRelease,
    pods: tuple[RunpodFake, Path, str],
) -> None:
    fake, pods_root, hub_url = pods
    token, seen = "hf_PodBaseToken0123", tmp_path / "token-seen"
    env = llama_release.env() | pod_env(fake.url, pods_root)
    env |= {"OVERBRAINER_HUB__BASE_URL": hub_url, "OVERBRAINER_HF_TOKEN": token}
    # The pod's python3 notes the token the job got (the Hub download's), then runs.
    python = f'printf %s "${{HF_TOKEN:-}}" > {seen}; exec {sys.executable} "$@"'
    project, run_dir, env = pod_export_project(tmp_path, TARGET, tiny_model, python, env)
    with trio.fail_after(280):
        done = await trio.run_process(
            command(project, "export", RUN, "--base", "--quantize", "Q8_0"),
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    (job,) = (run_dir / "exports").iterdir()
    file = f"output/gguf/{RUN}-base-Q8_0.gguf"
    assert out.splitlines() == [
        f"export: the base model's GGUF in runs/{RUN}/{file} (Q8_0, "
        f"{format_size((run_dir / file).stat().st_size)})"
    ]
    assert json.loads((job / "export.json").read_text())["model"] == "base"
    assert "tokenizer.chat_template" in gguf_reader(str(run_dir / file)).fields
    # The base model's directory is the pod's own (the run's base_model), never staged.
    assert f"export: converting {tiny_model} to GGUF (auto)" in (job / "job.log").read_text()
    remote_job = pods_root / "workspace" / "overbrainer" / job.name
    assert not (remote_job / "output" / "config.json").exists()
    assert seen.read_text() == token
    assert token not in out + err + "".join(
        p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file()
    )
    pod = json.loads((job / "pod.json").read_text())
    assert (pod["state"], pod["deleted_by"]) == ("deleted", "client")
    assert fake.pods == {}
