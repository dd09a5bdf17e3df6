"""A compare on a Runpod target (§A.7): a new pod for the job, the GGUF uploaded with it as
`model.gguf`, the pod deleted after the job (kept with `--keep-pod`)."""

from __future__ import annotations

import contextlib
import logging
import os

import attrs
import trio

from overbrainer.compare.job import (
    COMPARE_COMMAND,
    CompareInterrupted,
    cancel_compare,
    cancelled,
    compares_of,
    conclude,
    follow_compare,
    job_env,
    spawn_compare_job,
    tools_cache,
)
from overbrainer.compare.setup import CompareSetup
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.targets import (
    JOB_ENV,
    Ended,
    Ending,
    JobNeeds,
    JobOpening,
    PodMachine,
    SshExecutor,
    gguf_floor,
    native_commands,
    open_pod_machine,
    open_runpod,
    pod_path,
    price_pod,
    resolve_pin,
    runpod_key,
)
from overbrainer.training import (
    JobPlan,
    RunRecord,
    RunState,
    Session,
    failing,
    follow_guarded,
    not_started,
)

log = logging.getLogger(__name__)

MODEL_FILE = "model.gguf"


def _link_model(run_dir_file: str, staged: str) -> None:
    if not os.path.exists(staged):
        os.link(run_dir_file, staged)


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


async def compare_on_pod(
    session: Session, setup: CompareSetup, context: int, *, keep: bool
) -> None:
    """The compare job on a new pod of the run's Runpod target: provisioned, started with the
    GGUF, followed, its answers brought here; the pod deleted after (kept with `keep`)."""
    settings = session.settings
    compares = compares_of(session.runs.dir_of(setup.run))
    record = await trio.to_thread.run_sync(compares.load, setup.compare)
    found = settings.targets.get(record.target)
    assert found is not None
    interrupt = session.interrupt
    gguf = session.runs.dir_of(setup.run) / setup.gguf
    floor = gguf_floor(found, (await trio.Path(gguf).stat()).st_size)
    key = await runpod_key(settings, interrupt.race)
    if key is None:
        raise not_started()
    async with open_runpod(settings.runpod.url, key) as api:
        price = await interrupt.race(lambda: price_pod(api, found, floor))
    if price is None:
        stopped = attrs.evolve(
            record, state=RunState.FAILED, message="interrupted before its job started"
        )
        await trio.to_thread.run_sync(compares.save, stopped)
        raise CompareInterrupted(f"interrupted: compare {setup.compare} did not start")
    log.info("compare: %d questions on a new Runpod pod %s", len(setup.questions), price.words())
    created = record

    async def create(workdir: str, claim: object) -> str:
        nonlocal created
        created = attrs.evolve(record, remote_dir=f"{workdir}/{setup.compare}")
        await trio.to_thread.run_sync(compares.save, created)
        return setup.compare

    async def fail(message: str) -> None:
        await failing(compares, created)(message)

    opening = JobOpening(
        record.target,
        found,
        JobNeeds(vram_floor_gb=floor, image=settings.compare.image, keep=keep),
        create,
        compares.root,
        session.bus,
        interrupt,
        not_started,
        settings=settings,
        fail=fail,
    )
    async with open_pod_machine(opening) as machine:
        started = await machine.start_job(
            lambda: _start(session, setup, machine.executor, context, machine.run.remote_dir),
            fail,
        )
        await _follow_and_end(session, setup, machine, started)


async def _start(
    session: Session, setup: CompareSetup, executor: SshExecutor, context: int, root: str
) -> RunRecord:
    """Upload the compare directory with the GGUF hard-linked in as `model.gguf` (removed here
    once sent; the job deletes its copy at its end) and spawn the job."""
    folder = compares_of(session.runs.dir_of(setup.run)).dir_of(setup.compare)
    staged = str(folder / MODEL_FILE)
    source = str(session.runs.dir_of(setup.run) / setup.gguf)
    await trio.to_thread.run_sync(_link_model, source, staged)
    env = job_env(
        session.settings.compare,
        resolve_pin(),
        root=root,
        model=MODEL_FILE,
        context=context,
        cache=tools_cache(executor, os.environ),
        environ=os.environ,
    )
    env["OVERBRAINER_COMPARE_DISCARD_MODEL"] = "1"
    try:
        plan = JobPlan(native_commands([COMPARE_COMMAND], env, env_file=pod_path(JOB_ENV)))
        return await spawn_compare_job(session.runs, setup, executor, plan)
    finally:
        await trio.to_thread.run_sync(_unlink, staged)


async def _follow_and_end(
    session: Session, setup: CompareSetup, machine: PodMachine, started: RunRecord
) -> None:
    """Follow the job beside the pod's guards; then end the pod (deleted, or kept) and record
    how the job ended. Ctrl-C cancels the job and deletes the pod."""
    runs, executor = session.runs, machine.executor
    compares = compares_of(runs.dir_of(setup.run))
    status = None
    try:
        if not session.interrupt.caught:
            status = await follow_guarded(
                session.interrupt,
                machine,
                lambda: follow_compare(runs, setup, executor, started, session.bus, session.times),
                failing(compares, started, update=True),
                machine.subject,
            )
    except (OverbrainerError, OSError):
        await machine.abandon()
        raise
    if status is None:
        await cancel_compare(executor, started)
        if await machine.end(Ended(Ending.CANCELLED)) is not None:
            log.warning(
                "a pod of compare %s may be left: check `overbrainer pod ls`", setup.compare
            )
        raise await trio.to_thread.run_sync(cancelled, runs, setup, started)
    # The job's files are here already (or it has none): nothing on the pod to wait for.
    problem = await machine.end(Ended(Ending.DONE, retrieved=True))
    if problem is not None:
        log.warning("compare %s ended, but %s", setup.compare, problem)
    await trio.to_thread.run_sync(conclude, runs, setup, started, status)
    if problem is not None and not machine.keep:
        raise WorkFailed(f"compare {setup.compare} ended, but {problem}")
