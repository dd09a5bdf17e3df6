"""The init wizard (7 steps) as a pure state machine: `wizard_key(state, key)` is the new state."""

from __future__ import annotations

import re

import attrs

from overbrainer.llm import Listing
from overbrainer.ui.tui.wizard_estimate import (
    CAP_PROBLEM,
    Estimate,
    ProviderAsk,
    cost_range,
    flag,
    parse_cap,
    rounded_cap,
    unlisted,
)
from overbrainer.ui.tui.wizard_files import Answers, TopicAnswer
from overbrainer.ui.tui.wizard_local import LocalAsk, LocalCheck, local_problem
from overbrainer.ui.tui.wizard_topics import (
    TopicForm,
    edited,
    form_key,
    form_of,
    form_problem,
    kept,
)

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
CAP = "max_cost"
MODEL_KEYS = ("generator", "parent", "embedder")


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
    form: TopicForm | None = None
    """The topic being typed (`a` adds one, `e` edits the selected one), else None."""
    listing_for: ProviderAsk | None = None
    """What the provider's model list was last asked with (the loop asks it from step 4)."""
    listing: Listing | None = None
    """The answer for `listing_for`; None while it is awaited."""
    kept_unlisted: tuple[str, ...] = ()
    """Model names kept although the provider's list lacks them (Enter twice on step 4)."""
    estimate_for: Answers | None = None
    """The answers the summary's estimate was last asked for (the loop works it out)."""
    estimate: Estimate | None = None
    """The estimate for `estimate_for`; None while it is worked out."""
    local_for: LocalAsk | None = None
    """What this machine was last checked for, for `local` training (the loop checks it)."""
    local: LocalCheck | None = None
    """The check for `local_for`; None while it runs."""
    error: str = ""
    submit: bool = False
    """Step 7 confirmed: the loop writes the project, then sets `written` (or `error`)."""
    written: bool = False
    start_auto: bool | None = None
    quit: bool = False

    def value(self, key: str) -> str:
        """The answer to field `key` so far (the spend cap's default follows the estimate)."""
        found = dict(self.values).get(key)
        if found is not None:
            return found
        return default_cap(self) if key == CAP else DEFAULTS.get(key, "")

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
    if step == STEPS:
        return (Field(CAP, "spend cap in USD (empty: no cap)"),)
    return ()


def provider(state: Wizard) -> tuple[str, str, str]:
    """The provider's config name, protocol and base URL."""
    label = state.value("provider")
    for name, shown, protocol, url in PRESETS:
        if shown == label and name != "custom":
            return name, protocol, url
    return state.value("custom_name"), state.value("protocol"), state.value("base_url")


def provider_ask(state: Wizard) -> ProviderAsk:
    """What the provider's model list is asked with, from the answers so far."""
    name, protocol, url = provider(state)
    return ProviderAsk(name, protocol, url, state.value("api_key"))


def listing(state: Wizard) -> Listing | None:
    """The model list of the provider now chosen; None while it is awaited (or not asked)."""
    return state.listing if state.listing_for == provider_ask(state) else None


def models(state: Wizard) -> dict[str, str]:
    """Each model typed on step 4, by role name."""
    return {key: state.value(key).strip() for key in MODEL_KEYS}


def default_cap(state: Wizard) -> str:
    """The estimate's high end rounded up, when the cost is known; else empty (no cap)."""
    cost = cost_range(state.estimate, listing(state), models(state))
    return "" if cost is None else rounded_cap(cost[1])


def _cap(state: Wizard) -> float | None:
    try:
        return parse_cap(state.value(CAP))
    except ValueError:
        return None


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
        max_cost_usd=_cap(state),
    )


def wanted_listing(state: Wizard) -> ProviderAsk | None:
    """What to ask the provider's model list with now (from step 4 on), else None."""
    ask = provider_ask(state)
    if state.step < 4 or state.written or ask == state.listing_for:
        return None
    return ask


def wanted_estimate(state: Wizard) -> Answers | None:
    """The answers to work the summary's estimate out for now, else None."""
    if state.step != STEPS or state.submit or state.written:
        return None
    chosen = attrs.evolve(answers(state), max_cost_usd=None)
    return None if chosen == state.estimate_for else chosen


def wanted_local(state: Wizard) -> LocalAsk | None:
    """What to check this machine for now (step 6 with `local` chosen), else None."""
    if state.step != 6 or state.value("training") != "local" or state.written:
        return None
    ask = LocalAsk(state.value("runtime"), state.value("adapter"))
    return None if ask == state.local_for else ask


def local_check(state: Wizard) -> LocalCheck | None:
    """The check of this machine for the runtime and adapter now chosen; None while it runs."""
    ask = LocalAsk(state.value("runtime"), state.value("adapter"))
    return state.local if state.local_for == ask else None


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
    if step == STEPS:
        try:
            parse_cap(state.value(CAP))
        except ValueError:
            return CAP_PROBLEM
    if step == 6:
        if state.value("training") == "ssh" and not state.value("ssh_host").strip():
            return "the SSH host is needed"
        if state.value("training") != "skip" and not state.value("base_model").strip():
            return "the base model is needed"
        if state.value("training") == "local":
            return local_problem(local_check(state))
    return ""


def _next(state: Wizard) -> Wizard:
    found = problem(state)
    if found:
        return attrs.evolve(state, error=found)
    if state.step == 4:
        fresh = [m for m in unlisted_models(state) if m not in state.kept_unlisted]
        if fresh:
            # A list can be incomplete: the flag stops the step once, Enter again keeps the names.
            them = "it" if len(fresh) == 1 else "them"
            return attrs.evolve(
                state,
                kept_unlisted=(*state.kept_unlisted, *fresh),
                error=f"{flag(listing(state), provider(state)[0], fresh[0])}: "
                f"Enter again keeps {them} (a list can be incomplete)",
            )
    if state.step == STEPS:
        return attrs.evolve(state, submit=True, error="")
    return attrs.evolve(state, step=state.step + 1, focus=0, error="")


def unlisted_models(state: Wizard) -> list[str]:
    """The models typed on step 4 that the provider's list lacks (none while it is awaited)."""
    return unlisted(listing(state), list(models(state).values()))


def _back(state: Wizard) -> Wizard:
    return attrs.evolve(state, step=max(state.step - 1, 1), focus=0, error="")


def _form_keys(state: Wizard, form: TopicForm, key: str) -> Wizard:
    if key == "enter":
        found = form_problem(form, state.topics)
        if found:
            return attrs.evolve(state, error=found)
        topics, index = kept(form, state.topics)
        return attrs.evolve(state, topics=topics, topic_index=index, form=None, error="")
    if key == "esc":
        return attrs.evolve(state, form=None, error="")
    return attrs.evolve(state, form=form_key(form, key), error="")


def _topic_keys(state: Wizard, key: str) -> Wizard:
    if state.form is not None:
        return _form_keys(state, state.form, key)
    if key == "a":
        return attrs.evolve(state, form=TopicForm(), error="")
    if key == "e" and state.topics:
        return attrs.evolve(state, form=form_of(state.topics, state.topic_index), error="")
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
    typed = edited(value, key)
    return state.with_value(field.key, typed) if typed != value else state
