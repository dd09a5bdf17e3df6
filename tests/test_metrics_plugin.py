"""The metrics plugin's callbacks driven by hand, without Axolotl, transformers or torch."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from overbrainer.model.train_metric import EndMark, EvalMark
from overbrainer.training.metric_lines import parse_line
from overbrainer.training.prepare import plugin_source
from overbrainer.training.summary import MetricsSummary


def load_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The shipped plugin imported where neither Axolotl nor transformers can be imported."""
    for name in ("axolotl", "axolotl.integrations.base", "transformers", "torch"):
        monkeypatch.setitem(sys.modules, name, None)
    path = tmp_path / "overbrainer_metrics.py"
    path.write_text(plugin_source())
    spec = importlib.util.spec_from_file_location("overbrainer_metrics_standalone", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def state(step: int = 0, zero: bool = True, max_steps: int = 4, epoch: Any = None) -> Any:
    return SimpleNamespace(
        global_step=step, max_steps=max_steps, epoch=epoch, is_world_process_zero=zero
    )


def control() -> Any:
    return SimpleNamespace(should_save=False, should_training_stop=False)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def test_plugin_imports_only_the_standard_library_at_top_level() -> None:
    top = [
        line
        for line in plugin_source().splitlines()
        if line.startswith(("import ", "from ")) and "__future__" not in line
    ]
    assert top == [
        "import json",
        "import math",
        "import os",
        "import time",
        "from typing import Any",
    ]


def test_callbacks_write_lines_the_follower_parses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = load_plugin(tmp_path, monkeypatch)
    clock = Clock()
    path = tmp_path / "deep" / "metrics.jsonl"
    metrics = plugin.MetricsCallback(str(path), clock=clock)
    args = SimpleNamespace(output_dir=str(tmp_path / "output"))
    metrics.on_train_begin(args, state(), control())
    metrics.on_log(args, state(), control(), logs={})
    clock.now += 1
    logs = {"loss": 1.25, "learning_rate": 2e-4, "grad_norm": float("nan"), "other": 3}
    metrics.on_log(args, state(1, epoch=0.25), control(), logs=logs)
    loader = [0, 1, 2]
    for tick in (0.0, 1.0, 0.5, 0.5):  # steps 2 and 3 come under 2 s after step 1
        clock.now += tick
        metrics.on_prediction_step(args, state(1), control(), eval_dataloader=loader)
    metrics.on_evaluate(args, state(1), control())
    metrics.on_prediction_step(args, state(1), control(), eval_dataloader=object())
    metrics.on_log(args, state(1, epoch=0.25), control(), logs={"eval_loss": "bad"})
    metrics.on_log(args, state(2, zero=False), control(), logs={"loss": 1.0})
    metrics.on_train_end(args, state(4), control())

    records = [json.loads(line) for line in path.read_text().splitlines()]
    t = 1_700_000_000.0
    assert records == [
        {"event": "begin", "time": t, "max_steps": 4},
        {
            "event": "log",
            "time": t + 1,
            "step": 1,
            "epoch": 0.25,
            "max_steps": 4,
            "loss": 1.25,
            "learning_rate": 2e-4,
            "grad_norm": None,
        },
        {"event": "eval", "time": t + 1, "step": 1, "total": 3},
        {"event": "eval", "time": t + 3, "step": 4, "total": 3},
        {"event": "eval", "time": t + 3, "step": 1},
        {
            "event": "log",
            "time": t + 3,
            "step": 1,
            "epoch": 0.25,
            "max_steps": 4,
            "eval_loss": None,
        },
        {"event": "end", "time": t + 3, "step": 4},
    ]
    summary = MetricsSummary()
    events = [summary.add(line) for line in path.read_text().splitlines()]
    assert (summary.lines, summary.malformed, summary.step, summary.max_steps) == (7, 0, 4, 4)
    assert events[2:5] == [
        parse_mark(EvalMark(1, 3)),
        parse_mark(EvalMark(4, 3)),
        parse_mark(EvalMark(1, None)),
    ]
    assert events[-1] == parse_mark(EndMark(4))
    assert summary.describe() == "step 4/4, epoch 0.25, loss 1.2500"
    assert parse_line(path.read_text().splitlines()[0]).__class__.__name__ == "Begin"


def parse_mark(mark: Any) -> Any:
    from overbrainer.events.types import MarkEvent

    return MarkEvent(mark)


def test_write_failures_never_raise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = load_plugin(tmp_path, monkeypatch)
    (tmp_path / "dir").mkdir()
    metrics = plugin.MetricsCallback(str(tmp_path / "dir"))  # a directory: every write fails
    metrics.on_train_begin(None, state(), control())
    metrics.on_log(None, state(), control(), logs={"loss": 1})
    metrics.on_train_end(None, object(), control())
    assert (tmp_path / "dir").is_dir()
    assert list((tmp_path / "dir").iterdir()) == []


@pytest.mark.parametrize(("rank", "written"), [("1", False), ("0", True), ("", True)])
def test_only_the_launchers_rank_0_writes_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rank: str, written: bool
) -> None:
    # Ray Train's CPU workers each say they are process zero; RANK tells them apart.
    plugin = load_plugin(tmp_path, monkeypatch)
    monkeypatch.setenv("RANK", rank)
    path = tmp_path / "metrics.jsonl"
    metrics = plugin.MetricsCallback(str(path))
    metrics.on_log(None, state(1), control(), logs={"loss": 1.0})
    assert path.exists() is written


