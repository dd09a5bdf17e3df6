"""A run that holds a tiny model (tests/tiny_model.py), and the projects of the export tests.

The model stands in for a run's `output/`. It carries a chat template, which the GGUF must keep.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from overbrainer.training.run_store import Job, RunRecord, Runs, RunState, Snapshot
from tests.real_parts import needs_modules
from tests.runpod_fake import KEY
from tests.tiny_model import SEQUENCE_LEN
from tests.train_helpers import make_project

GGUF_PARTS: pytest.MarkDecorator = needs_modules("torch", "transformers", "sentencepiece", "gguf")
"""The mark of a test that converts a model: the packages llama.cpp's converter imports."""


def gguf_reader(path: str) -> Any:
    """gguf's reader of the file at `path` (imported here: collecting needs no gguf)."""
    return importlib.import_module("gguf").GGUFReader(path)


RUN_ID = "my_project_20261203-120000"
"""The run `add_run` makes by default."""


def add_run(
    project: Path,
    model: Path,
    run_id: str = RUN_ID,
    *,
    adapter: bool = False,
    state: RunState = RunState.SUCCEEDED,
    snapshot: Snapshot | None = None,
    target: str = "local",
    remote_dir: str | None = None,
) -> Path:
    """A finished local run of `project` whose `output/` holds `model` (or an adapter on it)."""
    runs = Runs(project / "runs")
    run_dir = runs.dir_of(run_id)
    output = run_dir / "output"
    output.mkdir(parents=True)
    if adapter:
        (output / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}))
        (output / "adapter_model.safetensors").write_bytes(b"lora")
    else:
        for item in model.iterdir():
            if item.is_file():
                shutil.copy2(item, output / item.name)
    (run_dir / "axolotl.yaml").write_text(
        f"base_model: {model}\n"
        "adapter: lora\n"
        f"sequence_len: {SEQUENCE_LEN}\n"
        "plugins:\n  - overbrainer_metrics.OverbrainerMetricsPlugin\n"
        "hub_model_id: me/child\n"
        f"output_dir: {output}\n"
    )
    (run_dir / "job.log").write_text("standin: done\n")
    record = RunRecord(
        id=run_id,
        target=target,
        created="2026-12-03T12:00:00Z",
        remote_dir=remote_dir or str(run_dir.resolve()),
        job=Job(remote_dir or str(run_dir.resolve()), 4242),
        state=state,
        snapshot=snapshot,
        snapshots=True,
    )
    runs.save(record)
    return run_dir


def pod_env(runpod_url: str, pods_root: Path) -> dict[str, str]:
    """The variables of an export on the Runpod fake's booting pods (no OVERBRAINER_* of ours)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    return env | {
        "OVERBRAINER_TEST_POLL_S": "0.05",
        "OVERBRAINER_RUNPOD__API_KEY": KEY,
        "OVERBRAINER_RUNPOD__BASE_URL": runpod_url,
        "OVERBRAINER_TEST_POD_ROOT": str(pods_root),
    }


def pod_export_project(
    tmp_path: Path, target: str, model: Path, python: str, env: dict[str, str]
) -> tuple[Path, Path, dict[str, str]]:
    """A project with the Runpod target `target` (a template taking `{venv}`) and a run of
    `model` trained on it, the job's `python3` a shell line `python`; the project, the run's
    directory and `env`."""
    project = make_project(tmp_path / "p")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    script = venv / "bin" / "python3"
    script.write_text(f"#!/bin/sh\n{python}\n")
    script.chmod(0o755)
    config_file = project / "overbrainer.toml"
    config_file.write_text(config_file.read_text() + target.format(venv=venv))
    run_dir = add_run(project, model, target="gpu_cloud", remote_dir=f"/workspace/{RUN_ID}")
    return project, run_dir, env
