"""What a training job runs on a local or SSH target: native or container commands."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import attrs

from overbrainer.config.container import GPUS_AUTO, USER_AUTO
from overbrainer.config.settings import (
    DEFAULT_IMAGE,
    DEFAULT_RUNPOD_VENV,
    LocalTarget,
    Runtime,
    SshTarget,
    Target,
)
from overbrainer.config.settings import Engine as ConfigEngine
from overbrainer.targets import (
    CACHE_ENV,
    JOB_ENV,
    SNAPSHOT_REQUEST,
    Command,
    ContainerJob,
    Engine,
    Executor,
    JobSpec,
    Machine,
    container_commands,
    container_name,
    kind_of,
    native_commands,
    pod_path,
)
from overbrainer.training.axolotl_config import METRICS_FILE
from overbrainer.training.prepare import METRICS_ENV, SNAPSHOT_ENV, job_env

CONTAINER_ROOT = "/workspace/run"
"""The run directory as a container job sees it."""
SECRET_NAMES = ("HF_TOKEN",)
"""The only secret a training job gets."""


@attrs.frozen
class JobPlan:
    """The commands of one job (inside the §4.2 wrapper) and its container, if any."""

    commands: str
    container: tuple[Engine, str] | None = None


def job_root(target: Target, run_dir: str) -> str:
    """The run directory as the job sees it: itself natively, `/workspace/run` in a container."""
    return CONTAINER_ROOT if kind_of(target).runtime(target) is Runtime.DOCKER else run_dir


def expand_venv(venv: str | None, home: str | None = None) -> str | None:
    """A venv path with `~/` expanded to `home` (this user's home when None)."""
    if venv is None:
        return None
    if home is None:
        return os.path.expanduser(venv)
    if venv == "~" or venv.startswith("~/"):
        return home.rstrip("/") + venv[1:]
    return venv


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
    """The job's commands for the target's runtime (§4.2)."""
    run_id, run_dir, cache, commands = (
        request.run_id,
        request.run_dir,
        request.cache,
        request.commands,
    )
    secrets, home, extra_env, tools = (
        request.secrets,
        request.home,
        request.extra_env,
        request.tools,
    )
    workdir = request.workdir
    env = {**job_env(job_root(target, run_dir)), **(extra_env or {})}
    kind = kind_of(target)
    native = kind.runtime(target) is Runtime.NATIVE
    if tools is not None and native:
        env[CACHE_ENV] = tools
    if kind.makes_pod:
        # On a pod: native, the image's venv, and the environment its bootstrap wrote.
        venv = target.venv or DEFAULT_RUNPOD_VENV
        return JobPlan(native_commands(commands, env, venv=venv, env_file=pod_path(JOB_ENV)))
    if native:
        return JobPlan(native_commands(commands, env, venv=expand_venv(target.venv, home)))
    engine = Engine((kind.engine(target) or ConfigEngine.DOCKER).value)
    gpus, user = _container_settings(target)
    text = container_commands(
        ContainerJob(
            engine,
            run_id=run_id,
            run_dir=run_dir,
            cache=cache,
            image=target.image or DEFAULT_IMAGE,
            commands=commands,
            env=env,
            secrets=secrets,
            tools=tools,
            workdir=workdir,
            gpus=gpus,
            user=user,
        )
    )
    return JobPlan(text, (engine, container_name(run_id)))


def _container_settings(target: Target) -> tuple[str, str]:
    """The target's `gpus` and `container_user` (their defaults for a kind without them)."""
    if isinstance(target, LocalTarget | SshTarget):
        return target.gpus, target.container_user
    return GPUS_AUTO, USER_AUTO


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


def plan_nested_job(target: Target, executor: Executor, job: NestedJob) -> JobPlan:
    """The nested job's commands, planned by `plan_job` as a training job of the run: natively
    in place (a venv's `bin` first on PATH); in a container named `overbrainer-<run>-<job>`
    that mounts the run directory and the tool cache and works in `folder` there. Its metrics
    and snapshot files are in `folder`, never the run's."""
    home = None if executor.local else executor.home
    folder = job.folder.strip("/")
    root = job_root(target, job.run_dir).rstrip("/")
    extra = {name: value for name, value in job.env.items() if name != CACHE_ENV}
    extra[METRICS_ENV] = f"{root}/{folder}/{METRICS_FILE}"
    extra[SNAPSHOT_ENV] = f"{root}/{folder}/{SNAPSHOT_REQUEST}"
    return plan_job(
        target,
        JobRequest(
            run_id=f"{job.run_id}-{job.job_id}",
            run_dir=job.run_dir,
            cache=f"{executor.workdir.rstrip('/')}/.hf-cache",
            commands=[job.command],
            home=home,
            extra_env=extra,
            tools=job.tools,
            workdir=folder,
        ),
    )


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
