"""What the Runpod `train` tests share: a project on a Runpod target against the loopback
Runpod fake whose pods boot for real here (their bootstrap and watchdog run, their own sshd
answers with the run's host key, and the stand-in `axolotl` trains in the pod's directory),
and the helpers that run `overbrainer` on it and read what it left."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from tests.pod_host import open_pod_host
from tests.real_parts import needs
from tests.runpod_fake import KEY, RunpodFake, open_fake
from tests.sshd_support import SSHD
from tests.train_helpers import STANDIN, command, make_project

needs_pod_tools = needs(
    not SSHD.exists() or shutil.which("ssh") is None or shutil.which("curl") is None,
    "needs the OpenSSH server and client and curl (the pod's watchdog)",
)


A40 = "NVIDIA A40"


RTX = "NVIDIA GeForce RTX 4090"


TARGET = """
[targets.gpu_cloud]
kind = "runpod"
gpu_types = ["{first}", "{second}"]
max_hours = 2
venv = "{venv}"
"""


@attrs.frozen
class Setup:
    project: Path
    env: dict[str, str]
    fake: RunpodFake
    pods_root: Path


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[Setup]:
    pods_root = tmp_path / "pods"
    pods_root.mkdir()
    with trio.fail_after(120):
        async with open_pod_host(pods_root) as host, open_fake(RunpodFake(host=host)) as fake:
            yield Setup(*_project(tmp_path, fake, pods_root), fake, pods_root)
    assert fake.violations == []


def _project(tmp_path: Path, fake: RunpodFake, pods_root: Path) -> tuple[Path, dict[str, str]]:
    project = make_project(tmp_path / "p")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    script = venv / "bin" / "axolotl"
    script.write_text(
        "#!/bin/sh\nexport STANDIN_PACE=0.02 STANDIN_EVAL_EVERY=5\n"
        f'exec {sys.executable} {STANDIN} "$@"\n'
    )
    script.chmod(0o755)
    with open(project / "overbrainer.toml", "a") as file:
        file.write(TARGET.format(first=A40, second=RTX, venv=venv))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERBRAINER_", "STANDIN_"))}
    env |= {
        "OVERBRAINER_TEST_POLL_S": "0.05",
        "OVERBRAINER_TRAINING__TARGET": "gpu_cloud",
        "OVERBRAINER_RUNPOD__API_KEY": KEY,
        "OVERBRAINER_RUNPOD__BASE_URL": fake.url,
        "OVERBRAINER_TEST_POD_ROOT": str(pods_root),
    }
    return project, env


async def overbrainer_on(setup: Setup, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`overbrainer ARGS` on the setup's project and fake, to its end (bounded)."""
    with trio.fail_after(90):
        return await trio.run_process(
            command(setup.project, *args),
            env=setup.env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )


async def train(setup: Setup, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`overbrainer train ARGS`."""
    return await overbrainer_on(setup, "train", *args)


def pod_record(project: Path, run_id: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((project / "runs" / run_id / "pod.json").read_text())
    return loaded


def creates(fake: RunpodFake) -> list[str]:
    return [json.loads(r.body)["gpu"]["id"] for r in fake.asked("POST", "pods")]


def messages(stderr: str) -> list[str]:
    """The log lines of stderr without their time and level."""
    return [line.split("  ", 1)[-1].split(" ", 1)[-1] for line in stderr.splitlines()]


def pod_lines(stderr: str) -> list[str]:
    return [line for line in messages(stderr) if line.startswith("pod: ")]


async def train_acting_when(
    setup: Setup, ready: Callable[[], bool], act: Callable[[trio.Process], None]
) -> tuple[int, str]:
    """`train`, then `act(process)` once `ready()`; its exit status and stderr."""
    err_path = setup.project / "train.err"
    with open(err_path, "wb") as err, trio.fail_after(90):  # noqa: ASYNC230 - a test's file
        async with trio.open_nursery() as nursery:
            process = await nursery.start(
                partial(
                    trio.run_process,
                    command(setup.project, "train"),
                    env=setup.env,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    check=False,
                )
            )
            while not ready():  # noqa: ASYNC110 - the condition is the fake's state
                await trio.sleep(0.02)
            act(process)
    return process.returncode, err_path.read_text()


async def interrupt_when(
    setup: Setup, ready: Callable[[], bool], then: trio.Event | None = None
) -> tuple[int, str]:
    """`train`, one SIGINT once `ready()`, then `then` set (a held answer released); its exit
    status and stderr."""

    def interrupt(process: trio.Process) -> None:
        process.send_signal(signal.SIGINT)
        if then is not None:
            then.set()

    return await train_acting_when(setup, ready, interrupt)


def remote_steps(pods_root: Path) -> int:
    """The highest step the job logged on the pod."""
    files = list((pods_root / "workspace" / "overbrainer").glob("*/metrics.jsonl"))
    if len(files) != 1:
        return 0
    lines = files[0].read_text().splitlines()
    return max((json.loads(line).get("step", 0) for line in lines if line), default=0)


def slow_job(setup: Setup, extra: str = "") -> None:
    """The stand-in trains 200 steps of 0.1 s: long enough to be stopped or cancelled."""
    script = setup.project.parent / "venv" / "bin" / "axolotl"
    script.write_text(
        script.read_text().replace(
            "STANDIN_PACE=0.02", f"STANDIN_PACE=0.1 STANDIN_STEPS=200 {extra}".rstrip()
        )
    )


def held_job(setup: Setup) -> None:
    """`slow_job`, held after its step 2 until it is stopped or cancelled (at most 120 s): a
    test acts on a running job however loaded the machine."""
    slow_job(setup, f"STANDIN_HOLD=2:{setup.pods_root / 'never-released'}")
