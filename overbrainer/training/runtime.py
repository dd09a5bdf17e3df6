"""What a job runs: a nested job's spec (an export or a compare in a run's directory) for its
machine to plan, and a training job's commands on a pod (until the Runpod machine plans them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from overbrainer.config.settings import DEFAULT_RUNPOD_VENV
from overbrainer.targets import (
    CACHE_ENV,
    JOB_ENV,
    SNAPSHOT_REQUEST,
    Command,
    JobPlan,
    JobSpec,
    Machine,
    Target,
    expand_venv,
    native_commands,
    pod_path,
)
from overbrainer.training.axolotl_config import METRICS_FILE
from overbrainer.training.prepare import METRICS_ENV, SNAPSHOT_ENV, job_env

__all__ = ["JobPlan", "JobRequest", "NestedJob", "expand_venv", "nested_spec", "plan_job"]

SECRET_NAMES = ("HF_TOKEN",)
"""The only secret a training job gets."""


@attrs.frozen
class JobRequest:
    """What a job is, whatever its target: its run, commands and caches.

    `secrets` are passed by name only; `home` is the target user's home (None: this user's);
    `extra_env` is added to the job's variables; `tools` is the target's tool cache (the
    llama.cpp of an in-job export), given as OVERBRAINER_CACHE (a container mounts it).
    `workdir` is where a container job runs, relative to the mounted run directory (a native
    job runs where it is spawned).
    """

    run_id: str
    run_dir: str
    cache: str
    commands: Sequence[Command]
    secrets: Sequence[str] = ()
    home: str | None = None
    extra_env: Mapping[str, str] | None = None
    tools: str | None = None
    workdir: str = ""


def plan_job(target: Target, request: JobRequest) -> JobPlan:
    """A training job's commands on a pod (§4.2): native, the image's venv, and the
    environment its bootstrap wrote (the Runpod machine's `plan` once it opens per job)."""
    env = {**job_env(request.run_dir), **(request.extra_env or {})}
    if request.tools is not None:
        env[CACHE_ENV] = request.tools
    venv = target.venv or DEFAULT_RUNPOD_VENV
    return JobPlan(native_commands(request.commands, env, venv=venv, env_file=pod_path(JOB_ENV)))


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
