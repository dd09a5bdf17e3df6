"""Which of the account's pods belong to this project's runs, and which are strays (§7.10)."""

from __future__ import annotations

import enum

import attrs

from overbrainer.targets.runpod.pod_record import PodRecord, PodState
from overbrainer.targets.runpod.types import Pod

NAME_PREFIX = "overbrainer-"
IN_PROGRESS_STATES = frozenset({"preparing", "running"})


class PodClass(enum.Enum):
    """How a pod named or marked like overbrainer's relates to this project's runs."""

    IN_PROGRESS = "in_progress"
    ENDED = "ended"
    KEPT = "kept"
    AWAITING_RETRIEVAL = "awaiting_retrieval"
    STRAY = "stray"
    STRAY_BESIDE_KEPT = "stray_beside_kept"
    NOT_IN_RUNS = "not_in_runs"
    UNREADABLE = "unreadable"
    NO_MARKER = "no_marker"

    @property
    def orphan(self) -> bool:
        """Whether nothing of this project will delete the pod (it is warned about)."""
        return self in ORPHANS


ORPHANS = frozenset(
    {
        PodClass.ENDED,
        PodClass.STRAY,
        PodClass.STRAY_BESIDE_KEPT,
        PodClass.NOT_IN_RUNS,
        PodClass.NO_MARKER,
    }
)


@attrs.frozen
class RunView:
    """A run of `runs/` as the classification sees it; `state` None when unreadable."""

    run_id: str
    state: str | None
    pod: PodRecord | None


@attrs.frozen
class Classified:
    """A pod, the run it names (None without a marker), its class and the note shown."""

    pod: Pod
    run_id: str | None
    kind: PodClass
    note: str


def is_overbrainer_pod(pod: Pod) -> bool:
    """A pod carrying the run marker, or named like overbrainer's pods."""
    return pod.run_id is not None or pod.name.startswith(NAME_PREFIX)


def classify(pod: Pod, runs: dict[str, RunView]) -> Classified:
    """The class of one overbrainer pod given the project's runs."""
    run_id = pod.run_id
    if run_id is None:
        return Classified(pod, None, PodClass.NO_MARKER, "no run marker")
    view = runs.get(run_id)
    if view is None:
        note = (
            "not in this project's runs/; if no other checkout owns it, "
            f"`overbrainer pod rm {run_id} --force`"
        )
        return Classified(pod, run_id, PodClass.NOT_IN_RUNS, note)
    if view.state is None:
        return Classified(
            pod, run_id, PodClass.UNREADABLE, "its run.json or pod.json is unreadable"
        )
    record = view.pod
    if record is None or record.pod_id != pod.id or pod.id in record.stray_pods:
        if record is not None and record.state is PodState.KEPT:
            return Classified(pod, run_id, PodClass.STRAY_BESIDE_KEPT, "stray, not deleted")
        return Classified(pod, run_id, PodClass.STRAY, "stray, not deleted")
    if record.state is PodState.KEPT:
        return Classified(pod, run_id, PodClass.KEPT, "kept (--keep-pod)")
    if record.state is PodState.AWAITING_RETRIEVAL:
        return Classified(pod, run_id, PodClass.AWAITING_RETRIEVAL, "awaiting retrieval")
    if view.state in IN_PROGRESS_STATES and record.state is not PodState.DELETED:
        return Classified(pod, run_id, PodClass.IN_PROGRESS, f"run {view.state}")
    return Classified(pod, run_id, PodClass.ENDED, f"run {view.state}, not deleted")


def classify_all(pods: list[Pod], runs: dict[str, RunView]) -> list[Classified]:
    """The overbrainer pods of the listing, classified, in the listing's order."""
    return [classify(pod, runs) for pod in pods if is_overbrainer_pod(pod)]


def stray_warning(item: Classified) -> str | None:
    """The warning for a pod nothing of this project will delete; None for the others."""
    if not item.kind.orphan:
        return None
    if item.kind is PodClass.NO_MARKER:
        return (
            f"pod {item.pod.id} is named like an overbrainer pod but has no run marker; "
            "if it is yours, delete it from the Runpod console"
        )
    return f"pod {item.pod.id} is still on Runpod at ${item.pod.cost:.2f}/h: {item.note}"


def stray_warnings(items: list[Classified]) -> list[str]:
    """The warnings for every orphan among `items`."""
    return [line for line in (stray_warning(item) for item in items) if line is not None]
