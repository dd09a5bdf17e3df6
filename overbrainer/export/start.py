"""What the start of an export job (§B.2) uses: its record claimed, the model staged when the
machine lacks it, its one command, and its end recorded (export/job.py starts it)."""

from __future__ import annotations

import errno
import logging
import os
import shutil
from pathlib import Path

import attrs
import trio

from overbrainer.export.deliver import remove_staged
from overbrainer.export.plan import ExportPlan, ExportRequest
from overbrainer.export.record import CHILD
from overbrainer.model.train_metric import JobStage
from overbrainer.targets import (
    POD_LOCAL,
    SCRIPT_FILE,
    Command,
)
from overbrainer.training import (
    CONFIG_FILE,
    OUTPUT_DIR,
    RunRecord,
    Runs,
    RunState,
)

log = logging.getLogger(__name__)

EXPORT_SLUG = "export"
"""The ID prefix of exports: `export_YYYYMMDD-HHMMSS`."""


async def create_export(plan: ExportPlan, request: ExportRequest, remote_root: str) -> RunRecord:
    """Claim `exports/export_<time>` (its directory on the target under `remote_root`) and say
    so."""
    run = plan.run
    export = await trio.to_thread.run_sync(
        lambda: plan.exports.create(
            EXPORT_SLUG, run.target, lambda i: f"{remote_root.rstrip('/')}/{i}"
        )
    )
    choice = plan.choice
    subject = (
        f"runs/{run.id}/{choice.model}"
        if choice.which == CHILD
        else f"the base model {choice.model} of run {run.id}"
    )
    log.info(
        "export: %s: %s to GGUF %s on target `%s`", export.id, subject, request.quantize, run.target
    )
    return export


def _link_tree(source: Path, target: Path, top_skip: tuple[str, ...]) -> None:
    """Hard-link `source` into `target` (copying across file systems), top names skipped."""
    for folder, dirs, files in os.walk(source):
        here = Path(folder)
        if here == source:
            dirs[:] = [d for d in dirs if not d.startswith(top_skip)]
        out = target / here.relative_to(source)
        out.mkdir(parents=True, exist_ok=True)
        for name in files:
            try:
                os.link(here / name, out / name)
            except OSError as error:
                if error.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                    raise
                shutil.copy2(here / name, out / name)


def stage_model(run_dir: Path, job_dir: Path, model: str) -> None:
    """Stage the model (checkpoints and GGUFs left out) and config into the job directory."""
    _link_tree(run_dir / model, job_dir / OUTPUT_DIR, ("checkpoint-", "gguf"))
    os.link(run_dir / CONFIG_FILE, job_dir / CONFIG_FILE)


EXPORT_COMMAND = Command(JobStage.EXPORT, "sh", (SCRIPT_FILE,), from_venv=False)
"""The export job's one command (`sh` is the system's, never a venv's)."""


NEVER_UPLOADED = POD_LOCAL
"""What the upload of an export directory leaves out (keys and the pod record stay here)."""


async def end_export(
    exports: Runs, record: RunRecord, state: RunState, message: str | None, job_dir: Path
) -> RunRecord:
    """Record how the export ended, what was staged for its job removed; the ended record."""

    def save() -> RunRecord:
        remove_staged(job_dir)
        ended = attrs.evolve(record, state=state, message=message)
        exports.save(ended)
        return ended

    return await trio.to_thread.run_sync(save)
