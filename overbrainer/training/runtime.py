"""What a job runs: a nested job's spec (an export or a compare in a run's directory) for its
machine to plan."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from overbrainer.targets import (
    CACHE_ENV,
    SNAPSHOT_REQUEST,
    Command,
    JobPlan,
    JobSpec,
    Machine,
    expand_venv,
)
from overbrainer.training.axolotl_config import METRICS_FILE
from overbrainer.training.prepare import METRICS_ENV, SNAPSHOT_ENV, job_env

__all__ = ["JobPlan", "NestedJob", "expand_venv", "nested_spec"]

SECRET_NAMES = ("HF_TOKEN",)
"""The only secret a training job gets."""


@attrs.frozen
class NestedJob:
    """A job that works in `folder` below a run's directory on the target (an export, a
    compare): its ID among the run's, its one command, its variables, the target's tool cache."""

    run_id: str
    run_dir: str
    job_id: str
    folder: str
    command: Command
    env: Mapping[str, str]
    tools: str


def nested_spec(machine: Machine, job: NestedJob) -> JobSpec:
    """The nested job as its machine plans it, like a training job of the run: natively in
    place; in a container named `overbrainer-<run>-<job>` that mounts the run directory and the
    tool cache and works in `folder` there. Its metrics and snapshot files are in `folder`,
    never the run's."""
    folder = job.folder.strip("/")
    root = machine.job_root(job.run_dir).rstrip("/")
    extra = {name: value for name, value in job.env.items() if name != CACHE_ENV}
    extra[METRICS_ENV] = f"{root}/{folder}/{METRICS_FILE}"
    extra[SNAPSHOT_ENV] = f"{root}/{folder}/{SNAPSHOT_REQUEST}"
    return JobSpec(
        run_id=f"{job.run_id}-{job.job_id}",
        root=job.run_dir,
        cache=f"{machine.workdir.rstrip('/')}/.hf-cache",
        commands=[job.command],
        env={**job_env(machine.job_root(job.run_dir)), **extra},
        tools=job.tools,
        workdir=folder,
    )
