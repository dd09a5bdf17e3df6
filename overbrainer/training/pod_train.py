"""Following a Runpod run again (`train attach`, `train stop`): the raced follow beside its
pod's guards, then the pod ended (§7.6)."""

from __future__ import annotations

import logging

from overbrainer.model.errors import WorkFailed
from overbrainer.targets import (
    Ended,
    Ending,
    PodMachine,
)
from overbrainer.training.follow_run import watch
from overbrainer.training.machine_follow import failing, follow_guarded
from overbrainer.training.outcome import Outcome
from overbrainer.training.run_store import RunRecord
from overbrainer.training.session import Session

log = logging.getLogger(__name__)


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
