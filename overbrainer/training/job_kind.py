"""What differs between train, compare and export (issue 42): the lifecycle does the rest.

`job_lifecycle.run_job` orders the phases for any `JobKind` on any `Machine`; a job kind says
what its record is, what it starts, what Ctrl-C does to it, what comes back and how it ends.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Protocol, TypeVar

import attrs
import trio

from overbrainer.model.errors import OverbrainerError
from overbrainer.model.job_kind import JobKind as JobType
from overbrainer.model.job_status import JobStatus
from overbrainer.targets import Claim, JobNeeds, JobRef, Machine
from overbrainer.training.follow_job import FollowTimes
from overbrainer.training.run_store import RunRecord, Runs, RunState
from overbrainer.training.summary import MetricsSummary

Result_co = TypeVar("Result_co", covariant=True)

RECORD_BOUND = 30.0
"""Seconds a shielded write of a failed record may take."""


async def record_failed(store: Runs, job_id: str, message: str) -> None:
    """Save the job's record failed with `message` (shielded, under the record's lock)."""

    def failed(record: RunRecord) -> RunRecord:
        return attrs.evolve(record, state=RunState.FAILED, message=message)

    with trio.move_on_after(RECORD_BOUND, shield=True):
        await trio.to_thread.run_sync(lambda: store.update(job_id, failed))


class Interruption(enum.Enum):
    """What Ctrl-C while following does to a job."""

    DETACH = "detach"
    """The job runs on (train: `train attach` follows it again)."""
    CANCEL = "cancel"
    """The job is cancelled and its machine ended (compare, export)."""


@attrs.frozen
class Started:
    """A started job: its `running` record, its directory here, and its job on the machine."""

    record: RunRecord
    job_dir: Path
    job: JobRef
    subject: str
    """The job in a warning's words (`run X`, `compare X`, `the export job`)."""
    disposable: bool = False
    """Nothing of the job on its machine is worth keeping once it is over (an export is run
    again): the machine is ended as done and retrieved even when its job was lost or its
    files could not be fetched."""


class FollowedKind(Protocol[Result_co]):
    """What following a started job to its end asks of its kind (also `train attach`)."""

    @property
    def type(self) -> JobType | None:
        """The job's type for events and progress lines (None: training)."""
        ...

    @property
    def on_interrupt(self) -> Interruption:
        """What Ctrl-C while following does."""
        ...

    @property
    def times(self) -> FollowTimes:
        """The follow's clocks (the target's reconnect budget in them)."""
        ...

    @property
    def sampled(self) -> bool:
        """Whether the follow takes system samples of the machine (training)."""
        ...

    @property
    def end_fails(self) -> bool:
        """Whether a machine that did not end after a done job fails the command (else a
        warning)."""
        ...

    async def fail(self, job_id: str, message: str) -> None:
        """Record the job failed with `message`: its machine's guard tripped, its machine is
        gone, or the machine made for it could not start it."""
        ...

    async def interrupted(self, machine: Machine, started: Started) -> OverbrainerError:
        """Ctrl-C while following: record it (a cancelled job); the error to raise."""
        ...

    async def fetch(self, machine: Machine, started: Started, status: JobStatus) -> str | None:
        """Bring the job's artifacts here; the problem, None when all came (or raise after
        recording the failure)."""
        ...

    async def conclude(
        self,
        machine: Machine,
        started: Started,
        status: JobStatus,
        summary: MetricsSummary,
        problem: str | None,
    ) -> Result_co:
        """Record how the job ended; what the command reports (or the error it fails with)."""
        ...


class JobKind(FollowedKind[Result_co], Protocol[Result_co]):
    """One kind of job (train, compare, export): what the one lifecycle asks of it."""

    @property
    def needs(self) -> JobNeeds:
        """What the job asks of its machine."""
        ...

    def interrupted_before(self) -> OverbrainerError:
        """The error Ctrl-C ends the command with before the job started."""
        ...

    async def create(self, workdir: str, claim: Claim | None) -> str:
        """Make the job's record (R under `workdir`, claimed with `claim`); its ID."""
        ...

    def start_bound(self, machine: Machine) -> float:
        """Seconds the shielded start may take on `machine`."""
        ...

    async def start(self, machine: Machine, job_id: str) -> Started:
        """Prepare, stage and start the job, and save its `running` record (called shielded);
        a failure is recorded and raised (WorkFailed)."""
        ...

    async def not_started(self, job_id: str) -> OverbrainerError:
        """Record that the start ran past its bound; the error to raise."""
        ...
