"""Where the builtin client connects, read from the same ssh config OpenSSH would read.

`OVERBRAINER_SSH_CONFIG` (or a pod's `runs/<id>/ssh/config`) when given, else `~/.ssh/config`
when it exists. The keys used: HostName, Port, User, IdentityFile, UserKnownHostsFile,
GlobalKnownHostsFile, HostKeyAlias. ProxyJump and ProxyCommand are refused, not ignored: the
connection would go somewhere else than the user configured.
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path

import attrs
import paramiko

SSH_PORT = 22
DEFAULT_IDENTITIES = ("~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ed25519")
DEFAULT_KNOWN_HOSTS = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
GLOBAL_KNOWN_HOSTS = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")
UNSUPPORTED = {"proxyjump": "ProxyJump", "proxycommand": "ProxyCommand"}


class Refused(Exception):
    """The builtin client cannot connect; the message says why in one line."""


@attrs.frozen
class Destination:
    """A host as the ssh config resolves it, with the files that authenticate both ends."""

    alias: str
    hostname: str
    port: int
    user: str
    identity_files: tuple[str, ...]
    identities_configured: bool
    known_hosts: tuple[str, ...]
    key_name: str
    """The name its host key has in known_hosts: HostKeyAlias, else `host` or `[host]:port`."""


def _path(value: str) -> str:
    """A path from the config: `%%` (how a literal `%` is written there) undone, `~` expanded."""
    return os.path.expanduser(value.replace("%%", "%"))


def _paths(value: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """A known-hosts setting: one path (which may hold spaces) when it names a file, else
    several separated by whitespace."""
    if value is None or not value.strip():
        return tuple(os.path.expanduser(path) for path in default)
    whole = _path(value.strip())
    if os.path.exists(whole):
        return (whole,)
    return tuple(_path(part) for part in value.split())


def _config(config_path: str | None) -> tuple[paramiko.SSHConfig, str | None]:
    path = config_path or os.path.expanduser("~/.ssh/config")
    if config_path is None and not os.path.isfile(path):
        return paramiko.SSHConfig(), None
    try:
        return paramiko.SSHConfig.from_path(path), path
    except FileNotFoundError:
        raise Refused(f"the ssh config {path} does not exist") from None
    except (OSError, paramiko.ConfigParseError) as error:
        raise Refused(f"cannot read the ssh config {path}: {error}") from None


def resolve(destination: str, config_path: str | None) -> Destination:
    """`destination` (`user@host` or a `Host` alias) through the ssh config (blocking: reads
    the file)."""
    given_user, _, alias = destination.rpartition("@")
    config, path = _config(config_path)
    options = config.lookup(alias)
    where = f" in {path}" if path else ""
    for key, name in UNSUPPORTED.items():
        if options.get(key):
            raise Refused(
                f"{name} is set for {alias}{where}: the builtin SSH client does not support it "
                '(set ssh_client = "openssh")'
            )
    hostname = str(options.get("hostname") or alias)
    try:
        port = int(options.get("port", SSH_PORT))
    except ValueError:
        raise Refused(f"the Port of {alias}{where} is not a number") from None
    user = given_user or str(options.get("user") or getpass.getuser())
    configured = [str(value) for value in options.get("identityfile", [])]
    identities = tuple(_path(value) for value in configured) or tuple(
        os.path.expanduser(path) for path in DEFAULT_IDENTITIES
    )
    known = _paths(options.get("userknownhostsfile"), DEFAULT_KNOWN_HOSTS) + _paths(
        options.get("globalknownhostsfile"), GLOBAL_KNOWN_HOSTS
    )
    alias_key = options.get("hostkeyalias")
    key_name = str(alias_key) if alias_key else hostname
    if not alias_key and port != SSH_PORT:
        key_name = f"[{hostname}]:{port}"
    return Destination(
        alias=alias,
        hostname=hostname,
        port=port,
        user=user,
        identity_files=identities,
        identities_configured=bool(configured),
        known_hosts=tuple(dict.fromkeys(str(Path(path)) for path in known)),
        key_name=key_name,
    )
