"""What a training command hands its front end (`--json`'s `"train"`): where its run stands."""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path

import attrs

from overbrainer.metrics.spend import POD_RECORD, pod_spend
from overbrainer.model.json_values import utc_time
from overbrainer.training.outcome import Outcome
from overbrainer.training.run_record import RECORD_FILE, RunState, Snapshot
from overbrainer.training.run_store import Runs


@attrs.frozen
class TrainResult:
    """A run as the command left it: its state, its files, its last metrics, its pod's cost."""

    run_id: str
    state: RunState
    target: str
    message: str | None
    """Why a failed run failed."""
    run_dir: Path
    """`runs/<id>`, relative to the project, as the text lines show it."""
    output_dir: Path | None
    """`runs/<id>/output` once the results are here (the partial model of a stopped run)."""
    merged_dir: Path | None
    """`runs/<id>/output/merged` when the job merged the adapter."""
    step: int | None
    max_steps: int | None
    epoch: float | None
    loss: float | None
    """The last training loss logged."""
    eval_loss: float | None
    snapshot: Snapshot | None
    """The snapshot a stopped run saved (resume with `train --resume-from`)."""
    resumed_from: str | None
    pod_cost: float | None
    """What the run's Runpod pod cost (so far, while it lives); None without a pod."""
    started_at: str
    ended_at: str | None
    """When the run's end was recorded; None while it trains."""


def _pod_cost(run_dir: Path) -> float | None:
    try:
        record = json.loads((run_dir / POD_RECORD).read_bytes())
    except (OSError, ValueError):
        return None
    return pod_spend(record, time.time()) if isinstance(record, dict) else None


def _ended_at(run_dir: Path, state: RunState) -> str | None:
    if not state.ended:
        return None
    try:
        moment = (run_dir / RECORD_FILE).stat().st_mtime
    except OSError:
        return None
    return utc_time(datetime.datetime.fromtimestamp(int(moment), datetime.UTC))


def train_result(runs: Runs, outcome: Outcome) -> TrainResult:
    """The result of a run from its outcome and its local files (blocking)."""
    record, summary = outcome.record, outcome.summary
    run_id = record.id
    local = runs.dir_of(run_id)
    shown = Path("runs") / run_id
    here = (local / "output").is_dir()
    latest = summary.last_train
    logged = summary.lines > 0
    return TrainResult(
        run_id=run_id,
        state=record.state,
        target=record.target,
        message=record.message,
        run_dir=shown,
        output_dir=shown / "output" if here else None,
        merged_dir=shown / "output" / "merged" if (local / "output" / "merged").is_dir() else None,
        step=summary.step if logged else None,
        max_steps=summary.max_steps,
        epoch=None if latest is None else latest.epoch,
        loss=None if latest is None else latest.loss,
        eval_loss=summary.eval_loss,
        snapshot=record.snapshot,
        resumed_from=record.resumed_from,
        pod_cost=_pod_cost(local),
        started_at=record.created,
        ended_at=_ended_at(local, record.state),
    )
