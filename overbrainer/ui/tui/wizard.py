"""The init wizard (7 steps) as a pure state machine: `wizard_key(state, key)` is the new state."""

from __future__ import annotations

import re

import attrs

from overbrainer.ui.tui.wizard_files import Answers, TopicAnswer

PRESETS = (
    ("openrouter", "OpenRouter", "openai", "https://openrouter.ai/api/v1"),
    ("nanogpt", "NanoGPT", "openai", "https://nano-gpt.com/api/v1"),
    ("openai", "OpenAI", "openai", "https://api.openai.com/v1"),
    ("anthropic", "Anthropic", "anthropic", "https://api.anthropic.com/v1"),
    ("custom", "custom", "", ""),
)
TITLES = (
    "",
    "project name",
    "provider",
    "API key",
    "models",
    "topics",
    "training",
    "summary",
)
STEPS = 7
CUSTOM_NAME = re.compile(r"^[a-z0-9_]+$")


@attrs.frozen
class Field:
    """One input of a step: free text, or one of `choices` (←→)."""

    key: str
    label: str
    choices: tuple[str, ...] = ()
    secret: bool = False


DEFAULTS = {
    "provider": "OpenRouter",
    "protocol": "openai",
    "reasoning": "on",
    "training": "skip",
    "runtime": "native",
    "gpu_types": "auto",
    "base_model": "Qwen/Qwen3-4B",
    "adapter": "qlora",
}


@attrs.frozen
class Wizard:
    """Where the wizard stands: step, answers so far, focus, topic being typed, problem shown."""

    step: int = 1
    values: tuple[tuple[str, str], ...] = ()
    focus: int = 0
    topics: tuple[TopicAnswer, ...] = ()
    topic_index: int = 0
    typing: str | None = None
    """The topic name being typed (`a` adds, `e` edits the selected one), else None."""
    renaming: int | None = None
    error: str = ""
    submit: bool = False
    """Step 7 confirmed: the loop writes the project, then sets `written` (or `error`)."""
    written: bool = False
    start_auto: bool | None = None
    quit: bool = False

    def value(self, key: str) -> str:
        """The answer to field `key` so far."""
        return dict(self.values).get(key, DEFAULTS.get(key, ""))

    def with_value(self, key: str, text: str) -> Wizard:
        """The state with field `key` set to `text`."""
        others = tuple((k, v) for k, v in self.values if k != key)
        return attrs.evolve(self, values=(*others, (key, text)), error="")


def start(directory_name: str) -> Wizard:
    """A new wizard; the project name defaults to the directory's name."""
    return Wizard(values=(("name", directory_name),))


def fields(state: Wizard) -> tuple[Field, ...]:
    """The inputs of the current step (some depend on earlier choices)."""
    step = state.step
    if step == 1:
        return (Field("name", "project name"),)
    if step == 2:
        out = [Field("provider", "provider", tuple(p[1] for p in PRESETS))]
        if state.value("provider") == "custom":
            out += [
                Field("custom_name", "name ([a-z0-9_]+)"),
                Field("protocol", "protocol", ("openai", "anthropic")),
                Field("base_url", "base URL"),
            ]
        return tuple(out)
    if step == 3:
        return (Field("api_key", "API key (or vault:path#field; empty: later)", secret=True),)
    if step == 4:
        return (
            Field("generator", "generator model"),
            Field("parent", "parent model"),
            Field("reasoning", "parent reasoning", ("on", "off")),
            Field("embedder", "embedder model (optional)"),
        )
    if step == 6:
        training = state.value("training")
        out = [Field("training", "training", ("skip", "local", "ssh", "runpod"))]
        if training in ("local", "ssh"):
            out.append(Field("runtime", "runtime", ("native", "docker")))
        if training == "ssh":
            out.append(Field("ssh_host", "SSH host (user@host)"))
        if training == "runpod":
            out.append(Field("runpod_key", "Runpod API key", secret=True))
            out.append(Field("gpu_types", "GPU types (auto, or a list with commas)"))
        if training != "skip":
            out.append(Field("base_model", "base model"))
            out.append(Field("adapter", "adapter", ("lora", "qlora", "full")))
        return tuple(out)
    return ()


