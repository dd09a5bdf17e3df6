"""A stand-in for the `axolotl` command: drives the run's plugin through a simulated training.

Tests put an `axolotl` script running this file on PATH. It reads `axolotl.yaml`, loads the
plugins it names from PYTHONPATH (as Axolotl does), and calls their Trainer callbacks through a
training loop at a configurable pace. Knobs (plain environment variables, since a job never
gets OVERBRAINER_* ones): STANDIN_STEPS (20), STANDIN_PACE (seconds per step, 0.02),
STANDIN_EVAL_EVERY (steps between evaluations, 0 = none), STANDIN_EVAL_BATCHES (4),
STANDIN_EXIT (exit code, 0), STANDIN_NO_PLUGIN (1 = load no plugin), STANDIN_IGNORE_SNAPSHOT
(1 = drop the plugin's snapshot callback), STANDIN_STALL (1 = hang after training, ignoring
TERM), STANDIN_LOG (a file where each call appends its argv), STANDIN_ENV_FILE (a file that
gets the job's environment as JSON), STANDIN_KEEP_MERGE (1 = copy the
merge-lora config beside STANDIN_LOG as merge.yaml), STANDIN_PREPROCESS_EXIT (exit code of
`preprocess`, 0), STANDIN_HOLD (`STEP:FILE`: after step STEP the trainer waits until FILE exists,
checking for stop requests as at a step end, so a test acts on a job that cannot finish first).
`preprocess` fills `dataset_prepared_path` as Axolotl does, and `train` prints Axolotl's warning
when it finds that folder empty. `merge-lora` copies a real `base_model` (one with config.json)
as the merged model.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

import yaml


class State:
    """The parts of transformers' TrainerState the plugin reads."""

    def __init__(self, max_steps: int) -> None:
        self.global_step = 0
        self.max_steps = max_steps
        self.epoch: float | None = 0.0
        self.is_world_process_zero = True


class Control:
    """The parts of transformers' TrainerControl the plugin sets."""

    def __init__(self) -> None:
        self.should_save = False
        self.should_training_stop = False


class Args:
    """The parts of TrainingArguments the plugin reads."""

    def __init__(self, output_dir: str) -> None:
        self.output_dir = output_dir


class Loader:
    """An eval dataloader with a length."""

    def __init__(self, batches: int) -> None:
        self.batches = batches

    def __len__(self) -> int:
        return self.batches


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def load_callbacks(config: dict[str, Any]) -> list[Any]:
    if os.environ.get("STANDIN_NO_PLUGIN") == "1":
        return []
    callbacks: list[Any] = []
    for dotted in config.get("plugins", []):
        module_name, _, class_name = dotted.rpartition(".")
        plugin = getattr(importlib.import_module(module_name), class_name)()
        callbacks.extend(plugin.add_callbacks_pre_trainer(config, None))
    if os.environ.get("STANDIN_IGNORE_SNAPSHOT") == "1":  # an old plugin: no snapshot callback
        callbacks = [c for c in callbacks if type(c).__name__ != "SnapshotCallback"]
    return callbacks


def call(callbacks: list[Any], hook: str, *args: Any, **kwargs: Any) -> None:
    for callback in callbacks:
        method = getattr(callback, hook, None)
        if method is not None:
            method(*args, **kwargs)


def save_checkpoint(output: Path, step: int, callbacks: list[Any], *state: Any) -> None:
    checkpoint = output / f"checkpoint-{step}"
    checkpoint.mkdir(parents=True, exist_ok=True)
    (checkpoint / "adapter_model.safetensors").write_bytes(b"weights at step %d" % step)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    call(callbacks, "on_save", *state)


def evaluate(callbacks: list[Any], state: State, args: Args, control: Control, step: int) -> None:
    batches = env_int("STANDIN_EVAL_BATCHES", 4)
    loader = Loader(batches)
    for _ in range(batches):
        call(callbacks, "on_prediction_step", args, state, control, eval_dataloader=loader)
    call(callbacks, "on_evaluate", args, state, control)
    logs = {"eval_loss": 1.0 / (1 + step)}
    call(callbacks, "on_log", args, state, control, logs=logs)


UNPREPARED = (
    "Processing datasets during training can lead to VRAM instability. Please "
    "pre-process your dataset using `axolotl preprocess path/to/config.yml`."
)
"""Axolotl 0.19.0's warning when `train` finds no prepared dataset (utils/data/sft.py)."""


def prepared_dir(config: dict[str, Any]) -> Path:
    return Path(str(config.get("dataset_prepared_path") or "last_run_prepared"))


