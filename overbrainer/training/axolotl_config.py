"""The run's `axolotl.yaml`: built from `[training]`, written as YAML, checked before a resume.

- `build_config(training, root, has_eval, resume_checkpoint=None)`: the config as a dict
  (reference-training.md §3); `root` is the run directory as the job sees it.
- `render(config)` / `write_config(path, config)`: the YAML text (sorted keys, block style,
  string values double-quoted, PyYAML round-trip safe) and its crash-safe write.
- `template_warning(training)`: the chat-template warning of a run start, or None.
- `differing_keys(recorded, fresh)` and `check_resume(source_id, recorded_yaml, training)`:
  the resume compatibility check, raising `ResumeRefused` naming the keys that differ.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from overbrainer.config.settings import Adapter, Training
from overbrainer.model.errors import UsageError
from overbrainer.storage import write_atomic

CONFIG_FILE = "axolotl.yaml"
METRICS_FILE = "metrics.jsonl"
OUTPUT_DIR = "output"
MERGED_DIR = "merged"
TRAIN_FILE = "data/train.jsonl"
EVAL_FILE = "data/eval.jsonl"
PLUGIN_DIR = "plugin"
PLUGIN_FILE = "overbrainer_metrics.py"
PLUGIN_CLASS = "overbrainer_metrics.OverbrainerMetricsPlugin"
PREPARED_DIR = "prepared"
RESUME_DIR = "resume"
SAVE_TOTAL_LIMIT = 2

REASONING_TEMPLATES = ("qwen3", "qwen3_5", "exaone4", "gemma4", "gemma4_unified")
"""Axolotl chat templates known to render `reasoning_content`."""
REASONING_MODEL = "qwen3"

RESUME_MAY_DIFFER = frozenset(
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
RESUME_MAY_DIFFER_PREFIXES = ("wandb_", "mlflow_", "comet_")


class ResumeRefused(UsageError):
    """A run cannot be resumed from the one named; the message says why and what to do."""


def _dataset(path: str) -> dict[str, Any]:
    return {
        "path": path,
        "ds_type": "json",
        "type": "chat_template",
        "field_messages": "messages",
        "field_thinking": "reasoning_content",
        "roles_to_train": ["assistant"],
        "train_on_eos": "turn",
    }


def _merge(config: dict[str, Any], key: str, value: Any) -> None:
    """Mapping into mapping recursively; anything else replaces what is there."""
    existing = config.get(key)
    if isinstance(existing, dict) and isinstance(value, Mapping):
        for inner_key, inner_value in value.items():
            _merge(existing, str(inner_key), inner_value)
    else:
        config[key] = _plain(value)


def _plain(value: Any) -> Any:
    """A copy made of plain dicts and lists, so the config never shares the settings' values."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if type(value) in (bool, str, int, float):
        return value
    for kind in (bool, str, int, float):  # a subclass (e.g. text from the environment) as its base
        if isinstance(value, kind):
            return kind(value)
    return value


def build_config(
    training: Training, root: str, has_eval: bool, resume_checkpoint: str | None = None
) -> dict[str, Any]:
    """The Axolotl config of a run seen at `root`; `resume_checkpoint` is `checkpoint-N`."""
    base = root.rstrip("/")

    def at(name: str) -> str:
        return f"{base}/{name}"

    extra = training.axolotl_extra
    config: dict[str, Any] = {
        "base_model": training.base_model,
        "datasets": [_dataset(at(TRAIN_FILE))],
        "val_set_size": 0,
        "sequence_len": training.sequence_len,
        "sample_packing": training.sample_packing,
        "eval_sample_packing": False,
        # sdpa on every target: Axolotl 0.19.0 packs it with torch's own varlen flash kernel on
        # CUDA and a block-diagonal mask elsewhere (CPU, fp32); the flash-attn package is not in
        # its images. Its "sdpa with bf16 ... 0.0 loss" warning predates that (docs/training.md,
        # "Attention and sample packing").
        "attn_implementation": "sdpa",
        "num_epochs": training.epochs,
        "micro_batch_size": training.micro_batch_size,
        "gradient_accumulation_steps": training.gradient_accumulation_steps,
        "learning_rate": training.learning_rate,
        "optimizer": training.optimizer,
        "lr_scheduler": training.lr_scheduler,
        "warmup_ratio": 0.1,
        "gradient_checkpointing": True,
        "logging_steps": 1,
        "output_dir": at(OUTPUT_DIR),
        "dataset_prepared_path": at(PREPARED_DIR),
        "plugins": [PLUGIN_CLASS],
    }
    if training.adapter is not Adapter.FULL:
        config.update(
            adapter=training.adapter.value,
            load_in_4bit=training.adapter is Adapter.QLORA,
            load_in_8bit=False,
            lora_r=training.lora_r,
            lora_alpha=training.lora_alpha,
            lora_dropout=training.lora_dropout,
            lora_target_linear=True,
        )
    if has_eval:
        config["test_datasets"] = [{**_dataset(at(EVAL_FILE)), "split": "train"}]
        if "eval_steps" not in extra:
            config["evals_per_epoch"] = training.evals_per_epoch
    if "save_steps" not in extra:
        config["saves_per_epoch"] = training.saves_per_epoch
    if "save_total_limit" not in extra:
        config["save_total_limit"] = SAVE_TOTAL_LIMIT
    if training.hub_model_id is not None:
        config["hub_model_id"] = training.hub_model_id
    if resume_checkpoint is not None:
        config["resume_from_checkpoint"] = at(f"{RESUME_DIR}/{resume_checkpoint}")
    for key, value in extra.items():
        _merge(config, key, value)
    if not has_eval:
        # With no eval set, Axolotl (through the HF Trainer) refuses a step or strategy cadence.
        config.pop("eval_steps", None)
        config.pop("eval_strategy", None)
    return config


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_RESERVED = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"})


