"""Checks before a run exists: a container engine on PATH, Axolotl on the target, no run of the
project still training there (said at once, before `run`'s stages)."""

from __future__ import annotations

import logging
import shutil

import trio

from overbrainer.config.settings import Settings, Training
from overbrainer.config.target_settings import TargetSettings
from overbrainer.events.interrupt import Interrupt
from overbrainer.model.errors import WorkFailed
from overbrainer.project.directory import Project
from overbrainer.targets import Executor, kind_of
from overbrainer.training.live_runs import live_runs, still_training
from overbrainer.training.run_store import Runs
from overbrainer.training.session import Detached
from overbrainer.training.target_access import TrainTarget, run_target
from overbrainer.training.trainer_check import CannotTrain, check_trainer, checks_axolotl

log = logging.getLogger(__name__)

RUN_NO_TRAIN_HINT = "; `overbrainer run --no-train` makes the dataset without training"
"""Said after `run`'s refusal to train (the TUI says its own key instead)."""


def warn_missing_engine(name: str, target: TargetSettings) -> None:
    """Say early when a container job here has no engine on PATH (it would fail with exit code
    127)."""
    engine = kind_of(target).checks(target).engine
    if engine is not None and shutil.which(engine) is None:
        log.warning("%s is not on PATH: the job of target `%s` will fail", engine, name)


async def check_can_train(
    name: str, target: TrainTarget, training: Training, executor: Executor
) -> None:
    """Refuse (CannotTrain, exit 2) a native target without `axolotl`, or without a GPU and
    the CPU settings, before a run exists."""
    if checks_axolotl(target):
        path = await check_trainer(name, target, training, executor)
        log.debug("target `%s` trains with %s", name, path)


async def refuse_if_training_cannot_start(
    settings: Settings, project: Project, interrupt: Interrupt
) -> None:
    """Before `run`'s stages: refuse at once (exit 2) when its training would find no Axolotl.

    A remote target that cannot be reached now is only warned about: training checks again.
    """
    if settings.training is None:
        return
    name = settings.training.target
    target = settings.targets.get(name)
    if target is not None:
        warn_missing_engine(name, target)
    if not checks_axolotl(target):
        return
    checked = run_target(settings, name)

    def interrupted() -> Detached:
        return Detached("interrupted before the first stage")

    try:
        async with kind_of(checked).connect(
            name, checked, Runs(project.runs).root, interrupt, interrupted
        ) as executor:
            await check_can_train(name, checked, settings.training, executor)
    except CannotTrain as error:
        raise CannotTrain(f"{error.message}{RUN_NO_TRAIN_HINT}") from None
    except (OSError, WorkFailed) as error:
        log.warning(
            "cannot check target `%s` before the stages: %s; training checks it again", name, error
        )


async def warn_if_a_run_still_trains(settings: Settings, project: Project) -> None:
    """Before `run`'s stages: say at once when its training would be refused (a live run)."""
    if settings.training is None:
        return
    name = settings.training.target
    target = settings.targets.get(name)
    live = await trio.to_thread.run_sync(live_runs, Runs(project.runs), name, target)
    if live:
        log.warning(
            "%s; `run` trains after split only if it has ended by then",
            still_training(live, name).message,
        )
