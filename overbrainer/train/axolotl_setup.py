"""The run's `axolotl.yaml`, resume sources and chat-template warnings, as the lifecycle uses them.

The rendering itself belongs to `overbrainer.train.axolotl_config`; this module only adapts
it to the run directory of a local or SSH target.
"""

from __future__ import annotations

import logging
from pathlib import Path

import attrs
import yaml

from overbrainer.config.settings import Adapter, LocalTarget, SshTarget, Training
from overbrainer.errors import UsageError
from overbrainer.runs.store import RunNotFound, Runs, RunState, Snapshot
from overbrainer.train.runtime import CONFIG_FILE, job_root

log = logging.getLogger(__name__)

ALLOWED_DIFFERENCES = frozenset(
    {
        "resume_from_checkpoint",
        "hub_model_id",
        "hub_strategy",
        "evals_per_epoch",
        "eval_steps",
        "eval_strategy",
        "saves_per_epoch",
        "save_steps",
        "save_strategy",
        "save_total_limit",
        "logging_steps",
        "use_tensorboard",
        "use_wandb",
        "use_mlflow",
        "use_comet",
    }
)


@attrs.frozen
class ResumeSource:
    """The stopped run a new run resumes from, and its snapshot."""

    run_id: str
    snapshot: Snapshot


def render(training: Training, root: str, has_eval: bool, checkpoint: str | None) -> str:
    """The YAML text of the run's Axolotl config (minimal until axolotl_config lands)."""
    root = root.rstrip("/")

    def dataset(path: str) -> dict[str, object]:
        return {
            "path": path,
            "ds_type": "json",
            "type": "chat_template",
            "field_messages": "messages",
            "field_thinking": "reasoning_content",
            "roles_to_train": ["assistant"],
            "train_on_eos": "turn",
        }

    config: dict[str, object] = {
        "base_model": training.base_model,
        "datasets": [dataset(f"{root}/data/train.jsonl")],
        "num_epochs": training.epochs,
        "learning_rate": training.learning_rate,
        "output_dir": f"{root}/output",
        "dataset_prepared_path": f"{root}/prepared",
        "plugins": ["overbrainer_metrics.OverbrainerMetricsPlugin"],
    }
    if training.adapter is not Adapter.FULL:
        config["adapter"] = training.adapter.value
    if has_eval:
        config["test_datasets"] = [dict(dataset(f"{root}/data/eval.jsonl"), split="train")]
    if checkpoint is not None:
        config["resume_from_checkpoint"] = f"{root}/{checkpoint}"
    return yaml.safe_dump(config, sort_keys=True)


def write_config(
    run_dir: Path,
    training: Training,
    target: LocalTarget | SshTarget,
    has_eval: bool,
    checkpoint: str | None,
) -> None:
    """Write `axolotl.yaml` in the run directory, paths as the job sees them."""
    text = render(training, job_root(target, str(run_dir)), has_eval, checkpoint)
    (run_dir / CONFIG_FILE).write_text(text, encoding="utf-8")


def _differences(old: dict[str, object], new: dict[str, object]) -> list[str]:
    keys = sorted(set(old) | set(new))
    return [
        key
        for key in keys
        if key not in ALLOWED_DIFFERENCES
        and not key.startswith(("wandb_", "mlflow_", "comet_"))
        and old.get(key) != new.get(key)
    ]


def resume_source(runs: Runs, run_id: str, training: Training) -> ResumeSource:
    """The stopped run to resume from, after the §3 checks (state, checkpoint, settings)."""
    try:
        record = runs.load(run_id)
    except RunNotFound:
        raise UsageError(f"cannot resume from run {run_id}: no run {run_id} in runs/") from None
    if record.state is not RunState.STOPPED or record.snapshot is None:
        raise UsageError(
            f"cannot resume from run {run_id}: it is {record.state.value}, not stopped with a "
            "snapshot (see `overbrainer train stop`)"
        )
    run_dir = runs.dir_of(run_id)
    checkpoint = record.snapshot.checkpoint
    if not (run_dir / checkpoint).is_dir():
        raise UsageError(
            f"cannot resume from run {run_id}: its snapshot is not in runs/{run_id}/"
            f"{checkpoint}; retrieve it with `overbrainer train attach {run_id}`"
        )
    try:
        old = yaml.safe_load((run_dir / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        old = None
    if isinstance(old, dict):
        root = str(old.get("output_dir", f"{run_dir}/output")).removesuffix("/output")
        has_eval = "test_datasets" in old
        new = yaml.safe_load(render(training, root, has_eval, None))
        differing = _differences(old, new)
        if differing:
            raise UsageError(
                f"cannot resume from run {run_id}: the training settings differ from the ones it "
                f"ran with ({', '.join(differing)}); set them back to resume, or start a new run"
            )
    return ResumeSource(run_id, record.snapshot)


def warn_chat_template(training: Training) -> None:
    """Warn when the chat template may leave the parent's reasoning out (§3)."""
    extra = training.axolotl_extra
    known = ("qwen3", "qwen3_5", "exaone4", "gemma4", "gemma4_unified")
    jinja = extra.get("chat_template_jinja")
    template = extra.get("chat_template")
    if isinstance(jinja, str):
        if "reasoning_content" not in jinja:
            log.warning(
                "chat_template_jinja does not reference reasoning_content, leaving the parent's "
                "reasoning out of training"
            )
    elif isinstance(template, str) and template != "tokenizer_default":
        if template not in known:
            log.warning(
                "chat template `%s` may drop reasoning_content, leaving the parent's reasoning "
                "out of training (templates known to render it: %s)",
                template,
                ", ".join(known),
            )
    elif "qwen3" not in training.base_model.lower():
        log.warning(
            "the chat template of %s may drop reasoning_content, leaving the parent's reasoning "
            "out of training; set training.axolotl_extra.chat_template if the model uses one of "
            "the templates known to render it: %s",
            training.base_model,
            ", ".join(known),
        )
