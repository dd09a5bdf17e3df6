"""The check that a target can train: its `axolotl` where the job looks, through its executor."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
import trio

from overbrainer.config.report import target_summary
from overbrainer.config.settings import Runtime
from overbrainer.targets import LocalTarget, SshTarget
from overbrainer.targets.executor import Executor
from overbrainer.targets.local_executor import LocalExecutor
from overbrainer.training.trainer_check import CannotTrain, checks_axolotl, find_axolotl


class Remote:
    """An SSH executor as the check sees it: its home, and a probe run here by `sh` with a PATH
    that holds no axolotl."""

    local = False
    home = "/home/u"

    def __init__(self) -> None:
        self.scripts: list[str] = []

    async def probe(self, script: str) -> str:
        self.scripts.append(script)
        done = await trio.run_process(
            ["/bin/sh", "-c", script], capture_stdout=True, check=False, env={"PATH": "/nowhere"}
        )
        return done.stdout.decode()


async def test_a_venv_axolotl_is_found_only_when_executable(tmp_path: Path) -> None:
    venv = tmp_path / "v"
    (venv / "bin").mkdir(parents=True)
    target = LocalTarget(runtime=Runtime.NATIVE, venv=str(venv))
    executor = LocalExecutor(tmp_path)
    with pytest.raises(CannotTrain) as refused:
        await find_axolotl("local", target, executor)
    assert refused.value.message == (
        f"target `local` cannot train: no axolotl in {venv}/bin (targets.local.venv)"
    )
    (venv / "bin" / "axolotl").write_text("#!/bin/sh\n")
    with pytest.raises(CannotTrain):
        await find_axolotl("local", target, executor)
    (venv / "bin" / "axolotl").chmod(0o755)
    assert await find_axolotl("local", target, executor) == f"{venv}/bin/axolotl"


async def test_over_ssh_the_venv_is_under_the_remote_home_and_path_is_the_probes() -> None:
    remote = Remote()
    executor = cast(Executor, remote)
    with pytest.raises(CannotTrain) as refused:
        await find_axolotl("box", SshTarget(runtime=Runtime.NATIVE, venv="~/axolotl"), executor)
    assert refused.value.message == (
        "target `box` cannot train: no axolotl in /home/u/axolotl/bin (targets.box.venv)"
    )
    assert "'/home/u/axolotl/bin/axolotl'" in remote.scripts[0]
    with pytest.raises(CannotTrain) as missing:
        await find_axolotl("box", SshTarget(runtime=Runtime.NATIVE), executor)
    assert remote.scripts[1] == "command -v axolotl || :"
    assert missing.value.message == (
        "target `box` cannot train: axolotl is not on PATH (set targets.box.venv to Axolotl's "
        "virtual environment)"
    )
    assert missing.value.exit_code == 2


def test_only_native_local_and_ssh_targets_are_checked() -> None:
    assert checks_axolotl(LocalTarget(runtime=Runtime.NATIVE))
    assert checks_axolotl(SshTarget(runtime=Runtime.NATIVE))
    assert not checks_axolotl(LocalTarget(runtime=Runtime.DOCKER))
    assert not checks_axolotl(SshTarget(runtime=Runtime.DOCKER))
    assert not checks_axolotl(None)


def test_the_target_line_says_where_axolotl_is_or_that_it_is_not() -> None:
    assert (
        target_summary(LocalTarget(runtime=Runtime.NATIVE))
        == "local, native, venv (axolotl on PATH)"
    )
    assert (
        target_summary(LocalTarget(runtime=Runtime.NATIVE), "/v/bin/axolotl")
        == "local, native, axolotl at /v/bin/axolotl"
    )
    assert (
        target_summary(LocalTarget(runtime=Runtime.NATIVE), None)
        == "local, native, no axolotl on PATH"
    )
    assert (
        target_summary(LocalTarget(runtime=Runtime.NATIVE, venv="/v"), None)
        == "local, native, no axolotl in venv /v"
    )
