"""The start of a training run (§6.1): checked before anything connects, then claimed here and on
the target, its files prepared and uploaded and its job spawned, shielded."""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import attrs
import trio

from overbrainer.config.secrets import resolve_secret
from overbrainer.config.settings import Settings, Training
from overbrainer.training import prepare
from overbrainer.training.live_runs import refuse_if_training
from overbrainer.training.preflight import warn_missing_engine
from overbrainer.training.session import Detached, Session
from overbrainer.training.target_access import TrainTarget, run_target

log = logging.getLogger(__name__)

START_BOUND = 300.0
"""Seconds the shielded start may take (copying the data, linking a checkpoint, spawning)."""
REMOTE_START_BOUND = 1800.0
"""The same on a remote target, where the upload (a resumed run's checkpoint) takes longer."""
UPLOAD_SKIP = ("ssh", "pod.json")
"""What an upload leaves out of a run directory (keys and the pod record never leave here)."""


def _has_examples(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


async def _hf_token(settings: Settings) -> dict[str, str]:
    if settings.hf_token is None:
        return {}
    return {"HF_TOKEN": await resolve_secret(settings.hf_token, "hf_token")}


@attrs.frozen
class StartPlan:
    """A new run checked before anything connects: its target, settings, data and secrets."""

    name: str
    target: TrainTarget
    training: Training
    resume: prepare.ResumeSource | None
    resume_from: str | None
    data: Path
    secrets: dict[str, str]


async def plan_start(
    session: Session,
    *,
    target_name: str | None = None,
    resume_from: str | None = None,
    keep_pod: bool = False,
    force: bool = False,
) -> StartPlan:
    """The checks of §6.1 steps 1-3 before the target is reached; the secrets resolved (raced).

    Refused (RunStillTraining, exit 2) while a run of this project still trains on the same
    target, unless `force`.
    """
    training = session.training()
    name = target_name or training.target
    target = run_target(session.settings, name, keep_pod=keep_pod)
    runs = session.runs
    if not force:
        await trio.to_thread.run_sync(refuse_if_training, runs, name, target)
    resume = (
        await trio.to_thread.run_sync(prepare.resume_source, runs, resume_from, training)
        if resume_from
        else None
    )
    warn_missing_engine(name, target)
    settings = session.settings
    warnings = await trio.to_thread.run_sync(
        functools.partial(
            prepare.start_warnings,
            training,
            hf_token=settings.hf_token is not None,
            push_after=settings.hub.after_training,
        )
    )  # reads a local base model's chat template
    for warning in warnings:
        log.warning("%s", warning)
    data = session.project.data if resume is None else resume.run_dir / "data"
    if not _has_examples(data / "train.jsonl"):
        shown = "data/train.jsonl" if resume is None else f"runs/{resume_from}/data/train.jsonl"
        raise prepare.NoTrainingData(f"{shown} has no example: run `overbrainer split` first")
    secrets = await session.interrupt.race(lambda: _hf_token(session.settings))
    if secrets is None:
        raise Detached("interrupted before the run started")
    return StartPlan(name, target, training, resume, resume_from if resume else None, data, secrets)
