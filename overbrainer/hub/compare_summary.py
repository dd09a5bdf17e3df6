"""The `summary` of a run's newest compare, when one exists (read only; absent is fine)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _latest_compare(run_dir: Path) -> dict[str, Any] | None:
    """The newest `runs/<run>/compares/*/compare.json` by name that has a `summary`."""
    for path in sorted((run_dir / "compares").glob("*/compare.json"), reverse=True):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("summary"), dict):
            return data
    return None


def latest_compare_summary(run_dir: Path) -> dict[str, Any] | None:
    """`summary` of the newest `runs/<run>/compares/*/compare.json` by name; None if none."""
    data = _latest_compare(run_dir)
    return None if data is None else data["summary"]


def latest_base_summary(run_dir: Path) -> dict[str, Any] | None:
    """The child-against-its-base `summary` of that same newest compare; None when it did not
    ask the base model (`compare --base`)."""
    data = _latest_compare(run_dir)
    base = None if data is None else data.get("base")
    summary = base.get("summary") if isinstance(base, dict) else None
    return summary if isinstance(summary, dict) else None