def provider(state: Wizard) -> tuple[str, str, str]:
    """The provider's config name, protocol and base URL."""
    label = state.value("provider")
    for name, shown, protocol, url in PRESETS:
        if shown == label and name != "custom":
            return name, protocol, url
    return state.value("custom_name"), state.value("protocol"), state.value("base_url")


def answers(state: Wizard) -> Answers:
    """Every answer, as the files are written from them."""
    name, protocol, url = provider(state)
    return Answers(
        name=state.value("name"),
        provider=name,
        protocol=protocol,
        base_url=url,
        api_key=state.value("api_key"),
        generator=state.value("generator"),
        parent=state.value("parent"),
        reasoning=state.value("reasoning") == "on",
        embedder=state.value("embedder"),
        topics=state.topics,
        training=state.value("training"),
        runtime=state.value("runtime"),
        ssh_host=state.value("ssh_host"),
        runpod_key=state.value("runpod_key"),
        gpu_types=state.value("gpu_types"),
        base_model=state.value("base_model"),
        adapter=state.value("adapter"),
    )


def problem(state: Wizard) -> str:
    """What keeps the current step from being done ("" when nothing)."""
    step = state.step
    if step == 1 and not state.value("name").strip():
        return "the project needs a name"
    if step == 2 and state.value("provider") == "custom":
        if not CUSTOM_NAME.match(state.value("custom_name")):
            return "the provider's name: lowercase letters, digits and _ only"
        if not state.value("base_url").startswith(("http://", "https://")):
            return "the base URL starts with http:// or https://"
    if step == 4:
        for key in ("generator", "parent"):
            if not state.value(key).strip():
                return f"the {key} model is needed"
    if step == 5 and not state.topics:
        return "at least one topic is needed: a adds one"
    if step == 6:
        if state.value("training") == "ssh" and not state.value("ssh_host").strip():
            return "the SSH host is needed"
        if state.value("training") != "skip" and not state.value("base_model").strip():
            return "the base model is needed"
    return ""


def _next(state: Wizard) -> Wizard:
    found = problem(state)
    if found:
        return attrs.evolve(state, error=found)
    if state.step == STEPS:
        return attrs.evolve(state, submit=True, error="")
    return attrs.evolve(state, step=state.step + 1, focus=0, error="")


def _back(state: Wizard) -> Wizard:
    return attrs.evolve(state, step=max(state.step - 1, 1), focus=0, error="")


def _topic_keys(state: Wizard, key: str) -> Wizard:
    if state.typing is not None:
        if key == "enter":
            name = state.typing.strip()
            if not name:
                return attrs.evolve(state, error="a topic needs a name")
            if state.renaming is None:
                topics = (*state.topics, TopicAnswer(name))
                index = len(topics) - 1
            else:
                index = state.renaming
                topics = tuple(
                    attrs.evolve(t, name=name) if i == index else t
                    for i, t in enumerate(state.topics)
                )
            return attrs.evolve(
                state, topics=topics, topic_index=index, typing=None, renaming=None, error=""
            )
        if key == "esc":
            return attrs.evolve(state, typing=None, renaming=None)
        return attrs.evolve(state, typing=_typed(state.typing, key))
    if key == "a":
        return attrs.evolve(state, typing="", renaming=None, error="")
    if key == "e" and state.topics:
        return attrs.evolve(
            state, typing=state.topics[state.topic_index].name, renaming=state.topic_index
        )
    if key == "d" and state.topics:
        topics = tuple(t for i, t in enumerate(state.topics) if i != state.topic_index)
        return attrs.evolve(
            state, topics=topics, topic_index=max(min(state.topic_index, len(topics) - 1), 0)
        )
    if key in ("up", "down") and state.topics:
        step = -1 if key == "up" else 1
        index = min(max(state.topic_index + step, 0), len(state.topics) - 1)
        return attrs.evolve(state, topic_index=index)
    if key in ("enter", "tab"):
        return _next(state)
    if key in ("shift tab", "esc"):
        return _back(state)
    return state


