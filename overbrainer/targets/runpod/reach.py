"""A recorded job's pod reached again (§7.8: `train attach`, `stop`, `cancel`): its `pod.json`,
or, when that record is missing, the pod Runpod still has under the run's name (its record
written again), so a pod that may bill is never called gone without Runpod saying so."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import attrs
import trio

from overbrainer.model.errors import OverbrainerError, UsageError, WorkFailed
from overbrainer.model.utc import rfc3339
from overbrainer.targets.machine import RecordedJob
from overbrainer.targets.runpod.api import open_runpod
from overbrainer.targets.runpod.create_body import pod_of_run, workdir
from overbrainer.targets.runpod.keys import host_alias, write_ssh_config
from overbrainer.targets.runpod.machine import PodMachine, runpod_key
from overbrainer.targets.runpod.pod_delete import forget_keys
from overbrainer.targets.runpod.pod_record import (
    DeletedBy,
    PodRecord,
    PodState,
    load_pod_record,
    save_pod_record,
)
from overbrainer.targets.runpod.pod_run import JobDirs, JobId, PodRun, open_pod_ssh
from overbrainer.targets.runpod.settings import RunpodTarget
from overbrainer.targets.runpod.types import Pod
from overbrainer.targets.ssh_open import open_ssh, ssh_client_of
from overbrainer.targets.ssh_session import SshExecutor

log = logging.getLogger(__name__)


@attrs.frozen
class PodGone:
    """Runpod has no pod of the job any more (its `pod.json` now says so)."""

    pod_id: str


def check_for_pod(run_id: str) -> str:
    """Where to look for a pod that may still bill, and how to delete it."""
    return (
        f"check for a pod still billing with `overbrainer pod ls` and delete it with "
        f"`overbrainer pod rm {run_id}`"
    )


async def pod_record_of(recorded: RecordedJob, nothing: str) -> PodRecord | None:
    """The job's pod record: its `pod.json`, or the one rebuilt from the pod Runpod has under
    the run's name when the file is missing; None when Runpod confirms it has no pod of it.

    UsageError when `pod.json` says its pod was deleted (`nothing` ends the message); WorkFailed
    pointing at `overbrainer pod ls` when the record is missing and Runpod cannot be asked.
    """
    run_dir, run_id = recorded.job_dir, recorded.job_dir.name
    pod = await trio.to_thread.run_sync(load_pod_record, run_dir)
    if pod is not None:
        if pod.live_pod is None:
            raise UsageError(f"run {run_id} has no pod left: {nothing}")
        return pod
    assert recorded.settings is not None
    try:
        key = await runpod_key(recorded.settings, recorded.interrupt.race)
        if key is None:
            raise recorded.interrupted()
        async with open_runpod(recorded.settings.runpod.url, key) as api:
            pods = [p for p in await api.list_pods() if pod_of_run(p, run_id)]
    except OverbrainerError as error:
        raise WorkFailed(
            f"run {run_id} has no pod record (runs/{run_id}/pod.json is missing) and "
            f"Runpod could not be asked for its pod ({error.message}): {check_for_pod(run_id)}"
        ) from None
    alive = [p for p in pods if not p.status.dead] or pods
    if not alive:
        return None
    found = max(alive, key=_attempt_number)
    if len(pods) > 1:
        log.warning(
            "run %s has %d pods on Runpod (%s): using %s; %s",
            run_id,
            len(pods),
            ", ".join(p.id for p in pods),
            found.id,
            check_for_pod(run_id),
        )
    log.warning(
        "train: runs/%s/pod.json was missing: found pod %s of the run on Runpod by its name",
        run_id,
        found.id,
    )
    rebuilt = _rebuilt(run_id, found)
    await trio.to_thread.run_sync(save_pod_record, run_dir, rebuilt)
    return rebuilt


def _attempt_number(pod: Pod) -> int:
    """The attempt a pod's name ends with (`overbrainer-<id>-<n>`); 0 when it has none."""
    tail = pod.name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _rebuilt(run_id: str, pod: Pod) -> PodRecord:
    """A pod record for a pod found by its name: what Runpod says of it, no deadline known."""
    return PodRecord(
        run_id=run_id,
        state=PodState.RUNNING,
        pod_id=pod.id,
        gpu_type=pod.gpu_id,
        gpu_count=pod.gpu_count,
        data_center_id=pod.data_center_id,
        cost_per_hour=pod.cost if pod.cost > 0 else None,
        created_at=pod.created_at or rfc3339(),
        created_unix=int(time.time()) if pod.created_at is None else None,
    )


