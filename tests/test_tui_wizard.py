"""The init wizard, pure (keys in, state out), and the project files it writes."""

from __future__ import annotations

import tomllib
from pathlib import Path

import attrs
import pytest

from overbrainer.model.errors import UsageError
from overbrainer.ui.tui import wizard
from overbrainer.ui.tui.wizard import Wizard, wizard_key
from overbrainer.ui.tui.wizard_files import (
    Answers,
    TopicAnswer,
    check_answers,
    config_text,
    env_text,
    existing_files,
    write_project,
)


def press(state: Wizard, *keys: str) -> Wizard:
    for key in keys:
        state = wizard_key(state, key)
    return state


def typed(state: Wizard, text: str) -> Wizard:
    return press(state, *text)


def test_step_one_defaults_to_the_directory_and_refuses_an_empty_name() -> None:
    state = wizard.start("myproj")
    assert state.value("name") == "myproj"
    state = press(state, *["backspace"] * 6, "enter")
    assert (state.step, state.error) == (1, "the project needs a name")
    state = press(typed(state, "rust"), "enter")
    assert (state.step, state.value("name"), state.error) == (2, "rust", "")


def test_provider_presets_and_a_custom_provider() -> None:
    state = press(wizard.start("p"), "enter")
    assert wizard.provider(state) == ("openrouter", "openai", "https://openrouter.ai/api/v1")
    state = press(state, "right")
    assert wizard.provider(state) == ("nanogpt", "openai", "https://nano-gpt.com/api/v1")
    state = press(state, "right")
    assert wizard.provider(state) == ("openai", "openai", "https://api.openai.com/v1")
    state = press(state, "right")
    assert wizard.provider(state) == ("anthropic", "anthropic", "https://api.anthropic.com/v1")
    state = press(state, "right")
    assert [f.key for f in wizard.fields(state)] == [
        "provider",
        "custom_name",
        "protocol",
        "base_url",
    ]
    state = press(typed(press(state, "down"), "My-Box"), "enter")
    assert state.error == "the provider's name: lowercase letters, digits and _ only"
    state = press(state, *["backspace"] * 6)
    state = press(typed(state, "my_box"), "down", "right", "down")
    state = press(typed(state, "http://gpu:8000/v1"), "enter")
    assert state.step == 3
    assert wizard.provider(state) == ("my_box", "anthropic", "http://gpu:8000/v1")


def test_the_key_is_masked_but_a_vault_reference_is_shown() -> None:
    state = press(wizard.start("p"), "enter", "enter")
    state = typed(state, "sk-abc")
    assert "API key (or vault:path#field; empty: later): ••••••" in wizard.lines(state)[2]
    state = press(state, *["backspace"] * 6)
    state = typed(state, "vault:secret/x#k")
    assert wizard.lines(state)[2].endswith(": vault:secret/x#k")


def test_models_are_needed_and_reasoning_is_a_choice() -> None:
    state = press(wizard.start("p"), "enter", "enter", "enter")
    assert state.step == 4
    state = press(state, "enter")
    assert state.error == "the generator model is needed"
    state = press(typed(state, "g"), "down")
    state = press(typed(state, "p"), "down", "right", "enter")
    assert state.step == 5
    assert wizard.answers(state).reasoning is False


def test_topics_add_edit_delete_and_at_least_one() -> None:
    state = attrs.evolve(wizard.start("p"), step=5)
    state = press(state, "enter")
    assert (state.step, state.error) == (5, "at least one topic is needed: a adds one")
    state = press(typed(press(state, "a"), "rust"), "enter")
    state = press(typed(press(state, "a"), "go"), "enter")
    assert state.topics == (TopicAnswer("rust"), TopicAnswer("go"))
    state = press(state, "up", "e", "backspace", "backspace", "backspace", "backspace")
    state = press(typed(state, "zig"), "enter")
    assert [t.name for t in state.topics] == ["zig", "go"]
    state = press(state, "d")
    assert [t.name for t in state.topics] == ["go"]
    state = press(state, "a", "esc")
    assert state.typing is None and len(state.topics) == 1
    state = press(state, "enter")
    assert state.step == 6


