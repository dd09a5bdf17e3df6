"""A compare on a Runpod target (§A.7): a new pod for the job, the GGUF uploaded with it as
`model.gguf`, the pod deleted after the job (kept with `--keep-pod`)."""

from __future__ import annotations

import contextlib
import logging
import math
import os
from pathlib import Path

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
from overbrainer.config.settings import DEFAULT_RUNPOD_IMAGE, Settings
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.model.pod_status import DeleteReason
from overbrainer.targets import (
    JOB_ENV,
    Limits,
    PodPrice,
    RunpodApi,
    RunpodError,
    RunpodTarget,
    SshExecutor,
    clean_up,
    end_pod_bounded,
    native_commands,
    new_pod_run,
    open_pod_ssh,
    open_runpod,
    pod_path,
    pod_price,
    pod_settings,
    resolve_pin,
    workdir,
)
from overbrainer.training import (
    JobPlan,
    RunPod,
    RunRecord,
    RunState,
    Session,
    api_key,
    follow_on_pod,
    provision_or_fail,
    start_on_pod,
)

log = logging.getLogger(__name__)

DEFAULT_COMPARE_IMAGE = DEFAULT_RUNPOD_IMAGE
"""The compare pod's image when `[compare] image` is unset: the training image, which holds
what the job needs (python3, curl, sshd, the CUDA libraries)."""
MODEL_FILE = "model.gguf"
VRAM_MARGIN_GB = 2
"""GB above the GGUF's size (plus a fifth) for the context and llama.cpp's buffers."""


def gguf_vram_floor(size: int) -> int:
    """The VRAM floor of a GGUF of `size` bytes: ceil(ceil(size·6/5)/1e9) + 2 GB (§A.7)."""
    return math.ceil(math.ceil(size * 6 / 5) / 1e9) + VRAM_MARGIN_GB


def pod_target(target: RunpodTarget, image: str | None) -> RunpodTarget:
    """The run's target with the compare image: `[compare] image`, else the target's own."""
    return attrs.evolve(target, image=image or target.image or DEFAULT_COMPARE_IMAGE)


def limits_of(target: RunpodTarget, floor: int | None) -> Limits:
    """What a GPU type of the target must meet."""
    auto = target.data_center_ids.auto
    return Limits(
        gpu_count=target.gpu_count,
        min_vram_gb=target.min_vram_gb,
        max_price_per_hour=target.max_price_per_hour,
        data_center_ids=() if auto else target.data_center_ids.items,
        vram_floor_gb=floor,
    )


def vram_floor(target: RunpodTarget, size: int) -> int | None:
    """The VRAM floor of the pod for a GGUF of `size` bytes: only for `gpu_types = "auto"`
    without `min_vram_gb`."""
    auto_floor = target.gpu_types.auto and target.min_vram_gb is None
    return gguf_vram_floor(size) if auto_floor else None


async def price_pod(api: RunpodApi, target: RunpodTarget, floor: int | None) -> PodPrice:
    """The price of a new pod of the target (the catalog unread: no price)."""
    try:
        catalog = await api.gpu_types(target.gpu_count)
    except RunpodError as error:
        log.debug("pod: cannot read the GPU catalog for the price line: %s", error.message)
        catalog = None
    listed = None if target.gpu_types.auto else target.gpu_types.items
    return pod_price(catalog, limits_of(target, floor), listed)


async def quote_pod(settings: Settings, target: RunpodTarget, key: str, gguf: Path) -> PodPrice:
    """The price of the compare pod for `gguf` on `target` (the compare image applied), as
    the TUI asks to confirm it before a compare."""
    target = pod_target(target, settings.compare.image)
    floor = vram_floor(target, (await trio.Path(gguf).stat()).st_size)
    async with open_runpod(settings.runpod.url, key) as api:
        return await price_pod(api, target, floor)


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
    target = pod_target(pod_settings(found), settings.compare.image)
    interrupt = session.interrupt
    gguf = session.runs.dir_of(setup.run) / setup.gguf
    key = await api_key(session)
    floor = vram_floor(target, (await trio.Path(gguf).stat()).st_size)
    async with open_runpod(settings.runpod.url, key) as api:
        price = await interrupt.race(lambda: price_pod(api, target, floor))
        if price is None:
            stopped = attrs.evolve(
                record, state=RunState.FAILED, message="interrupted before its job started"
            )
            await trio.to_thread.run_sync(compares.save, stopped)
            raise CompareInterrupted(f"interrupted: compare {setup.compare} did not start")
        log.info(
            "compare: %d questions on a new Runpod pod %s", len(setup.questions), price.words()
        )
        remote = f"{workdir(target)}/{setup.compare}"
        record = attrs.evolve(record, remote_dir=remote)
        await trio.to_thread.run_sync(compares.save, record)
        run = new_pod_run(
            api,
            session.bus,
            compares,
            record,
            target,
            keep=keep,
            stopped=lambda: interrupt.caught,
            vram_floor_gb=floor,
            noun="compare",
        )
        await provision_or_fail(run, interrupt)
        async with open_pod_ssh(run, record.target) as executor:
            started = await start_on_pod(
                run, executor, lambda: _start(session, setup, executor, context, run.remote_dir)
            )
            await _follow_and_end(session, setup, run, executor, started)


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
    session: Session, setup: CompareSetup, run: RunPod, executor: SshExecutor, started: RunRecord
) -> None:
    """Follow the job beside the pod's guards; then end the pod (deleted, or kept) and record
    how the job ended. Ctrl-C cancels the job and deletes the pod."""
    runs = session.runs
    status = None
    try:
        if not session.interrupt.caught:
            status = await follow_on_pod(
                session.interrupt,
                run,
                executor,
                started,
                lambda: follow_compare(runs, setup, executor, started, session.bus, session.times),
            )
    except (OverbrainerError, OSError):
        if not run.keep:
            await clean_up(run, DeleteReason.UNFOLLOWED)
        raise
    if status is None:
        await cancel_compare(executor, started)
        left = False if run.keep else await clean_up(run, DeleteReason.CANCELLED)
        if left:
            log.warning("a pod of compare %s may be left: check `overbrainer pod ls`", run.run_id)
        raise await trio.to_thread.run_sync(cancelled, runs, setup, started)
    # The job's files are here already (or it has none): nothing on the pod to wait for.
    problem = await end_pod_bounded(run, executor, retrieved=True)
    if problem is not None:
        log.warning("compare %s ended, but not its pod: %s", setup.compare, problem)
    await trio.to_thread.run_sync(conclude, runs, setup, started, status)
    if problem is not None and not run.keep:
        raise WorkFailed(f"compare {setup.compare} ended, but not its pod: {problem}")
