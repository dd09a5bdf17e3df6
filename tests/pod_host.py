"""Pods of the Runpod fake that boot for real on this machine.

A created pod runs its create body's `args` string exactly, through `sh -c` (the bootstrap,
then the watchdog), with the body's environment and Runpod's own `RUNPOD_API_KEY` and
`RUNPOD_POD_ID`. Its stdout and stderr are its container log (`console.log`), which the fake
serves as Runpod's `GET /pods/{id}/logs` does: the host-key line the bootstrap prints reaches
the client the way it does on Runpod. The bootstrap's system paths are moved under the pod's
own directory (`OVERBRAINER_ETC_DIR`, `…_SSH_ETC_DIR`, `…_ROOT_HOME`), and its
`service ssh restart` starts an unprivileged sshd of the pod's own on the port the fake gave
the pod (`ssh.direct`), with the host key the bootstrap made and the authorized key it
installed. The pod's `/` is `root` (the client's `OVERBRAINER_TEST_POD_ROOT`), so the run
directories live under `root/workspace/overbrainer`. Deleting a pod kills its processes.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import trio

from tests.ports import free_port
from tests.sshd_support import SSHD


@attrs.define
class PodBox:
    """One booted pod: its directory, sshd port and bootstrap process."""

    directory: Path
    port: int
    process: trio.Process | None = None


@attrs.define
class PodHost:
    """Where the fake's pods run: `root` stands for their `/` (shared, like one machine)."""

    root: Path
    nursery: trio.Nursery
    boots: bool = True
    """False: pods never start their bootstrap (they never become reachable)."""
    interval: str = "60"
    """The watchdog's INTERVAL on the pods."""
    boxes: dict[str, PodBox] = attrs.field(factory=dict)

    def place(self, pod_id: str, body: dict[str, Any], key: str) -> Any:
        """Boot a created pod; its `ssh.direct` endpoint."""
        box = PodBox(self.root / "pods" / pod_id, free_port())
        box.directory.mkdir(parents=True)
        self.boxes[pod_id] = box
        if self.boots:
            self.nursery.start_soon(self._boot, pod_id, box, body, key)
        user = getpass.getuser()
        return {
            "host": "127.0.0.1",
            "port": box.port,
            "username": user,
            "command": f"ssh {user}@127.0.0.1 -p {box.port}",
        }

    def _sshd_config(self, box: Path, port: int) -> Path:
        path = box / "sshd_config"
        path.write_text(
            "ListenAddress 127.0.0.1\n"
            f"Port {port}\n"
            f"HostKey {box / 'etc' / 'ssh' / 'ssh_host_ed25519_key'}\n"
            f"PidFile {box / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {box / 'root' / '.ssh' / 'authorized_keys'}\n"
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
        return path

    def console(self, pod_id: str) -> list[str]:
        """The whole lines a pod has printed so far (none once it is removed)."""
        box = self.boxes.get(pod_id)
        if box is None:
            return []
        try:
            data = (box.directory / "console.log").read_bytes()
        except FileNotFoundError:
            return []
        return data.decode("utf-8", "replace").split("\n")[:-1]  # the last one is unfinished

    async def _boot(self, pod_id: str, box: PodBox, body: dict[str, Any], key: str) -> None:
        folder = box.directory
        config = self._sshd_config(folder, box.port)
        env = dict(body["env"])
        env |= {
            "PATH": os.environ["PATH"],
            "HOME": str(folder / "root"),
            "RUNPOD_API_KEY": key,
            "RUNPOD_POD_ID": pod_id,
            "INTERVAL": self.interval,
            "PROBE_WAIT": "0.2",
            "OVERBRAINER_ETC_DIR": str(self.root / "etc" / "overbrainer"),
            "OVERBRAINER_SSH_ETC_DIR": str(folder / "etc" / "ssh"),
            "OVERBRAINER_ROOT_HOME": str(folder / "root"),
            "OVERBRAINER_CUDA_ENV": str(folder / "no-cuda-env.sh"),
            "OVERBRAINER_SSHD_RESTART": f"{SSHD} -f {config} -E {folder / 'sshd.log'}",
        }
        with open(folder / "console.log", "wb") as console:  # noqa: ASYNC230 - a test's file
            # Exactly the string Runpod is given, split as a shell splits it.
            box.process = await trio.lowlevel.open_process(
                ["sh", "-c", body["args"]],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=console,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        await box.process.wait()

    def remove(self, pod_id: str) -> None:
        """Stop everything of a deleted pod: watchdog, sshd, and the jobs it ran."""
        box = self.boxes.pop(pod_id, None)
        if box is None:
            return
        if box.process is not None:
            _kill_group(box.process.pid)
        pid = _read_pid(box.directory / "sshd.pid")
        if pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        for job in (self.root / "workspace").rglob("job.pid"):
            job_pid = _read_pid(job)
            if job_pid is not None:
                _kill_group(job_pid)

    def close(self) -> None:
        """Remove every pod still up (the test's end)."""
        for pod_id in list(self.boxes):
            self.remove(pod_id)


def _read_pid(path: Path) -> int | None:
    try:
        value = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    return value if value > 1 else None


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


@contextlib.asynccontextmanager
async def open_pod_host(root: Path, **options: Any) -> AsyncIterator[PodHost]:
    """A pod host for the block; every pod left is killed at its end."""
    async with trio.open_nursery() as nursery:
        host = PodHost(root, nursery, **options)
        try:
            yield host
        finally:
            host.close()
            nursery.cancel_scope.cancel()
