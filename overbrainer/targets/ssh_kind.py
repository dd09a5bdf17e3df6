"""`kind = "ssh"`: a machine over SSH (the OpenSSH or the builtin client), `host` from the
environment."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import ClassVar

import attrs

from overbrainer.config.env import SSH_CLIENT_ENV, SSH_CONFIG_ENV
from overbrainer.config.errors import ConfigError
from overbrainer.config.report import ssh_client_line
from overbrainer.config.settings import (
    DEFAULT_WORKDIR,
    RECONNECT_SECS,
    Engine,
    Runtime,
    Settings,
    SshClient,
)
from overbrainer.config.target_settings import SettingsKind, Shown, TargetSettings
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.model.json_values import JsonValue
from overbrainer.targets.executor import Executor, JobRef
from overbrainer.targets.host_jobs import host_checks
from overbrainer.targets.host_machine import HostMachine, host_runtime
from overbrainer.targets.host_settings import host_problems, runtime_problems, runtime_summary
from overbrainer.targets.kind import JobChecks, refuse_keep
from overbrainer.targets.machine import JobNeeds, JobOpening, Machine, RecordedJob
from overbrainer.targets.ssh_open import chosen_client, open_ssh
from overbrainer.targets.ssh_session import SshExecutor


@attrs.frozen
class SshTarget:
    """`[targets.<n>] kind = "ssh"`: a machine over SSH; `host` only from the environment."""

    runtime: Runtime
    host: str | None = None
    workdir: str | None = None
    engine: Engine | None = None
    image: str | None = None
    venv: str | None = None
    ssh_client: SshClient = SshClient.OPENSSH
    reconnect_secs: float = RECONNECT_SECS
    """How long a follower keeps trying to reach a job whose connection was lost."""
    gpus: str = "auto"
    """As `LocalTarget.gpus`."""
    container_user: str = "auto"
    """As `LocalTarget.container_user`."""

    kind: ClassVar[str] = "ssh"


def _ssh(target: TargetSettings) -> SshTarget:
    assert isinstance(target, SshTarget), f"a {target.kind} target is not an ssh one"
    return target


def _summary(target: TargetSettings, shown: Shown) -> list[tuple[str, str]]:
    ssh = _ssh(target)
    host = ssh.host or "(host unset)"
    where = f"ssh {host} in {ssh.workdir or DEFAULT_WORKDIR}"
    return [
        ("", f"{where}, {runtime_summary(ssh, shown.axolotl)}"),
        (".ssh_client", ssh_client_line(ssh.ssh_client, shown.ssh_client_env)),
    ]


SSH_SETTINGS = SettingsKind(
    name=SshTarget.kind,
    settings_type=SshTarget,
    summary=_summary,
    problems=lambda name, target: host_problems(name, _ssh(target)),
    range_problems=lambda name, target: runtime_problems(name, _ssh(target)),
    reconnect_secs=lambda target: _ssh(target).reconnect_secs,
)
"""How config reads, checks and shows an ssh target."""


def _unreachable(name: str, error: OSError) -> WorkFailed:
    text = str(error)
    prefix = f"cannot reach target `{name}`"
    return WorkFailed(text if text.startswith(prefix) else f"{prefix}: {text}")


@attrs.frozen
class SshKind:
    """A machine that exists already, reached over SSH."""

    name: str = SshTarget.kind
    settings: SettingsKind = SSH_SETTINGS
    makes_pod: bool = False

    def check(
        self, name: str, target: TargetSettings, needs: JobNeeds, settings: Settings | None = None
    ) -> None:
        """Refuse `--keep-pod`, a wrong OVERBRAINER_SSH_CLIENT and a missing `host` (exit 2)."""
        refuse_keep(needs)
        ssh = _ssh(target)
        chosen_client(ssh.ssh_client, os.environ.get(SSH_CLIENT_ENV))
        if not ssh.host:
            raise ConfigError(
                f"targets.{name}.host is not set: set OVERBRAINER_TARGETS__{name.upper()}__HOST"
            )

    def checks(self, target: TargetSettings) -> JobChecks:
        """A native job's `axolotl` there, once connected; nothing here."""
        return host_checks(_ssh(target), here=False)

    def left_job(self, target: TargetSettings, job_dir: Path, run_id: str) -> JobRef | None:
        """None: its `job.pid` is on the other machine."""
        return None

    def alive(self, job_dir: Path, job: JobRef) -> bool | None:
        """None: no connection is made for the check, its record says."""
        return None

    async def quote(self, settings: Settings, target: TargetSettings, model: Path) -> str | None:
        """Nothing to pay for."""
        return None

    @contextlib.asynccontextmanager
    async def connect(
        self,
        name: str,
        target: TargetSettings,
        runs_root: Path,
        interrupt: Interrupt,
        interrupted: Callable[[], OverbrainerError],
    ) -> AsyncIterator[Executor]:
        """An SSH executor, connected (raced against Ctrl-C)."""
        async with _connected(name, _ssh(target), interrupt, interrupted) as executor:
            yield executor

    @contextlib.asynccontextmanager
    async def open(self, opening: JobOpening) -> AsyncIterator[Machine]:
        """The machine over SSH, connected (raced against Ctrl-C), checked, then the job's
        record made with R claimed there (a taken R moves the job to the next ID)."""
        ssh = _ssh(opening.target)
        name = opening.target_name
        async with _connected(name, ssh, opening.interrupt, opening.interrupted) as executor:
            if opening.check is not None:
                await opening.check(executor)
            await opening.create(opening.needs.nested_in or executor.workdir, executor.claim)
            yield HostMachine(
                executor, host_runtime(ssh), removes_container=opening.needs.remove_container
            )

    @contextlib.asynccontextmanager
    async def reach(self, recorded: RecordedJob) -> AsyncIterator[Machine]:
        """The machine of a recorded job over SSH, connected (raced against Ctrl-C)."""
        ssh = _ssh(recorded.target)
        name = recorded.target_name
        async with _connected(name, ssh, recorded.interrupt, recorded.interrupted) as executor:
            machine = HostMachine(executor, host_runtime(ssh))
            machine.job = recorded.job
            yield machine

    def describe(self, job_dir: Path) -> str | None:
        """Nothing to add: the job is a process over SSH."""
        return None

    def details(self, job_dir: Path) -> dict[str, JsonValue] | None:
        """Nothing to add: the job is a process over SSH."""
        return None


@contextlib.asynccontextmanager
async def _connected(
    name: str,
    ssh: SshTarget,
    interrupt: Interrupt,
    interrupted: Callable[[], OverbrainerError],
) -> AsyncIterator[SshExecutor]:
    """An SSH executor, connected (raced against Ctrl-C: `interrupted()` when it wins)."""
    assert ssh.host is not None
    async with open_ssh(
        name,
        ssh.host,
        ssh.workdir or DEFAULT_WORKDIR,
        ssh_config=os.environ.get(SSH_CONFIG_ENV) or None,
        client=chosen_client(ssh.ssh_client, os.environ.get(SSH_CLIENT_ENV)),
    ) as executor:

        async def connect() -> OSError | bool:
            try:
                await executor.connect()
            except OSError as error:  # returned, so no exception group wraps it
                return error
            return True

        connected = await interrupt.race(connect)
        if connected is None:
            raise interrupted()
        if isinstance(connected, OSError):
            raise _unreachable(name, connected)
        yield executor


SSH = SshKind()
"""The ssh kind (registered by `targets/registry.py`)."""
