"""How a run ended, for the user (§6.6): an ended run summarized from its files, and the lines
that tell its end."""

from __future__ import annotations

from pathlib import Path

import attrs
import trio

from overbrainer.model.errors import WorkFailed
from overbrainer.training.axolotl_config import CONFIG_FILE
from overbrainer.training.outcome import Outcome, local_summary
from overbrainer.training.run_store import RunRecord, Runs, RunState
from overbrainer.training.session import Session


@attrs.frozen
class RunEnding:
    """How a run ended for the user: the lines for stdout (§6.6), then the error it fails with."""

    lines: tuple[str, ...]
    error: WorkFailed | None = None


async def summarize(session: Session, record: RunRecord) -> Outcome:
    """The outcome of a run that is not running, from its local files."""
    run_dir = session.runs.dir_of(record.id)
    summary = await trio.to_thread.run_sync(local_summary, run_dir)
    retrieved = (run_dir / "job.log").exists() and (
        record.snapshot is None or (run_dir / record.snapshot.checkpoint).is_dir()
    )
    return Outcome(record, summary, retrieved)


def _model_word(run_dir: Path) -> str:
    try:
        text = (run_dir / CONFIG_FILE).read_text(encoding="utf-8")
    except OSError:
        return "adapter"
    for line in text.splitlines():
        if line.startswith("adapter:"):
            return "adapter"
    return "model"


def ending(runs: Runs, outcome: Outcome) -> RunEnding:
    """The run's end (§6.6): its lines for stdout, and the error of a failed or cancelled run."""
    record = outcome.record
    run_id = record.id
    head = f"train: run {run_id} {record.state.value}; {outcome.summary.describe()}"
    match record.state:
        case RunState.SUCCEEDED:
            run_dir = runs.dir_of(run_id)
            lines = [
                f"{head}; output in runs/{run_id}/output",
                f"train: {_model_word(run_dir)} in runs/{run_id}/output",
            ]
            if (run_dir / "output" / "merged").is_dir():
                lines.append(f"train: merged model in runs/{run_id}/output/merged")
            return RunEnding(tuple(lines))
        case RunState.STOPPED:
            snap = record.snapshot
            assert snap is not None
            return RunEnding(
                (
                    f"train: run {run_id} stopped at step {snap.step} ({snap.reason}): snapshot "
                    f"in runs/{run_id}/{snap.checkpoint}; resume with "
                    f"`overbrainer train --resume-from {run_id}`",
                    f"train: runs/{run_id}/output also holds the partial model at step "
                    f"{snap.step}, not a finished one",
                )
            )
        case RunState.CANCELLED:
            return RunEnding((head,), WorkFailed(f"run {run_id} was cancelled"))
        case RunState.FAILED:
            return RunEnding((head,), WorkFailed(record.message or f"run {run_id} failed"))
        case RunState.PREPARING | RunState.RUNNING:
            return RunEnding((), WorkFailed(f"run {run_id} has no job"))
