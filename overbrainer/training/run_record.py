"""The `run.json` record of a training run: its values, exact JSON text and tolerant reading."""

from __future__ import annotations

import enum
from typing import Self

import attrs

from overbrainer.model import codec
from overbrainer.model.errors import EXIT_USAGE, OverbrainerError, UsageError
from overbrainer.storage import NotJson, load_document

RECORD_FILE = "run.json"
SNAPSHOT_REASONS = ("requested", "deadline", "cost", "disk")


class RunsError(OverbrainerError):
    """A run directory or record cannot be created, read or written.

    Exit 2, as for the pipeline's data files: a full disk or a permission is the user's
    environment to fix, not work that failed.
    """

    exit_code = EXIT_USAGE


class InvalidRecord(RunsError):
    """A `run.json` that is not a valid record; the message never quotes its content."""


class RunNotFound(UsageError):
    """No run with this ID in `runs/` (or not a valid run ID)."""


class RunState(enum.Enum):
    """Where a run stands, as last seen; lowercase in `run.json`."""

    PREPARING = "preparing"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    STOPPED = "stopped"
    """A snapshot was saved: the run can be resumed."""

    @property
    def ended(self) -> bool:
        """Whether the run is over (succeeded, failed, cancelled or stopped)."""
        return self in ENDED


ENDED = frozenset({RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED, RunState.STOPPED})


def _check_container(container: Container) -> None:
    if container.engine not in ("docker", "podman"):
        raise ValueError("`engine` is not docker or podman")


def _check_job(job: Job) -> None:
    if job.pid is None:
        if not job.ref:
            raise ValueError("`pid` must be a process ID of at least 2, or `ref` a job ID")
    elif job.pid < 2 or job.pid > 0xFFFFFFFF:
        raise ValueError("`pid` must be a process ID of at least 2")


def _check_snapshot(snapshot: Snapshot) -> None:
    if snapshot.reason not in SNAPSHOT_REASONS:
        raise ValueError("`reason` is not requested, deadline, cost or disk")


@codec.record("container", strict=False, check=_check_container)
@attrs.frozen
class Container:
    """The container a job runs in: its engine (`docker`, `podman`) and name."""

    engine: str
    name: str


@codec.record("job", strict=False, check=_check_job, omit=("ref",))
@attrs.frozen
class Job:
    """A started job as its machine identifies it: its directory there, and the PID leading its
    process group (a process the machine runs) or `ref`, a scheduler's job ID (a cluster's)."""

    dir: str
    pid: int | None
    container: Container | None = None
    ref: str | None = None


@codec.record("snapshot", strict=False, check=_check_snapshot)
@attrs.frozen
class Snapshot:
    """The checkpoint a stopped run saved (`output/checkpoint-N`), its step and why."""

    checkpoint: str
    step: int
    reason: str


# Absent extras are left out; unknown fields (a later version's) are ignored.
@codec.record(
    "run record",
    style=codec.Style.PRETTY,
    strict=False,
    omit=("snapshot", "resumed_from", "snapshots"),
    optional=("job",),
)
@attrs.frozen
class RunRecord(codec.JsonRecord):
    """`runs/<id>/run.json`: what is needed to find a run's job again and how it ended."""

    id: str
    target: str
    created: str
    remote_dir: str
    job: Job | None
    state: RunState
    message: str | None = None
    snapshot: Snapshot | None = None
    resumed_from: str | None = None
    snapshots: bool = False
    """The job honours snapshot requests (`train stop` is refused without it)."""

    @classmethod
    def from_json(cls, text: str | bytes, source: str = RECORD_FILE) -> Self:
        """Read a record; InvalidRecord (naming `source`, never content) when it is not one."""
        try:
            value = load_document(text)
        except NotJson as error:
            raise InvalidRecord(f"{source} is not a valid run record ({error.where})") from None
        try:
            return codec.decode(cls, value)
        except ValueError as error:
            raise InvalidRecord(f"{source} is not a valid run record: {error}") from None
