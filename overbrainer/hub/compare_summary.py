"""The `summary` of a run's newest compare, when one exists (read only; absent is fine)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def latest_compare_summary(run_dir: Path) -> dict[str, Any] | None:
    """`summary` of the newest `runs/<run>/compares/*/compare.json` by name; None if none."""
    for path in sorted((run_dir / "compares").glob("*/compare.json"), reverse=True):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        summary = data.get("summary") if isinstance(data, dict) else None
        if isinstance(summary, dict):
            return summary
    return None
