"""The environment overlay, `.env`, unknown keys, and a complete config with every section."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from overbrainer.config import settings as s
from overbrainer.config.errors import ConfigError
from overbrainer.config.load import load_settings
from overbrainer.config.secrets import Secret
from overbrainer.model.text import NotUtf8

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
    (tmp_path / "overbrainer.toml").write_text(text)
    if isinstance(dotenv, str):
        (tmp_path / ".env").write_text(dotenv, encoding="utf-8")
    elif dotenv is not None:
        (tmp_path / ".env").write_bytes(dotenv)
    return tmp_path


def failure(tmp_path: Path, env: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, env)
    assert caught.value.exit_code == 2
    return caught.value.message


# --- environment overlay -------------------------------------------------------------------


def test_env_values_take_their_target_types(tmp_path: Path) -> None:
    env = {
        "OVERBRAINER_PIPELINE__CONCURRENCY": "16",
        "OVERBRAINER_PIPELINE__DEDUP_THRESHOLD": "0.75",
        "OVERBRAINER_PIPELINE__INCLUDE_SYSTEM_PROMPT": "true",
        "OVERBRAINER_PIPELINE__SEED": "18446744073709551615",
        "OVERBRAINER_PIPELINE__MAX_COST_USD": "2",
        "OVERBRAINER_ROLES__PARENT__MODEL": "deepseek/deepseek-r1",
        "OVERBRAINER_ROLES__PARENT__REASONING_EFFORT": "high",
        "OVERBRAINER_ROLES__GENERATOR__TEMPERATURE": "0.5",
        "OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY": "0123",
        "OVERBRAINER_PROVIDERS__LOCAL__PROTOCOL": "anthropic",
        "OVERBRAINER_PROVIDERS__LOCAL__BASE_URL": "http://127.0.0.1:8080/v1",
        "OVERBRAINER_METRICS__LISTEN": "127.0.0.1:0",
    }
    cfg = load_settings(write(tmp_path), env)
    assert cfg.pipeline.concurrency == 16
    assert cfg.pipeline.dedup_threshold == 0.75
    assert cfg.pipeline.include_system_prompt is True
    assert cfg.pipeline.seed == 2**64 - 1
    assert cfg.pipeline.max_cost_usd == 2.0
    assert cfg.roles.parent.model == "deepseek/deepseek-r1"
    assert cfg.roles.parent.reasoning_effort is s.Effort.HIGH
    assert cfg.roles.generator.temperature == 0.5
    assert cfg.providers["openrouter"].api_key == Secret("0123")
    assert cfg.providers["local"] == s.Provider(s.Protocol.ANTHROPIC, "http://127.0.0.1:8080/v1")
    assert (cfg.metrics.host, cfg.metrics.port) == ("127.0.0.1", 0)
    assert "pipeline.concurrency" in cfg.from_env
    assert "providers.local.protocol" in cfg.from_env
    assert "pipeline.eval_ratio" not in cfg.from_env


def test_env_wins_over_the_file(tmp_path: Path) -> None:
    text = BASE + "[pipeline]\nconcurrency = 4\nseed = 7\n"
    cfg = load_settings(write(tmp_path, text), {"OVERBRAINER_PIPELINE__CONCURRENCY": "32"})
    assert (cfg.pipeline.concurrency, cfg.pipeline.seed) == (32, 7)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "OVERBRAINER_PIPELINE__CONCURRENCY",
            "many",
            "`pipeline.concurrency` has the wrong type, expected an integer",
        ),
        (
            "OVERBRAINER_PIPELINE__INCLUDE_SYSTEM_PROMPT",
            "yes",
            "`pipeline.include_system_prompt` has the wrong type, expected a boolean",
        ),
        (
            "OVERBRAINER_PIPELINE__EVAL_RATIO",
            "a tenth",
            "`pipeline.eval_ratio` has the wrong type, expected a number",
        ),
        (
            "OVERBRAINER_TOPICS__0__NAME",
            "x",
            "`topics` has the wrong type, expected an array of tables",
        ),
        ("OVERBRAINER_PROJECT", "x", "`project` has the wrong type, expected a table"),
    ],
)
def test_env_type_errors_never_quote_the_value(
    tmp_path: Path, name: str, value: str, message: str
) -> None:
    text = failure(write(tmp_path), {name: value})
    # The variable is named when it set that very key (not for `topics`, set through 0__NAME).
    named = "" if name == "OVERBRAINER_TOPICS__0__NAME" else f" (from {name})"
    assert text == f"invalid configuration: {message}{named}"
    assert value not in text.replace(message, "")


def test_env_only_keys_come_from_the_environment(tmp_path: Path) -> None:
    env = {
        "OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL": "https://openrouter.ai/api/v1",
        "OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY": "vault:secret/llm#key",
        "OVERBRAINER_TARGETS__BOX__HOST": "me@box",
        "OVERBRAINER_RUNPOD__API_KEY": "rp",
        "OVERBRAINER_HF_TOKEN": "hf",
        "OVERBRAINER_LOG": "overbrainer=debug",
    }
    text = BASE + '[targets.box]\nkind = "ssh"\nruntime = "native"\n'
    cfg = load_settings(write(tmp_path, text), env)
    assert cfg.providers["openrouter"].base_url == "https://openrouter.ai/api/v1"
    assert cfg.providers["openrouter"].api_key == Secret("vault:secret/llm#key")
    box = cfg.targets["box"]
    assert isinstance(box, s.SshTarget) and box.host == "me@box"
    assert (cfg.runpod.api_key, cfg.hf_token, cfg.log) == (
        Secret("rp"),
        Secret("hf"),
        "overbrainer=debug",
    )
    assert "hf" not in repr(cfg.hf_token) and "rp" not in repr(cfg.runpod)


# --- unknown keys --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ("[pipeline]\nbogus = 1\n", "pipeline.bogus"),
        ("bogus = 1\n", "bogus"),
        ('[hub]\nrepository = "me/x"\n', "hub.repository"),
        (
            '[targets.pod]\nkind = "runpod"\ngpu_type = "A100"\nmax_hours = 1.0\n'
            'gpu_types = "auto"\n',
            "targets.pod.gpu_type, did you mean `targets.pod.gpu_types`?",
        ),
    ],
)
def test_unknown_keys_in_the_file(tmp_path: Path, extra: str, field: str) -> None:
    text = extra + BASE if not extra.startswith("[") else BASE + extra
    key, _, hint = field.partition(", ")
    expected = f"invalid configuration: unknown field `{key}`" + (f", {hint}" if hint else "")
    assert failure(write(tmp_path, text), {}) == expected


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("OVERBRAINER_NOPE", "nope"),
        ("OVERBRAINER_PIPELINE__CONCURENCY", "pipeline.concurency"),
        ("OVERBRAINER_ROLES__PARENT__EFFORT", "roles.parent.effort"),
    ],
)
def test_unknown_keys_in_the_environment(tmp_path: Path, name: str, field: str) -> None:
    message = failure(write(tmp_path), {name: "1"})
    assert message.startswith(f"invalid configuration: unknown field `{field}` (from {name})")


def test_a_mistyped_key_gets_the_closest_known_one(tmp_path: Path) -> None:
    message = failure(write(tmp_path), {"OVERBRAINER_PIPELINE__CONCURENCY": "1"})
    assert message == (
        "invalid configuration: unknown field `pipeline.concurency` "
        "(from OVERBRAINER_PIPELINE__CONCURENCY), did you mean `pipeline.concurrency`?"
    )
    assert "did you mean" not in failure(write(tmp_path), {"OVERBRAINER_NOPE": "1"})


def test_a_variable_for_a_target_or_provider_the_file_lacks_names_it(tmp_path: Path) -> None:
    host = failure(write(tmp_path), {"OVERBRAINER_TARGETS__GPU__HOST": "me@box"})
    assert host == (
        "invalid configuration: OVERBRAINER_TARGETS__GPU__HOST sets `targets.gpu.host`, but "
        "target `gpu` is not in overbrainer.toml: add a [targets.gpu] table with its `kind`"
    )
    key = failure(write(tmp_path), {"OVERBRAINER_PROVIDERS__LOCAL__API_KEY": "sk-secret"})
    assert key == (
        "invalid configuration: OVERBRAINER_PROVIDERS__LOCAL__API_KEY sets "
        "`providers.local.api_key`, but provider `local` is not in overbrainer.toml: add a "
        "[providers.local] table with its `protocol`"
    )
    assert "sk-secret" not in key


def test_a_variable_for_a_declared_target_is_overlaid(tmp_path: Path) -> None:
    text = BASE + '[targets.gpu]\nkind = "ssh"\nruntime = "native"\n'
    cfg = load_settings(write(tmp_path, text), {"OVERBRAINER_TARGETS__GPU__HOST": "me@box"})
    target = cfg.targets["gpu"]
    assert isinstance(target, s.SshTarget) and target.host == "me@box"


def test_variables_read_elsewhere_are_exempt(tmp_path: Path) -> None:
    env = {
        "OVERBRAINER_NO_UPDATE_CHECK": "1",
        "OVERBRAINER_TUI_COLOR": "never",
        "OVERBRAINER_TUI_MOTION": "off",
        "OVERBRAINER_TEST_ANYTHING": "x",
        "OVERBRAINER_LLAMA_CPP": "b1",
        "OVERBRAINER_LLAMA_CPP_URL": "http://127.0.0.1:1",
        "OVERBRAINER_LLAMA_CPP_SOURCE_SHA256": "0" * 64,
        "OVERBRAINER_SSH_CLIENT": "builtin",
        "OVERBRAINER_LOG": "debug",
        "OVERBRAINERX": "1",
        "VAULT_ADDR": "http://127.0.0.1:8200",
    }
    cfg = load_settings(write(tmp_path), env)
    assert cfg.log == "debug"
    assert cfg.from_env == frozenset({"log"})


# --- .env ----------------------------------------------------------------------------------


def test_dotenv_fills_the_environment_without_overriding_the_shell(tmp_path: Path) -> None:
    dotenv = (
        "\ufeff# comment\n"
        "OVERBRAINER_PIPELINE__CONCURRENCY=9\n"
        "export OVERBRAINER_PIPELINE__SEED=7\n"
        "OVERBRAINER_PIPELINE__SEED=8\n"
        'VAULT_TOKEN="s.abc def"\n'
    )
    env = {"OVERBRAINER_PIPELINE__CONCURRENCY": "3"}
    cfg = load_settings(write(tmp_path, dotenv=dotenv), env)
    assert (cfg.pipeline.concurrency, cfg.pipeline.seed) == (3, 7)
    assert env["VAULT_TOKEN"] == "s.abc def"
    assert env["OVERBRAINER_PIPELINE__CONCURRENCY"] == "3"


def test_dotenv_keys_are_checked_like_the_shell(tmp_path: Path) -> None:
    message = failure(write(tmp_path, dotenv="OVERBRAINER_PIPELINE__WIDTH=2\n"), {})
    assert message == (
        "invalid configuration: unknown field `pipeline.width` (from OVERBRAINER_PIPELINE__WIDTH)"
    )


@pytest.mark.parametrize(
    ("dotenv", "line"),
    [
        ("A=1\nB=2\nsk-or-v1-SECRET\n", 3),
        ("A=1\nKEY VALUE=sk-SECRET\n", 2),
        ('X="sk-SECRET\n', 1),
        ("A=1\n# two words\nK=two words\n", 3),
        ("K=sk one # a comment\n", 1),
        ("export K=\ttab\tsk\n", 1),
    ],
)
def test_dotenv_syntax_error_names_the_line_only(tmp_path: Path, dotenv: str, line: int) -> None:
    message = failure(write(tmp_path, dotenv=dotenv), {})
    assert message == f"cannot parse .env (syntax error at line {line})"


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ("K=one # a comment\n", "one"),
        ('K="two words"  # quoted\n', "two words"),
        ("K='two words'\n", "two words"),
        ("K=  padded  \n", "padded"),
        ("K=a#b\n", "a#b"),
    ],
)
def test_dotenv_values_the_reference_reads_alike_still_load(
    tmp_path: Path, line: str, value: str
) -> None:
    env: dict[str, str] = {}
    load_settings(write(tmp_path, dotenv=line), env)
    assert env["K"] == value


def test_dotenv_that_is_not_utf8_names_the_file_and_byte(tmp_path: Path) -> None:
    with pytest.raises(NotUtf8) as caught:
        load_settings(write(tmp_path, dotenv=b"A=1\nB=\xff\xfe secret\n"), {})
    assert caught.value.exit_code == 2
    assert caught.value.message == f"{tmp_path / '.env'}: not valid UTF-8 at byte 6"


def test_unreadable_dotenv(tmp_path: Path) -> None:
    write(tmp_path)
    (tmp_path / ".env").mkdir()
    assert failure(tmp_path, {}) == "cannot read .env: Is a directory"


def test_no_dotenv_is_fine(tmp_path: Path) -> None:
    env: dict[str, str] = {}
    load_settings(write(tmp_path), env)
    assert env == {}


# --- a complete, reference-style configuration ---------------------------------------------

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
    assert isinstance(local, s.LocalTarget) and local.engine is s.Engine.PODMAN
    assert isinstance(box, s.SshTarget) and box.host == "me@gpu-box"
    assert isinstance(cloud, s.RunpodTarget)
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
    assert isinstance(pod, s.RunpodTarget)
    assert (pod.gpu_types.auto, pod.gpu_count, pod.container_disk_gb) == (True, 1, 50)
    assert (pod.boot_grace_minutes, pod.retrieve_grace_minutes) == (30, 60)
