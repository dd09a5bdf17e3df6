"""A complete, reference-style configuration, the init template, and every default."""

from __future__ import annotations

import os
from pathlib import Path

from overbrainer.config import settings as s
from overbrainer.config.load import load_settings
from overbrainer.config.secrets import Secret
from overbrainer.targets import LocalTarget, RunpodTarget, SshTarget
from tests.config_support import BASE, COMPLETE, write


def test_a_complete_config_loads_every_section(tmp_path: Path) -> None:
    env = {
        "OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL": "https://openrouter.ai/api/v1",
        "OVERBRAINER_PROVIDERS__CLAUDE__BASE_URL": "https://api.anthropic.com/v1",
        "OVERBRAINER_PROVIDERS__CLAUDE__API_KEY": "sk-ant",
        "OVERBRAINER_TARGETS__BOX__HOST": "me@gpu-box",
        "OVERBRAINER_TARGETS__CLOUD__MAX_HOURS": "8",
        "OVERBRAINER_RUNPOD__API_KEY": "vault:secret/runpod#key",
        "OVERBRAINER_HF_TOKEN": "hf_x",
        "OVERBRAINER_TRAINING__AXOLOTL_EXTRA__WARMUP_RATIO": "0.05",
    }
    cfg = load_settings(write(tmp_path, COMPLETE), env)
    assert cfg.project.name == "rust_errors"
    assert [t.name for t in cfg.topics] == ["ownership", "async"]
    assert cfg.topics[1].description is None
    assert cfg.providers["claude"].protocol is s.Protocol.ANTHROPIC
    assert cfg.roles.parent.thinking_budget == 16000
    assert cfg.roles.embedder is not None and cfg.roles.embedder.model.endswith("small")
    assert cfg.roles.judge is not None and cfg.roles.judge.price_out == 10.0
    assert cfg.pipeline == s.Pipeline(32, 3, 0.85, 0.05, 7, True, 0.92, 20, 900, 25.0, 10.0)
    training = cfg.training
    assert training is not None
    assert (training.adapter, training.lora_r, training.merge) == (s.Adapter.QLORA, 32, True)
    assert training.axolotl_extra == {
        "warmup_steps": 10,
        "special_tokens": {"pad_token": "<|pad|>"},
        "warmup_ratio": 0.05,
    }
    local, box, cloud = cfg.targets["local"], cfg.targets["box"], cfg.targets["cloud"]
    assert isinstance(local, LocalTarget) and local.engine is s.Engine.PODMAN
    assert isinstance(box, SshTarget) and box.host == "me@gpu-box"
    assert isinstance(cloud, RunpodTarget)
    assert cloud.gpu_types.items == ("NVIDIA H100 80GB HBM3", "NVIDIA A100 80GB PCIe")
    assert cloud.max_hours == 8.0
    assert cfg.export == s.Export(True, "Q5_K_M", "me/rust-errors:q5")
    assert (cfg.hub.repo, cfg.hub.private, cfg.hub.url) == (
        "me/rust-errors",
        False,
        "https://huggingface.co",
    )
    assert (cfg.metrics.host, cfg.metrics.port) == ("::1", 9464)
    assert cfg.compare == s.Compare(5.0, 25.0, 0.8, 2048, 0.2, 600)
    assert cfg.runpod.url == "https://api.runpod.io/v2"
    assert cfg.hf_token == Secret("hf_x")


def test_the_init_template_loads(tmp_path: Path) -> None:
    template = Path(s.__file__).parent.parent / "templates" / "overbrainer.toml"
    cfg = load_settings(write(tmp_path, template.read_text()), {})
    assert cfg.project.name == "my_project"
    assert cfg.pipeline == s.Pipeline()
    assert os.path.basename(template) == "overbrainer.toml"


def test_every_default(tmp_path: Path) -> None:
    cfg = load_settings(write(tmp_path), {})
    assert cfg.pipeline == s.Pipeline(
        concurrency=8,
        max_retries=5,
        dedup_threshold=0.8,
        eval_ratio=0.1,
        seed=42,
        include_system_prompt=False,
        embedding_threshold=0.9,
        question_batch_size=10,
        request_timeout_secs=600,
        max_cost_usd=None,
        drain_secs=30.0,
    )
    assert cfg.roles.generator == s.Role("openrouter", "g", False, 16384, None, None, None)
    assert (cfg.roles.embedder, cfg.roles.judge, cfg.topics, cfg.training) == (None, None, (), None)
    assert cfg.providers["openrouter"] == s.Provider(s.Protocol.OPENAI, None, None)
    assert cfg.export == s.Export(False, "Q4_K_M", None)
    assert cfg.hub == s.Hub(None, True, False, None)
    assert cfg.metrics.listen is None and cfg.metrics.port is None
    assert cfg.compare == s.Compare(None, None, None, 4096, 0.0, 300, None)
    assert (cfg.runpod.url, cfg.hf_token, cfg.log, cfg.targets) == (
        "https://api.runpod.io/v2",
        None,
        None,
        {},
    )
    text = BASE + '[training]\ntarget = "t"\nbase_model = "b"\nadapter = "lora"\n'
    text += '[targets.t]\nkind = "runpod"\ngpu_types = "auto"\nmax_hours = 1.0\n'
    cfg = load_settings(write(tmp_path, text), {})
    assert cfg.training == s.Training("t", "b", s.Adapter.LORA)
    assert (cfg.training.epochs, cfg.training.learning_rate, cfg.training.lora_dropout) == (
        3,
        2e-4,
        0.05,
    )
    pod = cfg.targets["t"]
    assert isinstance(pod, RunpodTarget)
    assert (pod.gpu_types.auto, pod.gpu_count, pod.container_disk_gb) == (True, 1, 50)
    assert (pod.boot_grace_minutes, pod.retrieve_grace_minutes) == (30, 60)
