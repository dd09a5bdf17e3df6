"""`kind = "ssh"`: a machine over SSH (the OpenSSH or the builtin client), `host` from the
environment."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import attrs

from overbrainer.config.env import SSH_CLIENT_ENV, SSH_CONFIG_ENV
from overbrainer.config.errors import ConfigError
from overbrainer.config.settings import (
    DEFAULT_WORKDIR,
    Engine,
    Runtime,
    SshTarget,
    Target,
)
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.targets.executor import Executor
from overbrainer.targets.host_machine import HostMachine
from overbrainer.targets.local_kind import host_runtime
from overbrainer.targets.machine import JobOpening, Machine, RecordedJob
from overbrainer.targets.ssh_open import chosen_client, open_ssh
from overbrainer.targets.ssh_session import SshExecutor


def _ssh(target: object) -> SshTarget:
    assert isinstance(target, SshTarget), f"{target!r} is not an ssh target"
    return target


def _unreachable(name: str, error: OSError) -> WorkFailed:
    text = str(error)
    prefix = f"cannot reach target `{name}`"
    return WorkFailed(text if text.startswith(prefix) else f"{prefix}: {text}")


@attrs.frozen
class SshKind:
    """A machine that exists already, reached over SSH."""

    name: str = SshTarget.kind
    settings_type: type[object] = SshTarget
    on_this_machine: bool = False
    makes_pod: bool = False

    def runtime(self, target: Target) -> Runtime:
        """The configured runtime (native or a container)."""
        return _ssh(target).runtime

    def engine(self, target: Target) -> Engine | None:
        """The configured engine (None: docker)."""
        return _ssh(target).engine

    def check(self, name: str, target: Target) -> None:
        """Refuse a wrong OVERBRAINER_SSH_CLIENT and a missing `host` (exit 2)."""
        ssh = _ssh(target)
        chosen_client(ssh.ssh_client, os.environ.get(SSH_CLIENT_ENV))
        if not ssh.host:
            raise ConfigError(
                f"targets.{name}.host is not set: set OVERBRAINER_TARGETS__{name.upper()}__HOST"
            )

    @contextlib.asynccontextmanager
    async def open(
        self,
        name: str,
        target: Target,
        runs_root: Path,
        interrupt: Interrupt,
        interrupted: Callable[[], OverbrainerError],
    ) -> AsyncIterator[Executor]:
        """An SSH executor, connected (raced against Ctrl-C)."""
        async with _connected(name, _ssh(target), interrupt, interrupted) as executor:
            yield executor

    @contextlib.asynccontextmanager
    async def open_machine(self, opening: JobOpening) -> AsyncIterator[Machine]:
        """The machine over SSH, connected (raced against Ctrl-C), checked, then the job's
        record made with R claimed there (a taken R moves the job to the next ID)."""
        ssh = _ssh(opening.target)
        name = opening.target_name
        async with _connected(name, ssh, opening.interrupt, opening.interrupted) as executor:
            if opening.check is not None:
                await opening.check(executor)
            await opening.create(executor.workdir, executor.claim)
            yield HostMachine(
                executor, host_runtime(ssh), removes_container=opening.needs.remove_container
            )

    @contextlib.asynccontextmanager
    async def reach_machine(self, recorded: RecordedJob) -> AsyncIterator[Machine]:
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
