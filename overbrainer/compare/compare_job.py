"""The compare as a job kind (§A.5-§A.7): its record made before (with its setup), the GGUF
placed in the run's directory on the machine, the job nested there; Ctrl-C cancels it and
removes its container; its answers and logs fetched, how it ended recorded."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path

import attrs
import trio

from overbrainer.compare.job import (
    COMPARES_DIR,
    NEVER_UPLOADED,
    START_BOUND,
    UPLOAD_DIR,
    CompareInterrupted,
    cancelled,
    conclude,
    failed_to_start,
    job_env,
    local_tools_cache,
)
from overbrainer.compare.served import Served
from overbrainer.compare.setup import CompareSetup
from overbrainer.config.settings import Settings, reconnect_secs
from overbrainer.events.bus import EventBus
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.model.job_kind import JobKind as JobType
from overbrainer.model.job_status import JobStatus
from overbrainer.targets import (
    Claim,
    JobNeeds,
    JobOpening,
    JobPlan,
    JobSpec,
    Machine,
    kind_of,
    resolve_pin,
)
from overbrainer.training import (
    Container,
    FollowTimes,
    Interruption,
    Job,
    MetricsSummary,
    NestedJob,
    Runs,
    RunState,
    Started,
    nested_spec,
    record_failed,
    run_job,
)

log = logging.getLogger(__name__)

MODEL_FILE = "model.gguf"
"""The GGUF's name in a compare directory sent to a machine without the run (a pod)."""
BASE_MODEL_FILE = "base.gguf"
"""The base model's GGUF there (`compare --base`), sent and deleted as `model.gguf` is."""
DISCARD_ENV = "OVERBRAINER_COMPARE_DISCARD_MODEL"
"""Set: the job deletes its copy of the model at its end."""


def tools_cache(machine: Machine, environ: Mapping[str, str]) -> str:
    """Where the machine keeps llama.cpp builds: this user's cache here, the workdir's else."""
    if not machine.here:
        return f"{machine.workdir.rstrip('/')}/.cache/overbrainer"
    return local_tools_cache(environ)


def model_path(machine: Machine, run_dir: str, file: str) -> str:
    """The GGUF's absolute path as the job sees it: in the run directory on the machine, or at
    `/workspace/run` where a container mounts it (§A.7)."""
    return f"{machine.job_root(run_dir).rstrip('/')}/{file}"


def compare_job(
    machine: Machine,
    env: dict[str, str],
    setup: CompareSetup,
    run_dir: str,
    served: Served | None = None,
) -> JobPlan:
    """The compare job as a nested job of the run (an export's way): natively in its
    directory, or in the target's container, which mounts the run directory and the tool
    cache (`OVERBRAINER_CACHE`) and works in `compares/<compare-id>`; llama-server and the
    client both run in it, so the server's port stays inside. `served`: a bench's folder and
    script instead."""
    served = served or Served()
    nested = NestedJob(
        run_id=setup.run,
        run_dir=run_dir,
        job_id=setup.compare,
        folder=f"{served.folder}/{setup.compare}",
        command=served.command,
        env=env,
        tools=env["OVERBRAINER_CACHE"],
    )
    return machine.plan(nested_spec(machine, nested))


def _link_model(run_dir_file: str, staged: str) -> None:
    if not os.path.exists(staged):
        os.link(run_dir_file, staged)


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _remove_tree(path: Path) -> None:
    for child in sorted(path.rglob("*"), reverse=True):
        child.rmdir() if child.is_dir() else child.unlink()
    path.rmdir()


def gguf_files(setup: CompareSetup) -> tuple[tuple[str, str], ...]:
    """The GGUFs the job serves, as (file in the run directory, SHA-256): the child's, then
    the base model's when the compare has one."""
    files = [(setup.gguf, setup.gguf_sha256)]
    if setup.base_gguf is not None and setup.base_gguf_sha256 is not None:
        files.append((setup.base_gguf, setup.base_gguf_sha256))
    return tuple(files)


async def place_model(
    machine: Machine, run_dir: Path, remote_run: str, setup: CompareSetup, folder: Path
) -> None:
    """Make sure the machine's run directory holds each GGUF (the child's, the base's): the
    run's own copy when its SHA-256 matches its export record's, else staged there first
    (through a hard-linked stage)."""
    for file, sha256 in gguf_files(setup):
        await _place_file(machine, run_dir, remote_run, file, sha256, folder)


async def _place_file(
    machine: Machine, run_dir: Path, remote_run: str, file: str, sha256: str, folder: Path
) -> None:
    if machine.here:
        return
    if await machine.exists(f"{remote_run}/{file}"):
        found = await machine.digests(remote_run, (file,))
        if found.get(file) == sha256.lower():
            return
    stage = folder / UPLOAD_DIR
    staged = stage / file

    def link() -> None:
        staged.parent.mkdir(parents=True, exist_ok=True)
        if not staged.exists():
            os.link(run_dir / file, staged)

    await trio.to_thread.run_sync(link)
    try:
        await machine.stage(stage, remote_run)
    finally:
        await trio.to_thread.run_sync(lambda: _remove_tree(stage))


