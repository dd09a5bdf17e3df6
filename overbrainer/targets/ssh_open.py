"""The one place that picks a target's SSH client: `ssh_client`, or `OVERBRAINER_SSH_CLIENT`
when set, then the system OpenSSH client (`ssh.py`) or the builtin one (`ssh_builtin/`)."""

from __future__ import annotations

import os
from contextlib import AbstractAsyncContextManager

from overbrainer.config.env import SSH_CLIENT_ENV
from overbrainer.config.errors import ConfigError
from overbrainer.config.settings import SshClient
from overbrainer.targets.ssh import open_openssh
from overbrainer.targets.ssh_session import SshExecutor


def chosen_client(setting: SshClient, env_value: str | None) -> SshClient:
    """`env_value` (OVERBRAINER_SSH_CLIENT) when set, else the target's `ssh_client`."""
    chosen = (env_value or "").strip().lower()
    if not chosen:
        return setting
    try:
        return SshClient(chosen)
    except ValueError:
        raise ConfigError(f"{SSH_CLIENT_ENV}: must be openssh or builtin") from None


def ssh_client_of(setting: SshClient) -> SshClient:
    """The client a target with `ssh_client = setting` uses now (the environment read)."""
    return chosen_client(setting, os.environ.get(SSH_CLIENT_ENV))


def open_ssh(
    name: str, host: str, workdir: str, *, ssh_config: str | None = None, client: SshClient
) -> AbstractAsyncContextManager[SshExecutor]:
    """An executor for target `name` at `host` over `client`, open for the block (not
    connected yet)."""
    if client is SshClient.BUILTIN:
        # Imported here: paramiko and cryptography load only for a target that uses them.
        from overbrainer.targets.ssh_builtin import open_builtin

        return open_builtin(name, host, workdir, ssh_config=ssh_config)
    return open_openssh(name, host, workdir, ssh_config=ssh_config)
