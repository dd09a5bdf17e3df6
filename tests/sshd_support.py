"""A real OpenSSH server on 127.0.0.1 for the tests: its own keys, config, known_hosts, port."""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import attrs

from overbrainer.config.settings import SshClient
from overbrainer.targets.ssh_open import open_ssh
from overbrainer.targets.ssh_session import SshExecutor
from tests.ports import free_port
from tests.real_parts import missing

SSHD = Path("/usr/sbin/sshd")
ALIAS = "ob-test"


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True,
        capture_output=True,
    )


@attrs.define
class Sshd:
    """A running sshd and the client config that reaches it as host `ob-test`."""

    root: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def client_config(self) -> Path:
        """The ssh_config file a client passes with `-F` (OVERBRAINER_SSH_CONFIG)."""
        return self.root / "ssh_config"

    def start(self) -> None:
        """Start sshd in the foreground (-D) and wait until it accepts connections."""
        self.process = subprocess.Popen(
            [str(SSHD), "-D", "-e", "-f", str(self.root / "sshd_config"), "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=open(self.root / "sshd.log", "ab"),  # noqa: SIM115 - sshd keeps it
        )
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                log = (self.root / "sshd.log").read_text()
                raise RuntimeError(f"sshd exited: {log[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        """Stop sshd (open sessions end with it)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None

    def outage(self) -> None:
        """A hard outage: the listener and the sshd processes of every connection killed at
        once; `start()` ends it. The commands the sessions run are left to end on their own
        (killed, a login shell's `pyenv rehash` would leave its lock behind, and every later
        session on the machine would wait on it), as are the target's jobs."""
        assert self.process is not None
        sessions = [pid for pid in _descendants(self.process.pid) if _is_sshd(pid)]
        self.process.kill()
        self.process.wait(timeout=10)
        self.process = None
        for pid in sessions:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def ssh(self, command: str) -> subprocess.CompletedProcess[str]:
        """Run `command` over a fresh connection (for checks from the test's side)."""
        return subprocess.run(
            ["ssh", "-F", str(self.client_config), ALIAS, command],
            capture_output=True,
            text=True,
            timeout=30,
        )


def _descendants(pid: int) -> list[int]:
    """The processes below `pid` (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        below = children.get(todo.pop(), [])
        found += below
        todo += below
    return found


def _is_sshd(pid: int) -> bool:
    """Whether process `pid` is an sshd (`sshd`, `sshd-session`, ...)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().startswith("sshd")
    except OSError:
        return False


def make_sshd(root: Path) -> Sshd:
    """Keys, sshd_config, known_hosts and client config under `root`; sshd not started."""
    if not SSHD.exists() or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        missing("no OpenSSH server here: install openssh-server (/usr/sbin/sshd)")
    root.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # root's sshd needs its privsep dir
    _keygen(root / "host_key")
    _keygen(root / "id_ed25519")
    shutil.copyfile(root / "id_ed25519.pub", root / "authorized_keys")
    port = free_port()
    (root / "sshd_config").write_text(
        f"ListenAddress 127.0.0.1\n"
        f"HostKey {root / 'host_key'}\n"
        f"PidFile {root / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {root / 'authorized_keys'}\n"
        "UsePAM no\n"
        "StrictModes no\n"
        "PasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\n"
        "PubkeyAuthentication yes\n"
        "PermitRootLogin prohibit-password\n"
        "MaxSessions 50\n"
        "MaxStartups 50\n"
        "LogLevel ERROR\n"
    )
    host_key = (root / "host_key.pub").read_text().split()
    (root / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    (root / "ssh_config").write_text(
        f"Host {ALIAS}\n"
        "  HostName 127.0.0.1\n"
        f"  Port {port}\n"
        f"  User {getpass.getuser()}\n"
        f"  IdentityFile {root / 'id_ed25519'}\n"
        "  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {root / 'known_hosts'}\n"
        "  GlobalKnownHostsFile /dev/null\n"
        "  LogLevel ERROR\n"
    )
    for key in ("id_ed25519", "host_key"):
        (root / key).chmod(0o600)
    return Sshd(root, port)


def connected(
    sshd: Sshd, workdir: Path, client: SshClient
) -> contextlib.AbstractAsyncContextManager[SshExecutor]:
    """An executor for target `box` at the sshd, over `client` (not connected yet)."""
    return open_ssh("box", ALIAS, str(workdir), ssh_config=str(sshd.client_config), client=client)


def fingerprint(public_key: Path) -> str:
    """`ssh-ed25519 SHA256:…` of a public key file, as ssh-keygen prints it."""
    line = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(public_key)], capture_output=True, text=True, check=True
    ).stdout.split()
    return f"ssh-{line[-1].strip('()').lower()} {line[1]}"


def kill_jobs_under(folder: Path) -> None:
    """Kill the process group of every job whose `job.pid` lies under `folder` (test cleanup)."""
    for pid_file in folder.rglob("job.pid"):
        with contextlib.suppress(ValueError, ProcessLookupError, PermissionError):
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)