@attrs.frozen
class CompareJob:
    """A compare of a run's GGUF on the run's target: what the lifecycle asks of it."""

    settings: Settings
    runs: Runs
    setup: CompareSetup
    context: int
    target_name: str
    keep: bool = False
    """`--keep-pod`: a machine made for the compare outlives it."""
    model_bytes: int | None = None
    """The GGUF's size, which a machine made for the compare is sized by."""
    type: JobType | None = JobType.COMPARE
    on_interrupt: Interruption = Interruption.CANCEL
    sampled: bool = False
    served: Served = attrs.field(factory=Served)
    """A bench's parameters (its folder, script, variables, end); the compare's by default."""

    @property
    def end_fails(self) -> bool:
        """A machine made for the compare that did not end fails it, unless it is kept."""
        return not self.keep

    async def fail(self, job_id: str, message: str) -> None:
        """Record the compare failed."""
        await record_failed(self.compares, job_id, message)

    @property
    def compares(self) -> Runs:
        """The run's compares (its benches for a bench)."""
        return Runs(self.runs.dir_of(self.setup.run) / self.served.folder)

    @property
    def needs(self) -> JobNeeds:
        """Its container goes whatever the end (llama-server runs in it); a machine made for
        it runs `[compare] image`, is sized by the GGUF and goes if the job is lost."""
        return JobNeeds(
            image=self.settings.compare.image,
            keep=self.keep,
            remove_container=True,
            model_bytes=self.model_bytes,
            end_if_lost=True,
        )

    @property
    def times(self) -> FollowTimes:
        """The follow clocks with the target's reconnect budget."""
        target = self.settings.targets.get(self.target_name)
        return attrs.evolve(FollowTimes.from_env(), reconnect=reconnect_secs(target))

    def interrupted_before(self) -> OverbrainerError:
        """Ctrl-C before the compare's job started."""
        word = self.served.word
        return CompareInterrupted(f"interrupted: {word} {self.setup.compare} did not start")

    async def create(self, workdir: str, claim: Claim | None) -> str:
        """The record exists already (made with the compare's setup): its ID."""
        return self.setup.compare

    def start_bound(self, machine: Machine) -> float:
        """An upload of the GGUF over SSH included."""
        return START_BOUND

    async def start(self, machine: Machine, job_id: str) -> Started:
        """Place the GGUF, stage the compare's directory and start its job; the `running`
        record. A failure is recorded and raised."""
        if not machine.holds_runs:
            return await self._start_with_model(machine)
        setup, runs = self.setup, self.runs
        compares = self.compares
        record = await trio.to_thread.run_sync(compares.load, setup.compare)
        folder = compares.dir_of(setup.compare)
        remote_run = record.remote_dir.rsplit(f"/{self.served.folder}/", 1)[0]
        run_dir = str(runs.dir_of(setup.run).resolve()) if machine.here else remote_run
        try:
            await place_model(machine, runs.dir_of(setup.run), remote_run, setup, folder)
        except (OSError, OverbrainerError) as error:
            raise await self._failed_to_start(error) from None
        root = str(folder.resolve()) if machine.here else record.remote_dir
        base = setup.base_gguf
        env = job_env(
            self.settings.compare,
            resolve_pin(),
            root=root,
            model=model_path(machine, run_dir, setup.gguf),
            context=self.context,
            cache=tools_cache(machine, os.environ),
            environ=os.environ,
            base_model=None if base is None else model_path(machine, run_dir, base),
        )
        env.update(self.served.env)
        plan = compare_job(machine, env, setup, run_dir, self.served)
        try:
            await machine.stage(folder, root, NEVER_UPLOADED)
            job = await machine.start(root, plan, {})
        except (OSError, OverbrainerError) as error:
            raise await self._failed_to_start(error) from None
        box = None if job.container is None else Container(job.container[0].value, job.container[1])
        running = attrs.evolve(
            record, state=RunState.RUNNING, remote_dir=root, job=Job(root, job.pid, box)
        )
        await trio.to_thread.run_sync(compares.save, running)
        return Started(running, folder, job, f"{self.served.word} {setup.compare}")

    async def _start_with_model(self, machine: Machine) -> Started:
        """On a machine without the run (a pod): upload the compare directory with the GGUF
        hard-linked in as `model.gguf` (and the base's as `base.gguf`; removed here once
        sent; the job deletes its copies at its end) and start the job there."""
        setup, compares = self.setup, self.compares
        record = await trio.to_thread.run_sync(compares.load, setup.compare)
        folder = compares.dir_of(setup.compare)
        root = f"{machine.workdir}/{setup.compare}"
        run_dir = self.runs.dir_of(setup.run)
        files = gguf_files(setup)
        staged = [str(folder / name) for name in (MODEL_FILE, BASE_MODEL_FILE)[: len(files)]]
        for (file, _), link in zip(files, staged, strict=True):
            await trio.to_thread.run_sync(_link_model, str(run_dir / file), link)
        env = job_env(
            self.settings.compare,
            resolve_pin(),
            root=root,
            model=MODEL_FILE,
            context=self.context,
            cache=tools_cache(machine, os.environ),
            environ=os.environ,
            base_model=None if setup.base_gguf is None else BASE_MODEL_FILE,
        )
        env[DISCARD_ENV] = "1"
        env.update(self.served.env)
        spec = JobSpec(setup.compare, root, "", [self.served.command], env)
        try:
            await machine.stage(folder, root, NEVER_UPLOADED)
            job = await machine.start(root, machine.plan(spec), {})
        except (OSError, OverbrainerError) as error:
            raise await self._failed_to_start(error) from None
        finally:
            for link in staged:
                await trio.to_thread.run_sync(_unlink, link)
        running = attrs.evolve(
            record, state=RunState.RUNNING, remote_dir=root, job=Job(root, job.pid, None)
        )
        await trio.to_thread.run_sync(compares.save, running)
        return Started(running, folder, job, f"{self.served.word} {setup.compare}")

    async def _failed_to_start(self, error: OSError | OverbrainerError) -> WorkFailed:
        """Record the job failed before it started; the error to raise."""
        if self.served.folder == COMPARES_DIR:
            return await failed_to_start(self.runs, self.setup, error)
        message = error.message if isinstance(error, OverbrainerError) else str(error)
        await record_failed(self.compares, self.setup.compare, message)
        return WorkFailed(f"{self.served.word} {self.setup.compare} failed to start: {message}")

    async def not_started(self, job_id: str) -> OverbrainerError:
        """The start ran past its bound (the record stays as it was)."""
        return WorkFailed(f"{self.served.word} {job_id} failed: the job did not start in time")

    async def interrupted(self, machine: Machine, started: Started) -> OverbrainerError:
        """Record the compare cancelled; the error Ctrl-C ends the command with."""
        if self.served.cancelled is not None:
            return await trio.to_thread.run_sync(self.served.cancelled, started.record)
        return await trio.to_thread.run_sync(cancelled, self.runs, self.setup, started.record)

    async def fetch(self, machine: Machine, started: Started, status: JobStatus) -> str | None:
        """Bring the artifacts the job wrote here (nothing here); a failure raises."""
        if machine.here:
            return None
        followed = machine.followed(started.job)
        present = tuple([name for name in self.served.artifacts if await followed.exists(name)])
        if present:
            await machine.fetch(started.job, started.job_dir, present)
        return None

    async def conclude(
        self,
        machine: Machine,
        started: Started,
        status: JobStatus,
        summary: MetricsSummary,
        problem: str | None,
    ) -> None:
        """Record how the job ended; WorkFailed with the spec's message when it failed."""
        if self.served.conclude is not None:
            await trio.to_thread.run_sync(self.served.conclude, started.record, status)
            return
        await trio.to_thread.run_sync(conclude, self.runs, self.setup, started.record, status)


