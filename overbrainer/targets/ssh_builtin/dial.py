"""One SSH connection made by paramiko: TCP (through each ProxyJump host in turn), key
exchange, the host key checked strictly against known_hosts, then public-key authentication
(`auth.py`: ssh-agent's keys, then the key files, a passphrase asked for on a terminal).

Blocking: it runs in a worker thread (`trio.to_thread`). `Abort` lets the Trio side close the
socket and transport of a connect it stopped waiting for, so no thread is left behind on it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading

import attrs
import paramiko

from overbrainer.targets.ssh_builtin.auth import Closable, authenticate
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
        self._held: list[Closable] = []
        self._aborted = False

    def hold(self, thing: Closable) -> None:
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


@attrs.frozen
class Dialled:
    """A connection to the destination, and those to the jump hosts it goes through."""

    transport: paramiko.Transport
    jumps: tuple[paramiko.Transport, ...] = ()

    def close(self) -> None:
        """Close the connection, then the jump hosts' (blocking)."""
        for transport in (self.transport, *reversed(self.jumps)):
            transport.close()


def _through(jump: paramiko.Transport, via: Destination, hop: Destination) -> paramiko.Channel:
    """A channel from jump host `via` to `hop`'s SSH port."""
    try:
        return jump.open_channel(
            "direct-tcpip", (hop.hostname, hop.port), ("127.0.0.1", 0), timeout=CONNECT_TIMEOUT_S
        )
    except SSH_ERRORS as error:
        raise Refused(
            f"the jump host {via.alias} cannot reach host {hop.hostname} port {hop.port}: "
            f"{ssh_cause(error)}"
        ) from None


def _secure(
    hop: Destination, sock: socket.socket | paramiko.Channel, abort: Abort
) -> paramiko.Transport:
    """The SSH layer over `sock`: handshake, host key checked, authenticated."""
    transport = paramiko.Transport(sock)
    try:
        abort.hold(transport)
        known = _known_keys(hop)
        _prefer_known(transport, known)
        try:
            transport.start_client(timeout=CONNECT_TIMEOUT_S)
        except SSH_ERRORS as error:
            raise Refused(
                f"the SSH handshake with {hop.hostname} port {hop.port} failed: {ssh_cause(error)}"
            ) from None
        _check_host_key(hop, transport.get_remote_server_key(), known)
        try:
            authenticate(transport, hop, abort)
        except SSH_ERRORS as error:
            raise Refused(f"authentication failed: {ssh_cause(error)}") from None
        transport.set_keepalive(ALIVE_INTERVAL_S)
    except BaseException:
        transport.close()
        raise
    return transport


def dial(destination: Destination, abort: Abort) -> Dialled:
    """A connected, checked and authenticated transport, through the jump hosts (blocking;
    Refused when not)."""
    hops = [*destination.jumps, destination]
    sock = _tcp(hops[0])
    abort.hold(sock)
    made: list[paramiko.Transport] = []
    try:
        link: socket.socket | paramiko.Channel = sock
        for index, hop in enumerate(hops):
            if made:
                link = _through(made[-1], hops[index - 1], hop)
            made.append(_secure(hop, link, abort))
        return Dialled(made[-1], tuple(made[:-1]))
    except BaseException:
        for transport in reversed(made):
            transport.close()
        sock.close()
        raise
