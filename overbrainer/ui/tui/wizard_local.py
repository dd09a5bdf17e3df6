"""Whether this machine can train, for the wizard's `local` choice: the look `config check` takes
for the job's `axolotl` (`find_axolotl`), then the GPU `train` wants (`check_can_train`), on the
settings the answers make. The wizard never offers a target its first run would refuse."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import attrs
import trio

from overbrainer.config.settings import Engine
from overbrainer.model.errors import OverbrainerError
from overbrainer.targets import LocalExecutor, kind_of
from overbrainer.training import (
    CannotTrain,
    check_can_train,
    checks_axolotl,
    find_axolotl,
    run_target,
)
from overbrainer.ui.tui.wizard_files import Answers, settings_of

log = logging.getLogger(__name__)

OTHER_CHOICE = "←→ picks skip (the dataset only), ssh or runpod"
CHECKING = "checking this machine for Axolotl and a GPU…"


@attrs.frozen
class LocalAsk:
    """What the check depends on: the runtime and the adapter (a CPU run's settings)."""

    runtime: str
    adapter: str


@attrs.frozen
class LocalCheck:
    """What this machine has for `local` training: `problem` "" when it can train."""

    found: str = ""
    problem: str = ""


async def check_local(root: Path, answers: Answers) -> LocalCheck:
    """Whether `answers`' local target can train on this machine; never raises."""
    try:
        settings = await trio.to_thread.run_sync(settings_of, answers)
    except OverbrainerError as error:
        return LocalCheck(problem=error.message)
    training = settings.training
    assert training is not None, "local training makes a [training] table"
    name = training.target
    try:
        target = run_target(settings, name)
    except OverbrainerError as error:
        return LocalCheck(problem=error.message)
    if not checks_axolotl(target):  # a container: its image holds Axolotl
        engine = kind_of(target).checks(target).engine or Engine.DOCKER.value
        if shutil.which(engine) is None:
            return LocalCheck(problem=f"{engine} is not on PATH: the local container cannot run")
        return LocalCheck(found=f"{engine} found: the image holds Axolotl")
    executor = LocalExecutor(root / "runs")
    try:
        path = await find_axolotl(name, target, executor)
    except CannotTrain:
        return LocalCheck(problem="this machine has no axolotl on PATH: local training fails")
    except (OSError, trio.TooSlowError) as error:
        log.warning("cannot look for axolotl here: %s", error)
        return LocalCheck(problem=f"cannot look for axolotl here ({type(error).__name__})")
    try:
        await check_can_train(name, target, training, executor)
    except CannotTrain:
        return LocalCheck(problem="this machine has no GPU: local training fails")
    except (OSError, trio.TooSlowError) as error:
        return LocalCheck(problem=f"cannot look for a GPU here ({type(error).__name__})")
    return LocalCheck(found=f"this machine can train: axolotl at {path}, a GPU")


def local_note(check: LocalCheck | None) -> str:
    """The step's line on this machine: being checked, what it has, or what it lacks."""
    if check is None:
        return CHECKING
    if check.problem:
        return f"! {check.problem}"
    return f"✓ {check.found}"


def local_problem(check: LocalCheck | None) -> str:
    """Why `local` cannot be kept ("" when it can): checked yet, and found able to train."""
    if check is None:
        return f"{CHECKING} Enter again once it is done"
    if check.problem:
        return f"{check.problem}: {OTHER_CHOICE}"
    return ""
