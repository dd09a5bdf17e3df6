"""One SSH connection made by paramiko: TCP, key exchange, the host key checked strictly
against known_hosts, then public-key authentication with the configured key files only.

Blocking: it runs in a worker thread (`trio.to_thread`). `Abort` lets the Trio side close the
socket and transport of a connect it stopped waiting for, so no thread is left behind on it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading

import paramiko

from overbrainer.targets.ssh_builtin.destination import Destination, Refused
from overbrainer.targets.ssh_session import ALIVE_INTERVAL_S, CONNECT_TIMEOUT_S

SSH_ERRORS = (paramiko.SSHException, EOFError, OSError)


def ssh_cause(error: BaseException) -> str:
    """What an SSH failure says; its type when it says nothing (paramiko's EOFError)."""
    return str(error) or type(error).__name__


# paramiko logs each failure of its own thread as a multi-line traceback at ERROR; every one
# reaches the caller as an exception, which the user sees as one line.
logging.getLogger("paramiko").setLevel(logging.CRITICAL)


class Abort:
    """What a connect in progress holds open, closed at once when its caller gives up."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: list[socket.socket | paramiko.Transport] = []
        self._aborted = False

    def hold(self, thing: socket.socket | paramiko.Transport) -> None:
        """Close `thing` with the rest on abort (at once when already aborted)."""
        with self._lock:
            self._held.append(thing)
            aborted = self._aborted
        if aborted:
            thing.close()
            raise Refused("the connect was abandoned")

    def abort(self) -> None:
        """Close everything held; later holds close what they are given."""
        with self._lock:
            self._aborted = True
            held, self._held = self._held, []
        for thing in reversed(held):
            thing.close()


def _tcp(destination: Destination) -> socket.socket:
    where = f"connect to host {destination.hostname} port {destination.port}"
    try:
        return socket.create_connection(
            (destination.hostname, destination.port), timeout=CONNECT_TIMEOUT_S
        )
    except socket.gaierror as error:
        raise Refused(f"cannot resolve host {destination.hostname}: {error.strerror}") from None
    except TimeoutError:
        raise Refused(f"{where}: timed out after {CONNECT_TIMEOUT_S} s") from None
    except OSError as error:
        raise Refused(f"{where}: {error.strerror or error}") from None


def _known_keys(destination: Destination) -> list[tuple[str, dict[str, paramiko.PKey]]]:
    """Each known_hosts file that knows the host's key name, with its keys by type."""
    found = []
    for path in destination.known_hosts:
        if not os.path.isfile(path):
            continue
        try:
            keys = paramiko.HostKeys(path).lookup(destination.key_name)
        except (OSError, paramiko.SSHException) as error:
            raise Refused(f"cannot read {path}: {error}") from None
        if keys:
            found.append((path, {name: keys[name] for name in keys}))
    return found


RSA_ALGORITHMS = ("rsa-sha2-512", "rsa-sha2-256", "ssh-rsa")


def _prefer_known(
    transport: paramiko.Transport, known: list[tuple[str, dict[str, paramiko.PKey]]]
) -> None:
    """Ask for the key types known_hosts holds first, as OpenSSH does, so a host with several
    keys offers the one we can check."""
    types = {name for _path, keys in known for name in keys}
    wanted = [algorithm for algorithm in RSA_ALGORITHMS if "ssh-rsa" in types]
    wanted += [name for name in sorted(types) if name != "ssh-rsa"]
    options = transport.get_security_options()
    offered = list(options.key_types)
    first = [name for name in wanted if name in offered]
    options.key_types = [*first, *(name for name in offered if name not in first)]


def _check_host_key(
    destination: Destination,
    offered: paramiko.PKey,
    known: list[tuple[str, dict[str, paramiko.PKey]]],
) -> None:
    """Strict: the offered key must be one known_hosts holds for the host's key name."""
    shown = f"{offered.get_name()} {offered.fingerprint}"
    if not known:
        files = ", ".join(destination.known_hosts)
        raise Refused(
            f"the host key of {destination.key_name} is not in {files} (strict checking): "
            f"check that it is {shown} and add it, e.g. by connecting once with ssh"
        )
    for _path, keys in known:
        if keys.get(offered.get_name()) == offered:
            return
    raise Refused(
        f"the host key of {destination.key_name} does not match {known[0][0]} "
        f"(the host offered {shown}): if the host was reinstalled, remove its old line there"
    )


def _authenticate(transport: paramiko.Transport, destination: Destination) -> None:
    """Public-key authentication with each key file in turn; never a password or an agent."""
    missing: list[str] = []
    locked: list[str] = []
    tried: list[str] = []
    for path in destination.identity_files:
        if not os.path.isfile(path):
            missing.append(path)
            continue
        try:
            key = paramiko.PKey.from_path(path)
        except (paramiko.PasswordRequiredException, TypeError) as error:
            # cryptography says TypeError for an OpenSSH-format key with a passphrase.
            if isinstance(error, TypeError) and "password" not in str(error):
                raise Refused(f"the key file {path} cannot be read: {error}") from None
            locked.append(path)
            continue
        except (OSError, ValueError, paramiko.SSHException) as error:
            raise Refused(f"the key file {path} cannot be read: {error}") from None
        tried.append(path)
        try:
            transport.auth_publickey(destination.user, key)
        except paramiko.AuthenticationException:
            continue
        if transport.is_authenticated():
            return
    if missing and destination.identities_configured:
        raise Refused(f"the key file {missing[0]} does not exist")
    if locked:
        raise Refused(
            f"the key file {locked[0]} has a passphrase: the builtin SSH client asks for none "
            '(set ssh_client = "openssh" and load the key into ssh-agent)'
        )
    if not tried:
        raise Refused(
            f"no key file for {destination.alias}: none of {', '.join(missing)} exists "
            "(set IdentityFile in the ssh config)"
        )
    raise Refused(
        f"permission denied: {destination.user}@{destination.hostname} accepts none of the keys "
        f"{', '.join(tried)}"
    )


def dial(destination: Destination, abort: Abort) -> paramiko.Transport:
    """A connected, checked and authenticated transport (blocking; Refused when not)."""
    sock = _tcp(destination)
    abort.hold(sock)
    transport = paramiko.Transport(sock)
    done = False
    try:
        abort.hold(transport)
        known = _known_keys(destination)
        _prefer_known(transport, known)
        try:
            transport.start_client(timeout=CONNECT_TIMEOUT_S)
        except SSH_ERRORS as error:
            raise Refused(
                f"the SSH handshake with {destination.hostname} port {destination.port} "
                f"failed: {ssh_cause(error)}"
            ) from None
        _check_host_key(destination, transport.get_remote_server_key(), known)
        try:
            _authenticate(transport, destination)
        except SSH_ERRORS as error:
            raise Refused(f"authentication failed: {ssh_cause(error)}") from None
        transport.set_keepalive(ALIVE_INTERVAL_S)
        done = True
        return transport
    finally:
        if not done:
            transport.close()
            sock.close()
