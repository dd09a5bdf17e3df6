"""The environment overlay onto overbrainer.toml, and unknown keys in either."""

from __future__ import annotations

from pathlib import Path

import pytest

from overbrainer.config import settings as s
from overbrainer.config.load import load_settings
from overbrainer.config.secrets import Secret
from overbrainer.targets import SshTarget
from tests.config_support import BASE, failure, write

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
    assert isinstance(box, SshTarget) and box.host == "me@box"
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
    assert isinstance(target, SshTarget) and target.host == "me@box"


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
