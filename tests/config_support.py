"""Shared by the config tests: minimal and complete overbrainer.toml texts, and how to load them."""

from __future__ import annotations

from pathlib import Path

import pytest

from overbrainer.config.errors import ConfigError
from overbrainer.config.load import load_settings

# A minimal valid config: one provider, the two required roles.
BASE = """
[project]
name = "demo"
[providers.openrouter]
protocol = "openai"
[roles]
generator = { provider = "openrouter", model = "g" }
parent = { provider = "openrouter", model = "p", reasoning = true }
"""


def write(tmp_path: Path, text: str = BASE, dotenv: str | bytes | None = None) -> Path:
    """`tmp_path` holding overbrainer.toml with `text`, and `.env` with `dotenv` if given."""
    (tmp_path / "overbrainer.toml").write_text(text)
    if isinstance(dotenv, str):
        (tmp_path / ".env").write_text(dotenv, encoding="utf-8")
    elif dotenv is not None:
        (tmp_path / ".env").write_bytes(dotenv)
    return tmp_path


def failure(tmp_path: Path, env: dict[str, str]) -> str:
    """The one-line message of the config error that loading `tmp_path` with `env` gives."""
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, env)
    assert caught.value.exit_code == 2
    return caught.value.message


# A reference-style config that sets every section.
COMPLETE = """
[project]
name = "rust_errors"

[[topics]]
name = "ownership"
description = "Rust ownership, borrowing and lifetimes"
subtopics = 10
questions_per_subtopic = 30

[[topics]]
name = "async"
subtopics = 4
questions_per_subtopic = 12

[providers.openrouter]
protocol = "openai"

[providers.claude]
protocol = "anthropic"

[roles]
generator = { provider = "openrouter", model = "qwen/qwen3-235b-a22b", temperature = 0.7 }
embedder = { provider = "openrouter", model = "openai/text-embedding-3-small" }

[roles.parent]
provider = "claude"
model = "claude-opus-4-5"
reasoning = true
max_tokens = 32000
thinking_budget = 16000

[roles.judge]
provider = "openrouter"
model = "openai/gpt-5"
reasoning = true
reasoning_effort = "low"
price_in = 1.25
price_out = 10.0

[pipeline]
concurrency = 32
max_retries = 3
dedup_threshold = 0.85
embedding_threshold = 0.92
question_batch_size = 20
request_timeout_secs = 900
eval_ratio = 0.05
seed = 7
include_system_prompt = true
max_cost_usd = 25.0
drain_secs = 10.0

[training]
target = "cloud"
base_model = "Qwen/Qwen3-4B"
adapter = "qlora"
epochs = 2
learning_rate = 1e-4
lora_r = 32
lora_alpha = 64
lora_dropout = 0.1
sequence_len = 8192
micro_batch_size = 1
gradient_accumulation_steps = 8
optimizer = "paged_adamw_8bit"
lr_scheduler = "linear"
sample_packing = false
evals_per_epoch = 2
saves_per_epoch = 2
merge = true

[training.axolotl_extra]
warmup_steps = 10
special_tokens = { pad_token = "<|pad|>" }

[targets.local]
kind = "local"
runtime = "docker"
engine = "podman"

[targets.box]
kind = "ssh"
runtime = "native"
workdir = "/data/overbrainer"
venv = "~/axolotl"
ssh_client = "openssh"

[targets.cloud]
kind = "runpod"
gpu_types = ["NVIDIA H100 80GB HBM3", "NVIDIA A100 80GB PCIe"]
max_hours = 6.0
max_cost_usd = 20.0
gpu_count = 1
container_disk_gb = 80
boot_grace_minutes = 20
retrieve_grace_minutes = 30
data_center_ids = ["EU-RO-1"]
network_volume_id = "vol123"
max_volume_gb = 200

[export]
after_training = true
quantize = "Q5_K_M"
ollama_name = "me/rust-errors:q5"

[hub]
repo = "me/rust-errors"
private = false
after_training = true

[metrics]
listen = "[::1]:9464"

[compare]
parent_price_in = 5.0
parent_price_out = 25.0
child_price_per_hour = 0.8
max_tokens = 2048
temperature = 0.2
server_start_secs = 600
"""

# The project and two providers, without roles (see ROLES and with_role).
HEAD = """
[project]
name = "demo"
[providers.openrouter]
protocol = "openai"
[providers.claude]
protocol = "anthropic"
"""
ROLES = """
[roles]
generator = { provider = "openrouter", model = "g" }
parent = { provider = "openrouter", model = "p", reasoning = true }
"""


def problems(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> list[str]:
    """The problems a config reports, or [] when it loads."""
    (tmp_path / "overbrainer.toml").write_text(text)
    try:
        load_settings(tmp_path, dict(env or {}))
    except ConfigError as error:
        assert error.exit_code == 2
        return list(error.problems) or [error.message]
    return []


def with_role(role: str, body: str) -> str:
    """HEAD with `roles.<role>` replaced by the inline table `body`."""
    roles = {
        "generator": '{ provider = "openrouter", model = "g" }',
        "parent": '{ provider = "openrouter", model = "p", reasoning = true }',
    }
    roles[role] = body
    lines = "".join(f"{name} = {table}\n" for name, table in roles.items())
    return HEAD + "[roles]\n" + lines
