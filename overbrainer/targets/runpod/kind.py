"""`kind = "runpod"`: a Runpod pod made for each job, deleted after it (provision.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import attrs

from overbrainer.config.env import SSH_CLIENT_ENV
from overbrainer.config.settings import Engine, Runtime
from overbrainer.config.target_settings import SettingsKind, TargetSettings
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import OverbrainerError
from overbrainer.targets.executor import Executor
from overbrainer.targets.machine import JobOpening, Machine, RecordedJob
from overbrainer.targets.runpod.settings import RUNPOD_SETTINGS, RunpodTarget, pod_settings
from overbrainer.targets.ssh_open import chosen_client


@attrs.frozen
class RunpodKind:
    """A pod per job: the job's code provisions it (its record is the pod's), so `open` is not
    how a Runpod job reaches its machine."""

    name: str = RunpodTarget.kind
    settings: SettingsKind = RUNPOD_SETTINGS
    on_this_machine: bool = False
    makes_pod: bool = True

    def runtime(self, target: TargetSettings) -> Runtime:
        """Native: the image's venv on the pod."""
        return Runtime.NATIVE

    def engine(self, target: TargetSettings) -> Engine | None:
        """None: a pod runs no container of its own."""
        return None

    def check(self, name: str, target: TargetSettings) -> None:
        """Refuse a wrong OVERBRAINER_SSH_CLIENT before any pod exists (exit 2); the API key
        is the pod code's to check."""
        chosen_client(pod_settings(target).ssh_client, os.environ.get(SSH_CLIENT_ENV))

    def open(
        self,
        name: str,
        target: TargetSettings,
        runs_root: Path,
        interrupt: Interrupt,
        interrupted: Callable[[], OverbrainerError],
    ) -> AbstractAsyncContextManager[Executor]:
        """Not used: a pod is opened with its job's record (`pod_run.new_pod_run`)."""
        raise AssertionError("a runpod target is opened per job by its pod code")

    def open_machine(self, opening: JobOpening) -> AbstractAsyncContextManager[Machine]:
        """Not yet: the pod paths open their pod themselves (issue 42 step 5 moves them here)."""
        raise AssertionError("a runpod target is opened per job by its pod code")

    def reach_machine(self, recorded: RecordedJob) -> AbstractAsyncContextManager[Machine]:
        """Not yet: `train attach|stop|cancel` reach a pod through training/pod_attach.py."""
        raise AssertionError("a runpod job is reached by its pod code")

    def describe(self, job_dir: Path) -> str | None:
        """Nothing yet: `runs ls` reads `pod.json` itself."""
        return None


RUNPOD = RunpodKind()
"""The runpod kind (registered by `targets/registry.py`)."""