def _typed(text: str, key: str) -> str:
    if key == "backspace":
        return text[:-1]
    if len(key) == 1 and key.isprintable():
        return text + key
    return text


def wizard_key(state: Wizard, key: str) -> Wizard:
    """The state after `key`."""
    if key == "ctrl c":
        return attrs.evolve(state, quit=True)
    if state.submit:
        return state
    if state.written:
        if key in ("y", "Y", "enter"):
            return attrs.evolve(state, start_auto=True)
        if key in ("n", "N", "esc"):
            return attrs.evolve(state, start_auto=False)
        return state
    if state.step == 5:
        return _topic_keys(state, key)
    shown = fields(state)
    if key in ("enter", "tab"):
        return _next(state)
    if key in ("shift tab", "esc"):
        return _back(state)
    if not shown:
        return state
    focus = min(state.focus, len(shown) - 1)
    if key == "up":
        return attrs.evolve(state, focus=max(focus - 1, 0))
    if key == "down":
        return attrs.evolve(state, focus=min(focus + 1, len(shown) - 1))
    field = shown[focus]
    value = state.value(field.key)
    if field.choices:
        if key in ("left", "right"):
            index = field.choices.index(value) if value in field.choices else 0
            index = (index + (1 if key == "right" else -1)) % len(field.choices)
            return state.with_value(field.key, field.choices[index])
        return state
    typed = _typed(value, key)
    return state.with_value(field.key, typed) if typed != value else state


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
        for index, topic in enumerate(state.topics):
            mark = "▶" if index == state.topic_index else " "
            out.append(
                f"{mark} {topic.name}: {topic.subtopics} subtopics × {topic.questions} questions"
            )
        if not state.topics:
            out.append("  no topic yet")
        if state.typing is not None:
            out += ["", f"topic name: {state.typing}▏"]
    elif state.step == STEPS:
        out += _summary(state)
    else:
        for index, field in enumerate(fields(state)):
            mark = "▶" if index == state.focus else " "
            out.append(f"{mark} {field.label}: {shown_value(field, state.value(field.key))}")
    out += ["", state.error and f"✗ {state.error}"]
    return out


def _summary(state: Wizard) -> list[str]:
    chosen = answers(state)
    key = shown_value(Field("k", "", secret=True), chosen.api_key) or "(none yet)"
    out = [
        f"project   {chosen.name}",
        f"provider  {chosen.provider} ({chosen.protocol}) {chosen.base_url}, key {key}",
        f"generator {chosen.generator}",
        f"parent    {chosen.parent}, reasoning {'on' if chosen.reasoning else 'off'}",
    ]
    if chosen.embedder:
        out.append(f"embedder  {chosen.embedder}")
    out += [f"topic     {t.name}: {t.subtopics} × {t.questions}" for t in chosen.topics]
    if chosen.training == "skip":
        out.append("training  none")
    else:
        out.append(f"training  {chosen.training}, {chosen.base_model} ({chosen.adapter})")
    out += ["", "Enter writes overbrainer.toml and .env; Shift-Tab goes back."]
    return out


def keys_hint(state: Wizard) -> str:
    """The keys of the current step."""
    if state.written:
        return "y start auto  n Project view"
    if state.step == 5:
        if state.typing is not None:
            return "type the name  Enter keep  Esc drop"
        return "a add  e edit  d delete  ↑↓ select  Enter next  Shift-Tab back  Ctrl-C quit"
    return (
        "Enter/Tab next  Shift-Tab/Esc back  ↑↓ fields  ←→ choices  Ctrl-C quit (nothing written)"
    )
