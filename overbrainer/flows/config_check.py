"""The checks of `config check` past loading: the offline pre-flight and `--online`."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import trio

from overbrainer.config.preflight import PreflightError, config_problems, config_warnings
from overbrainer.config.settings import Settings
from overbrainer.llm import RoleCheck, check_online
from overbrainer.targets import LocalExecutor, kind_of
from overbrainer.training import (
    CannotTrain,
    cannot_train,
    checks_axolotl,
    expand_venv,
    find_axolotl,
)

log = logging.getLogger(__name__)


async def local_trainers(settings: Settings, runs: Path) -> dict[str, str | None]:
    """The `axolotl` of each native local target, as its job would find it (None: none).

    SSH targets are not connected to here: `train` and `run` check them when they connect."""
    found: dict[str, str | None] = {}
    executor = LocalExecutor(runs)
    for name, target in settings.targets.items():
        if kind_of(target).on_this_machine and checks_axolotl(target):
            try:
                found[name] = await find_axolotl(name, target, executor)
            except CannotTrain:
                found[name] = None
    return found


def trainer_problems(settings: Settings, found: Mapping[str, str | None]) -> list[str]:
    """The training target's, when it was checked and has no `axolotl`: `train` and `run`
    would refuse."""
    if settings.training is None:
        return []
    name = settings.training.target
    target = settings.targets.get(name)
    if name not in found or found[name] is not None or target is None:
        return []
    return [cannot_train(name, expand_venv(target.venv))]


async def preflight(
    settings: Settings, environ: Mapping[str, str], more: Sequence[str] = ()
) -> None:
    """Raise `PreflightError` on what would surely fail (no network: see config.preflight);
    `more`: the problems found beside it (a training target without Axolotl). Warnings are
    logged first."""
    for warning in config_warnings(settings):
        log.warning(warning)
    problems = await trio.to_thread.run_sync(config_problems, settings, environ)
    problems = [*problems, *more]
    if problems:
        raise PreflightError.of(problems)


async def online(settings: Settings, environ: Mapping[str, str]) -> list[RoleCheck]:
    """Each role's verdict from its provider's model list (the stub providers in-process)."""
    return await check_online(settings, environ)
