"""Runs whose job still trains on a target: `train` refuses to start another one beside them."""

from __future__ import annotations

import logging

from overbrainer.model.errors import UsageError
from overbrainer.model.job_status import Running
from overbrainer.targets import JobError, LocalJob, job_status
from overbrainer.training.run_store import RunRecord, Runs, RunState

log = logging.getLogger(__name__)


class RunStillTraining(UsageError):
    """A new run would share its target with a run whose job still trains (exit 2)."""


def _job_pid(runs: Runs, record: RunRecord) -> int | None:
    """The recorded job's process group, or the `job.pid` of a run left `preparing`."""
    if record.job is not None:
        return record.job.pid
    if record.state is not RunState.PREPARING:
        return None
    try:
        return int((runs.dir_of(record.id) / "job.pid").read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def _alive(runs: Runs, record: RunRecord, local: bool) -> bool:
    """Whether the run's job is running now: on this machine as its status check says; on a
    remote target as its record says (no connection is made for the check)."""
    if record.state.ended:
        return False
    if not local:
        return record.state is RunState.RUNNING and record.job is not None
    pid = _job_pid(runs, record)
    if pid is None:
        return False
    try:
        return isinstance(job_status(LocalJob(runs.dir_of(record.id), pid)), Running)
    except (OSError, JobError) as error:
        log.debug("cannot check the job of run %s: %s", record.id, error)
        return False


def live_runs(runs: Runs, target: str, local: bool = True) -> list[RunRecord]:
    """The runs on target `target` whose job is still running, newest first (blocking).

    `local`: whether the target is this machine."""
    records = [r for r in runs.list() if r.target == target and _alive(runs, r, local)]
    return records[::-1]


def still_training(live: list[RunRecord], target: str) -> RunStillTraining:
    """The refusal naming the newest live run and how to attach to it or cancel it."""
    newest = live[0].id
    more = f" (and {len(live) - 1} more: see `overbrainer runs ls`)" if len(live) > 1 else ""
    return RunStillTraining(
        f"run {newest} is still training on target `{target}`{more}: follow it with "
        f"`overbrainer train attach {newest}` or cancel it with "
        f"`overbrainer train cancel {newest}`; `overbrainer train --force` starts another "
        "run beside it"
    )


def refuse_if_training(runs: Runs, target: str, local: bool = True) -> None:
    """Raise RunStillTraining when a run of this project still trains on `target` (blocking)."""
    live = live_runs(runs, target, local)
    if live:
        raise still_training(live, target)
