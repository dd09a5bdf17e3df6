"""An export checked before anything connects (§B.1): what was asked, the model of the run it
converts (its trained model, or with `--base` its base model; or the refusal that says why it
cannot), and the target it runs on."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import trio
import yaml

from overbrainer.config.ranges import is_ollama_name
from overbrainer.config.secrets import resolve_secret
from overbrainer.config.settings import QUANTIZE_TYPES
from overbrainer.export.record import BASE, CHILD, EXPORTS_DIR
from overbrainer.model.errors import EXIT_INTERRUPTED, OverbrainerError, UsageError
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
TOKEN_ENV = "HF_TOKEN"
"""The variable the job's Hub download reads the token from (training passes it the same way)."""


class ExportRefused(UsageError):
    """The run cannot be exported as it stands (bad input: exit 2)."""


class ExportCancelled(OverbrainerError):
    """Ctrl-C cancelled the export, or its job (exit 130)."""

    exit_code = EXIT_INTERRUPTED


@attrs.frozen
class ModelChoice:
    """The model an export converts and its warning if any: the child's folder relative to the
    run directory, or (`which` is BASE) the base model as the target sees it: a directory or a
    Hub ID."""

    model: str
    warning: str | None = None
    which: str = CHILD


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


def base_model_of(run_dir: Path) -> str | None:
    """`base_model` of the run's axolotl.yaml, if it names one (blocking)."""
    try:
        raw: Any = yaml.safe_load((run_dir / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None
    base = raw.get("base_model") if isinstance(raw, dict) else None
    return base if isinstance(base, str) else None


def base_of(record: RunRecord, run_dir: Path) -> ModelChoice:
    """The run's base model, what its training started from (`base_model` of its axolotl.yaml),
    whatever state the run is in; ExportRefused without one (blocking)."""
    config = f"runs/{record.id}/{CONFIG_FILE}"
    if not (run_dir / CONFIG_FILE).is_file():
        raise ExportRefused(f"{config} is missing: the base model's export needs it")
    base = base_model_of(run_dir)
    if base is None or not base.strip():
        raise ExportRefused(f"{config} names no base_model: there is no base model to export")
    return ModelChoice(base.strip(), which=BASE)


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


def check_base_ollama(base: bool, name: str | None) -> None:
    """UsageError for `--ollama` with `--base`: only the child's GGUF gets a Modelfile."""
    if base and name is not None:
        raise UsageError(
            "--ollama: not with --base (the base model's GGUF gets no Modelfile or Ollama model)"
        )


@attrs.frozen
class ExportRequest:
    """What `overbrainer export` was asked: the run, the type, the Ollama name, `--keep-pod`,
    and `--base` (the run's base model instead of its trained one)."""

    run_id: str
    quantize: str
    ollama_name: str | None = None
    keep_pod: bool = False
    base: bool = False


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
    secrets: Mapping[str, str] = attrs.field(factory=dict)
    """The job's secrets: the Hub token a base model's download uses (`hf_token`), if set."""


async def _hub_token(session: Session) -> dict[str, str]:
    token = session.settings.hf_token
    if token is None:
        return {}
    return {TOKEN_ENV: await resolve_secret(token, "hf_token")}


async def plan_export(session: Session, request: ExportRequest) -> ExportPlan:
    """The refusals of §B.1 and the run's model and target (the stopped-run warning logged);
    for the base model, the Hub token resolved (raced: Ctrl-C is ExportCancelled)."""
    runs = session.runs
    run = await trio.to_thread.run_sync(runs.load, request.run_id)
    run_dir = runs.dir_of(run.id)
    choose = base_of if request.base else model_of
    choice = await trio.to_thread.run_sync(choose, run, run_dir)
    target = export_target(session, run, request.keep_pod)
    warn_missing_engine(run.target, target)
    if choice.warning is not None:
        log.warning("%s", choice.warning)
    secrets: dict[str, str] = {}
    if request.base:
        token = await session.interrupt.race(lambda: _hub_token(session))
        if token is None:
            raise ExportCancelled(f"interrupted before the export of run {run.id} started")
        secrets = token
    return ExportPlan(run, choice, target, Runs(run_dir / EXPORTS_DIR), secrets)
