"""Public-key authentication of the builtin client, as OpenSSH does it: ssh-agent's keys first
(only those of the key files with IdentitiesOnly), then each key file, a passphrase-protected
one through the agent or a passphrase asked for on the terminal. Never a password.

Blocking: it runs in the connect's worker thread.
"""

from __future__ import annotations

import base64
import binascii
import getpass
import logging
import os
import socket
import sys
import termios
from typing import Protocol

import paramiko
from paramiko.agent import AgentKey, AgentSSH

from overbrainer.targets.ssh_builtin.destination import Destination, Refused
from overbrainer.targets.ssh_session import CONNECT_TIMEOUT_S

log = logging.getLogger(__name__)


class Closable(Protocol):
    """Something a connect holds open: a socket, a transport, the terminal's echo."""

    def close(self) -> None:
        """Let go of it."""
        ...


class Holder(Protocol):
    """Where a connect puts what must be let go of when its caller gives up (`dial.Abort`)."""

    def hold(self, thing: Closable) -> None:
        """Let go of `thing` on abort."""
        ...


class _Terminal:
    """The terminal's settings before a prompt, put back by `close` (a Ctrl-C abandons the
    thread that reads the passphrase with echo off, so it cannot put them back itself)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._saved = termios.tcgetattr(fd)
        self.asking = True

    def close(self) -> None:
        """Put the settings back, and end the prompt's line if it was still asking."""
        try:
            termios.tcsetattr(self._fd, termios.TCSANOW, self._saved)
        except termios.error as error:
            log.debug("cannot restore the terminal: %s", error)
        if self.asking:
            self.asking = False
            sys.stderr.write("\n")
            sys.stderr.flush()


class _Agent(AgentSSH):
    """The ssh-agent at a socket path (paramiko's own `Agent` reads only SSH_AUTH_SOCK)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(CONNECT_TIMEOUT_S)
        try:
            conn.connect(path)
            self._connect(conn)  # type: ignore[attr-defined]  # paramiko's, not in its stubs
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        """End the connection to the agent."""
        self._close()  # type: ignore[attr-defined]  # paramiko's, not in its stubs


def _agent_keys(destination: Destination) -> tuple[_Agent | None, list[AgentKey]]:
    """The agent and its keys; none when there is no agent or it cannot be asked."""
    if destination.agent is None:
        return None, []
    try:
        agent = _Agent(destination.agent)
    except (OSError, paramiko.SSHException) as error:
        log.debug("ssh-agent at %s: %s", destination.agent, error)
        return None, []
    return agent, list(agent.get_keys())


def _public_blob(path: str) -> bytes | None:
    """The public key of key file `path`, from `path.pub` (readable without a passphrase)."""
    try:
        with open(f"{path}.pub", encoding="utf-8") as file:
            fields = file.read().split()
        return base64.b64decode(fields[1], validate=True) if len(fields) >= 2 else None
    except (OSError, UnicodeDecodeError, binascii.Error):
        return None


def _ask(path: str, abort: Holder) -> str | None:
    """The passphrase of `path`, asked for on the terminal; None without one."""
    if not sys.stdin.isatty():
        return None
    try:
        terminal = _Terminal(sys.stdin.fileno())
    except termios.error:
        return None
    abort.hold(terminal)
    try:
        return getpass.getpass(f"Enter passphrase for key '{path}': ")
    finally:
        terminal.asking = False


def _load(path: str, abort: Holder) -> paramiko.PKey | None:
    """Key file `path` (None when it has a passphrase that cannot be asked for)."""
    try:
        return paramiko.PKey.from_path(path)
    except (paramiko.PasswordRequiredException, TypeError) as error:
        # cryptography says TypeError for an OpenSSH-format key with a passphrase.
        if isinstance(error, TypeError) and "password" not in str(error):
            raise Refused(f"the key file {path} cannot be read: {error}") from None
    except (OSError, ValueError, paramiko.SSHException) as error:
        raise Refused(f"the key file {path} cannot be read: {error}") from None
    passphrase = _ask(path, abort)
    if passphrase is None:
        return None
    try:
        # The stubs say str; cryptography takes only bytes.
        return paramiko.PKey.from_path(path, passphrase.encode())  # type: ignore[arg-type]
    except (TypeError, ValueError, paramiko.SSHException):
        raise Refused(f"the passphrase given for the key file {path} is wrong") from None


def _accepted(transport: paramiko.Transport, user: str, key: paramiko.PKey) -> bool:
    try:
        transport.auth_publickey(user, key)
    except paramiko.AuthenticationException:
        return False
    return transport.is_authenticated()


def authenticate(transport: paramiko.Transport, destination: Destination, abort: Holder) -> None:
    """Offer the agent's keys, then the key files, until one is accepted (Refused when none
    is, naming the files and what to do)."""
    agent, agent_keys = _agent_keys(destination)
    try:
        _offer(transport, destination, agent_keys, abort)
    finally:
        if agent is not None:
            agent.close()


def _offer(
    transport: paramiko.Transport,
    destination: Destination,
    agent_keys: list[AgentKey],
    abort: Holder,
) -> None:
    files = destination.identity_files
    if destination.identities_only:
        blobs = set()
        for path in files:
            blob = _public_blob(path)
            if blob is None and (key := _quietly(path)) is not None:
                blob = key.asbytes()
            if blob is not None:
                blobs.add(blob)
        agent_keys = [key for key in agent_keys if key.asbytes() in blobs]
    in_agent = {key.asbytes() for key in agent_keys}
    for agent_key in agent_keys:
        if _accepted(transport, destination.user, agent_key):
            return
    missing: list[str] = []
    locked: list[str] = []
    tried = [f"{key.get_name()} {key.fingerprint} (ssh-agent)" for key in agent_keys]
    for path in files:
        if not os.path.isfile(path):
            missing.append(path)
            continue
        if _public_blob(path) in in_agent:
            continue  # offered through the agent already
        key = _load(path, abort)
        if key is None:
            locked.append(path)
            continue
        tried.append(path)
        if _accepted(transport, destination.user, key):
            return
    if missing and destination.identities_configured and not agent_keys:
        raise Refused(f"the key file {missing[0]} does not exist")
    if locked:
        raise _locked(locked[0])
    if not tried:
        raise Refused(
            f"no key file for {destination.alias}: none of {', '.join(missing)} exists "
            "and no ssh-agent holds a key (set IdentityFile in the ssh config)"
        )
    raise Refused(
        f"permission denied: {destination.user}@{destination.hostname} accepts none of the keys "
        f"{', '.join(tried)}"
    )


def _quietly(path: str) -> paramiko.PKey | None:
    """Key file `path` when it loads without a passphrase, else None."""
    try:
        return paramiko.PKey.from_path(path)
    except (OSError, TypeError, ValueError, paramiko.SSHException):
        return None


def _locked(path: str) -> Refused:
    """The refusal of a key file whose passphrase nobody can give."""
    return Refused(
        f"the key file {path} has a passphrase and no ssh-agent holds it: add it with "
        f"`ssh-add {path}` (or run overbrainer on a terminal to be asked for the passphrase)"
    )
