"""`runs/<id>/pod.json`: a run's Runpod pod as last seen (reference §7.4; version 1).

Written atomically through `storage/atomic.py`; read strictly (a wrong field is named, its
value never quoted). It never holds a private key, the API key or the pod's environment.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Self

import attrs

from overbrainer.model import codec
from overbrainer.model.errors import OverbrainerError
from overbrainer.model.json_values import JsonValue, money
from overbrainer.storage import NotJson, load_document, write_atomic

POD_FILE = "pod.json"
POD_DIR = ".pod"
"""A pod's own folder in its job's directory: the bootstrap and watchdog logs, Runpod's log."""
POD_LOCAL = ("ssh", POD_FILE, POD_DIR)
"""What a job directory on a pod never receives: its keys, its pod record, its pod logs."""
VERSION = 1


class PodRecordError(OverbrainerError):
    """`pod.json` cannot be read as a version 1 record."""


class PodState(enum.Enum):
    """Where the run's pod stands."""

    CREATING = "creating"
    PROVISIONING = "provisioning"
    READY = "ready"
    RUNNING = "running"
    AWAITING_RETRIEVAL = "awaiting_retrieval"
    KEPT = "kept"
    DELETING = "deleting"
    DELETED = "deleted"


class AttemptResult(enum.Enum):
    """What one create call gave."""

    SENT = "sent"
    CREATED = "created"
    UNAVAILABLE = "unavailable"
    FORBIDDEN = "forbidden"
    AMBIGUOUS = "ambiguous"
    ADOPTED = "adopted"
    NOT_READY = "not_ready"
    REFUSED = "refused"
    REJECTED = "rejected"


class DeletedBy(enum.Enum):
    """Who deleted the pod."""

    CLIENT = "client"
    WATCHDOG = "watchdog"
    POD_RM = "pod_rm"
    UNKNOWN = "unknown"


@codec.record("attempt", strict=False, omit=("detail", "pod_id"))
@attrs.frozen
class Attempt:
    """One create call: its pod name, GPU type, when it was sent, and what it gave."""

    name: str
    gpu_type: str
    sent_at: str
    deadline_unix: int | None
    result: AttemptResult
    detail: str | None = None
    pod_id: str | None = None


@codec.record("ssh", strict=False)
@attrs.frozen
class PodSsh:
    """The pod's direct SSH endpoint."""

    host: str
    port: int
    user: str


# Every field is written (and must be read back); unknown fields are ignored.
@codec.record(
    "pod record",
    style=codec.Style.PRETTY,
    strict=False,
    require="all",
    tag=("version", VERSION),
)
@attrs.frozen
class PodRecord(codec.JsonRecord):
    """The content of `pod.json`, fields in the reference's order."""

    run_id: str
    state: PodState
    keep: bool = False
    deadline: str | None = None
    deadline_unix: int | None = None
    attempts: tuple[Attempt, ...] = ()
    pod_id: str | None = None
    gpu_type: str | None = None
    gpu_count: int = 1
    data_center_id: str | None = None
    cost_per_hour: float | None = None
    created_at: str | None = None
    created_unix: int | None = None
    ready_at: str | None = None
    ssh: PodSsh | None = None
    host_key: str | None = None
    deleted_at: str | None = None
    deleted_by: DeletedBy | None = None
    estimated_spend: float | None = None
    stray_pods: tuple[str, ...] = ()
    max_cost_usd: float | None = None
    network_volume_id: str | None = None
    max_volume_gb: int | None = None

    @property
    def live_pod(self) -> str | None:
        """The recorded pod when it is not (being) deleted."""
        if self.pod_id is None or self.state in (PodState.DELETED,):
            return None
        return self.pod_id

    def summary(self) -> str:
        """`runs ls`'s words for the pod (§6.7): `pod running k3x9abc $0.44/h`, `pod kept …`."""
        if self.state is PodState.DELETED:
            spend = self.estimated_spend
            return "pod deleted" if spend is None else f"pod deleted about ${spend:.2f}"
        if self.pod_id is None:
            # Between create calls, or after none gave a pod: nothing runs, nothing is billed.
            return "(no pod)"
        line = f"pod {self.state.value.replace('_', ' ')} {self.pod_id}"
        if self.state in (PodState.KEPT, PodState.AWAITING_RETRIEVAL) or not self.cost_per_hour:
            return line
        return f"{line} ${self.cost_per_hour:.2f}/h"

    def details(self) -> dict[str, JsonValue]:
        """The pod's facts for `runs ls --json`: what `summary` words, and its deadline."""
        return {
            "state": self.state.value,
            "pod_id": self.pod_id,
            "gpu_type": self.gpu_type,
            "gpu_count": self.gpu_count,
            "data_center_id": self.data_center_id,
            "cost_per_hour": money(self.cost_per_hour),
            "keep": self.keep,
            "created_at": self.created_at,
            "deadline": self.deadline,
            "deleted_at": self.deleted_at,
            "estimated_spend_usd": money(self.estimated_spend),
        }

    @classmethod
    def from_json(cls, text: str | bytes, source: str = POD_FILE) -> Self:
        """Read a record; PodRecordError naming `source` and the field, never a value."""
        try:
            value = load_document(text)
        except NotJson as error:
            raise PodRecordError(f"{source} is not a valid pod record ({error.where})") from None
        if isinstance(value, dict) and (
            value.get("version") != VERSION or isinstance(value.get("version"), bool)
        ):
            raise PodRecordError(
                f"{source} is not a valid pod record: "
                f"`version` is not {VERSION} (written by another overbrainer?)"
            )
        try:
            return codec.decode(cls, value)
        except ValueError as error:
            raise PodRecordError(f"{source} is not a valid pod record: {error}") from None


def pod_record_path(run_dir: Path) -> Path:
    """`runs/<id>/pod.json`."""
    return run_dir / POD_FILE


def save_pod_record(run_dir: Path, record: PodRecord) -> None:
    """Replace `pod.json` atomically (blocking: call through `trio.to_thread.run_sync`)."""
    write_atomic(pod_record_path(run_dir), record.to_json())


def load_pod_record(run_dir: Path) -> PodRecord | None:
    """The run's pod record; None when the run has none (blocking)."""
    path = pod_record_path(run_dir)
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise PodRecordError(
            f"cannot read runs/{run_dir.name}/{POD_FILE}: {error.strerror}"
        ) from None
    return PodRecord.from_json(text, f"runs/{run_dir.name}/{POD_FILE}")


def spend(rate: float, uptime_seconds: float) -> float:
    """Estimated spend: rate × uptime / 3600, rounded to 1e-4 USD."""
    return round(rate * max(0.0, uptime_seconds) / 3600, 4)
