"""The Runpod spend of a project's runs, read from their pod records at each scrape."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

log = logging.getLogger(__name__)

SpendSource = Callable[[], Iterable[tuple[str, float]]]
"""Gives `(run_id, spend in USD)` for each run with a pod, read when called."""

POD_RECORD = "pod.json"
_JOB_DIRS = ("exports", "compares")


def _number(record: dict[str, object], key: str) -> float | None:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def pod_spend(record: dict[str, object], now: float) -> float | None:
    """A pod's spend: its estimate once deleted, else rate times uptime; None without a pod."""
    if record.get("state") == "deleted":
        return _number(record, "estimated_spend")
    if not record.get("pod_id"):
        return None
    rate = _number(record, "cost_per_hour")
    created = _number(record, "created_unix")
    if rate is None or created is None:
        return None
    return rate * max(now - created, 0.0) / 3600


def _records(runs: Path) -> Iterator[Path]:
    try:
        run_dirs = sorted(p for p in runs.iterdir() if p.is_dir())
    except OSError:
        return  # no runs yet
    for run_dir in run_dirs:
        yield run_dir / POD_RECORD
        for name in _JOB_DIRS:
            try:
                yield from sorted((run_dir / name).glob(f"*/{POD_RECORD}"))
            except OSError:
                continue


def pod_spends(runs: Path, now: float | None = None) -> list[tuple[str, float]]:
    """`(run_id, spend)` of every run (or export/compare job) under `runs` with a pod record."""
    now = time.time() if now is None else now
    spends = []
    for path in _records(runs):
        try:
            record = json.loads(path.read_bytes())
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as error:
            log.debug("metrics: skipping %s: %s", path, error)
            continue
        if not isinstance(record, dict):
            log.debug("metrics: skipping %s: not a JSON object", path)
            continue
        spend = pod_spend(record, now)
        if spend is not None:
            spends.append((path.parent.name, spend))
    return spends
