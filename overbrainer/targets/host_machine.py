"""The machine of a local or SSH target: an executor that exists already, no guards.

Its jobs run natively (the target's venv first on PATH) or in the target's container; what
differs between here and over SSH is the executor's (`here`: nothing to stage or fetch).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

from overbrainer.config.settings import DEFAULT_IMAGE, Runtime
from overbrainer.config.settings import Engine as ConfigEngine
from overbrainer.model.errors import OverbrainerError
from overbrainer.system.sampler import LocalSampler
from overbrainer.targets.executor import Executor, JobRef, remove_container
from overbrainer.targets.export_job_script import CACHE_ENV
from overbrainer.targets.host_settings import HostSettings
from overbrainer.targets.job_script import (
    ContainerJob,
    Engine,
    container_commands,
    container_name,
    native_commands,
)
from overbrainer.targets.machine import Ended, FollowedJob, JobPlan, JobSpec, Limit, Sampler
from overbrainer.targets.probe_sampler import ProbeSampler
from overbrainer.targets.shell_machine import ShellMachine

CONTAINER_ROOT = "/workspace/run"
"""The job's directory as a container job sees it."""


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
class HostRuntime:
    """How a local or SSH target runs its jobs: natively (a venv) or in a container."""

    runtime: Runtime
    engine: ConfigEngine | None = None
    image: str | None = None
    venv: str | None = None
    gpus: str = "auto"
    user: str = "auto"


def host_runtime(target: HostSettings) -> HostRuntime:
    """How a local or SSH target runs its jobs."""
    return HostRuntime(
        target.runtime, target.engine, target.image, target.venv, target.gpus, target.container_user
    )


class HostMachine(ShellMachine):
    """A local or SSH target opened for one job: its executor, and how its jobs are wrapped.

    `removes_container`: the job's container is force-removed whenever the job ends (a
    compare's llama-server runs in it); otherwise a cancel stops it and `--rm` removes it.
    """

    def __init__(
        self, executor: Executor, setup: HostRuntime, *, removes_container: bool = False
    ) -> None:
        self.executor = executor
        self.setup = setup
        self.removes_container = removes_container
        self.job: JobRef | None = None

    @property
    def workdir(self) -> str:
        """The directory that holds job directories (the project's `runs/` here)."""
        return self.executor.workdir

    @property
    def here(self) -> bool:
        """Whether the job's directory is its local one (the local kind)."""
        return self.executor.local

    @property
    def home(self) -> str | None:
        """The SSH user's home; None here (this user's)."""
        return None if self.executor.local else self.executor.home

    @property
    def holds_runs(self) -> bool:
        """The host keeps the runs trained on it."""
        return True

    def job_root(self, root: str) -> str:
        """R itself natively, `/workspace/run` in a container."""
        return CONTAINER_ROOT if self.setup.runtime is Runtime.DOCKER else root

    def plan(self, spec: JobSpec) -> JobPlan:
        """The job's commands natively (the venv first) or in the target's container (§4.2)."""
        env = dict(spec.env)
        if self.setup.runtime is Runtime.NATIVE:
            venv = expand_venv(self.setup.venv, self.home)
            if spec.venv_on_path and venv is not None:
                env["PATH"] = f"{venv.rstrip('/')}/bin"
            if spec.tools is not None:
                env[CACHE_ENV] = spec.tools
            return JobPlan(native_commands(spec.commands, env, venv=venv))
        engine = Engine((self.setup.engine or ConfigEngine.DOCKER).value)
        text = container_commands(
            ContainerJob(
                engine,
                run_id=spec.run_id,
                run_dir=spec.root,
                cache=spec.cache,
                image=self.setup.image or DEFAULT_IMAGE,
                commands=spec.commands,
                env=env,
                secrets=spec.secrets,
                tools=spec.tools,
                workdir=spec.workdir,
                gpus=self.setup.gpus,
                user=self.setup.user,
            )
        )
        return JobPlan(text, (engine, container_name(spec.run_id)))

    async def stage(self, local: Path, root: str, skip: Sequence[str] = ()) -> None:
        """Upload `local` to `root` over SSH; nothing here."""
        if not self.here:
            await super().stage(local, root, skip)

    async def start(self, root: str, plan: JobPlan, secrets: Mapping[str, str]) -> JobRef:
        """Spawn the job detached in `root`; its process group (and container)."""
        spawned = await self.executor.spawn(root, plan.commands, secrets)
        self.job = attrs.evolve(spawned, container=plan.container)
        return self.job

    def followed(self, job: JobRef) -> FollowedJob:
        """The job through the executor (kept: a compare's container is removed at the end)."""
        self.job = job
        return super().followed(job)

    async def remove(self, root: str, entries: Sequence[str]) -> None:
        """Remove `entries` of `root` over SSH (best effort); nothing here."""
        if not self.here:
            await super().remove(root, entries)

    async def fetch(
        self, job: JobRef, local: Path, entries: Sequence[str], exclude: Sequence[str] = ()
    ) -> None:
        """Manifest, download, then check every file over SSH; nothing here."""
        if not self.here:
            await super().fetch(job, local, entries, exclude)

    def sampler(self, job: JobRef) -> Sampler | None:
        """psutil/NVML here, the probe script over SSH."""
        if self.here:
            return LocalSampler(Path(job.dir))
        return ProbeSampler(self.executor, job.dir)

    async def guard(self, tripped: Callable[[Limit], None]) -> None:
        """No guards: a machine that exists already costs nothing more while it runs."""

    async def end(self, ended: Ended) -> str | None:
        """Remove the job's container when it is one this job removes; nothing else to end."""
        if self.removes_container and self.job is not None:
            await remove_container(self.executor, self.job)
        return None

    async def detach(self) -> OverbrainerError | None:
        """Nothing to keep armed: leaving the machine closes the connection; the job kind's
        words."""
        return None
