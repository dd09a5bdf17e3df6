"""The pod of one job (a run's, or a run's compare or export) while overbrainer provisions,
follows and ends it: its `pod.json` writes, its events, the SSH executor that reaches it."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import attrs
import trio

from overbrainer.events.bus import EventBus
from overbrainer.events.types import PodStatusChanged
from overbrainer.model.errors import WorkFailed
from overbrainer.model.pod_status import PodStatus
from overbrainer.targets.job_names import POLL_ENV
from overbrainer.targets.runpod.api import RunpodApi
from overbrainer.targets.runpod.create_body import workdir
from overbrainer.targets.runpod.keys import RunKeys, host_alias
from overbrainer.targets.runpod.pod_record import (
    AttemptResult,
    PodRecord,
    PodState,
    save_pod_record,
)
from overbrainer.targets.runpod.settings import RunpodTarget
from overbrainer.targets.ssh_open import open_ssh, ssh_client_of
from overbrainer.targets.ssh_session import SshExecutor

POD_POLL = 5.0
"""Seconds between looks at a pod while it starts (tests shorten it with the poll hook)."""
RECORD_BOUND = 30.0
"""Seconds a shielded write of `pod.json` may take."""


class ProvisionFailed(WorkFailed):
    """No ready pod: the run fails with this message."""


def pod_poll() -> float:
    """The pause between looks at a starting pod: 5 s, or the tests' poll hook."""
    try:
        value = float(os.environ.get(POLL_ENV, ""))
    except ValueError:
        return POD_POLL
    return value if 0 < value < POD_POLL else POD_POLL


class RecordDirs(Protocol):
    """Where the records of a pod's job live: `runs/`, or a run's `compares/`, `exports/`."""

    @property
    def root(self) -> Path:
        """The folder holding one directory per record."""
        ...

    def dir_of(self, run_id: str) -> Path:
        """The directory of record `run_id`."""
        ...


class HasId(Protocol):
    """A record with an ID (a run's, a compare's or an export's)."""

    @property
    def id(self) -> str:
        """The record's ID."""
        ...


D = TypeVar("D", bound=RecordDirs)
R = TypeVar("R", bound=HasId)


@attrs.define
class PodRun(Generic[D, R]):
    """A run's pod while overbrainer provisions, follows and ends it."""

    api: RunpodApi
    bus: EventBus
    runs: D
    run: R
    target: RunpodTarget
    keep: bool
    stopped: Callable[[], bool]
    """Whether the user asked to stop (Ctrl-C, the TUI's abandon): checked between steps."""
    pod: PodRecord
    keys: RunKeys | None = None
    created_mono: float | None = None
    vram_floor_gb: int | None = None
    """The estimate's VRAM floor for `gpu_types = "auto"` without `min_vram_gb` (§8)."""
    noun: str = "run"
    """What the pod's job is for the user: `run`, or `compare`/`export` for a run's job."""

    @property
    def run_id(self) -> str:
        """The run's ID."""
        return self.run.id

    @property
    def subject(self) -> str:
        """`run <id>` (or `compare <id>`, `export <id>`): what messages name."""
        return f"{self.noun} {self.run_id}"

    @property
    def shown_dir(self) -> str:
        """The record's directory as messages show it: `runs/<id>`, or a run's job's."""
        if self.runs.root.name == "runs":
            return f"runs/{self.run_id}"
        return f"runs/{self.runs.root.parent.name}/{self.runs.root.name}/{self.run_id}"

    @property
    def remote_dir(self) -> str:
        """R: the run's directory on the pod."""
        return f"{workdir(self.target)}/{self.run_id}"

    async def save(self, **changes: Any) -> None:
        """Change `pod.json` (atomically), shielded: a Ctrl-C never loses what it names."""
        self.pod = attrs.evolve(self.pod, **changes)
        with trio.fail_after(RECORD_BOUND, shield=True):
            await trio.to_thread.run_sync(save_pod_record, self.runs.dir_of(self.run_id), self.pod)

    def publish(self, status: PodStatus) -> None:
        """Tell the front end (the `pod: …` lines)."""
        self.bus.publish(PodStatusChanged(status))

    async def set_attempt(self, result: AttemptResult, **changes: Any) -> None:
        """Record what the last create call gave."""
        *done, last = self.pod.attempts
        changed = attrs.evolve(last, result=result, **changes)
        await self.save(attempts=(*done, changed))


def new_pod_run(
    api: RunpodApi,
    bus: EventBus,
    runs: D,
    run: R,
    target: RunpodTarget,
    *,
    keep: bool,
    stopped: Callable[[], bool],
    vram_floor_gb: int | None = None,
    noun: str = "run",
) -> PodRun[D, R]:
    """The pod of a new run (or of a run's job), before anything is asked of Runpod."""
    record = PodRecord(
        run_id=run.id,
        state=PodState.CREATING,
        keep=keep,
        gpu_count=target.gpu_count,
        max_cost_usd=None if keep else target.max_cost_usd,
        network_volume_id=target.network_volume_id,
        max_volume_gb=target.max_volume_gb,
    )
    return PodRun(
        api, bus, runs, run, target, keep, stopped, record, vram_floor_gb=vram_floor_gb, noun=noun
    )


def pod_ssh_config(run: PodRun[D, R]) -> str:
    """`runs/<id>/ssh/config`, absolute."""
    return str((run.runs.dir_of(run.run_id) / "ssh" / "config").absolute())


def open_pod_ssh(run: PodRun[D, R], target_name: str) -> AbstractAsyncContextManager[SshExecutor]:
    """The SSH executor of the job's pod, through the job's own ssh config (not connected),
    over the target's SSH client."""
    return open_ssh(
        target_name,
        host_alias(run.run_id),
        workdir(run.target),
        ssh_config=pod_ssh_config(run),
        client=ssh_client_of(run.target.ssh_client),
    )


@attrs.frozen
class JobDirs:
    """The folder of a pod's job records: `runs/`, or a run's `compares/` or `exports/`."""

    root: Path

    def dir_of(self, run_id: str) -> Path:
        """The directory of record `run_id`."""
        return self.root / run_id


@attrs.frozen
class JobId:
    """The record a pod is made for, by its ID."""

    id: str


JobPod = PodRun[JobDirs, JobId]
"""The pod of a job (a run's, or a run's compare or export)."""
