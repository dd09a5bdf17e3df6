"""Detached jobs on this machine: start, status, cancel, and tailing of their files."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path

import attrs
import trio

from overbrainer.model.job_status import Cancelled, Exited, JobStatus, Lost, Running
from overbrainer.storage import write_atomic
from overbrainer.targets.executor import READ_LIMIT, JobError
from overbrainer.targets.job_script import CANCEL_GRACE_S, JOB_FILES, Engine, wrap

log = logging.getLogger(__name__)

REAP_EVERY_S = 0.15
"""How often status and cancel reap exited children, so a zombie leader never looks alive."""
DROPPED_ENV_PREFIXES = ("OVERBRAINER_", "VAULT_")


class Children:
    """The jobs one executor started, kept so their exits are reaped (a zombie leader never
    looks alive, and Popen never warns). Owned by the executor, never by the module; used from
    worker threads, hence the lock. A job still running when its owner goes is left to the
    standard library's own reaping of running Popen children."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: dict[int, subprocess.Popen[bytes]] = {}

    def add(self, process: subprocess.Popen[bytes]) -> None:
        """Keep a started job until its exit is reaped."""
        with self._lock:
            self._started[process.pid] = process

    def reap(self) -> None:
        """Collect the exit of every kept job that has ended."""
        with self._lock:
            for pid, process in list(self._started.items()):
                if process.poll() is not None:
                    del self._started[pid]


@attrs.frozen
class LocalJob:
    """A started job: its run directory and the PID that leads its process group."""

    dir: Path
    pid: int


def job_environment(
    secrets: Mapping[str, str], base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """This process's environment without OVERBRAINER_*/VAULT_* variables, plus `secrets`."""
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if not k.startswith(DROPPED_ENV_PREFIXES)}
    env.update(secrets)
    return env


