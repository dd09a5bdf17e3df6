"""`RayMachine`: one job submitted to a Ray cluster's Jobs API (issue 42's `Machine`).

The run's inputs travel in the job's runtime env (a working_dir package); the entrypoint puts
them in R, the job's directory on the storage every node and overbrainer see, and runs the
job there. Following reads R through the storage and the job's state from the Jobs API; stop
and cancel go through the Jobs API; the job is identified by its submission ID (`ref`).
"""

from __future__ import annotations

import logging
import secrets as random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import trio

from overbrainer.model.errors import OverbrainerError
from overbrainer.targets.executor import JobRef
from overbrainer.targets.job_script import PREPENDED, native_commands, quote
from overbrainer.targets.machine import (
    Ended,
    Ending,
    JobPlan,
    JobSpec,
    Limit,
    Sampler,
)
from overbrainer.targets.ray.followed import RayFollowedJob, submission_of
from overbrainer.targets.ray.job_package import (
    ENTRYPOINT,
    package_files,
    read_tree,
    with_ray_keys,
)
from overbrainer.targets.ray.jobs_api import JobsApi, Submission, package
from overbrainer.targets.ray.settings import RayTarget
from overbrainer.targets.ray.storage import Storage

log = logging.getLogger(__name__)

END_BOUND = 60.0
"""Seconds `end` may take to stop a job left running (a stop, then Ray's SIGKILL grace)."""
RUN_METADATA = "overbrainer_run"


def submission_id(run_id: str) -> str:
    """A new submission ID for the run: unique on a cluster other projects share too."""
    return f"overbrainer-{run_id}-{random.token_hex(4)}"


def train_config(spec: JobSpec) -> str | None:
    """The Axolotl config the job trains from: the YAML file after `train` in a command
    (`axolotl train CONFIG`, or a wrapper's `python -m wrapper train CONFIG`), if it trains."""
    for command in spec.commands:
        args = command.args
        for i, arg in enumerate(args[:-1]):
            if arg == "train" and args[i + 1].endswith((".yaml", ".yml")):
                return args[i + 1]
    return None


def worker_env(env: Mapping[str, str]) -> dict[str, str]:
    """The job's variables for every process Ray starts for it: Ray Train's workers do not
    inherit the entrypoint's shell, and Axolotl loads the metrics plugin there (PYTHONPATH) and
    the plugin writes where METRICS_ENV says. PATH and PYTHONPATH keep the node's value after
    ours (Ray expands `${NAME}` from the node's environment)."""
    return {
        name: f"{value}:${{{name}}}" if name in PREPENDED else value for name, value in env.items()
    }


