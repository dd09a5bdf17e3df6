"""The local jobs an executor started are its own to reap: no registry lives in the module."""

from __future__ import annotations

from pathlib import Path

import trio

from overbrainer.model.job_status import Exited
from overbrainer.targets.executor import JobRef
from overbrainer.targets.local_executor import LocalExecutor


def _state(pid: int) -> str | None:
    """The process's state letter from /proc (`Z`: a zombie), None once it is reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return None
    return stat.rpartition(b")")[2].split()[0].decode()


async def _ended(directory: Path, ref: JobRef) -> None:
    with trio.fail_after(10):
        while _state(ref.group) not in ("Z", None):  # noqa: ASYNC110 - a process has no event
            await trio.sleep(0.02)
    assert (directory / "exit_code").read_text().strip() == "0"


async def test_only_the_executor_that_started_a_job_reaps_it(tmp_path: Path) -> None:
    owner, other = LocalExecutor(tmp_path), LocalExecutor(tmp_path)
    assert owner.children is not other.children
    run_dir = tmp_path / "r1"
    run_dir.mkdir()
    ref = await owner.spawn(str(run_dir), "true", {})
    await _ended(run_dir, ref)
    # Another executor sees the job ended (a zombie leader is not alive) but cannot reap it.
    assert await other.status(ref) == Exited(0)
    assert _state(ref.group) == "Z"
    assert await owner.status(ref) == Exited(0)
    assert _state(ref.group) is None  # reaped by its owner
