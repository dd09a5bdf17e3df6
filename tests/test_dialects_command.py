"""Dialects through the real command: the `dialect` key's errors, `config check`'s line, the
bodies a stage sends, and `init --provider` presets."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.project.presets import PRESETS
from tests.pipeline_support import PRICES, make_project, overbrainer, write_questions
from tests.test_init import overbrainer as run
from tests.train_helpers import axolotl_on_path

VALID = (
    "`openai`, `openrouter`, `openai-compatible`, `vllm`, `llama.cpp`, `ollama`, `litellm`, "
    "`deepseek`, `together`, `groq`, `fireworks`, `anthropic`"
)


def project_with(tmp_path: Path, provider_lines: str) -> Path:
    root = make_project(tmp_path / "p")
    config = (root / "overbrainer.toml").read_text()
    config = config.replace('[providers.stub]\nprotocol = "openai"\n', provider_lines)
    (root / "overbrainer.toml").write_text(config)
    return root


LOOPBACK = {"OVERBRAINER_PROVIDERS__STUB__BASE_URL": "http://127.0.0.1:9/v1"}


def test_an_unknown_dialect_is_one_line_naming_the_key_and_the_choices(tmp_path: Path) -> None:
    root = project_with(tmp_path, '[providers.stub]\nprotocol = "openai"\ndialect = "openia"\n')
    done = run("config", "check", cwd=root, env=LOOPBACK)
    assert done.returncode == 2
    assert done.stderr == (
        "error: invalid configuration: `providers.stub.dialect`: unknown variant, "
        f"expected one of {VALID}\n"
    )
    env = {**LOOPBACK, "OVERBRAINER_PROVIDERS__STUB__DIALECT": "nope"}
    from_env = run("config", "check", cwd=make_project(tmp_path / "q"), env=env)
    assert from_env.returncode == 2
    assert from_env.stderr == (
        "error: invalid configuration: `providers.stub.dialect`: unknown variant, "
        f"expected one of {VALID} (from OVERBRAINER_PROVIDERS__STUB__DIALECT)\n"
    )


def test_a_dialect_of_another_protocol_is_refused(tmp_path: Path) -> None:
    lines = '[providers.stub]\nprotocol = "openai"\ndialect = "anthropic"\n'
    done = run("config", "check", cwd=project_with(tmp_path, lines), env=LOOPBACK)
    assert done.returncode == 2
    assert done.stderr == (
        "error: invalid configuration:\n"
        "  providers.stub.dialect: `anthropic` does not match the openai protocol\n"
    )


def test_a_parent_batch_on_a_dialect_without_one_is_refused(tmp_path: Path) -> None:
    lines = '[providers.stub]\nprotocol = "openai"\ndialect = "llama.cpp"\n'
    root = project_with(tmp_path, lines)
    config = (root / "overbrainer.toml").read_text()
    config = config.replace("reasoning = true\n", "reasoning = true\nbatch = true\n")
    (root / "overbrainer.toml").write_text(config)
    done = run("config", "check", cwd=root, env=LOOPBACK)
    assert done.returncode == 2
    assert done.stderr == (
        "error: invalid configuration:\n  roles.parent.batch: the llama.cpp dialect of provider "
        "`stub` has no batch API (set providers.stub.batch_api if the server has one)\n"
    )


def test_config_check_names_the_dialect_and_how_it_was_chosen(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    default = run("config", "check", cwd=root, env=LOOPBACK)
    assert default.returncode == 0, default.stderr
    lines = default.stdout.splitlines()
    at = lines.index("providers.stub.protocol = openai")
    assert (
        lines[at + 1]
        == "providers.stub.dialect = openai-compatible (the openai protocol's default)"
    )
    env = {"OVERBRAINER_PROVIDERS__STUB__BASE_URL": "https://api.groq.com/openai/v1"}
    detected = run("config", "check", cwd=root, env=env).stdout.splitlines()
    assert "providers.stub.dialect = groq (detected from the base URL)" in detected
    env = {**LOOPBACK, "OVERBRAINER_PROVIDERS__STUB__DIALECT": "vllm"}
    from_env = run("config", "check", cwd=root, env=env).stdout.splitlines()
    assert "providers.stub.dialect = vllm  (env)" in from_env


@pytest.mark.parametrize(
    ("dialect", "field", "asked"),
    [
        ("openai", "max_completion_tokens", {"reasoning_effort": "medium"}),
        ("openrouter", "max_tokens", {"reasoning": {"effort": "medium"}}),
        ("openai-compatible", "max_tokens", {}),
    ],
)
async def test_a_stage_sends_the_dialects_body(
    tmp_path: Path, dialect: str, field: str, asked: dict[str, object]
) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    env = {"OVERBRAINER_PROVIDERS__STUB__DIALECT": dialect}
    async with open_stub(dialect=dialect) as stub:
        stub.models = PRICES
        done = await overbrainer(root, "answers", url=stub.url, env=env)
        assert done.code == 0, done.stderr
        bodies = [r.body_json for r in stub.completions]
    assert len(bodies) == 2
    for body in bodies:
        assert isinstance(body, dict)
        assert body[field] == 16384
        extra = set(body) - {"model", "messages", field}
        assert {key: body[key] for key in extra} == asked


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_init_presets_write_a_project_config_check_accepts(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    axolotl_on_path(monkeypatch, tmp_path / "bin")
    preset = PRESETS[name]
    made = run("init", "proj", "--provider", name, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    root = tmp_path / "proj"
    shutil.copy(root / ".env.example", root / ".env")
    env = {"OVERBRAINER_PROVIDERS__" + preset.name.upper() + "__API_KEY": "sk-test"}
    checked = run("config", "check", cwd=root, env=env)
    assert checked.returncode == 0, checked.stderr
    lines = checked.stdout.splitlines()
    assert f"providers.{preset.name}.protocol = {preset.protocol.value}" in lines
    assert f"providers.{preset.name}.dialect = {name}" in lines
    assert f"providers.{preset.name}.base_url = {preset.base_url}  (env)" in lines
    reasoning = "true" if preset.reasoning else "false"
    assert (
        f"roles.parent = {preset.name}/{preset.parent} (reasoning: {reasoning}, max_tokens: 16384)"
        in lines
    )


def test_init_provider_and_demo_do_not_mix(tmp_path: Path) -> None:
    done = run("init", "proj", "--provider", "openai", "--demo", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "error: --demo and --provider cannot be combined\n"
    assert not (tmp_path / "proj").exists()
    wrong = run("init", "proj", "--provider", "openia", cwd=tmp_path)
    assert wrong.returncode == 2
    assert "'openia' is not one of 'openrouter', 'openai'," in wrong.stderr


def test_a_temperature_with_reasoning_on_openai_is_refused(tmp_path: Path) -> None:
    lines = '[providers.stub]\nprotocol = "openai"\ndialect = "openai"\n'
    root = project_with(tmp_path, lines)
    config = (root / "overbrainer.toml").read_text()
    config = config.replace("reasoning = true\n", "reasoning = true\ntemperature = 0.6\n")
    (root / "overbrainer.toml").write_text(config)
    done = run("config", "check", cwd=root, env=LOOPBACK)
    assert done.returncode == 2
    assert done.stderr == (
        "error: invalid configuration:\n  roles.parent.temperature: the openai dialect's "
        "reasoning models do not accept a temperature\n"
    )
    # The same role on another dialect is left to its server.
    env = {**LOOPBACK, "OVERBRAINER_PROVIDERS__STUB__DIALECT": "vllm"}
    assert run("config", "check", cwd=root, env=env).returncode == 0