async def compare_on_machine(
    settings: Settings,
    runs: Runs,
    setup: CompareSetup,
    context: int,
    bus: EventBus,
    interrupt: Interrupt,
    *,
    keep: bool = False,
    served: Served | None = None,
) -> None:
    """Start the compare job on the run's target's machine, follow it, record how it ended.
    `served`: a bench's parameters instead of the compare's."""
    served = served or Served()
    compares = Runs(runs.dir_of(setup.run) / served.folder)
    record = await trio.to_thread.run_sync(compares.load, setup.compare)
    target = settings.targets.get(record.target)
    assert target is not None
    # The models are served one after the other: the machine is sized by the larger.
    run_dir = runs.dir_of(setup.run)
    size = max([(await trio.Path(run_dir / file).stat()).st_size for file, _ in gguf_files(setup)])
    job = CompareJob(
        settings,
        runs,
        setup,
        context,
        record.target,
        keep=keep,
        model_bytes=size,
        type=served.kind,
        served=served,
    )
    what = served.what or f"{len(setup.questions)} questions"

    def priced(words: str) -> None:
        log.info("%s: %s on %s", served.word, what, words)

    opening = JobOpening(
        target_name=record.target,
        target=target,
        needs=job.needs,
        create=job.create,
        local_root=runs.root,
        job_dirs=compares.root,
        bus=bus,
        interrupt=interrupt,
        interrupted=job.interrupted_before,
        settings=settings,
        priced=priced,
    )
    await run_job(job, kind_of(target), opening)
