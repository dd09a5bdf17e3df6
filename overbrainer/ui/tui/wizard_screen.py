"""The init wizard's screen: the lines of the current step and the keys it takes."""

from __future__ import annotations

from overbrainer.ui.tui.wizard import (
    CAP,
    STEPS,
    TITLES,
    Field,
    Wizard,
    answers,
    fields,
    listing,
    local_check,
    models,
    provider,
    unlisted_models,
)
from overbrainer.ui.tui.wizard_estimate import estimate_lines, flag, listing_note
from overbrainer.ui.tui.wizard_local import local_note
from overbrainer.ui.tui.wizard_topics import form_lines, topic_lines

MASK = "•" * 8
"""A key on the summary: set, of no length shown (a long one would wrap the line)."""


def shown_value(field: Field, value: str) -> str:
    """A field's value as the screen shows it: a secret masked (a vault: reference is not)."""
    if field.choices:
        return f"‹ {value} ›"
    if field.secret and not value.startswith("vault:"):
        return "•" * len(value)
    return value


def lines(state: Wizard) -> list[str]:
    """The wizard's screen, as lines."""
    if state.written:
        return [
            "The project is written: overbrainer.toml, .env (mode 600), .env.example,",
            "prompts/ and .gitignore.",
            "",
            "Start auto now? y runs `overbrainer run`; n opens the Project view.",
        ]
    out = [f"New project, step {state.step} of {STEPS}: {TITLES[state.step]}", ""]
    if state.step == 5:
        out += topic_lines(state.topics, state.topic_index)
        if state.form is not None:
            out += ["", *form_lines(state.form)]
    elif state.step == STEPS:
        out += _summary(state)
    else:
        out += _field_lines(state)
    if state.step == 4:
        out += ["", *_model_lines(state)]
    if state.step == 6 and state.value("training") == "local":
        out += ["", local_note(local_check(state))]
    out += ["", state.error and f"✗ {state.error}"]
    return out


def _field_lines(state: Wizard) -> list[str]:
    out = []
    for index, field in enumerate(fields(state)):
        mark = "▶" if index == state.focus else " "
        out.append(f"{mark} {field.label}: {shown_value(field, state.value(field.key))}")
    return out


def _model_lines(state: Wizard) -> list[str]:
    """The model list's state, and a flag for each name it lacks but the one being typed."""
    name = provider(state)[0]
    found = listing(state)
    typing = state.value(fields(state)[min(state.focus, 3)].key).strip()
    flags = [f"! {flag(found, name, m)}" for m in unlisted_models(state) if m != typing]
    return [listing_note(found, name), *flags]


def _key_shown(key: str) -> str:
    if not key:
        return "(none yet)"
    return key if key.startswith("vault:") else MASK


def _summary(state: Wizard) -> list[str]:
    chosen = answers(state)
    topics = ", ".join(f"{t.name} {t.subtopics} × {t.questions}" for t in chosen.topics)
    missing = unlisted_models(state)

    def model(name: str) -> str:
        return f"{name} (not in {chosen.provider}'s list)" if name in missing else name

    out = [
        f"project   {chosen.name}",
        f"provider  {chosen.provider} ({chosen.protocol}) {chosen.base_url}, "
        f"key {_key_shown(chosen.api_key)}",
        f"generator {model(chosen.generator)}",
        f"parent    {model(chosen.parent)}, reasoning {'on' if chosen.reasoning else 'off'}",
    ]
    if chosen.embedder:
        out.append(f"embedder  {model(chosen.embedder)}")
    out.append(f"topics    {topics}")
    if chosen.training == "skip":
        out.append("training  none")
    else:
        out.append(f"training  {chosen.training}, {chosen.base_model} ({chosen.adapter})")
    out += ["", *estimate_lines(state.estimate, listing(state), chosen.provider, models(state))]
    out += ["", *_field_lines(state)]
    if CAP not in dict(state.values) and state.value(CAP):
        out[-1] += "  (the estimate's high end, rounded up)"
    out += ["", "Enter writes overbrainer.toml and .env; Shift-Tab goes back."]
    return out


def keys_hint(state: Wizard) -> str:
    """The keys of the current step."""
    if state.written:
        return "y start auto  n Project view"
    if state.step == 5:
        if state.form is not None:
            return "type  ↑↓ fields  Enter keep the topic  Esc drop it"
        return "a add  e edit  d delete  ↑↓ select  Enter next  Shift-Tab back  Ctrl-C quit"
    return (
        "Enter/Tab next  Shift-Tab/Esc back  ↑↓ fields  ←→ choices  Ctrl-C quit (nothing written)"
    )
