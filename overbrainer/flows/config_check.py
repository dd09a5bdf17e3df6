"""The checks of `config check` past loading: the offline pre-flight and `--online`.

Every check runs whatever another found, and the command fails (exit 2) at the end with all
their problems: `--online`'s provider lines are printed even when a training target cannot
train or a secret does not resolve."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import trio

from overbrainer.config.preflight import PreflightError, config_problems, config_warnings
from overbrainer.config.report import secrets_of
from overbrainer.config.secrets import SecretError, resolve_secret
from overbrainer.config.settings import Settings
from overbrainer.llm import RoleCheck, check_online, role_key
from overbrainer.pipeline.benchmark_files import benchmark_problems
from overbrainer.targets import LocalExecutor, kind_of
from overbrainer.training import (
    CannotTrain,
    cannot_train,
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
        checks = kind_of(target).checks(target)
        if checks.axolotl and checks.here:
            try:
                found[name] = await find_axolotl(name, target, executor)
            except CannotTrain:
                found[name] = None
    return found


NO_TRAIN_HINT = "; `config check --no-train` checks a dataset-only run (`run --no-train`)"
"""Said after a missing Axolotl: making datasets needs none."""


def trainer_problems(settings: Settings, found: Mapping[str, str | None]) -> list[str]:
    """The training target's, when it was checked and has no `axolotl`: `train` and `run`
    would refuse."""
    if settings.training is None:
        return []
    name = settings.training.target
    target = settings.targets.get(name)
    if name not in found or found[name] is not None or target is None:
        return []
    venv = kind_of(target).checks(target).venv
    return [cannot_train(name, expand_venv(venv)) + NO_TRAIN_HINT]


async def preflight_problems(
    settings: Settings, environ: Mapping[str, str], more: Sequence[str] = ()
) -> list[str]:
    """What would surely fail (no network: see config.preflight), then `more`: the problems
    found beside it (a training target without Axolotl). Warnings are logged first."""
    for warning in config_warnings(settings):
        log.warning(warning)
    problems = await trio.to_thread.run_sync(config_problems, settings, environ)
    return [*problems, *more]


async def decontaminate_problems(settings: Settings, root: Path) -> list[str]:
    """The `[quality] decontaminate` files that `split` would refuse, one line each."""
    files = settings.quality.decontaminate
    return await trio.to_thread.run_sync(benchmark_problems, root, files)


async def resolve_secrets(
    settings: Settings, environ: Mapping[str, str]
) -> list[tuple[str, str | None]]:
    """Each secret's key, with None where it resolved, else the one line why it did not.

    An empty one is left out: nothing was resolved (the pre-flight warns about it)."""
    results: list[tuple[str, str | None]] = []
    for key, secret in secrets_of(settings):
        if not secret.text.strip():
            continue
        try:
            await resolve_secret(secret, key, environ)
        except SecretError as error:
            results.append((key, error.message))
        else:
            results.append((key, None))
    return results


async def online(settings: Settings, environ: Mapping[str, str]) -> list[RoleCheck]:
    """Each role's verdict from its provider's model list, or from a one-token probe where
    the list says nothing of the key (the stub providers in-process)."""
    return await check_online(settings, environ)


def failed_roles(checks: Sequence[RoleCheck]) -> list[str]:
    """The one problem line of the roles that cannot work, or none."""
    failed = [role_key(verdict.name) for verdict in checks if not verdict.works]
    return [f"{' and '.join(failed)} cannot work (see above)"] if failed else []


def raise_problems(problems: Sequence[str]) -> None:
    """Raise `PreflightError` with every problem once, in the order found."""
    if problems:
        raise PreflightError.of(list(dict.fromkeys(problems)))
