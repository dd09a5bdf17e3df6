"""`overbrainer export` on a Runpod target up to the job and back, without torch: the pod is made
for the export, the staged model uploaded, the job fails on the "pod" (its python3 lacks torch),
and the pod is deleted all the same, with the job's own message."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

import pytest
import trio

from tests.export_support import RUN_ID, pod_env, pod_export_project
from tests.llama_support import LlamaRelease
from tests.pod_host import open_pod_host
from tests.real_parts import needs
from tests.runpod_fake import RunpodFake, open_fake
from tests.sshd_support import SSHD
from tests.train_helpers import command

pytestmark = needs(
    not SSHD.exists()
    or shutil.which("ssh") is None
    or shutil.which("curl") is None
    or not Path("/usr/bin/python3").exists(),
    "needs the OpenSSH server and client, curl (the pod's watchdog) and /usr/bin/python3",
)

RUN = RUN_ID
TARGET = """
[targets.gpu_cloud]
kind = "runpod"
gpu_types = ["NVIDIA A40"]
max_hours = 2
venv = "{venv}"
"""


@pytest.fixture
async def pods(tmp_path: Path) -> AsyncIterator[tuple[RunpodFake, Path]]:
    pods_root = tmp_path / "pods"
    pods_root.mkdir()
    with trio.fail_after(200):
        async with open_pod_host(pods_root) as host, open_fake(RunpodFake(host=host)) as fake:
            yield fake, pods_root
    assert fake.violations == []


def _pod_export(
    tmp_path: Path, llama_release: LlamaRelease, fake: RunpodFake, pods_root: Path, python: str
) -> tuple[Path, Path, dict[str, str]]:
    """A run trained on the Runpod target with a bare model, the job's `python3` running
    `python` (shell)."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    env = llama_release.env() | pod_env(fake.url, pods_root)
    return pod_export_project(tmp_path, TARGET, model, python, env)


async def test_a_failing_export_job_on_a_pod_still_deletes_the_pod(
    tmp_path: Path, llama_release: LlamaRelease, pods: tuple[RunpodFake, Path]
) -> None:
    fake, pods_root = pods
    # A python3 without torch: the conversion cannot run.
    project, run_dir, env = _pod_export(
        tmp_path, llama_release, fake, pods_root, 'exec /usr/bin/python3 -I "$@"'
    )
    with trio.fail_after(180):
        done = await trio.run_process(
            command(project, "export", RUN, "--quantize", "F16"),
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    err = done.stderr.decode()
    assert done.returncode == 1, err
    (job,) = (run_dir / "exports").iterdir()
    last = err.splitlines()[-1]
    assert last.startswith(
        f"error: export {job.name} of run {RUN} failed: python3 lacks the modules the "
        "conversion needs: torch"
    ), err
    # The base model is a local path: no estimate, and a fixed gpu_types list wants none.
    assert "cannot estimate" not in err
    # The staged model went to the pod, where the job read it; nothing staged is left.
    remote_job = pods_root / "workspace" / "overbrainer" / job.name
    assert (remote_job / "export.sh").is_file()
    assert not (remote_job / "output").exists()
    assert not (job / "output").exists() and not (job / "axolotl.yaml").exists()
    assert json.loads((job / "run.json").read_text())["state"] == "failed"
    pod = json.loads((job / "pod.json").read_text())
    assert (pod["state"], pod["deleted_by"]) == ("deleted", "client")
    assert fake.pods == {}
    assert not (run_dir / "output" / "gguf").exists()


@pytest.mark.sigint
async def test_ctrl_c_during_the_export_job_cancels_it_and_deletes_the_pod(
    tmp_path: Path, llama_release: LlamaRelease, pods: tuple[RunpodFake, Path]
) -> None:
    fake, pods_root = pods
    # The job's module check hangs on this python3.
    project, run_dir, env = _pod_export(tmp_path, llama_release, fake, pods_root, "sleep 600")
    err = tmp_path / "stderr.txt"

    def running() -> bool:
        jobs = list((run_dir / "exports").glob("*/run.json"))
        return bool(jobs) and json.loads(jobs[0].read_text())["state"] == "running"

    async with trio.open_nursery() as nursery:
        with err.open("wb") as stderr:
            process: trio.Process = await nursery.start(
                partial(
                    trio.run_process,
                    command(project, "export", RUN, "--quantize", "F16"),
                    env=env,
                    stderr=stderr,
                    stdout=subprocess.DEVNULL,
                    check=False,
                )
            )
        with trio.fail_after(120):
            # The job is recorded running, and the command follows it.
            while not (running() and ": job running" in err.read_text()):  # noqa: ASYNC110
                await trio.sleep(0.05)
        process.send_signal(signal.SIGINT)
        with trio.fail_after(90):
            await process.wait()
    text = err.read_text()
    assert process.returncode == 130, text
    (job,) = (run_dir / "exports").iterdir()
    assert text.splitlines()[-1] == f"export {job.name} of run {RUN} was cancelled"
    assert json.loads((job / "run.json").read_text())["state"] == "cancelled"
    pod = json.loads((job / "pod.json").read_text())
    assert (pod["state"], pod["deleted_by"]) == ("deleted", "client")
    assert any(
        line.endswith("pod: deleting pod0001 (its job was cancelled)") for line in text.splitlines()
    )
    assert fake.pods == {}
    assert not (job / "output").exists() and not (job / "axolotl.yaml").exists()
