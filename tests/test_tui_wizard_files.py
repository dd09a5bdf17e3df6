"""The project files the init wizard writes from its answers: overbrainer.toml, .env."""

from __future__ import annotations

import tomllib
from pathlib import Path

import attrs
import pytest

from overbrainer.model.errors import UsageError
from overbrainer.ui.tui.wizard_files import (
    Answers,
    TopicAnswer,
    check_answers,
    config_text,
    env_text,
    existing_files,
    write_project,
)

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


def test_descriptions_and_the_cap_are_written_to_the_config() -> None:
    answers = attrs.evolve(
        ANSWERS, topics=(TopicAnswer("rust", 3, 4, 'the "borrow" checker'),), max_cost_usd=12.5
    )
    assert check_answers(answers) is None
    table = tomllib.loads(config_text(answers))
    assert table["topics"] == [
        {
            "name": "rust",
            "description": 'the "borrow" checker',
            "subtopics": 3,
            "questions_per_subtopic": 4,
        }
    ]
    assert table["pipeline"] == {"max_cost_usd": 12.5}
    assert "pipeline" not in tomllib.loads(config_text(ANSWERS))
