"""How a followed run ended (§6.2): its state, message, snapshot proof and retrieved results."""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs

from overbrainer.model.job_status import Cancelled, Exited, JobStatus, Lost, Running
from overbrainer.targets import read_from, split_lines
from overbrainer.training.run_store import SNAPSHOT_REASONS, RunRecord, RunState, Snapshot
from overbrainer.training.summary import MetricsSummary

PROOF_LIMIT = 64 * 1024
"""Bytes of `snapshot.json` read at most."""
_CHECKPOINT = re.compile(r"output/checkpoint-(\d+)")


@attrs.frozen
class Outcome:
    """The record as saved at the end, the run's metrics summary, and whether results are here."""

    record: RunRecord
    summary: MetricsSummary
    retrieved: bool


def ended_state(
    status: JobStatus, summary: MetricsSummary, run_id: str
) -> tuple[RunState, str | None]:
    """The state and message a finished job gives its run, before any snapshot is read."""
    log_hint = f"(see runs/{run_id}/job.log)"
    match status:
        case Exited(0) if summary.lines > 0:
            return RunState.SUCCEEDED, None
        case Exited(0):
            return RunState.FAILED, (
                "the job wrote no metrics: the overbrainer metrics plugin was not loaded "
                f"{log_hint}"
            )
        case Exited(code):
            return RunState.FAILED, f"the job exited with code {code} {log_hint}"
        case Cancelled():
            return RunState.CANCELLED, None
        case Lost() | Running():
            return RunState.FAILED, f"the job stopped without an exit code {log_hint}"


class InvalidProof(ValueError):
    """`snapshot.json` exists but is not a valid proof; the text says why."""


def read_proof(run_dir: Path) -> Snapshot | None:
    """The snapshot `snapshot.json` proves, None when there is none; InvalidProof when broken."""
    try:
        with open(run_dir / "snapshot.json", "rb") as file:
            raw = file.read(PROOF_LIMIT)
    except FileNotFoundError:
        return None
    if not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as error:
        raise InvalidProof(
            f"snapshot.json is not valid (line {error.lineno}, column {error.colno})"
        ) from None
    except UnicodeDecodeError:
        raise InvalidProof("snapshot.json is not valid (line 1, column 1)") from None
    if not isinstance(value, dict):
        raise InvalidProof("snapshot.json is not valid (line 1, column 1)")
    checkpoint, step = value.get("checkpoint"), value.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or not isinstance(checkpoint, str):
        raise InvalidProof("snapshot.json names an invalid checkpoint path")
    if checkpoint != f"output/checkpoint-{step}" or _CHECKPOINT.fullmatch(checkpoint) is None:
        raise InvalidProof("snapshot.json names an invalid checkpoint path")
    reason = value.get("reason")
    return Snapshot(checkpoint, step, reason if reason in SNAPSHOT_REASONS else "requested")


def _has_file(folder: Path) -> bool:
    return folder.is_dir() and any(path.is_file() for path in folder.rglob("*"))


def _has_output(output: Path) -> bool:
    if not output.is_dir():
        return False
    for path in output.rglob("*"):
        if path.is_file() and not any(
            p.startswith("checkpoint-") for p in path.relative_to(output).parts
        ):
            return True
    return False


def conclude(
    record: RunRecord, status: JobStatus, summary: MetricsSummary, run_dir: Path
) -> RunRecord:
    """The record of a run whose job ended with `status` (results already in `run_dir`)."""
    state, message = ended_state(status, summary, record.id)
    snapshot = record.snapshot
    log_hint = f"(see runs/{record.id}/job.log)"
    if state in (RunState.SUCCEEDED, RunState.CANCELLED):
        try:
            proof = read_proof(run_dir)
        except InvalidProof as why:
            proof = None
            if state is RunState.SUCCEEDED:
                state, message = RunState.FAILED, f"the job stopped with a snapshot, but {why}"
        if proof is not None:
            state, message, snapshot = RunState.STOPPED, None, proof
    if state is RunState.SUCCEEDED and not _has_output(run_dir / "output"):
        state, message = RunState.FAILED, f"the job succeeded but left no output {log_hint}"
    stopped = state is RunState.STOPPED and snapshot is not None
    if stopped and snapshot is not None and not _has_file(run_dir / snapshot.checkpoint):
        checkpoint = snapshot.checkpoint
        state = RunState.FAILED
        message = f"the job stopped with a snapshot but left no file in {checkpoint} {log_hint}"
    return attrs.evolve(record, state=state, message=message, snapshot=snapshot)


def local_summary(run_dir: Path) -> MetricsSummary:
    """The summary of a run's whole local `metrics.jsonl` (for runs that already ended)."""
    summary = MetricsSummary()
    path = run_dir / "metrics.jsonl"
    offset = 0
    while True:
        lines, used = split_lines(read_from(path, offset))
        if used == 0:
            return summary
        offset += used
        for line in lines:
            summary.add(line)
