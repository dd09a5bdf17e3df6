"""`runs/<id>/pod.json`: a run's Runpod pod as last seen (reference §7.4; version 1).

Written atomically through `storage/atomic.py`; read strictly (a wrong field is named, its
value never quoted). It never holds a private key, the API key or the pod's environment.
"""

from __future__ import annotations

import enum
import json
import math
from pathlib import Path
from typing import Any

import attrs

from overbrainer.model.errors import OverbrainerError
from overbrainer.storage.atomic import write_atomic
from overbrainer.storage.json_doc import NotJson, load_document

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


@attrs.frozen
class PodSsh:
    """The pod's direct SSH endpoint."""

    host: str
    port: int
    user: str


@attrs.frozen
class PodRecord:
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

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON values."""
        return {
            "version": VERSION,
            "run_id": self.run_id,
            "state": self.state.value,
            "keep": self.keep,
            "deadline": self.deadline,
            "deadline_unix": self.deadline_unix,
            "attempts": [_attempt_dict(a) for a in self.attempts],
            "pod_id": self.pod_id,
            "gpu_type": self.gpu_type,
            "gpu_count": self.gpu_count,
            "data_center_id": self.data_center_id,
            "cost_per_hour": self.cost_per_hour,
            "created_at": self.created_at,
            "created_unix": self.created_unix,
            "ready_at": self.ready_at,
            "ssh": None
            if self.ssh is None
            else {"host": self.ssh.host, "port": self.ssh.port, "user": self.ssh.user},
            "host_key": self.host_key,
            "deleted_at": self.deleted_at,
            "deleted_by": None if self.deleted_by is None else self.deleted_by.value,
            "estimated_spend": self.estimated_spend,
            "stray_pods": list(self.stray_pods),
            "max_cost_usd": self.max_cost_usd,
            "network_volume_id": self.network_volume_id,
            "max_volume_gb": self.max_volume_gb,
        }

    def to_json(self) -> str:
        """The text of `pod.json`: pretty JSON (2 spaces), raw UTF-8, then a newline."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes, source: str = POD_FILE) -> PodRecord:
        """Read a record; PodRecordError naming `source` and the field, never a value."""
        try:
            value = load_document(text)
        except NotJson as error:
            raise PodRecordError(f"{source} is not a valid pod record ({error.where})") from None
        try:
            return _record(value)
        except _Bad as error:
            raise PodRecordError(f"{source} is not a valid pod record: {error}") from None


def _attempt_dict(attempt: Attempt) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": attempt.name,
        "gpu_type": attempt.gpu_type,
        "sent_at": attempt.sent_at,
        "deadline_unix": attempt.deadline_unix,
        "result": attempt.result.value,
    }
    if attempt.detail is not None:
        out["detail"] = attempt.detail
    if attempt.pod_id is not None:
        out["pod_id"] = attempt.pod_id
    return out


class _Bad(ValueError):
    """A field of the wrong shape; the text names it."""


_MISSING = object()


def _get(body: dict[str, object], key: str) -> object:
    value = body.get(key, _MISSING)
    if value is _MISSING:
        raise _Bad(f"`{key}` is missing")
    return value


def _str(body: dict[str, object], key: str, optional: bool = False) -> Any:
    value = _get(body, key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _Bad(f"`{key}` is not {'a string or null' if optional else 'a string'}")
    return value


def _int(body: dict[str, object], key: str, optional: bool = False) -> Any:
    value = _get(body, key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(f"`{key}` is not {'an integer or null' if optional else 'an integer'}")
    return value


def _float(body: dict[str, object], key: str) -> float | None:
    value = _get(body, key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _Bad(f"`{key}` is not a number or null")
    return float(value)


def _enum(body: dict[str, object], key: str, kind: type[enum.Enum], optional: bool = False) -> Any:
    value = _get(body, key)
    if value is None and optional:
        return None
    try:
        return kind(value)
    except ValueError:
        raise _Bad(f"`{key}` is not one of {', '.join(str(m.value) for m in kind)}") from None


def _obj(value: object, what: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise _Bad(f"{what} is not an object")
    return value


def _list(body: dict[str, object], key: str) -> list[object]:
    value = _get(body, key)
    if not isinstance(value, list):
        raise _Bad(f"`{key}` is not a list")
    return value


def _attempt(value: object, number: int) -> Attempt:
    body = _obj(value, f"attempt {number}")
    try:
        detail = body.get("detail")
        pod_id = body.get("pod_id")
        if detail is not None and not isinstance(detail, str):
            raise _Bad("`detail` is not a string")
        if pod_id is not None and not isinstance(pod_id, str):
            raise _Bad("`pod_id` is not a string")
        return Attempt(
            name=_str(body, "name"),
            gpu_type=_str(body, "gpu_type"),
            sent_at=_str(body, "sent_at"),
            deadline_unix=_int(body, "deadline_unix", True),
            result=_enum(body, "result", AttemptResult),
            detail=detail,
            pod_id=pod_id,
        )
    except _Bad as error:
        raise _Bad(f"attempt {number}: {error}") from None


def _ssh(value: object) -> PodSsh | None:
    if value is None:
        return None
    body = _obj(value, "`ssh`")
    try:
        return PodSsh(_str(body, "host"), _int(body, "port"), _str(body, "user"))
    except _Bad as error:
        raise _Bad(f"ssh: {error}") from None


def _record(value: object) -> PodRecord:
    body = _obj(value, "the record")
    version = body.get("version")
    if version != VERSION or isinstance(version, bool):
        raise _Bad(f"`version` is not {VERSION} (written by another overbrainer?)")
    keep = _get(body, "keep")
    if not isinstance(keep, bool):
        raise _Bad("`keep` is not true or false")
    strays = _list(body, "stray_pods")
    if not all(isinstance(s, str) for s in strays):
        raise _Bad("`stray_pods` is not a list of strings")
    return PodRecord(
        run_id=_str(body, "run_id"),
        state=_enum(body, "state", PodState),
        keep=keep,
        deadline=_str(body, "deadline", True),
        deadline_unix=_int(body, "deadline_unix", True),
        attempts=tuple(_attempt(a, n) for n, a in enumerate(_list(body, "attempts"), 1)),
        pod_id=_str(body, "pod_id", True),
        gpu_type=_str(body, "gpu_type", True),
        gpu_count=_int(body, "gpu_count"),
        data_center_id=_str(body, "data_center_id", True),
        cost_per_hour=_float(body, "cost_per_hour"),
        created_at=_str(body, "created_at", True),
        created_unix=_int(body, "created_unix", True),
        ready_at=_str(body, "ready_at", True),
        ssh=_ssh(_get(body, "ssh")),
        host_key=_str(body, "host_key", True),
        deleted_at=_str(body, "deleted_at", True),
        deleted_by=_enum(body, "deleted_by", DeletedBy, True),
        estimated_spend=_float(body, "estimated_spend"),
        stray_pods=tuple(str(s) for s in strays),
        max_cost_usd=_float(body, "max_cost_usd"),
        network_volume_id=_str(body, "network_volume_id", True),
        max_volume_gb=_int(body, "max_volume_gb", True),
    )


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
