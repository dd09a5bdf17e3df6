"""The compare job on the run's target: its directory, files, environment and results (§A.5-7)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

import attrs
import trio

from overbrainer.compare.job_script import CLIENT, SCRIPT, client_script, compare_script
from overbrainer.compare.plan import ComparePlan
from overbrainer.compare.setup import SETUP_FILE, CompareSetup
from overbrainer.config.settings import Compare
from overbrainer.model.errors import EXIT_INTERRUPTED, OverbrainerError, WorkFailed
from overbrainer.model.job_status import Exited, JobStatus
from overbrainer.model.train_metric import JobStage
from overbrainer.storage import write_atomic
from overbrainer.targets import (
    CACHE_ENV,
    POD_LOCAL,
    Command,
    LlamaCppPin,
)
from overbrainer.training import (
    RunRecord,
    Runs,
    RunState,
)

log = logging.getLogger(__name__)

COMPARES_DIR = "compares"
ANSWERS_FILE = "child_answers.jsonl"
BASE_ANSWERS_FILE = "base_answers.jsonl"
"""The base model's answers (`compare --base`), asked as the child's are."""
BASE_SERVER_LOG = "base_server.log"
ARTIFACTS = (
    ANSWERS_FILE,
    "server.log",
    BASE_ANSWERS_FILE,
    BASE_SERVER_LOG,
    "hardware.json",
    "load.json",
    "metrics.jsonl",
    "job.log",
)
START_BOUND = 300.0
"""Seconds the shielded start may take (an upload of the GGUF over SSH included)."""
UPLOAD_DIR = ".upload"
COMPARE_COMMAND = Command(JobStage.COMPARE, "sh", (SCRIPT,), from_venv=False)
"""The compare job's one command (`sh` is the system's, never a venv's)."""


class CompareInterrupted(OverbrainerError):
    """Ctrl-C during the job: it was cancelled."""

    exit_code = EXIT_INTERRUPTED


def compares_of(run_dir: Path) -> Runs:
    """The compares of a run, kept with the same record machinery as runs."""
    return Runs(run_dir / COMPARES_DIR)


def create_compare(runs: Runs, plan: ComparePlan, pin: LlamaCppPin, seed: int) -> CompareSetup:
    """Claim `compares/compare_<time>`, write `setup.json`, `questions.jsonl`, the scripts and
    the `preparing` record (blocking)."""
    run = plan.record
    compares = compares_of(runs.dir_of(run.id))
    remote_run = run.remote_dir.rstrip("/")
    record = compares.create(
        "compare", run.target, lambda compare_id: f"{remote_run}/{COMPARES_DIR}/{compare_id}"
    )
    setup = CompareSetup(
        run=run.id,
        compare=record.id,
        gguf=plan.export.file,
        gguf_sha256=plan.export.sha256,
        quantize=plan.export.quantize,
        llama_cpp=pin.tag,
        base_model=plan.base_model,
        seed=seed,
        created=record.created,
        questions=plan.questions,
        questions_file=None if plan.source is None else plan.source.path,
        questions_sha256=None if plan.source is None else plan.source.sha256,
        base_gguf=None if plan.base is None else plan.base.file,
        base_gguf_sha256=None if plan.base is None else plan.base.sha256,
        base_quantize=None if plan.base is None else plan.base.quantize,
    )
    folder = compares.dir_of(record.id)
    write_atomic(folder / SETUP_FILE, setup.to_json())
    write_atomic(folder / "questions.jsonl", setup.questions_jsonl())
    write_atomic(folder / SCRIPT, compare_script())
    write_atomic(folder / CLIENT, client_script())
    return setup


def local_tools_cache(environ: Mapping[str, str]) -> str:
    """This user's llama.cpp cache (OVERBRAINER_CACHE, else XDG's)."""
    if environ.get("OVERBRAINER_CACHE"):
        return environ["OVERBRAINER_CACHE"]
    base = environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return f"{base}/overbrainer"


