"""What a training command works with (its settings, project, bus and interrupt), and the error
of a command the user stopped while its run goes on."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from overbrainer.config.settings import Settings, Training, reconnect_secs
from overbrainer.events.bus import EventBus
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import EXIT_INTERRUPTED, OverbrainerError, UsageError
from overbrainer.project.directory import Project
from overbrainer.training.follow_job import FollowTimes
from overbrainer.training.run_store import Runs


class Detached(OverbrainerError):
    """Ctrl-C while following: the job keeps running; the message says how to follow it again."""

    exit_code = EXIT_INTERRUPTED


def detached(run_id: str, target: str) -> Detached:
    """The error a follow ends with when the user stops following."""
    return Detached(
        f"interrupted: run {run_id} keeps running on target `{target}`; "
        f"follow it again with `overbrainer train attach {run_id}`"
    )


def not_started() -> Detached:
    """Ctrl-C before a run exists."""
    return Detached("interrupted before the run started")


@attrs.frozen
class Session:
    """What a training command works with: settings, paths, its bus and interrupt."""

    settings: Settings
    project: Project
    bus: EventBus
    interrupt: Interrupt
    times: FollowTimes = attrs.field(factory=FollowTimes.from_env)
    created: Callable[[str], None] = attrs.field(default=lambda run_id: None)
    """Told each new run ID while the start goes on (the front end's `run_created` result sink:
    the TUI follows the run; the CLI does nothing)."""

    @property
    def runs(self) -> Runs:
        """The project's `runs/`."""
        return Runs(self.project.runs)

    def follow_times(self, target: str) -> FollowTimes:
        """The follow clocks, with the reconnect budget of target `target`."""
        budget = reconnect_secs(self.settings.targets.get(target))
        return attrs.evolve(self.times, reconnect=budget)

    def training(self, what: str = "") -> Training:
        """`[training]`, or the spec's refusal."""
        if self.settings.training is None:
            raise UsageError(f"{what}no [training] section in overbrainer.toml")
        return self.settings.training
