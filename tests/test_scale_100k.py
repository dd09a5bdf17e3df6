"""`questions`, `answers` and `quality` with nothing to do on a finished project of 100,000
answers stay in their memory bound (issue 41: resume reads only what it needs)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.pipeline_support import command
from tests.scale_support import measured, scale_project, working_copy

pytestmark = pytest.mark.slow

PEAK_RSS = 120_000_000
"""Bytes, for each stage with nothing to do. On main at 6a8a56e (2 cores, 24 GiB, 2026-12-07)
`answers` peaked at 133 MB (1.6 s CPU), `questions` at 124 MB (1.6 s) and `quality` at 401 MB
(3.8 s) at 100k; since resume reads only line heads (storage/heads.py) each peaks at 69-72 MB
(0.8-1.1 s CPU), 67 MB at 10k: the bound is that plus ~70%, under the old figures, so a
stage that goes back to building every record fails it."""


def nothing_to_do(tmp_path: Path, stage: str) -> None:
    root = working_copy(scale_project("100k"), tmp_path / "p")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    run = measured(command(root, stage), env | {"NO_COLOR": "1"}, limit=300)
    assert run.code == 0
    assert run.peak_rss < PEAK_RSS, f"{run.peak_rss / 1e6:.0f} MB, {run.cpu_s:.1f} s CPU"


@pytest.mark.timeout(900)
def test_answers_with_nothing_to_do_at_100k_stays_under_its_memory_bound(
    tmp_path: Path,
) -> None:
    nothing_to_do(tmp_path, "answers")


@pytest.mark.timeout(900)
@pytest.mark.parametrize("stage", ["questions", "quality"])
def test_questions_and_quality_with_nothing_to_do_at_100k_stay_under_the_bound(
    tmp_path: Path, stage: str
) -> None:
    nothing_to_do(tmp_path, stage)
