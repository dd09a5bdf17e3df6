"""The export a training job ran after its merge (`[export] after_training`, §B.5): its GGUF
delivered once the run came back, or its failure told as a warning, never failing the run."""

from __future__ import annotations

import logging
from pathlib import Path

import trio

from overbrainer.export.deliver import GGUF_DIR, deliver_in_job
from overbrainer.export.job import delivery_lines, last_message
from overbrainer.export.record import EXPORT_FILE, latest_export
from overbrainer.model.errors import OverbrainerError
from overbrainer.targets import FAILED_FILE, resolve_pin
from overbrainer.training import RunRecord, RunState, Session

log = logging.getLogger(__name__)


async def after_training(session: Session, record: RunRecord) -> list[str]:
    """The lines of an in-job export, delivered once after the run came back (§B.5).

    Only with `[export] after_training` and a succeeded run; a problem is a warning, never a
    failure of the run. An export step that failed (its `export.failed`) is reported as the
    export's: a warning with its last message and a result line, until an export succeeds.
    """
    settings = session.settings.export
    if not settings.after_training or record.state is not RunState.SUCCEEDED:
        return []
    run_dir = session.runs.dir_of(record.id)
    failed = await trio.to_thread.run_sync(in_job_failure, record.id, run_dir)
    if failed is not None:
        log.warning("%s", failed)
        return [f"export: failed after training; retry with `overbrainer export {record.id}`"]
    try:
        delivered = await trio.to_thread.run_sync(
            deliver_in_job, record.id, run_dir, resolve_pin().tag
        )
    except (OSError, OverbrainerError) as error:
        log.warning("export: cannot deliver the GGUF of run %s: %s", record.id, error)
        return []
    if delivered is None:
        known = (run_dir / EXPORT_FILE).is_file()
        if not known:
            log.warning(
                "export: the job of run %s left no GGUF in runs/%s/%s: see runs/%s/job.log",
                record.id,
                record.id,
                GGUF_DIR,
                record.id,
            )
        return []
    return await delivery_lines(run_dir, delivered, settings.ollama_name)


def in_job_failure(run_id: str, run_dir: Path) -> str | None:
    """The warning of a training job's export that failed, None when it did not (or when an
    `overbrainer export` of the run has delivered a GGUF since). Blocking."""
    try:
        code = (run_dir / FAILED_FILE).read_text(encoding="utf-8", errors="replace").strip()
    except FileNotFoundError:
        return None
    except OSError as error:
        code = f"unknown ({error.strerror})"
    if latest_export(run_dir) is not None:
        return None
    why = last_message(run_dir) or f"export.sh exited with code {code or 'unknown'}"
    return (
        f"export after training failed: {why} (see runs/{run_id}/job.log); "
        f"retry with `overbrainer export {run_id}`"
    )
