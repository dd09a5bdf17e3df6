"""Preparing a run directory, and the checks of `train --resume-from`, on real files."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import attrs
import pytest
import yaml

from overbrainer.config.settings import Adapter, Training
from overbrainer.training.axolotl_config import ResumeRefused
from overbrainer.training.prepare import (
    NoTrainingData,
    job_commands,
    job_env,
    plugin_source,
    prepare_run,
    resume_source,
    start_warnings,
)
from overbrainer.training.run_store import Job, RunNotFound, Runs, RunState, Snapshot

NOW = dt.datetime(2026, 9, 22, 14, 30, 5, tzinfo=dt.UTC)
QWEN = Training(target="local", base_model="Qwen/Qwen3-4B", adapter=Adapter.LORA)


def split_files(root: Path, eval_text: str = '{"e":1}\n') -> tuple[Path, Path]:
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "train.jsonl").write_text('{"t":1}\n')
    (data / "eval.jsonl").write_text(eval_text)
    return data / "train.jsonl", data / "eval.jsonl"


def test_prepare_writes_data_plugin_and_config(tmp_path: Path) -> None:
    train, evals = split_files(tmp_path)
    run_dir = tmp_path / "runs" / "r1"
    prepared = prepare_run(run_dir, QWEN, str(run_dir), train, evals)
    assert prepared.has_eval
    assert (run_dir / "data" / "train.jsonl").read_text() == '{"t":1}\n'
    assert (run_dir / "data" / "eval.jsonl").read_text() == '{"e":1}\n'
    plugin = (run_dir / "plugin" / "overbrainer_metrics.py").read_text()
    assert plugin == plugin_source() and "class OverbrainerMetricsPlugin" in plugin
    config = yaml.safe_load((run_dir / "axolotl.yaml").read_text())
    assert config == prepared.config
    assert config["output_dir"] == f"{run_dir}/output"
    assert "resume_from_checkpoint" not in config


def test_an_empty_eval_set_is_left_out(tmp_path: Path) -> None:
    train, evals = split_files(tmp_path, eval_text="")
    run_dir = tmp_path / "r"
    prepared = prepare_run(run_dir, QWEN, "/workspace/run", train, evals)
    assert not prepared.has_eval
    assert not (run_dir / "data" / "eval.jsonl").exists()
    assert "test_datasets" not in prepared.config


def test_no_training_data_is_refused(tmp_path: Path) -> None:
    train, evals = split_files(tmp_path)
    train.write_text("")
    with pytest.raises(NoTrainingData) as caught:
        prepare_run(tmp_path / "r", QWEN, "/w", train, evals)
    assert caught.value.message == f"{train} has no example: run `overbrainer split` first"


def stopped_run(tmp_path: Path, training: Training = QWEN) -> Runs:
    runs = Runs(tmp_path / "runs")
    record = runs.create("demo", "local", str, NOW)
    run_dir = runs.dir_of(record.id)
    train, evals = split_files(tmp_path / "project")
    prepare_run(run_dir, training, str(run_dir), train, evals)
    checkpoint = run_dir / "output" / "checkpoint-12"
    (checkpoint / "nested").mkdir(parents=True)
    (checkpoint / "adapter_model.safetensors").write_bytes(b"weights")
    (checkpoint / "nested" / "rng.pth").write_bytes(b"rng")
    runs.save(
        attrs.evolve(
            record,
            state=RunState.STOPPED,
            job=Job(str(run_dir), 99),
            snapshot=Snapshot("output/checkpoint-12", 12, "requested"),
            snapshots=True,
        )
    )
    return runs


def test_resume_copies_the_stopped_runs_files_and_checkpoint(tmp_path: Path) -> None:
    runs = stopped_run(tmp_path)
    source = resume_source(runs, "demo_20260922-143005", QWEN)
    assert source.checkpoint == "checkpoint-12"
    new_dir = tmp_path / "runs" / "demo_20260922-143005_2"
    other_train, other_eval = split_files(tmp_path / "elsewhere", eval_text="")
    prepared = prepare_run(new_dir, QWEN, "/workspace/run", other_train, other_eval, source)
    assert prepared.has_eval  # the stopped run's eval set, not the project's newer empty one
    copied = new_dir / "resume" / "checkpoint-12" / "adapter_model.safetensors"
    assert copied.read_bytes() == b"weights"
    assert (new_dir / "resume" / "checkpoint-12" / "nested" / "rng.pth").read_bytes() == b"rng"
    original = source.checkpoint_dir / "adapter_model.safetensors"
    assert copied.stat().st_ino == original.stat().st_ino
    assert prepared.config["resume_from_checkpoint"] == "/workspace/run/resume/checkpoint-12"


def test_resume_refusals_use_the_reference_messages(tmp_path: Path) -> None:
    runs = stopped_run(tmp_path)
    run_id = "demo_20260922-143005"
    with pytest.raises(ResumeRefused) as caught:
        resume_source(runs, run_id, attrs.evolve(QWEN, epochs=5))
    assert caught.value.message == (
        f"cannot resume from run {run_id}: the training settings differ from the ones it ran "
        "with (num_epochs); set them back to resume, or start a new run"
    )
    record = runs.load(run_id)
    runs.save(attrs.evolve(record, state=RunState.FAILED, snapshot=None))
    with pytest.raises(ResumeRefused) as caught:
        resume_source(runs, run_id, QWEN)
    assert caught.value.message == (
        f"cannot resume from run {run_id}: it is failed, not stopped with a snapshot "
        "(see `overbrainer train stop`)"
    )
    runs.save(record)
    for path in sorted((runs.dir_of(run_id) / "output" / "checkpoint-12").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    (runs.dir_of(run_id) / "output" / "checkpoint-12").rmdir()
    with pytest.raises(ResumeRefused) as caught:
        resume_source(runs, run_id, QWEN)
    assert caught.value.message == (
        f"cannot resume from run {run_id}: its snapshot is not in "
        f"runs/{run_id}/output/checkpoint-12; retrieve it with `overbrainer train attach {run_id}`"
    )
    with pytest.raises(RunNotFound):
        resume_source(runs, "nope", QWEN)


def test_job_env_and_commands() -> None:
    assert job_env("/workspace/run") == {
        "AXOLOTL_DO_NOT_TRACK": "1",
        "PYTHONPATH": "/workspace/run/plugin",
        "OVERBRAINER_METRICS": "/workspace/run/metrics.jsonl",
        "OVERBRAINER_SNAPSHOT": "/workspace/run/snapshot.request",
    }
    # `preprocess` fills prepared/ first, so `train` does not tokenize (Axolotl warns against it).
    assert [(c.stage.value, c.args) for c in job_commands(QWEN)] == [
        ("train", ("preprocess", "axolotl.yaml")),
        ("train", ("train", "axolotl.yaml")),
    ]
    merged = attrs.evolve(QWEN, merge=True)
    assert [(c.stage.value, c.args) for c in job_commands(merged)] == [
        ("train", ("preprocess", "axolotl.yaml")),
        ("train", ("train", "axolotl.yaml")),
        ("merge", ("merge-lora", "axolotl.yaml")),
    ]


def test_start_warnings() -> None:
    assert start_warnings(QWEN, hf_token=False) == []
    pushed = attrs.evolve(QWEN, base_model="llama", hub_model_id="me/x")
    assert start_warnings(pushed, hf_token=True) == [
        "the chat template of llama may drop reasoning_content, leaving the parent's reasoning "
        "out of training; set training.axolotl_extra.chat_template if the model uses one of the "
        "templates known to render it: qwen3, qwen3_5, exaone4, gemma4, gemma4_unified"
    ]
    assert start_warnings(attrs.evolve(QWEN, hub_model_id="me/x"), hf_token=False) == [
        "training.hub_model_id is set but OVERBRAINER_HF_TOKEN is not: the push will fail"
    ]