def job_env(
    settings: Compare,
    pin: LlamaCppPin,
    *,
    root: str,
    model: str,
    context: int,
    cache: str,
    environ: Mapping[str, str],
    base_model: str | None = None,
) -> dict[str, str]:
    """The variables `compare.sh` reads (§A.6); `base_model`: the base's GGUF as the job
    sees it, asked after the child."""
    env = {
        "OVERBRAINER_METRICS": f"{root}/metrics.jsonl",
        "OVERBRAINER_COMPARE_MODEL": model,
        "OVERBRAINER_COMPARE_MAX_TOKENS": str(settings.max_tokens),
        "OVERBRAINER_COMPARE_TEMPERATURE": repr(settings.temperature),
        "OVERBRAINER_COMPARE_START_SECS": str(settings.server_start_secs),
        "OVERBRAINER_COMPARE_CTX": str(context),
        "OVERBRAINER_COMPARE_CONCURRENCY": str(settings.concurrency),
        CACHE_ENV: cache,
        **pin.job_env(),
    }
    if base_model is not None:
        env["OVERBRAINER_COMPARE_BASE_MODEL"] = base_model
    if environ.get("OVERBRAINER_COMPARE_KFD"):
        env["OVERBRAINER_COMPARE_KFD"] = environ["OVERBRAINER_COMPARE_KFD"]
    return env


async def failed_to_start(
    runs: Runs, setup: CompareSetup, error: OSError | OverbrainerError
) -> WorkFailed:
    """Record the compare failed before its job started; the error to raise."""
    compares = compares_of(runs.dir_of(setup.run))
    message = error.message if isinstance(error, OverbrainerError) else str(error)
    record = compares.load(setup.compare)
    failed = attrs.evolve(record, state=RunState.FAILED, message=message)
    await trio.to_thread.run_sync(compares.save, failed)
    return WorkFailed(f"compare {setup.compare} failed to start: {message}")


NEVER_UPLOADED = ("run.json", *POD_LOCAL)
"""What the upload of a compare directory leaves out (keys and the pod record stay here)."""


def job_message(folder: Path, word: str = "compare") -> str | None:
    """The job's own failure line from `job.log` (the last `compare: ` line and what follows;
    `bench: ` for a bench)."""
    try:
        lines = (folder / "job.log").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].startswith(f"{word}: ") and not lines[index].startswith(
            f"{word}: warning: "
        ):
            text = "\n".join(lines[index:]).removeprefix(f"{word}: ")
            return text.rstrip()
    return None


def conclude(runs: Runs, setup: CompareSetup, record: RunRecord, status: JobStatus) -> None:
    """Record how the job ended; WorkFailed with the spec's message when it failed (blocking)."""
    compares = compares_of(runs.dir_of(setup.run))
    folder = compares.dir_of(setup.compare)
    subject = f"compare {setup.compare} of run {setup.run}"
    if isinstance(status, Exited) and status.code == 0 and (folder / ANSWERS_FILE).is_file():
        compares.save(attrs.evolve(record, state=RunState.SUCCEEDED, message=None))
        return
    if isinstance(status, Exited):
        message = job_message(folder) or f"its job exited with code {status.code}"
    else:
        message = "its job ended without an exit code"
    compares.save(attrs.evolve(record, state=RunState.FAILED, message=message.splitlines()[0]))
    # The base is served once the child has answered: its log is the one that says why.
    log_name = BASE_SERVER_LOG if (folder / BASE_SERVER_LOG).is_file() else "server.log"
    log_path = f"runs/{setup.run}/{COMPARES_DIR}/{setup.compare}/{log_name}"
    raise WorkFailed(f"{subject} failed: {message}; its server log is {log_path}")


def cancelled(runs: Runs, setup: CompareSetup, record: RunRecord) -> CompareInterrupted:
    """Record the job cancelled (blocking); the error Ctrl-C ends the command with."""
    compares = compares_of(runs.dir_of(setup.run))
    compares.save(attrs.evolve(record, state=RunState.CANCELLED, message="cancelled"))
    return CompareInterrupted(f"interrupted: compare {setup.compare} of run {setup.run} cancelled")
