"""What happens to a run's Runpod pod, as events tell it."""

from __future__ import annotations

import enum
import math

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
    COST_CAP = "cost_cap"
    COST_CAP_UNSET = "cost_cap_unset"
    LOCAL_SSH = "local_ssh"
    CANCELLED = "cancelled"
    UNFOLLOWED = "unfollowed"

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
    # The reference's words for these three were not read (spec §7.9): ours.
    DeleteReason.COST_CAP: "max_cost_usd reached",
    DeleteReason.COST_CAP_UNSET: "its cost cap could not be set",
    DeleteReason.LOCAL_SSH: "the local ssh cannot keep its connection",
    # Ours: a compare's or an export's job cancelled by Ctrl-C, or lost while followed.
    DeleteReason.CANCELLED: "its job was cancelled",
    DeleteReason.UNFOLLOWED: "its job could not be followed",
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


def duration_words(seconds: float) -> str:
    """A duration in whole seconds: `45s`, `1m00s`, `3h02m`."""
    s = max(0, math.floor(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02}s"
    return f"{s // 3600}h{s % 3600 // 60:02}m"


def pod_line(status: PodStatus) -> str:
    """What happened to the pod, in words."""
    match status:
        case PodCreating(name=name, gpu_type=gpu):
            return f"creating {name} ({gpu})"
        case PodUnavailable(gpu_type=gpu, reason=reason):
            return f"{gpu} unavailable ({reason})"
        case PodCreated(pod_id=pod, gpu_type=gpu, data_center=dc, cost_per_hour=rate):
            parts = [gpu]
            if dc is not None:
                parts.append(dc)
            if rate is not None:
                parts.append(f"${rate:.2f}/h")
            return f"created {pod} ({', '.join(parts)}); waiting for SSH"
        case PodReady(pod_id=pod, after=after, deadline=deadline):
            ready = f"{pod} ready after {duration_words(after)}; watchdog armed, "
            if deadline is not None:
                return ready + f"deletes it by {deadline} at the latest"
            return ready + "kept with no time limit (--keep-pod)"
        case PodDeleting(pod_id=pod, reason=reason):
            return f"deleting {pod} ({reason.describe()})"
        case PodDeleted(pod_id=pod, uptime=uptime, estimated_spend=spend):
            line = f"{pod} deleted"
            if uptime is not None:
                line += f" after {duration_words(uptime)}"
            if spend is not None:
                line += f", about ${spend:.2f}"
            return line
        case PodKept(pod_id=pod):
            return f"{pod} kept (--keep-pod)"
