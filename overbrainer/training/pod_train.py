"""A training run on a Runpod pod (§7.5): the run's record, the pod machine opened for it
(targets/runpod/machine.py), the job started in the machine's shield, followed, then the pod
ended."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.targets import (
    Ended,
    Ending,
    JobNeeds,
    JobOpening,
    PodMachine,
    RunpodApi,
    open_pod_machine,
    open_runpod,
    runpod_key,
    vram_floor,
)
from overbrainer.training.follow_run import watch
from overbrainer.training.machine_follow import failing, follow_guarded
from overbrainer.training.outcome import Outcome
from overbrainer.training.run_store import RunRecord, claim_dir, new_owner
from overbrainer.training.session import Session, not_started
from overbrainer.training.start import StartPlan, start_job

log = logging.getLogger(__name__)

StrayCheck = Callable[[RunpodApi], Awaitable[list[str]]]
"""What a Runpod `train` warns about at its start (the account's pods nothing will delete)."""


async def _warn_strays(session: Session, strays: StrayCheck) -> None:
    key = await runpod_key(session.settings, session.interrupt.race)
    if key is None:
        raise not_started()
    async with open_runpod(session.settings.runpod.url, key) as api:
        try:
            warnings = await session.interrupt.race(lambda: strays(api))
        except OverbrainerError as error:
            log.warning("cannot list the account's pods to look for strays: %s", error.message)
            return
    if warnings is None:
        raise not_started()
    for warning in warnings:
        log.warning("%s", warning)


async def train_on_pod(
    session: Session, plan: StartPlan, *, keep: bool, strays: StrayCheck | None = None
) -> Outcome:
    """`train` on a Runpod target: a pod made for the run, followed, then deleted (or kept)."""
    target = plan.target
    if strays is not None:
        await _warn_strays(session, strays)
    floor = await session.interrupt.race(lambda: vram_floor(session.settings, target))
    if session.interrupt.caught:
        raise not_started()
    created: list[RunRecord] = []

    async def create(workdir: str, claim: object) -> str:
        record = await trio.to_thread.run_sync(_create_run, session, plan, workdir)
        log.info("train: run %s on target `%s`, in %s", record.id, plan.name, record.remote_dir)
        session.created(record.id)
        created.append(record)
        return record.id

    async def fail(message: str) -> None:
        await failing(session.runs, created[0])(message)

    opening = JobOpening(
        plan.name,
        target,
        JobNeeds(vram_floor_gb=floor, keep=keep, snapshots=True),
        create,
        session.runs.root,
        session.bus,
        session.interrupt,
        not_started,
        settings=session.settings,
        fail=fail,
    )
    async with open_pod_machine(opening) as machine:
        started = await machine.start_job(
            lambda: start_job(session, created[0], plan, machine.executor), fail
        )
        if session.interrupt.caught:
            raise machine.detached()
        return await follow_and_end(session, machine, started)


def _create_run(session: Session, plan: StartPlan, workdir: str) -> RunRecord:
    """Claim the run here; R is its directory on the pod (blocking)."""
    owner = new_owner()
    return session.runs.create(
        session.settings.project.name,
        plan.name,
        lambda run_id: f"{workdir}/{run_id}",
        accept=lambda run_id, path: claim_dir(path, owner),
        resumed_from=plan.resume_from,
    )


async def follow_and_end(
    session: Session, machine: PodMachine, record: RunRecord, *, requested: bool = False
) -> Outcome:
    """The raced follow beside the pod's guards (Ctrl-C detaches), then the pod's end (§7.6)."""
    followed = await follow_guarded(
        session.interrupt,
        machine,
        lambda: watch(session, machine.executor, record, requested=requested),
        failing(session.runs, record, update=True),
        machine.subject,
    )
    if followed is None:
        await machine.detach()
        raise machine.detached()
    problem = await machine.end(Ended(Ending.DONE, retrieved=followed.retrieved))
    if problem is not None:
        raise WorkFailed(f"run {record.id} ended, but not its pod: {problem}")
    return followed
