"""A run's SSH key, known host and ssh config under `runs/<id>/ssh/` (reference §7.3).

The pod makes its own host key at boot and prints the public half on one line of its container
log (`overbrainer-host-key ssh-ed25519 AAAA…`); the client reads it there (`announced_host_key`)
and trusts only that key. The private half never leaves the pod.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from pathlib import Path

import attrs
import trio

from overbrainer.model.errors import OverbrainerError
from overbrainer.targets.runpod.types import SshEndpoint

SSH_DIR = "ssh"
CLIENT_KEY = "id_ed25519"
KNOWN_HOSTS = "known_hosts"
CONFIG = "config"
_HOST = re.compile(r"[A-Za-z0-9.:-]+")
_USER = re.compile(r"[A-Za-z0-9._-]+")
HOST_KEY_TAG = "overbrainer-host-key"
"""The first word of the line on which the pod's bootstrap prints its host public key."""
_ANNOUNCED = re.compile(rf"(?:^|\s){HOST_KEY_TAG} (ssh-ed25519) ([A-Za-z0-9+/]{{68}})(?:\s|$)")


class KeysError(OverbrainerError):
    """The run's keys or ssh config cannot be made."""


@attrs.frozen
class RunKeys:
    """The run's client public key (its private half stays in `ssh/`)."""

    client_public: str


def host_alias(run_id: str) -> str:
    """The `Host` name of the run's pod in its ssh config and known_hosts."""
    return f"overbrainer-{run_id}"


def ssh_dir(run_dir: Path) -> Path:
    """`runs/<id>/ssh`."""
    return run_dir / SSH_DIR


async def _keygen(path: Path, run_id: str) -> None:
    command = ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", host_alias(run_id)]
    try:
        await trio.run_process(
            [*command, "-f", str(path)],
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
        )
    except FileNotFoundError:
        raise KeysError(
            "ssh-keygen is not installed: Runpod targets need the OpenSSH client"
        ) from None
    except subprocess.CalledProcessError as error:
        why = error.stderr.decode("utf-8", "replace").strip().splitlines()
        raise KeysError(f"ssh-keygen failed: {why[0] if why else error.returncode}") from None


def _make_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)


async def make_keys(run_dir: Path, run_id: str) -> RunKeys:
    """Generate the run's client key (kept in `ssh/`, mode 700). `known_hosts` is written once
    the pod has announced its host key (`write_known_hosts`)."""
    folder = ssh_dir(run_dir)
    await trio.to_thread.run_sync(_make_dir, folder)
    client = folder / CLIENT_KEY
    stale = (client, client.with_suffix(".pub"), folder / KNOWN_HOSTS)
    await trio.to_thread.run_sync(_unlink_all, stale)
    await _keygen(client, run_id)
    public = await trio.to_thread.run_sync(
        lambda: client.with_suffix(".pub").read_text("utf-8").strip()
    )
    return RunKeys(public)


def _unlink_all(paths: tuple[Path, ...]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()


def announced_host_key(line: str) -> str | None:
    """The host public key (`ssh-ed25519 AAAA…`) a line of the pod's log announces, or None."""
    found = _ANNOUNCED.search(line)
    return None if found is None else f"{found[1]} {found[2]}"


def known_hosts_line(run_id: str, host_public: str) -> str:
    """`overbrainer-<id> ssh-ed25519 AAAA…` (the key's comment dropped)."""
    kind, blob = host_public.split()[:2]
    return f"{host_alias(run_id)} {kind} {blob}\n"


def write_known_hosts(run_dir: Path, run_id: str, host_public: str) -> None:
    """The only host the run's ssh trusts: its pod, under its alias."""
    (ssh_dir(run_dir) / KNOWN_HOSTS).write_text(known_hosts_line(run_id, host_public), "utf-8")


def _quoted(path: Path) -> str:
    """A path for ssh_config: double-quoted, with `%` (a token there) doubled."""
    return '"' + str(path).replace("%", "%%") + '"'


def ssh_config(run_dir: Path, run_id: str, endpoint: SshEndpoint) -> str:
    """The run's ssh config: strict host key, only the run's key, no agent, no passwords."""
    if not _HOST.fullmatch(endpoint.host):
        raise KeysError("Runpod gave the pod an SSH host that is not a plain name or address")
    if not _USER.fullmatch(endpoint.user):
        raise KeysError("Runpod gave the pod an SSH user name with unexpected characters")
    if endpoint.port <= 0:
        raise KeysError("Runpod gave the pod an SSH port that is not above 0")
    folder = ssh_dir(run_dir.absolute())
    return (
        f"Host {host_alias(run_id)}\n"
        f"  HostName {endpoint.host}\n"
        f"  Port {endpoint.port}\n"
        f"  User {endpoint.user}\n"
        f"  IdentityFile {_quoted(folder / CLIENT_KEY)}\n"
        "  IdentitiesOnly yes\n"
        "  IdentityAgent none\n"
        f"  UserKnownHostsFile {_quoted(folder / KNOWN_HOSTS)}\n"
        "  GlobalKnownHostsFile /dev/null\n"
        f"  HostKeyAlias {host_alias(run_id)}\n"
        "  CheckHostIP no\n"
        "  StrictHostKeyChecking yes\n"
        "  UpdateHostKeys no\n"
        "  PasswordAuthentication no\n"
        "  KbdInteractiveAuthentication no\n"
    )


def write_ssh_config(run_dir: Path, run_id: str, endpoint: SshEndpoint) -> Path:
    """(Re)write `ssh/config` before a connect; returns its path."""
    path = ssh_dir(run_dir) / CONFIG
    path.write_text(ssh_config(run_dir, run_id, endpoint), "utf-8")
    return path


def client_key_path(run_dir: Path) -> Path:
    """`runs/<id>/ssh/id_ed25519`: made before the run's first create call."""
    return ssh_dir(run_dir) / CLIENT_KEY


def forget_client_key(run_dir: Path) -> None:
    """Delete the client's private key once the run's last pod is gone."""
    with contextlib.suppress(FileNotFoundError):
        client_key_path(run_dir).unlink()
