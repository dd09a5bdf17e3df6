"""What the `local` and `ssh` kinds' settings share: a runtime (a venv or a container) and
its checks and `config show` words."""

from __future__ import annotations

import re
from typing import Protocol

from overbrainer.config.container import gpus_problem, user_problem
from overbrainer.config.settings import DEFAULT_IMAGE, Engine, Runtime
from overbrainer.config.target_settings import NOT_CHECKED

_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]*")


class HostSettings(Protocol):
    """The runtime fields of a machine overbrainer reaches as it is (local, ssh)."""

    @property
    def runtime(self) -> Runtime: ...
    @property
    def engine(self) -> Engine | None: ...
    @property
    def image(self) -> str | None: ...
    @property
    def venv(self) -> str | None: ...
    @property
    def gpus(self) -> str: ...
    @property
    def container_user(self) -> str: ...


def host_problems(name: str, target: HostSettings) -> list[str]:
    """`gpus` and `container_user` not in one of their forms (the reference-order checks)."""
    out: list[str] = []
    if (why := gpus_problem(target.gpus)) is not None:
        out.append(f"targets.{name}.gpus: {why}")
    if (why := user_problem(target.container_user)) is not None:
        out.append(f"targets.{name}.container_user: {why}")
    return out


def runtime_problems(name: str, target: HostSettings) -> list[str]:
    """Runtime keys that do not fit the runtime (the range checks)."""
    key = f"targets.{name}"
    out: list[str] = []
    docker = target.runtime is Runtime.DOCKER
    if target.engine is not None and not docker:
        out.append(f'{key}.engine: only valid with runtime = "docker"')
    if target.image is not None and not docker:
        out.append(f'{key}.image: only valid with runtime = "docker"')
    if target.image is not None and not _IMAGE.fullmatch(target.image):
        out.append(f"{key}.image: must be a container image reference")
    if target.venv is not None and docker:
        out.append(f'{key}.venv: only valid with runtime = "native"')
    return out


def runtime_summary(target: HostSettings, axolotl: str | None = NOT_CHECKED) -> str:
    """The runtime as `config show` words it; the `axolotl` found when it was looked for."""
    if target.runtime is Runtime.DOCKER:
        return f"{(target.engine or Engine.DOCKER).value} {target.image or DEFAULT_IMAGE}"
    if axolotl is None:
        where = f"in venv {target.venv}" if target.venv else "on PATH"
        return f"native, no axolotl {where}"
    if axolotl != NOT_CHECKED:
        return f"native, axolotl at {axolotl}"
    return f"native, venv {target.venv or '(axolotl on PATH)'}"
