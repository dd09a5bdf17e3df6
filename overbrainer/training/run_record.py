"""The `run.json` record of a training run: its values, exact JSON text and tolerant reading."""

from __future__ import annotations

import enum
import json
from typing import Any

import attrs

from overbrainer.model.errors import EXIT_USAGE, OverbrainerError, UsageError
from overbrainer.storage.json_doc import NotJson, load_document

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


@attrs.frozen
class Container:
    """The container a job runs in: its engine (`docker`, `podman`) and name."""

    engine: str
    name: str


@attrs.frozen
class Job:
    """A started job: its directory on the target and the PID leading its process group."""

    dir: str
    pid: int
    container: Container | None = None


@attrs.frozen
class Snapshot:
    """The checkpoint a stopped run saved (`output/checkpoint-N`), its step and why."""

    checkpoint: str
    step: int
    reason: str


@attrs.frozen
class RunRecord:
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

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON values, in the reference's field order; absent extras left out."""
        job: dict[str, Any] | None = None
        if self.job is not None:
            container = self.job.container
            job = {
                "dir": self.job.dir,
                "pid": self.job.pid,
                "container": None
                if container is None
                else {"engine": container.engine, "name": container.name},
            }
        out: dict[str, Any] = {
            "id": self.id,
            "target": self.target,
            "created": self.created,
            "remote_dir": self.remote_dir,
            "job": job,
            "state": self.state.value,
            "message": self.message,
        }
        if self.snapshot is not None:
            out["snapshot"] = {
                "checkpoint": self.snapshot.checkpoint,
                "step": self.snapshot.step,
                "reason": self.snapshot.reason,
            }
        if self.resumed_from is not None:
            out["resumed_from"] = self.resumed_from
        if self.snapshots:
            out["snapshots"] = True
        return out

    def to_json(self) -> str:
        """The exact text of `run.json`: pretty JSON (2 spaces), raw UTF-8, then a newline."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes, source: str = RECORD_FILE) -> RunRecord:
        """Read a record; InvalidRecord (naming `source`, never content) when it is not one."""
        try:
            value = load_document(text)
        except NotJson as error:
            raise InvalidRecord(f"{source} is not a valid run record ({error.where})") from None
        try:
            return _record(value)
        except _Bad as error:
            raise InvalidRecord(f"{source} is not a valid run record: {error}") from None


class _Bad(ValueError):
    """A JSON value of the wrong shape; the text names the field."""


def _obj(value: object, what: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise _Bad(f"{what} is not an object")
    return value


def _text(record: dict[str, object], key: str, what: str = "") -> str:
    value = record.get(key)
    if not isinstance(value, str):
        raise _Bad(f"`{what}{key}` is missing or not a string")
    return value


def _opt_text(record: dict[str, object], key: str) -> str | None:
    value = record.get(key)
    if value is not None and not isinstance(value, str):
        raise _Bad(f"`{key}` is not a string")
    return value


def _int(record: dict[str, object], key: str, what: str) -> int:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Bad(f"`{what}{key}` is missing or not a non-negative integer")
    return value


def _job(value: object) -> Job | None:
    if value is None:
        return None
    job = _obj(value, "`job`")
    pid = _int(job, "pid", "job.")
    if pid < 2 or pid > 0xFFFFFFFF:
        raise _Bad("`job.pid` must be a process ID of at least 2")
    container = None
    if job.get("container") is not None:
        box = _obj(job["container"], "`job.container`")
        engine = _text(box, "engine", "job.container.")
        if engine not in ("docker", "podman"):
            raise _Bad("`job.container.engine` is not docker or podman")
        container = Container(engine, _text(box, "name", "job.container."))
    return Job(_text(job, "dir", "job."), pid, container)


def _snapshot(value: object) -> Snapshot | None:
    if value is None:
        return None
    snap = _obj(value, "`snapshot`")
    reason = _text(snap, "reason", "snapshot.")
    if reason not in SNAPSHOT_REASONS:
        raise _Bad("`snapshot.reason` is not requested, deadline, cost or disk")
    return Snapshot(_text(snap, "checkpoint", "snapshot."), _int(snap, "step", "snapshot."), reason)


def _record(value: object) -> RunRecord:
    record = _obj(value, "the record")
    state_text = _text(record, "state")
    try:
        state = RunState(state_text)
    except ValueError:
        raise _Bad("`state` is not a known run state") from None
    snapshots = record.get("snapshots", False)
    if not isinstance(snapshots, bool):
        raise _Bad("`snapshots` is not a boolean")
    return RunRecord(
        id=_text(record, "id"),
        target=_text(record, "target"),
        created=_text(record, "created"),
        remote_dir=_text(record, "remote_dir"),
        job=_job(record.get("job")),
        state=state,
        message=_opt_text(record, "message"),
        snapshot=_snapshot(record.get("snapshot")),
        resumed_from=_opt_text(record, "resumed_from"),
        snapshots=snapshots,
    )
