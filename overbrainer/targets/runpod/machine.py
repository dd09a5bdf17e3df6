"""A Runpod job's machine (§7.5): a pod made for the job, provisioned raced against Ctrl-C,
reached over SSH, its job started in one shield; guarded and ended in machine_end.py."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import NoReturn, TypeVar

import attrs
import trio

from overbrainer.config.secrets import resolve_secret
from overbrainer.config.settings import DEFAULT_RUNPOD_VENV, Settings
from overbrainer.model.errors import EXIT_INTERRUPTED, OverbrainerError, WorkFailed
from overbrainer.model.pod_status import DeleteReason
from overbrainer.targets.executor import JobRef
from overbrainer.targets.export_job_script import CACHE_ENV
from overbrainer.targets.job_script import native_commands
from overbrainer.targets.machine import (
    Ended,
    Ending,
    JobNeeds,
    JobOpening,
    JobPlan,
    JobSpec,
    Limit,
    Sampler,
)
from overbrainer.targets.probe_sampler import ProbeSampler
from overbrainer.targets.runpod.api import RunpodApi, open_runpod
from overbrainer.targets.runpod.cost import arm_cost_cap
from overbrainer.targets.runpod.create_body import JOB_ENV, pod_path, workdir
from overbrainer.targets.runpod.errors import NO_KEY, RunpodKeyError
from overbrainer.targets.runpod.job_sizing import gguf_floor, price_pod
from overbrainer.targets.runpod.machine_end import abandon_pod, end_machine, guard_pod
from overbrainer.targets.runpod.pod_end import clean_up, error_text
from overbrainer.targets.runpod.pod_record import PodState
from overbrainer.targets.runpod.pod_run import JobDirs, JobId, JobPod, new_pod_run, open_pod_ssh
from overbrainer.targets.runpod.provision import provision
from overbrainer.targets.runpod.settings import RunpodTarget
from overbrainer.targets.shell_machine import ShellMachine
from overbrainer.targets.ssh_session import SshExecutor

log = logging.getLogger(__name__)

T = TypeVar("T")

POD_START_BOUND = 1800.0
"""Seconds the shielded connect, cost cap, claim and job start on a new pod may take."""

RecordFail = Callable[[str], Awaitable[None]]
"""Record the pod's job failed with this message."""


class PodInterrupted(OverbrainerError):
    """Ctrl-C stopped the command while a pod is involved: what became of the pod (exit 130)."""

    exit_code = EXIT_INTERRUPTED


NOUNS = {"runs": "run", "compares": "compare", "exports": "export"}


def noun_of(local_root: Path) -> str:
    """What a job is for the user, by its records' folder: `run`, `compare` or `export`."""
    return NOUNS.get(local_root.name, "run")


async def runpod_key(
    settings: Settings, interrupt_race: Callable[..., Awaitable[str | None]]
) -> str | None:
    """The Runpod API key resolved (raced: None when interrupted); RunpodKeyError unset."""
    secret = settings.runpod.api_key
    if secret is None or not secret.text.strip():
        raise RunpodKeyError(NO_KEY)
    return await interrupt_race(lambda: resolve_secret(secret, "runpod.api_key"))


