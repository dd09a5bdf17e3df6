"""Semantic checks, in the reference's order; each problem names its key, never its value."""

from __future__ import annotations

import math
import re

from overbrainer.config import settings as s
from overbrainer.config.dialects import Dialect, fits
from overbrainer.config.target_settings import settings_kind

_NAME = re.compile(r"^[a-z0-9_]+$")


def check(cfg: s.Settings) -> list[str]:
    """Every problem of `cfg`, one message each, in the reference's order."""
    out: list[str] = []
    for table, names in (("providers", cfg.providers), ("targets", cfg.targets)):
        out += [f"{table}.{n}: name must match ^[a-z0-9_]+$" for n in names if not _NAME.match(n)]
    roles = cfg.roles.all()
    for name, role in roles:
        if role.provider not in cfg.providers:
            out.append(f"roles.{name}: unknown provider `{role.provider}`")
    emb = cfg.roles.embedder
    if emb and (p := cfg.providers.get(emb.provider)) and p.protocol is s.Protocol.ANTHROPIC:
        out.append(
            "roles.embedder: the anthropic protocol has no embeddings, use an openai provider"
        )
    for name, role in roles:
        if role.max_tokens < 1:
            out.append(f"roles.{name}.max_tokens: must be at least 1")
        if role.temperature is not None and not 0 <= role.temperature <= 2:
            out.append(f"roles.{name}.temperature: must be in [0, 2]")
        if role.reasoning_effort is not None and not role.reasoning:
            out.append(f"roles.{name}.reasoning_effort: requires reasoning = true")
    for name, role in roles:
        p = cfg.providers.get(role.provider)
        anthropic = p is not None and p.protocol is s.Protocol.ANTHROPIC
        # Anthropic's published request types (its SDK's, 2.17) declare no temperature.
        if anthropic and role.temperature is not None:
            out.append(
                f"roles.{name}.temperature: Anthropic's Messages API takes no temperature "
                "(its published request types declare none); remove it"
            )
        openai = p is not None and p.spec.dialect is Dialect.OPENAI
        # OpenAI's reasoning models (o-series, GPT-5) refuse any temperature but the default.
        if openai and role.reasoning and role.temperature is not None:
            out.append(
                f"roles.{name}.temperature: the openai dialect's reasoning models do not "
                "accept a temperature"
            )
    for name, role in roles:
        if role.thinking_budget is None:
            continue
        p = cfg.providers.get(role.provider)
        key = f"roles.{name}.thinking_budget"
        if not role.reasoning:
            out.append(f"{key}: requires reasoning = true")
        if role.reasoning_effort is not None:
            out.append(f"{key}: cannot be combined with reasoning_effort")
        if p is not None and p.protocol is not s.Protocol.ANTHROPIC:
            out.append(f"{key}: only valid on the anthropic protocol")
        if role.thinking_budget < 1024:
            out.append(f"{key}: must be at least 1024")
        if role.thinking_budget >= role.max_tokens:
            out.append(f"{key}: must be less than max_tokens")
    for name, provider in cfg.providers.items():
        discount = provider.batch_discount
        if discount is not None and not 0 < discount <= 1:
            out.append(f"providers.{name}.batch_discount: must be in (0, 1]")
        kind = provider.batch_api
        anthropic = provider.protocol is s.Protocol.ANTHROPIC
        if kind is not None and (kind is s.BatchApi.ANTHROPIC) != anthropic:
            out.append(
                f"providers.{name}.batch_api: `{kind.value}` does not match the "
                f"{provider.protocol.value} protocol"
            )
        dialect = provider.dialect
        if dialect is not None and not fits(dialect, provider.protocol):
            out.append(
                f"providers.{name}.dialect: `{dialect.value}` does not match the "
                f"{provider.protocol.value} protocol"
            )
    for name, role in roles:
        if role.batch and name != "parent":
            out.append(f"roles.{name}.batch: only the parent's answers can use a batch API")
    if cfg.roles.parent.batch:
        problem = batch_problem(cfg)
        if problem is not None:
            out.append(f"roles.parent.batch: {problem}")
    seen: set[str] = set()
    for topic in cfg.topics:
        if topic.name in seen:
            out.append(f"topics: duplicate name `{topic.name}`")
        seen.add(topic.name)
        if topic.subtopics < 1:
            out.append(f"topics.{topic.name}.subtopics: must be at least 1")
        if topic.questions_per_subtopic < 1:
            out.append(f"topics.{topic.name}.questions_per_subtopic: must be at least 1")
    pl = cfg.pipeline
    if pl.concurrency < 1:
        out.append("pipeline.concurrency: must be at least 1")
    if pl.concurrency > 1024:
        out.append("pipeline.concurrency: must be at most 1024")
    if not 0 < pl.eval_ratio < 1:
        out.append("pipeline.eval_ratio: must be in (0, 1)")
    if not 0 < pl.dedup_threshold <= 1:
        out.append("pipeline.dedup_threshold: must be in (0, 1]")
    if not 0 < pl.embedding_threshold <= 1:
        out.append("pipeline.embedding_threshold: must be in (0, 1]")
    if pl.question_batch_size < 1:
        out.append("pipeline.question_batch_size: must be at least 1")
    if pl.request_timeout_secs < 1:
        out.append("pipeline.request_timeout_secs: must be at least 1")
    if pl.max_cost_usd is not None and not pl.max_cost_usd >= 0:
        out.append("pipeline.max_cost_usd: must be at least 0")
    if not pl.drain_secs >= 0:
        out.append("pipeline.drain_secs: must be at least 0")
    if not 0 < pl.adaptive_decrease < 1:
        out.append("pipeline.adaptive_decrease: must be in (0, 1)")
    if not 0 <= pl.adaptive_pause_secs <= 600:
        out.append("pipeline.adaptive_pause_secs: must be in [0, 600]")
    if pl.adaptive_window_secs is not None and not 0 < pl.adaptive_window_secs <= 3600:
        out.append("pipeline.adaptive_window_secs: must be in (0, 3600]")
    if not 0 < pl.batch_poll_secs <= 3600:
        out.append("pipeline.batch_poll_secs: must be in (0, 3600]")
    if cfg.training is not None:
        if cfg.training.target not in cfg.targets:
            out.append(f"training.target: unknown target `{cfg.training.target}`")
        out += check_training(cfg.training)
    for name, target in cfg.targets.items():
        out += settings_kind(target).problems(name, target)
    return out


