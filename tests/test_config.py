"""Configuration loading: defaults, env overlay, .env precedence, validation messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from overbrainer.config.errors import ConfigError
from overbrainer.config.load import load_settings
from tests.config_support import BASE


def project(tmp_path: Path, extra: str = "", env: str | None = None) -> Path:
    (tmp_path / "overbrainer.toml").write_text(BASE + extra)
    if env is not None:
        (tmp_path / ".env").write_text(env)
    return tmp_path


def test_defaults(tmp_path: Path) -> None:
    cfg = load_settings(project(tmp_path), {})
    assert cfg.pipeline.concurrency == 8
    assert cfg.pipeline.max_retries == 5
    assert cfg.pipeline.request_timeout_secs == 600
    assert cfg.pipeline.drain_secs == 30.0
    assert cfg.roles.parent.max_tokens == 16384
    assert cfg.training is None
    assert cfg.export.quantize == "Q4_K_M"
    assert cfg.hub.private is True


def test_env_overlay_converts_types_and_is_marked(tmp_path: Path) -> None:
    env = {"OVERBRAINER_PIPELINE__CONCURRENCY": "16", "OVERBRAINER_PIPELINE__EVAL_RATIO": "0.2"}
    cfg = load_settings(project(tmp_path), env)
    assert cfg.pipeline.concurrency == 16
    assert cfg.pipeline.eval_ratio == 0.2
    assert "pipeline.concurrency" in cfg.from_env


def test_dotenv_never_overrides_the_shell_and_ignores_bom(tmp_path: Path) -> None:
    env = {"OVERBRAINER_PIPELINE__CONCURRENCY": "3"}
    dotenv = "\ufeffOVERBRAINER_PIPELINE__CONCURRENCY=9\nOVERBRAINER_PIPELINE__SEED=7\n"
    cfg = load_settings(project(tmp_path, env=dotenv), env)
    assert (cfg.pipeline.concurrency, cfg.pipeline.seed) == (3, 7)


def test_dotenv_syntax_error_hides_content(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(project(tmp_path, env="A=1\nSECRET VALUE\n"), {})
    assert caught.value.message == "cannot parse .env (syntax error at line 2)"
    assert caught.value.exit_code == 2


def test_env_only_key_in_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        (tmp_path / "overbrainer.toml").write_text('hf_token = "x"\n' + BASE)
        load_settings(tmp_path, {})
    assert "hf_token: must be set through env, not in overbrainer.toml" in caught.value.message


def test_unknown_keys_in_file_and_env(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(project(tmp_path, "[pipeline]\nbogus = 1\n"), {})
    assert "unknown field `pipeline.bogus`" in caught.value.message
    with pytest.raises(ConfigError) as caught:
        load_settings(project(tmp_path), {"OVERBRAINER_NOPE": "1"})
    assert "unknown field `nope`" in caught.value.message
    load_settings(project(tmp_path), {"OVERBRAINER_TEST_X": "1", "OVERBRAINER_TUI_COLOR": "1"})


def test_semantic_problems_are_collected_in_order(tmp_path: Path) -> None:
    extra = "[pipeline]\nconcurrency = 0\neval_ratio = 1.5\n"
    with pytest.raises(ConfigError) as caught:
        load_settings(project(tmp_path, extra), {})
    assert caught.value.message == (
        "invalid configuration:\n  pipeline.concurrency: must be at least 1"
        "\n  pipeline.eval_ratio: must be in (0, 1)"
    )