@contextlib.asynccontextmanager
async def reach_pod_machine(
    recorded: RecordedJob,
    pod: PodRecord,
    interrupted: Callable[[PodMachine], OverbrainerError] | None = None,
) -> AsyncIterator[PodMachine | PodGone]:
    """The job's pod again (§7.8): looked up, its ssh config rewritten, connected.

    Yields PodGone instead when Runpod no longer has the pod (`pod.json` says it was
    deleted). Ctrl-C while connecting raises `interrupted(machine)` (by default the error of a
    command stopped while its job goes on on the pod).
    """
    live = pod.live_pod
    assert live is not None
    target = recorded.target
    assert isinstance(target, RunpodTarget)
    assert recorded.settings is not None
    run_dir: Path = recorded.job_dir
    run_id = run_dir.name
    key = await runpod_key(recorded.settings, recorded.interrupt.race)
    if key is None:
        raise recorded.interrupted()
    async with open_runpod(recorded.settings.runpod.url, key) as api:
        run = PodRun(
            api,
            recorded.bus,
            JobDirs(run_dir.parent),
            JobId(run_id),
            target,
            pod.keep,
            lambda: recorded.interrupt.caught,
            pod,
        )
        found = await api.get_pod(live)
        if found is None:
            await run.save(
                state=PodState.DELETED, deleted_at=rfc3339(), deleted_by=DeletedBy.UNKNOWN
            )
            await forget_keys(run)
            yield PodGone(live)
            return
        if found.status.dead:
            raise WorkFailed(
                f"pod {found.id} of run {run_id} is {found.status.value}: its job cannot be "
                f"reached; delete it with `overbrainer pod rm {run_id}`"
            )
        if found.ssh is None:
            raise WorkFailed(f"pod {found.id} of run {run_id} has no SSH endpoint right now")
        await trio.to_thread.run_sync(write_ssh_config, run_dir, run_id, found.ssh)
        async with open_pod_ssh(run, recorded.target_name) as executor:
            machine = PodMachine(run, executor)

            async def connect() -> bool:
                await executor.connect()
                return True

            if await recorded.interrupt.race(connect) is None:
                raise (interrupted or PodMachine.detached)(machine)
            yield machine


@contextlib.asynccontextmanager
async def pod_beside(recorded: RecordedJob, nothing: str) -> AsyncIterator[SshExecutor]:
    """The job's pod through its existing ssh config, connected, with no API call (beside a
    process that holds the project); UsageError when there is no pod or config to use."""
    run_dir, run_id = recorded.job_dir, recorded.job_dir.name
    target = recorded.target
    assert isinstance(target, RunpodTarget)
    pod = await trio.to_thread.run_sync(load_pod_record, run_dir)
    config = run_dir / "ssh" / "config"
    if pod is not None and pod.live_pod is None:
        raise UsageError(f"run {run_id} has no pod left: {nothing}")
    if not config.is_file():
        missing = "" if pod is not None else f" and runs/{run_id}/pod.json is missing"
        raise UsageError(
            f"run {run_id} has no ssh config to reach its pod{missing}: {check_for_pod(run_id)}"
        )
    async with open_ssh(
        recorded.target_name,
        host_alias(run_id),
        workdir(target),
        ssh_config=str(config.absolute()),
        client=ssh_client_of(target.ssh_client),
    ) as executor:
        await executor.connect()
        yield executor