def _start(
    run_dir: Path, commands: str, env: dict[str, str], children: Children | None
) -> LocalJob:
    for name in JOB_FILES:
        (run_dir / name).unlink(missing_ok=True)
    with open(run_dir / "job.log", "wb") as output, open(os.devnull, "rb") as stdin:
        process = subprocess.Popen(
            ["sh", "-c", wrap(commands)],
            cwd=run_dir,
            stdin=stdin,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    if children is not None:
        children.add(process)
    if process.pid <= 1:
        raise JobError(f"refusing job PID {process.pid}")
    return LocalJob(run_dir, process.pid)


async def start_job(
    run_dir: Path,
    commands: str,
    secrets: Mapping[str, str] | None = None,
    children: Children | None = None,
) -> LocalJob:
    """Start `commands` in the §4.2 wrapper with `sh`, detached in its own process group;
    `children` (its executor's) keeps it for reaping."""
    env = job_environment(secrets or {})
    try:
        return await trio.to_thread.run_sync(_start, run_dir, commands, env, children)
    except OSError as error:
        raise JobError(f"cannot start the job in {run_dir}: {error.strerror or error}") from None


def group_alive(pid: int, children: Children | None = None) -> bool:
    """Whether any process of group `pid` is alive (after reaping `children` that exited).

    Zombies do not count: where PID 1 does not reap orphans (some containers), a killed job
    leaves zombie members that `kill -0` still finds.
    """
    if children is not None:
        children.reap()
    try:
        os.killpg(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    members = _group_states(pid)
    return members is None or any(state != "Z" for state in members)


def _group_states(pgid: int) -> list[str] | None:
    """The states of group `pgid`'s processes from /proc; None where /proc cannot tell."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    states = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            continue
        fields = stat.rpartition(b")")[2].split()
        if len(fields) >= 3 and fields[2] == str(pgid).encode():
            states.append(fields[0].decode("ascii", "replace"))
    return states or None


def job_status(job: LocalJob, children: Children | None = None) -> JobStatus:
    """The job's status from its group and marker files, as §4.3's script decides."""
    if job.pid <= 1:
        raise JobError(f"refusing job PID {job.pid}")
    if not job.dir.is_dir():
        return Lost()
    alive = group_alive(job.pid, children)
    if (job.dir / "cancelled").exists():
        return Cancelled()
    if (job.dir / "cancelling").exists():
        return Running() if alive else Cancelled()
    try:
        text = (job.dir / "exit_code").read_text().strip()
    except FileNotFoundError:
        return Running() if alive else Lost()
    except OSError:
        return Lost()
    try:
        return Exited(int(text))
    except ValueError:
        return Lost()


async def status(job: LocalJob, children: Children | None = None) -> JobStatus:
    """The job's status (blocking file checks run off the Trio thread)."""
    return await trio.to_thread.run_sync(job_status, job, children)


async def _wait_gone(pid: int, seconds: float, children: Children | None) -> bool:
    # Each check scans /proc (every process's stat file): off the Trio thread.
    alive = functools.partial(trio.to_thread.run_sync, group_alive, pid, children)
    with trio.move_on_after(seconds):
        while await alive():  # noqa: ASYNC110 - a process group has no event to wait on
            await trio.sleep(REAP_EVERY_S)
        return True
    return not await alive()


async def cancel(
    job: LocalJob,
    container: tuple[Engine, str] | None = None,
    grace: float = CANCEL_GRACE_S,
    children: Children | None = None,
) -> None:
    """Stop the job's group: TERM, KILL after `grace` (10) s, then mark it `cancelled` (§4.4)."""
    if job.pid <= 1:
        raise JobError(f"refusing job PID {job.pid}")
    if not job.dir.is_dir():
        raise JobError(f"{job.dir} does not exist")
    if (job.dir / "exit_code").exists() or (job.dir / "cancelled").exists():
        return
    await trio.to_thread.run_sync(write_atomic, job.dir / "cancelling")
    if container is not None:
        engine, name = container
        with trio.move_on_after(40):
            await trio.run_process(
                [engine.value, "stop", "-t", "30", name],
                check=False,
                capture_stdout=True,
                capture_stderr=True,
            )
    _signal(job.pid, signal.SIGTERM)
    if not await _wait_gone(job.pid, grace, children):
        _signal(job.pid, signal.SIGKILL)
        if not await _wait_gone(job.pid, grace, children):
            raise JobError(
                f"process group {job.pid} is still present after SIGKILL (its leader may be "
                "waiting for its parent process to reap it); the job stays marked cancelling, "
                "retry the cancel"
            )
    await trio.to_thread.run_sync(write_atomic, job.dir / "cancelled")


def _signal(pid: int, number: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, number)


def read_from(path: Path, offset: int, limit: int = READ_LIMIT) -> bytes:
    """Up to `limit` bytes of `path` from `offset`; a missing file reads as empty."""
    try:
        with open(path, "rb") as file:
            file.seek(offset)
            return file.read(limit)
    except FileNotFoundError:
        return b""


def split_lines(data: bytes, limit: int = READ_LIMIT) -> tuple[list[str], int]:
    """Complete lines of `data` (split on \\n or \\r, empty ones dropped) and the bytes used.

    A trailing fragment is left for the next read, unless a full read of `limit` bytes has no
    terminator at all: then it is one line, cut at its last complete UTF-8 character.
    """
    end = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
    if end == 0:
        if len(data) < limit:
            return [], 0
        cut = _utf8_boundary(data)
        return [data[:cut].decode("utf-8", "replace")], cut
    text = data[:end].replace(b"\r", b"\n")
    lines = [part.decode("utf-8", "replace") for part in text.split(b"\n") if part]
    return lines, end


def _utf8_boundary(data: bytes) -> int:
    cut = len(data)
    back = 0
    while back < 4 and cut - back - 1 >= 0 and data[cut - back - 1] & 0xC0 == 0x80:
        back += 1
    lead_at = cut - back - 1
    if lead_at < 0:
        return cut
    lead = data[lead_at]
    need = 1 if lead < 0x80 else 2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4
    if lead >= 0x80 and back + 1 < need:
        return lead_at or cut
    return cut


@attrs.frozen
class LocalRunJob:
    """A local job as the follow loop sees it: its files, status and cancel, off the event loop."""

    job: LocalJob
    container: tuple[Engine, str] | None = None
    children: Children | None = None

    async def read_from(self, name: str, offset: int, limit: int) -> bytes:
        """Bytes of run file `name` from `offset`; empty when it does not exist."""
        return await trio.to_thread.run_sync(read_from, self.job.dir / name, offset, limit)

    async def status(self) -> JobStatus:
        """The job's status now."""
        return await status(self.job, self.children)

    async def exists(self, name: str) -> bool:
        """Whether run file `name` exists."""
        return await trio.to_thread.run_sync((self.job.dir / name).exists)

    async def cancel(self) -> None:
        """TERM the group, KILL it after 10 s, mark it cancelled."""
        await cancel(self.job, self.container, children=self.children)