def test_training_fields_follow_the_choice_and_shift_tab_goes_back() -> None:
    state = attrs.evolve(wizard.start("p"), step=6)
    assert [f.key for f in wizard.fields(state)] == ["training"]
    state = press(state, "right", "right")
    assert [f.key for f in wizard.fields(state)] == [
        "training",
        "runtime",
        "ssh_host",
        "base_model",
        "adapter",
    ]
    state = press(state, "enter")
    assert state.error == "the SSH host is needed"
    state = press(state, "right")
    assert [f.key for f in wizard.fields(state)] == [
        "training",
        "runpod_key",
        "gpu_types",
        "base_model",
        "adapter",
    ]
    state = press(state, "enter")
    assert state.step == 7
    state = press(state, "shift tab", "esc")
    assert state.step == 5


def test_the_summary_submits_then_asks_to_start_auto() -> None:
    state = attrs.evolve(wizard.start("p"), step=7)
    state = press(state, "enter")
    assert state.submit
    assert press(state, "y") is state  # nothing until written
    state = attrs.evolve(state, submit=False, written=True)
    assert press(state, "n").start_auto is False
    assert press(state, "y").start_auto is True
    assert press(wizard.start("p"), "ctrl c").quit


ANSWERS = Answers(
    name="demo",
    provider="openrouter",
    protocol="openai",
    base_url="https://openrouter.ai/api/v1",
    api_key="sk-test",
    generator="g/m",
    parent="p/m",
    reasoning=True,
    embedder="e/m",
    topics=(TopicAnswer("rust", 3, 4),),
)


@pytest.mark.parametrize("training", ["skip", "local", "ssh", "runpod"])
def test_every_training_choice_gives_a_valid_config(training: str) -> None:
    answers = attrs.evolve(
        ANSWERS, training=training, ssh_host="me@box", gpu_types="NVIDIA A40, NVIDIA L40S"
    )
    assert check_answers(answers) is None
    table = tomllib.loads(config_text(answers))
    assert table["topics"] == [{"name": "rust", "subtopics": 3, "questions_per_subtopic": 4}]
    assert "sk-test" not in config_text(answers)
    if training == "skip":
        assert "training" not in table
    else:
        target = table["training"]["target"]
        assert table["targets"][target]["kind"] == training
    if training == "runpod":
        assert table["targets"]["cloud"]["gpu_types"] == ["NVIDIA A40", "NVIDIA L40S"]
    if training == "ssh":
        assert "OVERBRAINER_TARGETS__GPU_BOX__HOST=me@box\n" in env_text(answers)


def test_the_project_is_written_once_with_env_mode_600(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write_project(root, ANSWERS)
    assert (root / ".env").stat().st_mode & 0o777 == 0o600
    assert (root / ".env").read_text() == (
        "OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL=https://openrouter.ai/api/v1\n"
        "OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY=sk-test\n"
    )
    assert (
        (root / ".env.example")
        .read_text()
        .endswith(
            "OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL=https://openrouter.ai/api/v1\n"
            "OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY=\n"
        )
    )
    assert [p.name for p in existing_files(root)][:3] == [
        "overbrainer.toml",
        ".env",
        ".env.example",
    ]
    before = (root / "overbrainer.toml").read_text()
    with pytest.raises(UsageError, match="already exists"):
        write_project(root, attrs.evolve(ANSWERS, name="other"))
    assert (root / "overbrainer.toml").read_text() == before


def test_an_invalid_answer_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    root = tmp_path / "p"
    with pytest.raises(UsageError, match="protocol"):
        write_project(root, attrs.evolve(ANSWERS, protocol="bogus"))
    assert not root.exists()
