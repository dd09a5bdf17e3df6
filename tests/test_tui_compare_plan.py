"""The compare confirmation's plan (§D PrepareCompare): read from the project, and on a Runpod
target priced from the catalog the CLI prices from (the loopback Runpod fake)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from overbrainer.model.errors import UsageError
from overbrainer.project.directory import open_project
from overbrainer.targets.runpod.auto import PodPrice
from overbrainer.targets.runpod.errors import RunpodKeyError
from overbrainer.ui.tui.compare_plan import pod_words, prepare_compare
from tests.compare_support import GGUF, RUN_ID, make_compare_project
from tests.runpod_fake import KEY, RunpodFake, gpu, open_fake

TARGET = """
[targets.gpu_cloud]
kind = "runpod"
gpu_types = "auto"
max_hours = 2
"""


def test_the_pod_line_names_the_cheapest_type_the_cap_or_neither() -> None:
    assert pod_words(PodPrice(0.4, "NVIDIA A40")) == (
        "a new Runpod pod, at about $0.40/h (NVIDIA A40, the cheapest GPU type in stock)"
    )
    assert pod_words(PodPrice(0.5)) == "a new Runpod pod, at most $0.50/h"
    assert pod_words(PodPrice()) == "a new Runpod pod, at the price picked when it starts"
    assert PodPrice(0.5).words() == (
        "at most $0.50/h (max_price_per_hour: the catalog shows no price in stock)"
    )


async def test_a_local_compare_is_planned_from_the_run_and_eval_questions(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=3)
    with trio.fail_after(30):
        prepared = await prepare_compare(open_project(root), None)
    assert prepared.run_id == RUN_ID
    assert prepared.lines == (
        f"run {RUN_ID}, {GGUF}",
        "3 questions of data/eval.jsonl, on target `local`",
        "the judge is called once per question",
        "y compares, n or Esc does not",
    )
    both = make_compare_project(tmp_path / "b", compare="judge_both_orders = true")
    with trio.fail_after(30):
        prepared = await prepare_compare(open_project(both), RUN_ID)
    assert "the judge is called twice per question (both orders: judge_both_orders)" in (
        prepared.lines
    )


async def test_a_plan_that_cannot_run_says_why(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p")
    (root / "data" / "eval.jsonl").unlink()
    with trio.fail_after(30), pytest.raises(UsageError, match="data/eval.jsonl has no question"):
        await prepare_compare(open_project(root), None)
    (root / "runs" / RUN_ID / "export.json").unlink()
    with trio.fail_after(30), pytest.raises(UsageError, match="no run has a GGUF"):
        await prepare_compare(open_project(root), None)


def _runpod_project(root: Path) -> Path:
    make_compare_project(root, target="gpu_cloud", remote_dir=Path(f"/workspace/{RUN_ID}"))
    config = root / "overbrainer.toml"
    config.write_text(config.read_text() + TARGET)
    return root


async def test_a_runpod_compare_is_priced_from_the_catalog_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _runpod_project(tmp_path / "p")
    monkeypatch.delenv("OVERBRAINER_RUNPOD__API_KEY", raising=False)
    with trio.fail_after(30), pytest.raises(RunpodKeyError):
        await prepare_compare(open_project(root), None)
    # A 2 GB type, cheaper but below the GGUF's 3 GB floor, and a 48 GB one.
    fake = RunpodFake(gpus=[gpu("NVIDIA RTX 2000 Ada", 2, 0.19), gpu("NVIDIA A40", 48, 0.44)])
    with trio.fail_after(60):
        async with open_fake(fake):
            monkeypatch.setenv("OVERBRAINER_RUNPOD__API_KEY", KEY)
            monkeypatch.setenv("OVERBRAINER_RUNPOD__BASE_URL", fake.url)
            prepared = await prepare_compare(open_project(root), RUN_ID)
    assert prepared.lines[1:3] == (
        "5 questions of data/eval.jsonl, on target `gpu_cloud`",
        "a new Runpod pod, at about $0.44/h (NVIDIA A40, the cheapest GPU type in stock)",
    )
    assert fake.asked("POST", "pods") == []  # priced only: no pod asked for
    assert fake.requests != []
    assert fake.violations == []