def batch_problem(cfg: s.Settings) -> str | None:
    """Why the parent's provider cannot answer through a batch API, or None when it can."""
    provider = cfg.providers.get(cfg.roles.parent.provider)
    if provider is None:
        return None
    name = cfg.roles.parent.provider
    if provider.protocol is s.Protocol.STUB:
        return f"the stub protocol of provider `{name}` has no batch API"
    if provider.batch_kind is None:
        return (
            f"the {provider.spec.dialect.value} dialect of provider `{name}` has no batch API "
            f"(set providers.{name}.batch_api if the server has one)"
        )
    return None


def batch_discount(cfg: s.Settings) -> float | None:
    """The parent's batch price as a fraction of its normal price; None: no batch API."""
    provider = cfg.providers.get(cfg.roles.parent.provider)
    if provider is None or batch_problem(cfg) is not None:
        return None
    return provider.discount


TYPED_AXOLOTL_KEYS = {
    "base_model": "base_model",
    "adapter": "adapter",
    "num_epochs": "epochs",
    "learning_rate": "learning_rate",
    "lora_r": "lora_r",
    "lora_alpha": "lora_alpha",
    "lora_dropout": "lora_dropout",
    "sequence_len": "sequence_len",
    "micro_batch_size": "micro_batch_size",
    "gradient_accumulation_steps": "gradient_accumulation_steps",
    "optimizer": "optimizer",
    "lr_scheduler": "lr_scheduler",
    "sample_packing": "sample_packing",
    "evals_per_epoch": "evals_per_epoch",
    "saves_per_epoch": "saves_per_epoch",
    "hub_model_id": "hub_model_id",
}
"""Axolotl keys that a typed `[training]` key sets, with that key."""
MANAGED_AXOLOTL_KEYS = (
    "datasets",
    "test_datasets",
    "val_set_size",
    "output_dir",
    "dataset_prepared_path",
    "plugins",
    "resume_from_checkpoint",
)
"""Axolotl keys the run layout, the metrics plugin and resuming depend on."""


def check_training(training: s.Training) -> list[str]:
    """The problems of `[training]`: ranges, `merge`, and what `axolotl_extra` may not set."""
    out: list[str] = []
    counts = (
        ("epochs", training.epochs),
        ("lora_r", training.lora_r),
        ("lora_alpha", training.lora_alpha),
        ("sequence_len", training.sequence_len),
        ("micro_batch_size", training.micro_batch_size),
        ("gradient_accumulation_steps", training.gradient_accumulation_steps),
        ("evals_per_epoch", training.evals_per_epoch),
        ("saves_per_epoch", training.saves_per_epoch),
    )
    out += [f"training.{key}: must be at least 1" for key, value in counts if value < 1]
    for key, text in (("optimizer", training.optimizer), ("lr_scheduler", training.lr_scheduler)):
        if not text.strip():
            out.append(f"training.{key}: must not be empty")
    if training.hub_model_id is not None and not training.hub_model_id.strip():
        out.append("training.hub_model_id: must not be empty")
    if not (training.learning_rate > 0 and math.isfinite(training.learning_rate)):
        out.append("training.learning_rate: must be greater than 0")
    if not 0 <= training.lora_dropout < 1:
        out.append("training.lora_dropout: must be in [0, 1)")
    if training.merge and training.adapter is s.Adapter.FULL:
        out.append(
            'training.merge: requires adapter = "lora" or "qlora" '
            "(a full fine-tune has no adapter to merge)"
        )
    for key, value in training.axolotl_extra.items():
        prefix = f"training.axolotl_extra.{key}"
        if key in TYPED_AXOLOTL_KEYS:
            out.append(f"{prefix}: set training.{TYPED_AXOLOTL_KEYS[key]} instead")
        if key in MANAGED_AXOLOTL_KEYS:
            out.append(f"{prefix}: managed by overbrainer, cannot be overridden")
        if key == "save_only_model" and value is True:
            out.append(f"{prefix}: cannot be true, snapshots need resumable checkpoints")
    return out
