"""What happens to a run's Runpod pod, as events tell it."""

from __future__ import annotations

import enum

import attrs


class DeleteReason(enum.Enum):
    """Why overbrainer deletes a pod."""

    RETRIEVED = "retrieved"
    NOT_READY = "not_ready"
    REFUSED = "refused"
    BOOTSTRAP_FAILED = "bootstrap_failed"
    INTERRUPTED = "interrupted"
    DEADLINE = "deadline"
    REQUESTED = "requested"
    DUPLICATE = "duplicate"

    def describe(self) -> str:
        """The reason in words."""
        return _REASON_WORDS[self]


_REASON_WORDS = {
    DeleteReason.RETRIEVED: "results retrieved",
    DeleteReason.NOT_READY: "not ready in time",
    DeleteReason.REFUSED: "its watchdog cannot delete it",
    DeleteReason.BOOTSTRAP_FAILED: "its bootstrap failed",
    DeleteReason.INTERRUPTED: "interrupted before the job started",
    DeleteReason.DEADLINE: "max_hours reached",
    DeleteReason.REQUESTED: "requested",
    DeleteReason.DUPLICATE: "duplicate of this run's pod",
}


@attrs.frozen
class PodCreating:
    """A pod is being asked for."""

    name: str
    gpu_type: str


@attrs.frozen
class PodUnavailable:
    """Runpod has no such GPU now; the next type is tried."""

    gpu_type: str
    reason: str


@attrs.frozen
class PodCreated:
    """The pod exists; SSH is awaited."""

    pod_id: str
    gpu_type: str
    data_center: str | None = None
    cost_per_hour: float | None = None


@attrs.frozen
class PodReady:
    """SSH answers and the watchdog is armed; `deadline` is RFC 3339 UTC or None."""

    pod_id: str
    after: float
    deadline: str | None = None


@attrs.frozen
class PodDeleting:
    """The pod is being deleted."""

    pod_id: str
    reason: DeleteReason


@attrs.frozen
class PodDeleted:
    """The pod is gone; uptime in seconds and estimated spend in USD when known."""

    pod_id: str
    uptime: float | None = None
    estimated_spend: float | None = None


@attrs.frozen
class PodKept:
    """The pod is kept running (`--keep-pod`)."""

    pod_id: str


PodStatus = (
    PodCreating | PodUnavailable | PodCreated | PodReady | PodDeleting | PodDeleted | PodKept
)
