"""A run directory made ready for its job: data, plugin, `axolotl.yaml`, and a resume's checkpoint.

- `resume_source(runs, source_id, training)`: the checks of `train --resume-from` (the source
  is `stopped` with its snapshot present locally, and its settings match), as `ResumeSource`.
- `prepare_run(run_dir, training, root, train_file, eval_file, resume=None)`: copies the split
  files (a resumed run copies the stopped run's), the metrics plugin, the checkpoint
  (hard-linked, copied across file systems) and writes `axolotl.yaml`; returns `Prepared`.
- `job_env(root)`: the job's non-secret variables; `job_commands(training)`: what it runs
  (`axolotl preprocess`, `axolotl train`, then a merge or an export when asked).
- `start_warnings(training, hf_token)`: the warnings a run start logs (chat template, hub token).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from overbrainer.config.settings import Adapter, Training
from overbrainer.model.errors import EXIT_USAGE, OverbrainerError, UsageError
from overbrainer.model.train_metric import JobStage
from overbrainer.storage import write_atomic
from overbrainer.targets import FAILED_FILE, SCRIPT_FILE, SNAPSHOT_REQUEST, Command
from overbrainer.training.axolotl_config import (
    CONFIG_FILE,
    EVAL_FILE,
    METRICS_FILE,
    OUTPUT_DIR,
    PLUGIN_DIR,
    PLUGIN_FILE,
    RESUME_DIR,
    TRAIN_FILE,
    ResumeRefused,
    build_config,
    check_resume,
    template_warning,
    write_config,
)
from overbrainer.training.run_store import RunRecord, Runs, RunState

METRICS_ENV = "OVERBRAINER_METRICS"
SNAPSHOT_ENV = "OVERBRAINER_SNAPSHOT"
_CHECKPOINT = re.compile(r"output/(checkpoint-\d+)")


class PrepareError(OverbrainerError):
    """A run directory cannot be prepared (a file cannot be copied or written).

    Exit 2, as for every project file that cannot be written: the user's environment.
    """

    exit_code = EXIT_USAGE


class NoTrainingData(UsageError):
    """`data/train.jsonl` is missing or empty."""


@attrs.frozen
class ResumeSource:
    """A stopped run to resume from: its record, checkpoint name and local run directory."""

    record: RunRecord
    checkpoint: str
    """`checkpoint-N`."""
    run_dir: Path

    @property
    def checkpoint_dir(self) -> Path:
        """`runs/<id>/output/checkpoint-N`."""
        return self.run_dir / OUTPUT_DIR / self.checkpoint


@attrs.frozen
class Prepared:
    """What `prepare_run` wrote: whether there is an eval set, and the config."""

    has_eval: bool
    config: dict[str, Any]


def resume_source(runs: Runs, source_id: str, training: Training) -> ResumeSource:
    """The run `source_id` checked for a resume; ResumeRefused with the reference's messages."""
    record = runs.load(source_id)
    prefix = f"cannot resume from run {source_id}"
    snapshot = record.snapshot
    if record.state is not RunState.STOPPED or snapshot is None:
        raise ResumeRefused(
            f"{prefix}: it is {record.state.value}, not stopped with a snapshot "
            "(see `overbrainer train stop`)"
        )
    match = _CHECKPOINT.fullmatch(snapshot.checkpoint)
    run_dir = runs.dir_of(source_id)
    if match is None or not (run_dir / snapshot.checkpoint).is_dir():
        raise ResumeRefused(
            f"{prefix}: its snapshot is not in runs/{source_id}/{snapshot.checkpoint}; "
            f"retrieve it with `overbrainer train attach {source_id}`"
        )
    try:
        recorded = (run_dir / CONFIG_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        raise ResumeRefused(f"{prefix}: runs/{source_id}/{CONFIG_FILE} cannot be read") from None
    check_resume(source_id, recorded, training)
    return ResumeSource(record, match.group(1), run_dir)


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None
    except OSError as error:
        raise PrepareError(f"cannot read {path}: {error.strerror}") from None


def _copy(source: Path, target: Path) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    except OSError as error:
        raise PrepareError(f"cannot copy {source} to {target}: {error.strerror}") from None


def _link_tree(source: Path, target: Path) -> None:
    """Hard-link every file of `source` into `target`, copying where linking is refused."""
    for folder, _dirs, files in os.walk(source):
        here = target / Path(folder).relative_to(source)
        here.mkdir(parents=True, exist_ok=True)
        for name in files:
            try:
                os.link(Path(folder) / name, here / name)
            except OSError as error:
                if error.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                    raise
                shutil.copy2(Path(folder) / name, here / name)


def plugin_source() -> str:
    """The text of the metrics plugin shipped in this package."""
    return resources.files("overbrainer.training").joinpath(PLUGIN_FILE).read_text(encoding="utf-8")


def prepare_run(
    run_dir: Path,
    training: Training,
    root: str,
    train_file: Path,
    eval_file: Path,
    resume: ResumeSource | None = None,
) -> Prepared:
    """Fill `run_dir` for its job, seen by the job at `root`."""
    if resume is not None:
        train_file = resume.run_dir / TRAIN_FILE
        eval_file = resume.run_dir / EVAL_FILE
    if not _size(train_file):
        raise NoTrainingData(f"{train_file} has no example: run `overbrainer split` first")
    _copy(train_file, run_dir / TRAIN_FILE)
    has_eval = bool(_size(eval_file))
    if has_eval:
        _copy(eval_file, run_dir / EVAL_FILE)
    try:
        plugin = run_dir / PLUGIN_DIR / PLUGIN_FILE
        plugin.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(plugin, plugin_source())
        checkpoint = None
        if resume is not None:
            checkpoint = resume.checkpoint
            _link_tree(resume.checkpoint_dir, run_dir / RESUME_DIR / checkpoint)
        config = build_config(training, root, has_eval, checkpoint)
        write_config(run_dir / CONFIG_FILE, config)
    except OSError as error:
        raise PrepareError(f"cannot prepare {run_dir}: {error.strerror}") from None
    return Prepared(has_eval, config)


def job_env(root: str) -> dict[str, str]:
    """The job's non-secret variables (the native runtime prepends PYTHONPATH to its own)."""
    base = root.rstrip("/")
    return {
        "AXOLOTL_DO_NOT_TRACK": "1",
        "PYTHONPATH": f"{base}/{PLUGIN_DIR}",
        METRICS_ENV: f"{base}/{METRICS_FILE}",
        SNAPSHOT_ENV: f"{base}/{SNAPSHOT_REQUEST}",
    }


def job_commands(training: Training, *, export: bool = False) -> list[Command]:
    """`axolotl preprocess` then `axolotl train` (both the `train` stage), then `axolotl
    merge-lora` with `merge`, then `sh export.sh` with `[export] after_training` (skipped, like
    the merge, after a snapshot).

    Preprocessing first fills `prepared/`, so `train` loads the tokenized dataset from disk
    instead of tokenizing it itself (which Axolotl warns against: VRAM instability). The
    export's failure is its own: its exit status goes to `export.failed` and the job still ends
    with the training's (and merge's) status, so the run stays what its training was.
    """
    commands = [
        Command(JobStage.TRAIN, "axolotl", ("preprocess", CONFIG_FILE)),
        Command(JobStage.TRAIN, "axolotl", ("train", CONFIG_FILE)),
    ]
    if training.merge and training.adapter is not Adapter.FULL:
        commands.append(Command(JobStage.MERGE, "axolotl", ("merge-lora", CONFIG_FILE)))
    if export:
        commands.append(
            Command(
                JobStage.EXPORT, "sh", (SCRIPT_FILE,), from_venv=False, failure_file=FAILED_FILE
            )
        )
    return commands


HF_TOKEN_ENV = "OVERBRAINER_HF_TOKEN"


def start_warnings(training: Training, *, hf_token: bool, push_after: bool = False) -> list[str]:
    """The warnings of a run start: a template that may drop reasoning, a push without token.

    `hf_token`: whether the settings have one (from the environment, `.env` or the file);
    `push_after`: whether `[hub] after_training` is on.
    """
    warnings = []
    template = template_warning(training)
    if template is not None:
        warnings.append(template)
    if training.hub_model_id is not None and not hf_token:
        warnings.append(
            f"training.hub_model_id is set but {HF_TOKEN_ENV} is not: the push will fail"
        )
    if push_after and not hf_token:
        warnings.append(
            f"[hub] after_training is set but {HF_TOKEN_ENV} is not: "
            "the push after training will fail"
        )
    return warnings