@attrs.define
class PodMachine(ShellMachine):
    """The pod of one job as the lifecycle drives it (targets/machine.py's `Machine`)."""

    run: JobPod
    executor: SshExecutor
    needs: JobNeeds = attrs.field(factory=JobNeeds)

    @property
    def workdir(self) -> str:
        """Where the pod keeps job directories."""
        return workdir(self.run.target)

    @property
    def here(self) -> bool:
        """A pod is never here."""
        return False

    @property
    def home(self) -> str | None:
        """The pod user's home."""
        return self.executor.home

    @property
    def holds_runs(self) -> bool:
        """A pod is made for its one job."""
        return False

    @property
    def keep(self) -> bool:
        """`--keep-pod`: the pod outlives its job."""
        return self.run.keep

    @property
    def subject(self) -> str:
        """`run <id>` (or `compare <id>`, `export <id>`): what messages name."""
        return self.run.subject

    def job_root(self, root: str) -> str:
        """The job sees R as it is."""
        return root

    def plan(self, spec: JobSpec) -> JobPlan:
        """Native, in the image's venv, with the environment the pod's bootstrap wrote."""
        env = dict(spec.env)
        if spec.tools is not None:
            env[CACHE_ENV] = spec.tools
        # A job in its own image (a compare's) has none of the target's venv.
        venv = None if self.needs.image else self.run.target.venv or DEFAULT_RUNPOD_VENV
        return JobPlan(native_commands(spec.commands, env, venv=venv, env_file=pod_path(JOB_ENV)))

    async def start(self, root: str, plan: JobPlan, secrets: Mapping[str, str]) -> JobRef:
        """Spawn the job on the pod."""
        return await self.executor.spawn(root, plan.commands, secrets)

    def sampler(self, job: JobRef) -> Sampler | None:
        """The probe over SSH."""
        return ProbeSampler(self.executor, job.dir)

    async def guard(self, tripped: Callable[[Limit], None]) -> None:
        """The pod's log, spend, disk, lease and deadline, cost cap (machine_end.py)."""
        await guard_pod(self.run, self.executor, tripped)

    async def end(self, ended: Ended) -> str | None:
        """Delete, keep or leave the pod as `ended` says (machine_end.py); a done job's pod
        that did not end is named as such (`not its pod: …`)."""
        left = await end_machine(self.run, self.executor, ended)
        if left is not None and ended.ending is Ending.DONE:
            return f"not its pod: {left}"
        if left is None and ended.ending is Ending.LOST and self.needs.end_if_lost:
            await abandon_pod(self.run)
        return left

    async def detach(self) -> PodInterrupted:
        """Nothing to do: the pod's watchdog and its deadline stay armed on the pod; what the
        command ends with says so (`detached`)."""
        return self.detached()

    def detached(self) -> PodInterrupted:
        """The error of a command stopped while its job goes on on the pod: how to follow it
        again, how to delete the pod, and when the pod's watchdog deletes it."""
        run_id, pod = self.run.run_id, self.run.pod
        head = (
            f"interrupted: run {run_id} keeps running on pod {pod.pod_id} "
            f"(${pod.cost_per_hour or 0.0:.2f}/h); follow it again with "
            f"`overbrainer train attach {run_id}`, or delete the pod with "
            f"`overbrainer pod rm {run_id}`."
        )
        if self.run.keep:
            return PodInterrupted(
                f"{head} The pod is kept with no time limit (--keep-pod): "
                f"`ssh -F runs/{run_id}/ssh/config overbrainer-{run_id}`."
            )
        lease_end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 900))
        return PodInterrupted(
            f"{head} The watchdog deletes the pod {self.run.target.retrieve_grace_minutes} min "
            "after the job ends if its results are not retrieved, and at "
            f"{pod.deadline or lease_end} or 15 min from now (once the lease this command held "
            "runs out), whichever is later."
        )

    async def start_job(self, start: Callable[[], Awaitable[T]], fail: RecordFail) -> T:
        """Shielded (§7.5 steps 7-8): connect, arm the cost cap, reserve R, `start` the job.
        On a failure or a stop, the pod is deleted and the record failed (`fail`)."""
        run, executor = self.run, self.executor
        started: tuple[T] | None = None
        failure = "the job did not start in time"
        with trio.move_on_after(POD_START_BOUND, shield=True):
            try:
                await executor.connect()
                await arm_cost_cap(run.pod, run.remote_dir, executor)
                assert run.keys is not None
                if not await executor.claim(run.remote_dir, run.keys.client_public):
                    raise WorkFailed(f"{run.remote_dir} on the pod belongs to another {run.noun}")
                if not run.stopped():  # a Ctrl-C since the pod was ready: no job, no pod
                    started = (await start(),)
            except (OverbrainerError, OSError) as error:
                failure = error_text(error)
        if started is None and run.stopped():
            await interrupted_before_job(run, fail)
        if started is None:
            left = await clean_up(run, DeleteReason.NOT_READY)
            await fail(failure)
            extra = "; a pod of it may be left: check `overbrainer pod ls`" if left else ""
            raise WorkFailed(f"{run.subject} failed to start: {failure}{extra}")
        if run.keep:
            log.warning(
                "--keep-pod: pod %s is kept with no time limit, at $%.2f/h, even once the %s "
                "ends; nothing deletes it but `overbrainer pod rm %s`",
                run.pod.pod_id,
                run.pod.cost_per_hour or 0.0,
                run.noun,
                run.run_id,
            )
        await run.save(state=PodState.RUNNING)
        return started[0]


