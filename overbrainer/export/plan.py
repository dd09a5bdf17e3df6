"""What an export of a run would convert, or the refusal that says why it cannot (§B.1)."""

from __future__ import annotations

from pathlib import Path

import attrs

from overbrainer.config.ranges import is_ollama_name
from overbrainer.config.settings import QUANTIZE_TYPES
from overbrainer.model.errors import UsageError
from overbrainer.training import CONFIG_FILE, OUTPUT_DIR, RunRecord, RunState

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
