"""The init wizard, pure (keys in, state out): its steps, their fields and checks."""

from __future__ import annotations

import attrs

from overbrainer.ui.tui import wizard, wizard_screen
from overbrainer.ui.tui.wizard_files import TopicAnswer
from tests.tui_wizard_support import press, typed


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
    assert "API key (or vault:path#field; empty: later): ••••••" in wizard_screen.lines(state)[2]
    state = press(state, *["backspace"] * 6)
    state = typed(state, "vault:secret/x#k")
    assert wizard_screen.lines(state)[2].endswith(": vault:secret/x#k")


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
    assert state.form is None and len(state.topics) == 1
    state = press(state, "enter")
    assert state.step == 6


def test_the_topic_form_edits_every_field_with_one_line_errors() -> None:
    state = attrs.evolve(wizard.start("p"), step=5)
    state = press(state, "a")
    assert state.form is not None
    state = press(typed(state, "rust"), "down", *"ownership and borrowing", "down")
    state = press(state, "backspace", "backspace", "0", "enter")
    assert state.error == "subtopics: a whole number, at least 1"
    state = press(state, "backspace", "3", "down", "backspace", "backspace", *"x4", "enter")
    assert state.error == "questions per subtopic: a whole number, at least 1"
    state = press(state, "backspace", "backspace", "4", "enter")
    assert state.form is None and state.error == ""
    assert state.topics == (TopicAnswer("rust", 3, 4, "ownership and borrowing"),)
    shown = wizard_screen.lines(state)
    assert shown[2:4] == ["▶ rust: 3 subtopics × 4 questions", "    ownership and borrowing"]
    state = press(state, "a", *"go", "enter", "up", "e", "down", "down", "down", "9", "enter")
    assert state.topics[0] == TopicAnswer("rust", 3, 49, "ownership and borrowing")
    state = press(state, "e", *"x", "esc")
    assert state.topics[0].name == "rust"  # Esc drops the edit
    state = press(state, "down", "e", *["backspace"] * 2, *"rust", "enter")
    assert state.error == "a topic named rust exists already"


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
