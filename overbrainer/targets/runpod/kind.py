"""`kind = "runpod"`: a Runpod pod made for each job, deleted after it (machine.py)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import attrs
import trio

from overbrainer.config.env import SSH_CLIENT_ENV
from overbrainer.config.settings import Runtime, Settings
from overbrainer.config.target_settings import SettingsKind, TargetSettings
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError, UsageError
from overbrainer.model.json_values import JsonValue
from overbrainer.targets.executor import Executor, JobGone, JobRef
from overbrainer.targets.host_machine import HostMachine, HostRuntime
from overbrainer.targets.kind import JobChecks
from overbrainer.targets.machine import JobNeeds, JobOpening, Machine, RecordedJob
from overbrainer.targets.runpod.errors import NO_KEY, RunpodKeyError
from overbrainer.targets.runpod.job_sizing import quote_line
from overbrainer.targets.runpod.machine import open_pod_machine
from overbrainer.targets.runpod.pod_record import PodRecordError, load_pod_record
from overbrainer.targets.runpod.reach import (
    PodGone,
    pod_beside,
    pod_record_of,
    reach_pod_machine,
)
from overbrainer.targets.runpod.settings import RUNPOD_SETTINGS, RunpodTarget, pod_settings
from overbrainer.targets.ssh_open import chosen_client


@attrs.frozen
class RunpodKind:
    """A pod per job, made when the job's machine is opened (its record names the pod)."""

    name: str = RunpodTarget.kind
    settings: SettingsKind = RUNPOD_SETTINGS
    makes_pod: bool = True

    def check(
        self, name: str, target: TargetSettings, needs: JobNeeds, settings: Settings | None = None
    ) -> None:
        """Refuse, before any pod exists (exit 2): with `settings`, a missing API key; a wrong
        OVERBRAINER_SSH_CLIENT. A kept pod is its to keep."""
        if settings is not None:
            key = settings.runpod.api_key
            if key is None or not key.text.strip():
                raise RunpodKeyError(NO_KEY)
        chosen_client(pod_settings(target).ssh_client, os.environ.get(SSH_CLIENT_ENV))

    def checks(self, target: TargetSettings) -> JobChecks:
        """Nothing: the pod's image holds Axolotl, and it runs no container here."""
        return JobChecks()

    def left_job(self, target: TargetSettings, job_dir: Path, run_id: str) -> JobRef | None:
        """None: its `job.pid` is on the pod."""
        return None

    def alive(self, job_dir: Path, job: JobRef) -> bool | None:
        """None: no pod is reached for the check, its record says."""
        return None

    async def quote(self, settings: Settings, target: TargetSettings, model: Path) -> str | None:
        """The new pod's price for a job serving `model` (the catalog's cheapest fitting
        type, the cap, or neither); None without an API key."""
        return await quote_line(settings, target, model)

    def connect(
        self,
        name: str,
        target: TargetSettings,
        runs_root: Path,
        interrupt: Interrupt,
        interrupted: Callable[[], OverbrainerError],
    ) -> AbstractAsyncContextManager[Executor]:
        """Not used: a pod is made per job, with its record (`open`)."""
        raise AssertionError("a runpod target is opened per job: open")

    def open(self, opening: JobOpening) -> AbstractAsyncContextManager[Machine]:
        """A new pod for the job: its record created, provisioned raced against Ctrl-C, then
        connected, its cost cap armed and R claimed, in one shield (machine.py)."""
        return _opened(opening)

    def reach(self, recorded: RecordedJob) -> AbstractAsyncContextManager[Machine]:
        """The recorded job's pod again (`pod.json`, rebuilt from Runpod when missing);
        JobGone when Runpod has no pod of it any more (stop, cancel: UsageError when there is
        nothing to act on)."""
        return _reached(recorded)

    def describe(self, job_dir: Path) -> str | None:
        """What the job's `pod.json` says of its pod (no API call); None with no pod record.
        An unreadable record is named rather than failing the listing."""
        try:
            pod = load_pod_record(job_dir)
        except PodRecordError as error:
            return f"pod unknown: {error.message}"
        return None if pod is None else pod.summary()

    def details(self, job_dir: Path) -> dict[str, JsonValue] | None:
        """What `pod.json` says of the pod (money as decimal strings); None with no readable
        pod record (`describe` names an unreadable one)."""
        try:
            pod = load_pod_record(job_dir)
        except PodRecordError:
            return None
        return None if pod is None else pod.details()


async def _no_job() -> None:
    """The job's start is the lifecycle's, after the machine's shielded set-up."""


@contextlib.asynccontextmanager
async def _opened(opening: JobOpening) -> AsyncIterator[Machine]:
    async with open_pod_machine(opening) as machine:
        assert opening.fail is not None
        await machine.start_job(_no_job, opening.fail)
        yield machine


@contextlib.asynccontextmanager
async def _reached(recorded: RecordedJob) -> AsyncIterator[Machine]:
    """The pod again. A pod that is gone fails the run (JobGone), but `stop` and `cancel` are
    refused (exit 2) when its record already says so or Runpod has no pod of it at all."""
    run_id, action = recorded.job_dir.name, recorded.action
    if action == "stop_beside":
        # The follower holds the project and its pod's lease: reach the pod through the run's
        # ssh config alone, with no API call.
        async with pod_beside(recorded, "nothing to stop") as executor:
            yield HostMachine(executor, HostRuntime(Runtime.NATIVE))
        return
    refused = action != "attach"
    if not refused:
        saved = await trio.to_thread.run_sync(load_pod_record, recorded.job_dir)
        if saved is not None and saved.live_pod is None:
            raise JobGone(f"pod {saved.pod_id} no longer exists")
    pod = await pod_record_of(recorded, f"nothing to {action}")
    if pod is None:
        if refused:
            raise UsageError(
                f"run {run_id} has no pod left (Runpod has no pod of it): nothing to {action}"
            )
        raise JobGone(f"run {run_id} has no pod left")
    # A cancel's Ctrl-C while connecting says the cancel did not start; otherwise the pod's
    # own words (its job goes on).
    interrupted = (lambda _: recorded.interrupted()) if action == "cancel" else None
    async with reach_pod_machine(recorded, pod, interrupted) as reached:
        if isinstance(reached, PodGone):
            raise JobGone(f"pod {reached.pod_id} no longer exists")
        yield reached


RUNPOD = RunpodKind()
"""The runpod kind (registered by `targets/registry.py`)."""
