"""A run's SSH keys, known host and ssh config under `runs/<id>/ssh/` (reference §7.3)."""

from __future__ import annotations

import base64
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
HOST_KEY = "host_ed25519"
KNOWN_HOSTS = "known_hosts"
CONFIG = "config"
_HOST = re.compile(r"[A-Za-z0-9.:-]+")
_USER = re.compile(r"[A-Za-z0-9._-]+")


class KeysError(OverbrainerError):
    """The run's keys or ssh config cannot be made."""


@attrs.frozen
class RunKeys:
    """The client's public key (its private half stays in `ssh/`) and the pod's host key."""

    client_public: str
    host_public: str
    host_private_b64: str = attrs.field(repr=False)
    """Base64 of the host key's OpenSSH private file: only ever sent as an account secret."""


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
    """Generate the client key (kept in `ssh/`) and a host key (read, then its files deleted);
    write `known_hosts` for the host key. `ssh/` is mode 700."""
    folder = ssh_dir(run_dir)
    await trio.to_thread.run_sync(_make_dir, folder)
    client = folder / CLIENT_KEY
    host = folder / HOST_KEY
    stale = (client, client.with_suffix(".pub"), host, host.with_suffix(".pub"))
    await trio.to_thread.run_sync(_unlink_all, stale)
    await _keygen(client, run_id)
    try:
        await _keygen(host, run_id)
        host_private, host_public, client_public = await trio.to_thread.run_sync(
            lambda: (
                host.read_bytes(),
                host.with_suffix(".pub").read_text("utf-8").strip(),
                client.with_suffix(".pub").read_text("utf-8").strip(),
            )
        )
    finally:
        await trio.to_thread.run_sync(_unlink_host_files, host)
    keys = RunKeys(client_public, host_public, base64.b64encode(host_private).decode("ascii"))
    await trio.to_thread.run_sync(write_known_hosts, run_dir, run_id, keys.host_public)
    return keys


def _unlink_all(paths: tuple[Path, ...]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()


def _unlink_host_files(host: Path) -> None:
    _unlink_all((host, host.with_suffix(".pub")))


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


def forget_client_key(run_dir: Path) -> None:
    """Delete the client's private key once the run's last pod is gone (the secret is the
    caller's to delete, through the API)."""
    with contextlib.suppress(FileNotFoundError):
        (ssh_dir(run_dir) / CLIENT_KEY).unlink()
