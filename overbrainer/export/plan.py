"""An export checked before anything connects (§B.1): what was asked, the model of the run it
converts (or the refusal that says why it cannot), and the target it runs on."""

from __future__ import annotations

import logging
from pathlib import Path

import attrs
import trio

from overbrainer.config.ranges import is_ollama_name
from overbrainer.config.settings import QUANTIZE_TYPES
from overbrainer.export.record import EXPORTS_DIR
from overbrainer.model.errors import UsageError
from overbrainer.training import (
    CONFIG_FILE,
    OUTPUT_DIR,
    RunRecord,
    Runs,
    RunState,
    Session,
    TrainTarget,
    run_target,
    warn_missing_engine,
)

log = logging.getLogger(__name__)

MODEL_FILES = ("adapter_config.json", "config.json")


class ExportRefused(UsageError):
    """The run cannot be exported as it stands (bad input: exit 2)."""


@attrs.frozen
class ModelChoice:
    """The model an export converts, relative to the run directory, and its warning if any."""

    model: str
    warning: str | None = None


def _holds_model(folder: Path) -> bool:
    return any((folder / name).is_file() for name in MODEL_FILES)


def retrieved(record: RunRecord, run_dir: Path) -> bool:
    """Whether the run's results are here (its job log, and its snapshot when it stopped)."""
    if not (run_dir / "job.log").exists():
        return False
    return record.snapshot is None or (run_dir / record.snapshot.checkpoint).is_dir()


def model_of(record: RunRecord, run_dir: Path) -> ModelChoice:
    """The model to export, or ExportRefused with the reference's message (blocking)."""
    run_id = record.id
    if record.state not in (RunState.SUCCEEDED, RunState.STOPPED):
        raise ExportRefused(
            f"run {run_id} is {record.state.value}: only a succeeded or stopped run can be exported"
        )
    if not retrieved(record, run_dir):
        raise ExportRefused(
            f"the results of run {run_id} were not retrieved: retrieve them with "
            f"`overbrainer train attach {run_id}`, then export"
        )
    if not (run_dir / CONFIG_FILE).is_file():
        raise ExportRefused(f"runs/{run_id}/{CONFIG_FILE} is missing: the export needs it")
    warning = None
    if record.state is RunState.STOPPED and record.snapshot is not None:
        warning = (
            f"run {run_id} stopped at step {record.snapshot.step}: its export holds the "
            "partial model of that step"
        )
    if _holds_model(run_dir / OUTPUT_DIR):
        return ModelChoice(OUTPUT_DIR, warning)
    snapshot = record.snapshot
    stopped = record.state is RunState.STOPPED and snapshot is not None
    if stopped and snapshot is not None and _holds_model(run_dir / snapshot.checkpoint):
        return ModelChoice(snapshot.checkpoint, warning)
    raise ExportRefused(f"runs/{run_id}/{OUTPUT_DIR} holds no model: nothing to export")


def check_quantize(quantize: str) -> str:
    """`quantize` when it is a known type; UsageError otherwise."""
    if quantize not in QUANTIZE_TYPES:
        raise UsageError(f"--quantize: must be one of {', '.join(QUANTIZE_TYPES)}")
    return quantize


def check_ollama_name(name: str | None) -> str | None:
    """`name` when it is an Ollama model name (or None); UsageError otherwise."""
    if name is not None and not is_ollama_name(name):
        raise UsageError("--ollama: must be an Ollama model name ([host/][namespace/]model[:tag])")
    return name


@attrs.frozen
class ExportRequest:
    """What `overbrainer export` was asked: the run, the type, the Ollama name, `--keep-pod`."""

    run_id: str
    quantize: str
    ollama_name: str | None = None
    keep_pod: bool = False


def export_target(session: Session, record: RunRecord, keep_pod: bool) -> TrainTarget:
    """The run's target, where the export runs (a Runpod one: on a new pod; a container
    runtime: in the target's container, as a training job)."""
    return run_target(session.settings, record.target, keep_pod=keep_pod)


@attrs.frozen
class ExportPlan:
    """An export checked before anything connects: the run, its model, its target."""

    run: RunRecord
    choice: ModelChoice
    target: TrainTarget
    exports: Runs


async def plan_export(session: Session, request: ExportRequest) -> ExportPlan:
    """The refusals of §B.1 and the run's model and target (the stopped-run warning logged)."""
    runs = session.runs
    run = await trio.to_thread.run_sync(runs.load, request.run_id)
    run_dir = runs.dir_of(run.id)
    choice = await trio.to_thread.run_sync(model_of, run, run_dir)
    target = export_target(session, run, request.keep_pod)
    warn_missing_engine(run.target, target)
    if choice.warning is not None:
        log.warning("%s", choice.warning)
    return ExportPlan(run, choice, target, Runs(run_dir / EXPORTS_DIR))
