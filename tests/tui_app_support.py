"""Driving the TUI's pure state machine in tests: messages in, the last state and effects out."""

from __future__ import annotations

import json
from pathlib import Path

from overbrainer.targets.runpod.pod_record import PodRecord, PodState, save_pod_record
from overbrainer.ui.tui import app
from overbrainer.ui.tui.effects import Effect
from overbrainer.ui.tui.messages import Key, Msg
from overbrainer.ui.tui.state import State


def feed(state: State, *messages: Msg) -> tuple[State, list[Effect]]:
    """Apply `messages` in turn; the last state and every effect, in order."""
    effects: list[Effect] = []
    for message in messages:
        state, new = app.update(state, message)
        effects.extend(new)
    return state, effects


def keys(state: State, *names: str) -> tuple[State, list[Effect]]:
    """`feed` with one Key message per name."""
    return feed(state, *(Key(name) for name in names))


def add_job(run_dir: Path, folder: str, job_id: str, state: str, pod: PodState | None) -> None:
    """A compare or export of the run, `state`, with a pod record in `pod` state."""
    job_dir = run_dir / folder / job_id
    job_dir.mkdir(parents=True)
    record = json.loads((run_dir / "run.json").read_text())
    record.update(id=job_id, state=state, remote_dir=str(job_dir))
    (job_dir / "run.json").write_text(json.dumps(record))
    if pod is not None:
        save_pod_record(job_dir, PodRecord(job_id, pod, pod_id=f"pod_{job_id[:3]}{state[:3]}"))
