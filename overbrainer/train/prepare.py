"""The files a training run's directory holds before its job starts (§2.3)."""

from __future__ import annotations

import os
import shutil
from importlib import resources
from pathlib import Path

from overbrainer.errors import UsageError
from overbrainer.train.runtime import PLUGIN_DIR

PLUGIN_FILE = "overbrainer_metrics.py"
TRAIN_FILE = "train.jsonl"
EVAL_FILE = "eval.jsonl"


class PrepareError(UsageError):
    """The run cannot be prepared (no training data, an unreadable checkpoint)."""


def has_examples(path: Path) -> bool:
    """Whether a JSONL file exists and holds at least one non-blank line."""
    try:
        with open(path, "rb") as file:
            return any(line.strip() for line in file)
    except (FileNotFoundError, NotADirectoryError):
        return False


def check_train_file(path: Path, shown: str) -> None:
    """Refuse a missing or empty train file, naming it as `shown`."""
    if not has_examples(path):
        raise PrepareError(f"{shown} has no example: run `overbrainer split` first")


def plugin_text() -> bytes:
    """The metrics plugin shipped in the package."""
    return (resources.files("overbrainer.train") / PLUGIN_FILE).read_bytes()


def copy_data(run_dir: Path, source: Path) -> bool:
    """Copy `train.jsonl` (and `eval.jsonl` when not empty) from `source`; whether eval exists."""
    data = run_dir / "data"
    data.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / TRAIN_FILE, data / TRAIN_FILE)
    if has_examples(source / EVAL_FILE):
        shutil.copyfile(source / EVAL_FILE, data / EVAL_FILE)
        return True
    return False


def write_plugin(run_dir: Path) -> None:
    """`plugin/overbrainer_metrics.py` in the run directory."""
    folder = run_dir / PLUGIN_DIR
    folder.mkdir(parents=True, exist_ok=True)
    (folder / PLUGIN_FILE).write_bytes(plugin_text())


def link_tree(source: Path, destination: Path) -> None:
    """Copy a directory tree with hard links, falling back to copies across file systems."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, destination, copy_function=link, symlinks=True)


def copy_checkpoint(run_dir: Path, checkpoint: Path) -> str:
    """`resume/checkpoint-N/` linked from a stopped run's checkpoint; its path in the run dir."""
    relative = f"resume/{checkpoint.name}"
    destination = run_dir / relative
    destination.parent.mkdir(parents=True, exist_ok=True)
    link_tree(checkpoint, destination)
    return relative
