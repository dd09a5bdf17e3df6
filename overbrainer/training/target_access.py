"""The target a run trains on: its settings checked, and its executor opened and connected."""

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
    LocalTarget,
    RunpodTarget,
    Settings,
    SshClient,
    SshTarget,
    Target,
)
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError, UsageError, WorkFailed
from overbrainer.system.sampler import LocalSampler
from overbrainer.targets.executor import Executor
from overbrainer.targets.local_executor import LocalExecutor
from overbrainer.targets.probe_sampler import ProbeSampler
from overbrainer.targets.ssh import open_ssh

HostTarget = LocalTarget | SshTarget
"""A target overbrainer reaches as it is (a Runpod target's pod is made for the run)."""
TrainTarget = LocalTarget | SshTarget | RunpodTarget


def run_target(settings: Settings, name: str, *, keep_pod: bool = False) -> TrainTarget:
    """The `[targets.<name>]` a training run uses."""
    target: Target | None = settings.targets.get(name)
    if target is None:
        raise UsageError(f"unknown target `{name}`")
    if keep_pod and target.kind != "runpod":
        raise UsageError("--keep-pod only applies to a runpod target")
    if isinstance(target, SshTarget):
        check_ssh_client(name, target, os.environ.get(SSH_CLIENT_ENV))
        if not target.host:
            raise ConfigError(
                f"targets.{name}.host is not set: set OVERBRAINER_TARGETS__{name.upper()}__HOST"
            )
    return target


def check_ssh_client(name: str, target: SshTarget, env_value: str | None) -> None:
    """Refuse `builtin`: only the system OpenSSH client is implemented (exit 2)."""
    chosen = (env_value or "").strip().lower()
    client = chosen or target.ssh_client.value
    if client == SshClient.OPENSSH.value:
        return
    source = SSH_CLIENT_ENV if chosen else f"targets.{name}.ssh_client"
    if client == SshClient.BUILTIN.value:
        raise ConfigError(
            f"{source} = builtin is not supported: this overbrainer connects with the system "
            f'OpenSSH client only; set it to "openssh" or leave it unset'
        )
    raise ConfigError(f"{SSH_CLIENT_ENV}: must be openssh or builtin")


def _unreachable(name: str, error: OSError) -> WorkFailed:
    text = str(error)
    prefix = f"cannot reach target `{name}`"
    return WorkFailed(text if text.startswith(prefix) else f"{prefix}: {text}")


@contextlib.asynccontextmanager
async def open_executor(
    name: str,
    target: HostTarget,
    runs_root: Path,
    interrupt: Interrupt,
    interrupted: Callable[[], OverbrainerError],
) -> AsyncIterator[Executor]:
    """The target's executor, connected (the connection raced against Ctrl-C)."""
    if isinstance(target, LocalTarget):
        yield LocalExecutor(runs_root)
        return
    assert target.host is not None
    async with open_ssh(
        name,
        target.host,
        target.workdir or DEFAULT_WORKDIR,
        ssh_config=os.environ.get(SSH_CONFIG_ENV) or None,
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


@attrs.frozen
class Where:
    """Where a run lives on its executor: its directory there and the shared model cache."""

    remote_dir: str
    cache: str


def sampler_for(executor: Executor, remote_dir: str) -> LocalSampler | ProbeSampler:
    """Samples of the job's machine: psutil/NVML here, the probe script over SSH."""
    if executor.local:
        return LocalSampler(Path(remote_dir))
    return ProbeSampler(executor, remote_dir)
