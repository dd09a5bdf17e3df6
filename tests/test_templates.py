"""Prompt templates: defaults, project overrides and strict rendering errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from overbrainer.model.text import NotUtf8
from overbrainer.project.templates import TEMPLATE_FILES, TemplateError, default_text, load_template


def test_defaults_hold_the_fragments_the_reference_checks(tmp_path: Path) -> None:
    subtopics = load_template(tmp_path, "subtopics.txt")
    text = subtopics.render(topic="Rust", description=None, count=4)
    assert '"Rust"' in text
    assert "JSON array of 4 strings" in text
    assert "Topic description" not in text
    with_description = subtopics.render(topic="Rust", description="borrowing", count=4)
    assert "Topic description: borrowing" in with_description

    questions = load_template(tmp_path, "questions.txt")
    text = questions.render(
        topic="Rust", description=None, subtopic="Lifetimes", count=2, accepted=["Why 'a?"]
    )
    assert "- Why 'a?" in text
    assert text.rstrip().endswith("Reply with a JSON array of 2 strings and nothing else.")
    system = load_template(tmp_path, "answer_system.txt").render(topic="Rust", description=None)
    assert system.startswith("You are an expert in Rust.")
    assert {name: bool(default_text(name)) for name in TEMPLATE_FILES} == dict.fromkeys(
        TEMPLATE_FILES, True
    )


def test_output_is_never_html_escaped(tmp_path: Path) -> None:
    text = load_template(tmp_path, "answer_system.txt").render(topic="<C++ & co>", description="")
    assert "<C++ & co>" in text


def test_project_override_wins(tmp_path: Path) -> None:
    (tmp_path / "answer_system.txt").write_text("Only {{ topic }}.\n")
    assert load_template(tmp_path, "answer_system.txt").render(topic="X") == "Only X."


def test_undefined_variable_is_a_render_error(tmp_path: Path) -> None:
    (tmp_path / "subtopics.txt").write_text("{{ nope }}")
    with pytest.raises(TemplateError) as caught:
        load_template(tmp_path, "subtopics.txt").render(topic="t", count=1)
    assert caught.value.message == "cannot render template subtopics.txt: 'nope' is undefined"


def test_syntax_error_names_the_template(tmp_path: Path) -> None:
    (tmp_path / "questions.txt").write_text("Fine.\n{% if %}")
    with pytest.raises(TemplateError) as caught:
        load_template(tmp_path, "questions.txt")
    assert caught.value.message == (
        "invalid template questions.txt: line 2: "
        "Expected an expression, got 'end of statement block'"
    )


def test_a_directory_in_place_of_a_template_names_the_path(tmp_path: Path) -> None:
    (tmp_path / "judge.txt").mkdir()
    with pytest.raises(TemplateError) as caught:
        load_template(tmp_path, "judge.txt")
    assert caught.value.message == f"cannot read {tmp_path / 'judge.txt'}: Is a directory"


def test_an_override_that_is_not_utf8_names_the_path_and_byte(tmp_path: Path) -> None:
    (tmp_path / "judge.txt").write_bytes(b"ok \xff\xfe\x00bad")
    with pytest.raises(NotUtf8) as caught:
        load_template(tmp_path, "judge.txt")
    assert caught.value.message == f"{tmp_path / 'judge.txt'}: not valid UTF-8 at byte 3"
    assert caught.value.exit_code == 2


def test_unreadable_override_names_the_path(tmp_path: Path) -> None:
    (tmp_path / "judge.txt").mkdir()
    with pytest.raises(TemplateError, match="cannot read .*judge.txt"):
        load_template(tmp_path, "judge.txt")
