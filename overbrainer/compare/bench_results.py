"""Reading lm-evaluation-harness's results JSON: each task's metrics with their standard errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import attrs

STDERR = "_stderr"
"""lm-eval names a metric's standard error `<metric>_stderr,<filter>`."""


@attrs.frozen
class Score:
    """One metric of one task of one model: its value and standard error (None: lm-eval gave
    `N/A`, e.g. for a single sample) and whether higher is better."""

    task: str
    metric: str
    filter: str
    value: float
    stderr: float | None
    higher_is_better: bool = True


class BadResults(ValueError):
    """A results file that is not lm-eval's; the message names the file and what is wrong."""


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def parse_scores(text: str, where: str) -> list[Score]:
    """The scores of every task in lm-eval's results JSON `text` (`where` names it in errors),
    in the file's order; `BadResults` when it is not such a document."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise BadResults(f"{where} is not JSON (line {error.lineno})") from None
    results = raw.get("results") if isinstance(raw, dict) else None
    if not isinstance(results, dict):
        raise BadResults(f"{where} has no `results` object: not an lm-eval results file")
    directions = raw.get("higher_is_better")
    directions = directions if isinstance(directions, dict) else {}
    scores: list[Score] = []
    for task, metrics in results.items():
        if not isinstance(metrics, dict):
            raise BadResults(f"{where}: `results.{task}` is not an object")
        higher = directions.get(task)
        higher = higher if isinstance(higher, dict) else {}
        for key, value in metrics.items():
            metric, comma, filter_ = key.partition(",")
            number = _number(value)
            if not comma or metric.endswith(STDERR) or number is None:
                continue  # `alias`, `samples`, a standard error, a metric that is not a number
            stderr = _number(metrics.get(f"{metric}{STDERR},{filter_}"))
            scores.append(
                Score(task, metric, filter_, number, stderr, higher.get(metric) is not False)
            )
    return scores


def read_scores(path: Path) -> list[Score]:
    """The scores in a results file (blocking)."""
    return parse_scores(path.read_text(encoding="utf-8"), str(path))
