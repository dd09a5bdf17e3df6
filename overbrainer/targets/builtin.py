"""The built-in kinds' settings as one type, for the job code that still reads their fields.

`venv`, `image`, `gpus`, … are read off a target by the train, compare and export paths
(design-42 §1.1); they go once each kind's machine answers for them (steps 3-7). Until then
those paths take this union, and `builtin` is the one place that says a table is one of them.
"""

from __future__ import annotations

from typing import cast

from overbrainer.config.target_settings import TargetSettings
from overbrainer.targets.local_kind import LocalTarget
from overbrainer.targets.runpod.settings import RunpodTarget
from overbrainer.targets.ssh_kind import SshTarget

Target = LocalTarget | SshTarget | RunpodTarget
"""A built-in kind's `[targets.<n>]` settings."""


def as_builtin(target: TargetSettings) -> Target:
    """`target` as the job paths read it (a registered kind gives the fields they read)."""
    return cast(Target, target)