def _failer(opening: JobOpening) -> RecordFail:
    fail = opening.fail
    assert fail is not None, "a pod's job is failed through its opening"
    return fail


@contextlib.asynccontextmanager
async def open_pod_machine(opening: JobOpening) -> AsyncIterator[PodMachine]:
    """`RunpodKind.open`: the key resolved, the job's record created (the pod is named
    after it), the pod provisioned raced against Ctrl-C and its SSH opened (not connected:
    `start_job` connects inside its shield)."""
    target = opening.target
    assert isinstance(target, RunpodTarget)
    if opening.needs.image:  # a compare's `[compare] image`
        target = attrs.evolve(target, image=opening.needs.image)
    assert opening.settings is not None, "a pod's job is opened with the project's settings"
    fail = _failer(opening)
    key = await runpod_key(opening.settings, opening.interrupt.race)
    if key is None:
        raise opening.interrupted()
    async with open_runpod(opening.settings.runpod.url, key) as api:
        # The job's record first (no claim here: R is claimed on the pod once it is up).
        run_id = await opening.create(workdir(target), None)
        floor = await _sized(api, opening, target, fail)
        dirs = opening.job_dirs or opening.local_root
        run = new_pod_run(
            api,
            opening.bus,
            JobDirs(dirs),
            JobId(run_id),
            target,
            keep=opening.needs.keep,
            stopped=lambda: opening.interrupt.caught,
            vram_floor_gb=floor,
            noun=noun_of(dirs),
        )
        await provision_or_fail(run, opening, fail)
        async with open_pod_ssh(run, opening.target_name) as executor:
            yield PodMachine(run, executor, opening.needs)


async def _sized(
    api: RunpodApi, opening: JobOpening, target: RunpodTarget, fail: RecordFail
) -> int | None:
    """The pod's VRAM floor: a job serving a model file gets the file's, and is told the
    pod's price first (raced: Ctrl-C fails the record, no pod made)."""
    needs = opening.needs
    if needs.model_bytes is None:
        return needs.vram_floor_gb
    floor = gguf_floor(target, needs.model_bytes)
    price = await opening.interrupt.race(lambda: price_pod(api, target, floor))
    if price is None:
        await fail("interrupted before its job started")
        raise opening.interrupted()
    if opening.priced is not None:
        opening.priced(f"a new Runpod pod {price.words()}")
    return floor


async def provision_or_fail(run: JobPod, opening: JobOpening, fail: RecordFail) -> None:
    """Provision raced against Ctrl-C (§7.5): the interruption cancels it, and only the
    create and its record are shielded (pod_create.py). On a failure or a stop, delete the pod
    and fail the job's record."""
    failure: str | None = None

    async def attempt() -> bool:
        nonlocal failure
        try:
            return await provision(run)
        except (OverbrainerError, OSError) as error:
            failure = error_text(error)
            return False

    ready = await opening.interrupt.race(attempt)
    if ready and not run.stopped():
        return
    if failure is None:
        await interrupted_before_job(run, fail)
    left = await clean_up(run, DeleteReason.NOT_READY)
    await fail(failure)
    extra = "" if not left else "; a pod of it may be left: check `overbrainer pod ls`"
    raise WorkFailed(f"{run.subject} failed: {failure}{extra}")


async def interrupted_before_job(run: JobPod, fail: RecordFail) -> NoReturn:
    """A Ctrl-C before the job started: delete the pod, fail the record, say so (§7.5 step 6)."""
    left = await clean_up(run, DeleteReason.INTERRUPTED)
    await fail("interrupted before its job started")
    tail = (
        "but a pod of it may be left: check `overbrainer pod ls`" if left else "it has no pod left"
    )
    raise PodInterrupted(f"interrupted: {run.subject} stopped before its job started; {tail}")