def preprocess(config_path: Path) -> int:
    """Tokenize into `dataset_prepared_path/<hash>/` as Axolotl does (here: a placeholder)."""
    config = yaml.safe_load(config_path.read_text())
    target = prepared_dir(config) / "standin"
    target.mkdir(parents=True, exist_ok=True)
    (target / "dataset_info.json").write_text(json.dumps({"datasets": config.get("datasets")}))
    print(f"standin: preprocessed into {target}", flush=True)
    return env_int("STANDIN_PREPROCESS_EXIT", 0)


def held_at() -> tuple[int, Path]:
    """The step STANDIN_HOLD holds at (0 = none) and the file that releases it."""
    step, _, file = os.environ.get("STANDIN_HOLD", "0:").partition(":")
    return int(step), Path(file)


def hold(release: Path, callbacks: list[Any], args: Args, state: State, control: Control) -> None:
    """Stay at this step until `release` exists or the plugin asks to stop (at most 120 s)."""
    deadline = time.monotonic() + 120
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
        call(callbacks, "on_step_end", args, state, control)
        if control.should_training_stop:
            return


def train(config_path: Path) -> int:
    config = yaml.safe_load(config_path.read_text())
    prepared = prepared_dir(config)
    if not prepared.is_dir() or not any(prepared.iterdir()):
        print(f"standin: WARNING {UNPREPARED}", flush=True)
    output = Path(config["output_dir"])
    output.mkdir(parents=True, exist_ok=True)
    callbacks = load_callbacks(config)
    steps = env_int("STANDIN_STEPS", 20)
    pace = float(os.environ.get("STANDIN_PACE", "0.02"))
    eval_every = env_int("STANDIN_EVAL_EVERY", 0) if config.get("test_datasets") else 0
    hold_step, hold_file = held_at()
    start = 0
    resume = config.get("resume_from_checkpoint")
    if resume:
        if not Path(resume, "trainer_state.json").is_file():
            print(f"standin: cannot resume from {resume}", flush=True)
            return 1
        start = json.loads(Path(resume, "trainer_state.json").read_text())["global_step"]
        (output / "resumed_from.txt").write_text(f"{resume}\n")
        print(f"standin: resuming from {resume} at step {start}", flush=True)
    state, control, args = State(steps), Control(), Args(str(output))
    state.global_step = start
    print(f"standin: training {steps} steps", flush=True)
    call(callbacks, "on_train_begin", args, state, control)
    for step in range(start + 1, steps + 1):
        time.sleep(pace)
        state.global_step = step
        state.epoch = step / steps
        call(callbacks, "on_step_end", args, state, control)
        logs = {"loss": 2.0 - step / steps, "learning_rate": 2e-4, "grad_norm": 0.5}
        call(callbacks, "on_log", args, state, control, logs=logs)
        if eval_every and step % eval_every == 0:
            evaluate(callbacks, state, args, control, step)
        if step == hold_step:
            hold(hold_file, callbacks, args, state, control)
        if control.should_save:
            save_checkpoint(output, step, callbacks, args, state, control)
            control.should_save = False
        if control.should_training_stop:
            print(f"standin: stopping at step {step}", flush=True)
            break
    call(callbacks, "on_train_end", args, state, control)
    (output / "adapter_model.safetensors").write_bytes(b"adapter at step %d" % state.global_step)
    (output / "adapter_config.json").write_text("{}")
    if os.environ.get("STANDIN_STALL") == "1":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(1)
    return env_int("STANDIN_EXIT", 0)


def merge(config_path: Path) -> int:
    config = yaml.safe_load(config_path.read_text())
    merged = Path(config["output_dir"]) / "merged"
    base = Path(str(config.get("base_model", "")))
    keep = os.environ.get("STANDIN_KEEP_MERGE")
    if keep:  # the test reads what the caller wrote, after the caller has removed it
        Path(os.environ.get("STANDIN_LOG", "x")).with_name("merge.yaml").write_text(
            config_path.read_text()
        )
    if (base / "config.json").is_file():  # a real base model: the "merge" is a copy of it
        shutil.copytree(base, merged, dirs_exist_ok=True)
    else:
        merged.mkdir(parents=True, exist_ok=True)
        (merged / "model.safetensors").write_bytes(b"merged")
    print("standin: merged", flush=True)
    return 0


def main(argv: list[str]) -> int:
    trace = os.environ.get("STANDIN_LOG")
    if trace:
        with open(trace, "a") as file:
            file.write(json.dumps(argv) + "\n")
    env_file = os.environ.get("STANDIN_ENV_FILE")
    if env_file:
        Path(env_file).write_text(json.dumps(dict(os.environ)))
    match argv:
        case ["preprocess", config]:
            return preprocess(Path(config))
        case ["train", config]:
            return train(Path(config))
        case ["merge-lora", config]:
            return merge(Path(config))
    print(f"standin: unknown command {argv}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
