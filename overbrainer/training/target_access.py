"""The target a run trains on: its settings checked by its kind."""

from __future__ import annotations

from overbrainer.config.settings import Settings
from overbrainer.config.target_settings import TargetSettings
from overbrainer.model.errors import UsageError
from overbrainer.targets import JobNeeds, kind_of

HostTarget = TargetSettings
"""A target overbrainer reaches as it is (its kind makes no pod)."""
TrainTarget = TargetSettings


def run_target(settings: Settings, name: str, *, keep_pod: bool = False) -> TrainTarget:
    """The `[targets.<name>]` a training run uses, checked by its kind."""
    target = settings.targets.get(name)
    if target is None:
        raise UsageError(f"unknown target `{name}`")
    kind_of(target).check(name, target, JobNeeds(keep=keep_pod))
    return target