@pytest.mark.parametrize(("content", "reason"), [("disk\n", "disk"), ("bogus", "requested")])
def test_snapshot_callback_stops_saves_and_proves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, reason: str
) -> None:
    plugin = load_plugin(tmp_path, monkeypatch)
    request = tmp_path / "run" / "snapshot.request"
    request.parent.mkdir()
    snapshot = plugin.SnapshotCallback(str(request), clock=lambda: 5.0)
    args = SimpleNamespace(output_dir=str(tmp_path / "run" / "output"))
    flow = control()
    snapshot.on_step_end(args, state(2), flow)
    snapshot.on_save(args, state(2), flow)
    assert (flow.should_save, flow.should_training_stop) == (False, False)
    assert not (request.parent / "snapshot.json").exists()
    request.write_text(content)
    snapshot.on_step_end(args, state(3, zero=False), flow)
    assert not flow.should_training_stop  # only rank 0 looks (and broadcasts under torch)
    snapshot.on_step_end(args, state(3), flow)
    assert (flow.should_save, flow.should_training_stop) == (True, True)
    snapshot.on_save(args, state(3, zero=False), flow)
    assert not (request.parent / "snapshot.json").exists()
    snapshot.on_save(args, state(3), flow)
    proof = (request.parent / "snapshot.json").read_text()
    assert (
        proof
        == json.dumps(
            {"checkpoint": "output/checkpoint-3", "step": 3, "time": 5.0, "reason": reason}
        )
        + "\n"
    )
    assert sorted(p.name for p in request.parent.iterdir()) == ["snapshot.json", "snapshot.request"]


def test_plugin_adds_the_callbacks_its_environment_asks_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = load_plugin(tmp_path, monkeypatch)
    monkeypatch.delenv("OVERBRAINER_METRICS", raising=False)
    monkeypatch.delenv("OVERBRAINER_SNAPSHOT", raising=False)
    assert plugin.OverbrainerMetricsPlugin().add_callbacks_pre_trainer({}, None) == []
    monkeypatch.setenv("OVERBRAINER_SNAPSHOT", str(tmp_path / "snapshot.request"))
    found = plugin.OverbrainerMetricsPlugin().add_callbacks_pre_trainer({}, None)
    assert [type(c).__name__ for c in found] == ["SnapshotCallback"]


def test_plugin_subclasses_axolotls_base_when_it_can_be_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = ModuleType("axolotl.integrations.base")

    class BasePlugin:
        """Axolotl's plugin base, as far as the plugin needs it."""

    base.BasePlugin = BasePlugin  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "axolotl", ModuleType("axolotl"))
    monkeypatch.setitem(sys.modules, "axolotl.integrations", ModuleType("axolotl.integrations"))
    monkeypatch.setitem(sys.modules, "axolotl.integrations.base", base)
    monkeypatch.setitem(sys.modules, "transformers", None)  # a slow import, not needed here
    path = tmp_path / "overbrainer_metrics.py"
    path.write_text(plugin_source())
    spec = importlib.util.spec_from_file_location("overbrainer_metrics_in_axolotl", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert issubclass(module.OverbrainerMetricsPlugin, BasePlugin)
