"""Where the builtin client connects, read from the same ssh config OpenSSH would read.

`OVERBRAINER_SSH_CONFIG` (or a pod's `runs/<id>/ssh/config`) when given, else `~/.ssh/config`
when it exists. The keys used: HostName, Port, User, IdentityFile, IdentitiesOnly,
IdentityAgent, UserKnownHostsFile, GlobalKnownHostsFile, HostKeyAlias, ProxyJump (each jump host
resolved through the same config). ProxyCommand is refused, not ignored: the connection would go
somewhere else than the user configured.
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
UNSUPPORTED = {"proxycommand": "ProxyCommand"}
MAX_JUMPS = 8
"""Jump hosts one connection may go through (a config whose jumps loop is refused)."""


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
    identities_only: bool = False
    """IdentitiesOnly: of the agent's keys, only those of the key files are offered."""
    agent: str | None = None
    """The ssh-agent socket (IdentityAgent, else SSH_AUTH_SOCK); None: no agent."""
    jumps: tuple[Destination, ...] = ()
    """The jump hosts (ProxyJump) the connection goes through, in order."""


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
    config, path = _config(config_path)
    return _resolve(destination, None, config, path, ())


def _agent(options: paramiko.config.SSHConfigDict) -> str | None:
    setting = str(options.get("identityagent") or "SSH_AUTH_SOCK")
    if setting.lower() == "none":
        return None
    if setting in ("SSH_AUTH_SOCK", "$SSH_AUTH_SOCK"):
        return os.environ.get("SSH_AUTH_SOCK") or None
    return _path(setting)


def _jump_spec(spec: str) -> tuple[str, int | None]:
    """`[user@]host[:port]` (an IPv6 address in brackets) split into the destination and its
    port."""
    spec = spec.strip().removeprefix("ssh://")
    user, at, rest = spec.rpartition("@")
    if rest.startswith("["):
        host, _, after = rest[1:].partition("]")
        colon, port = after[:1], after[1:]
    elif rest.count(":") == 1:
        host, colon, port = rest.partition(":")
    else:
        host, colon, port = rest, "", ""
    if not colon:
        return f"{user}{at}{host}", None
    if not port.isdigit():
        raise Refused(f"the ProxyJump host {spec} has a port that is not a number")
    return f"{user}{at}{host}", int(port)


def _resolve(
    destination: str,
    port_given: int | None,
    config: paramiko.SSHConfig,
    path: str | None,
    seen: tuple[str, ...],
) -> Destination:
    given_user, _, alias = destination.rpartition("@")
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
        port = port_given or int(options.get("port", SSH_PORT))
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
    jumps: list[Destination] = []
    jump_setting = str(options.get("proxyjump") or "none")
    if jump_setting.lower() != "none":
        if alias in seen or len(seen) >= MAX_JUMPS:
            raise Refused(f"the ProxyJump hosts of {alias}{where} go round in a loop")
        for spec in jump_setting.split(","):
            hop, hop_port = _jump_spec(spec)
            found = _resolve(hop, hop_port, config, path, (*seen, alias))
            jumps += [*found.jumps, attrs.evolve(found, jumps=())]
    return Destination(
        alias=alias,
        hostname=hostname,
        port=port,
        user=user,
        identity_files=identities,
        identities_configured=bool(configured),
        known_hosts=tuple(dict.fromkeys(str(Path(path)) for path in known)),
        key_name=key_name,
        identities_only=str(options.get("identitiesonly", "no")).lower() == "yes",
        agent=_agent(options),
        jumps=tuple(jumps),
    )
