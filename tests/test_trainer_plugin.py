"""The metrics plugin inside the real transformers Trainer, on a tiny random GPT-2 on the CPU.

Run with `pytest -m trainer` (nox session `trainer`); skipped when torch is not installed
(failed under CI=true).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from overbrainer.training.metric_lines import Begin, End, Eval, Log, parse_line
from overbrainer.training.prepare import plugin_source
from overbrainer.training.summary import MetricsSummary
from tests.real_parts import needs_modules

pytestmark = [pytest.mark.trainer, needs_modules("torch", "transformers", "accelerate")]


@pytest.fixture
def hf() -> ModuleType:
    """torch, transformers and the tiny Trainer (imported here: collecting needs none of them)."""
    return importlib.import_module("tests.trainer_support")


@pytest.fixture
def plugin(tmp_path: Path) -> Iterator[ModuleType]:
    """The plugin file as a run ships it, imported by its module name like Axolotl does."""
    folder = tmp_path / "run" / "plugin"
    folder.mkdir(parents=True)
    path = folder / "overbrainer_metrics.py"
    path.write_text(plugin_source(), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("overbrainer_metrics", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["overbrainer_metrics"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("overbrainer_metrics", None)


def around(lines: list[Any], index: int) -> tuple[int, int, bool]:
    """The step of the log before line `index`, and the step of the next log and if it is eval."""
    before = next(line.metric for line in reversed(lines[:index]) if isinstance(line, Log))
    after = next(line.metric for line in lines[index:] if isinstance(line, Log))
    return before.step, after.step, after.eval_loss is not None


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_plugin_writes_begin_log_eval_end_lines(
    hf: ModuleType, plugin: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    metrics = run / "logs" / "metrics.jsonl"
    monkeypatch.setenv("OVERBRAINER_METRICS", str(metrics))
    monkeypatch.delenv("OVERBRAINER_SNAPSHOT", raising=False)
    callbacks = plugin.OverbrainerMetricsPlugin().add_callbacks_pre_trainer(cfg=None, model=None)
    assert [type(c).__name__ for c in callbacks] == ["MetricsCallback"]
    assert isinstance(callbacks[0], hf.transformers.TrainerCallback)
    hf.trainer(run, callbacks).train()

    lines = [parse_line(text) for text in metrics.read_text().splitlines()]
    kinds = [type(line).__name__ for line in lines if not isinstance(line, Eval)]
    # 20 training logs, an evaluation log at steps 10 and 20, the trainer's summary log.
    assert kinds == ["Begin"] + ["Log"] * 11 + ["Log"] * 10 + ["Log", "Log", "End"]
    evals = [(i, line) for i, line in enumerate(lines) if isinstance(line, Eval)]
    # Each evaluation starts with prediction step 1, written at once, before its eval_loss log.
    starts = [i for i, line in evals if line.step == 1]
    assert [around(lines, i) for i in starts] == [(10, 10, True), (20, 20, True)]
    for (_, before), (_, after) in itertools.pairwise(evals):
        if after.step > 1:  # a later step of the same evaluation: at least 2 s after the last
            assert after.step > before.step and after.time - before.time >= 2.0
    assert all(line.total == hf.EVAL_BATCHES for _, line in evals)
    begin, end = lines[0], lines[-1]
    assert isinstance(begin, Begin) and begin.max_steps == hf.MAX_STEPS
    assert isinstance(end, End) and end.step == hf.MAX_STEPS
    logs = [line.metric for line in lines if isinstance(line, Log)]
    train_logs = [m for m in logs if m.loss is not None]
    assert [m.step for m in train_logs] == list(range(1, hf.MAX_STEPS + 1))
    assert all(m.learning_rate is not None and m.grad_norm is not None for m in train_logs)
    assert [m.step for m in logs if m.eval_loss is not None] == [10, 20]
    assert all(m.max_steps == hf.MAX_STEPS and m.epoch is not None for m in logs)
    raw = records(metrics)
    assert list(raw[1]) == [
        "event",
        "time",
        "step",
        "epoch",
        "max_steps",
        "loss",
        "learning_rate",
        "grad_norm",
    ]
    assert raw[0]["time"] <= raw[1]["time"] <= raw[-1]["time"]

    summary = MetricsSummary()
    for text in metrics.read_text().splitlines():
        summary.add(text)
    last = train_logs[-1]
    assert (summary.lines, summary.malformed, summary.step) == (len(lines), 0, hf.MAX_STEPS)
    eval_loss = [m.eval_loss for m in logs if m.eval_loss is not None][-1]
    assert last.epoch is not None and last.loss is not None and eval_loss is not None
    assert summary.describe() == (
        f"step 20/20, epoch {last.epoch:.2f}, loss {last.loss:.4f}, eval_loss {eval_loss:.4f}"
    )


def test_eval_lines_are_throttled_to_one_per_two_seconds(
    hf: ModuleType, plugin: ModuleType, tmp_path: Path
) -> None:
    ticks = iter(range(10_000))

    def clock() -> float:
        return 1_700_000_000 + 0.7 * next(ticks)  # every call is 0.7 s after the previous one

    metrics = tmp_path / "metrics.jsonl"
    hf.trainer(tmp_path, [plugin.MetricsCallback(str(metrics), clock=clock)]).train()
    evals = [r for r in records(metrics) if r["event"] == "eval"]
    # Per evaluation: prediction step 1 at once, then the first step at least 2 s later.
    assert [r["step"] for r in evals] == [1, 4, 7, 10, 1, 4, 7, 10]
    assert all(r["total"] == hf.EVAL_BATCHES for r in evals)


def test_a_snapshot_request_saves_a_checkpoint_stops_and_writes_its_proof(
    hf: ModuleType, plugin: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    request = run / "snapshot.request"
    monkeypatch.setenv("OVERBRAINER_METRICS", str(run / "metrics.jsonl"))
    monkeypatch.setenv("OVERBRAINER_SNAPSHOT", str(request))

    class Asker(hf.Callback):  # type: ignore[misc,name-defined]
        """Plays `train stop`: writes the request file at the end of step 7."""

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == 7:
                request.write_text("disk\n")

    callbacks = plugin.OverbrainerMetricsPlugin().add_callbacks_pre_trainer(cfg=None, model=None)
    assert [type(c).__name__ for c in callbacks] == ["MetricsCallback", "SnapshotCallback"]
    first = hf.trainer(run, [Asker(), *callbacks])
    first.train()

    assert first.state.global_step == 7
    checkpoint = run / "output" / "checkpoint-7"
    assert (checkpoint / "trainer_state.json").is_file()
    assert (checkpoint / "optimizer.pt").is_file()
    assert sorted(p.name for p in (run / "output").iterdir()) == ["checkpoint-7"]
    proof = json.loads((run / "snapshot.json").read_text())
    assert list(proof) == ["checkpoint", "step", "time", "reason"]
    assert (proof["checkpoint"], proof["step"], proof["reason"]) == (
        "output/checkpoint-7",
        7,
        "disk",
    )
    assert not (run / "snapshot.json.tmp").exists()
    lines = records(run / "metrics.jsonl")
    assert lines[-1] == {"event": "end", "time": lines[-1]["time"], "step": 7}

    # The snapshot is a resumable checkpoint: training goes on from step 8 to the end.
    request.unlink()
    (run / "metrics.jsonl").unlink()
    again = plugin.OverbrainerMetricsPlugin().add_callbacks_pre_trainer(cfg=None, model=None)
    second = hf.trainer(run, again)
    second.train(resume_from_checkpoint=str(checkpoint))
    steps = [r["step"] for r in records(run / "metrics.jsonl") if r.get("loss") is not None]
    assert steps == list(range(8, hf.MAX_STEPS + 1))


def test_a_request_at_the_last_step_changes_nothing(
    hf: ModuleType, plugin: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    request = run / "snapshot.request"

    class Asker(hf.Callback):  # type: ignore[misc,name-defined]
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == hf.MAX_STEPS:
                request.write_text("requested")

    snapshot = plugin.SnapshotCallback(str(request))
    done = hf.trainer(run, [Asker(), snapshot])
    done.train()
    assert done.state.global_step == hf.MAX_STEPS
    assert snapshot.reason is None
    assert not (run / "snapshot.json").exists()
    assert not (run / "output").exists() or not list((run / "output").glob("checkpoint-*"))
