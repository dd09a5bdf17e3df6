"""`.overbrainer/hub-dataset.json`: where the last `push --dataset` went, for the model card."""

from __future__ import annotations

from pathlib import Path

from overbrainer.hub.push_record import PushRecord

RECORD = "hub-dataset.json"
"""In `.overbrainer/`, in the push record's format."""


def pushed_dataset(state_dir: Path) -> str | None:
    """The repo of the last dataset push, None when there was none (blocking)."""
    try:
        text = (state_dir / RECORD).read_text(encoding="utf-8")
        return PushRecord.from_json(text).repo
    except (OSError, ValueError):
        return None
