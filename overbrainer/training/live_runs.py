"""Runs whose job still trains on a target: `train` refuses to start another one beside them."""

from __future__ import annotations

from overbrainer.config.target_settings import TargetSettings
from overbrainer.model.errors import UsageError
from overbrainer.targets import JobRef, kind_of
from overbrainer.training.run_store import RunRecord, Runs, RunState, job_ref


class RunStillTraining(UsageError):
    """A new run would share its target with a run whose job still trains (exit 2)."""


def _alive(runs: Runs, record: RunRecord, target: TargetSettings | None) -> bool:
    """Whether the run's job is running now: as its kind finds it from here (a process group
    here), else as its record says (no connection is made for the check)."""
    if record.state.ended:
        return False
    job_dir = runs.dir_of(record.id)
    if record.job is not None:
        job: JobRef | None = job_ref(record)
    elif record.state is RunState.PREPARING and target is not None:
        job = kind_of(target).left_job(target, job_dir, record.id)
    else:
        job = None
    if job is None:
        return False
    alive = None if target is None else kind_of(target).alive(job_dir, job)
    if alive is None:
        return record.state is RunState.RUNNING and record.job is not None
    return alive


def live_runs(runs: Runs, name: str, target: TargetSettings | None) -> list[RunRecord]:
    """The runs on target `name` (`target`: its settings, None when gone) whose job is still
    running, newest first (blocking)."""
    records = [r for r in runs.list() if r.target == name and _alive(runs, r, target)]
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


def refuse_if_training(runs: Runs, name: str, target: TargetSettings) -> None:
    """Raise RunStillTraining when a run of this project still trains on target `name`
    (blocking)."""
    live = live_runs(runs, name, target)
    if live:
        raise still_training(live, name)