class _Dumper(yaml.SafeDumper):
    """Block YAML with indented sequences, plain keys where safe, double-quoted string values."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)

    def represent_mapping(
        self, tag: str, mapping: Any, flow_style: bool | None = None
    ) -> yaml.MappingNode:
        node = super().represent_mapping(tag, mapping, flow_style)
        for key_node, _value in node.value:
            text = key_node.value
            if key_node.tag == "tag:yaml.org,2002:str":
                safe = _PLAIN_KEY.fullmatch(text) and text.lower() not in _RESERVED
                key_node.style = None if safe else '"'
        return node


def _quoted(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')


_Dumper.add_representer(str, _quoted)


def render(config: Mapping[str, Any]) -> str:
    """The YAML text of a config; `yaml.safe_load` gives the same values back."""
    for value in _leaves(config):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("a non-finite number cannot be written to axolotl.yaml")
    return yaml.dump(
        dict(config),
        Dumper=_Dumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        indent=2,
        width=1 << 30,
    )


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def write_config(path: Path, config: Mapping[str, Any]) -> None:
    """Write `render(config)` to `path` crash-safely."""
    write_atomic(path, render(config))


def _local_template(base_model: str) -> str | None:
    """The chat template of a base model that is a folder on this machine, else None."""
    folder = Path(base_model).expanduser()
    try:
        if (folder / "chat_template.jinja").is_file():
            return (folder / "chat_template.jinja").read_text(encoding="utf-8", errors="replace")
        loaded = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    template = loaded.get("chat_template") if isinstance(loaded, dict) else None
    return template if isinstance(template, str) else None


def template_warning(training: Training) -> str | None:
    """A warning when the chat template in use may drop `reasoning_content`: read from a base
    model that is a folder here, else a name heuristic."""
    extra = training.axolotl_extra
    jinja = extra.get("chat_template_jinja")
    if isinstance(jinja, str):
        if "reasoning_content" in jinja:
            return None
        return (
            "chat_template_jinja does not reference reasoning_content, "
            "leaving the parent's reasoning out of training"
        )
    known = f"templates known to render it: {', '.join(REASONING_TEMPLATES)}"
    template = extra.get("chat_template")
    if isinstance(template, str) and template != "tokenizer_default":
        if template in REASONING_TEMPLATES:
            return None
        return (
            f"chat_template `{template}` may drop reasoning_content, leaving the parent's "
            f"reasoning out of training ({known})"
        )
    local = _local_template(training.base_model)
    if local is not None:
        if "reasoning_content" in local:
            return None
        return (
            f"the chat template of {training.base_model} does not reference "
            "reasoning_content, leaving the parent's reasoning out of training"
        )
    if REASONING_MODEL in training.base_model.lower():
        return None
    return (
        f"the chat template of {training.base_model} may drop reasoning_content, leaving the "
        "parent's reasoning out of training; set training.axolotl_extra.chat_template if the "
        f"model uses one of the {known}"
    )


def _may_differ(key: str) -> bool:
    return key in RESUME_MAY_DIFFER or key.startswith(RESUME_MAY_DIFFER_PREFIXES)


def _same(a: Any, b: Any) -> bool:
    """Equal values, where a bool never equals a number (YAML `true` is not `1`)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and bool(a == b)


def differing_keys(recorded: Mapping[str, Any], fresh: Mapping[str, Any]) -> list[str]:
    """Top-level keys whose values differ (or exist on one side), except those allowed to."""
    keys = sorted(set(recorded) | set(fresh))
    return [
        key
        for key in keys
        if not _may_differ(key)
        and (key not in recorded or key not in fresh or not _same(recorded[key], fresh[key]))
    ]


def recorded_layout(recorded: Mapping[str, Any]) -> tuple[str, bool]:
    """The root and has-eval a recorded config was rendered with (from `output_dir`)."""
    output_dir = recorded.get("output_dir")
    root = "/"
    if isinstance(output_dir, str) and output_dir.endswith(OUTPUT_DIR):
        root = output_dir.removesuffix(OUTPUT_DIR).rstrip("/") or "/"
    return root, bool(recorded.get("test_datasets"))


def check_resume(source_id: str, recorded_yaml: str, training: Training) -> None:
    """Refuse a resume whose `[training]` renders a config that differs from the recorded one.

    The fresh config is rendered with the recorded run's root and eval set, so only the
    training settings are compared.
    """
    try:
        recorded = yaml.safe_load(recorded_yaml)
    except yaml.YAMLError:
        recorded = None
    if not isinstance(recorded, dict):
        raise ResumeRefused(
            f"cannot resume from run {source_id}: its {CONFIG_FILE} is not a valid Axolotl config"
        )
    root, has_eval = recorded_layout(recorded)
    fresh = yaml.safe_load(render(build_config(training, root, has_eval)))
    keys = differing_keys(recorded, fresh)
    if keys:
        raise ResumeRefused(
            f"cannot resume from run {source_id}: the training settings differ from the ones it "
            f"ran with ({', '.join(keys)}); set them back to resume, or start a new run"
        )