class RayMachine:
    """A Ray cluster, for one job: its Jobs API client and the storage its jobs write to."""

    def __init__(
        self,
        target: RayTarget,
        api: JobsApi,
        storage: Storage,
        job: JobRef | None = None,
        local: Path | None = None,
    ) -> None:
        self._target = target
        self._api = api
        self._storage = storage
        self._job = job
        self.local = local
        """The job's local directory (`runs/<id>`), where the cluster's state of it is kept."""
        self._run_id: str | None = None
        self._config: str | None = None
        self._env: dict[str, str] = {}
        self._inputs: dict[str, bytes] = {}

    @property
    def workdir(self) -> str:
        """The storage root: R is `<storage>/<run id>`."""
        return self._storage.root

    @property
    def here(self) -> bool:
        """Never: the job's files are on the storage, the inputs travel in its package."""
        return False

    @property
    def holds_runs(self) -> bool:
        """The storage keeps the runs."""
        return True

    @property
    def home(self) -> str | None:
        """None: the job runs in the cluster's own environment, with no venv of ours."""
        return None

    def job_root(self, root: str) -> str:
        """R as the nodes see it: under `node_storage` (default: the storage path itself)."""
        base = (self._target.node_storage or self._storage.path(self._storage.root)).rstrip("/")
        relative = self._storage.relative(root)
        return f"{base}/{relative}" if relative else base

    def plan(self, spec: JobSpec) -> JobPlan:
        """The job's commands run natively in the cluster's environment (the nodes' PATH),
        in R (or its `workdir`); training's Axolotl config gets the Ray keys when staged."""
        self._run_id = spec.run_id
        self._config = train_config(spec)
        env = dict(spec.env)
        if spec.tools is not None:
            env["OVERBRAINER_CACHE"] = spec.tools
        self._env = env
        commands = native_commands(spec.commands, env)
        if spec.workdir:
            commands = f"cd {quote(spec.workdir)} && {commands}"
        return JobPlan(commands)

    async def stage(self, local: Path, root: str, skip: Sequence[str] = ()) -> None:
        """Read the job's local tree for its package (it goes with `start`)."""
        inputs = await trio.to_thread.run_sync(read_tree, local, skip)
        if self._config is not None and self._config in inputs:
            inputs[self._config] = with_ray_keys(inputs[self._config], self._target)
        self._inputs = inputs

    async def start(self, root: str, plan: JobPlan, secrets: Mapping[str, str]) -> JobRef:
        """Upload the package and submit the job under a new submission ID."""
        run_id = self._run_id or root.rstrip("/").rsplit("/", 1)[-1]
        sid = submission_id(run_id)
        files = package_files(self._inputs, plan.commands, self.job_root(root), secrets)
        archive = package(files, salt=sid)
        # A big dataset takes a while to reach the head: say so before the upload, not after.
        size = len(archive.data)
        shown = f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size / 1e3:.0f} kB"
        log.info("ray: uploading the job's files to the cluster (%s), then submitting it", shown)
        uri = await self._api.upload(archive)
        extras = self._target.runtime_env
        runtime_env: dict[str, object] = {
            "working_dir": uri,
            "env_vars": {**worker_env(self._env), **extras.env_vars},
        }
        if extras.pip:
            runtime_env["pip"] = list(extras.pip)
        if extras.worker_process_setup_hook:
            runtime_env["worker_process_setup_hook"] = extras.worker_process_setup_hook
        await self._api.submit(
            Submission(ENTRYPOINT, sid, runtime_env, metadata={RUN_METADATA: run_id})
        )
        self._job = JobRef(root, None, ref=sid)
        return self._job

    def followed(self, job: JobRef) -> RayFollowedJob:
        """The job as the follow loop reads it."""
        return RayFollowedJob(self._api, self._storage, job, self.local)

    async def request(self, job: JobRef, name: str, content: str) -> None:
        """Write run file `name` in R (the job polls it there)."""
        await self._storage.write(self._storage.path(job.path(name)), content.encode())

    async def exists(self, path: str) -> bool:
        """Whether `path` (under the storage) exists."""
        return await self._storage.exists(self._storage.path(path))

    async def digests(self, root: str, entries: Sequence[str]) -> dict[str, str]:
        """SHA-256 of the files under the existing `entries` of `root` on the storage."""
        return await self._storage.digests(self._storage.path(root), entries)

    async def remove(self, root: str, entries: Sequence[str]) -> None:
        """Remove `entries` of `root` from the storage (what the job's entrypoint copied)."""
        await self._storage.remove(self._storage.path(root), entries)

    async def fetch(
        self, job: JobRef, local: Path, entries: Sequence[str], exclude: Sequence[str] = ()
    ) -> None:
        """Copy entries of R from the storage into `local`, each file's size checked."""
        await self._storage.fetch(self._storage.path(job.dir), local, entries, exclude)

    def sampler(self, job: JobRef) -> Sampler | None:
        """None: the cluster's nodes are not ours to probe."""
        return None

    async def guard(self, tripped: Callable[[Limit], None]) -> None:
        """None: the cluster has its own limits."""

    async def end(self, ended: Ended) -> str | None:
        """A job left running by an ending that is not its own (Ctrl-C before it was followed,
        a lost follow) is stopped; a finished one stays in the cluster's job list."""
        if self._job is None or ended.ending is Ending.DONE:
            return None
        with trio.move_on_after(END_BOUND, shield=True) as bound:
            try:
                await self.followed(self._job).cancel()
            except (OSError, OverbrainerError) as error:
                return f"the Ray job {submission_of(self._job)} may still run: {error}"
        if bound.cancelled_caught:
            return f"the Ray job {submission_of(self._job)} did not stop within {END_BOUND:g}s"
        return None

    async def detach(self) -> None:
        """Nothing: the job runs on in the cluster; `train attach` reaches it again."""
