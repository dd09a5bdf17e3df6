"""The init wizard, pure (keys in, state out), and the project files it writes."""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import pytest
import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.llm import Listing
from overbrainer.llm.types import Json
from overbrainer.model.errors import UsageError
from overbrainer.model.usage import Price
from overbrainer.pipeline.estimate import money
from overbrainer.ui.tui import wizard, wizard_screen
from overbrainer.ui.tui.wizard import Wizard, wizard_key
from overbrainer.ui.tui.wizard_estimate import CAP_PROBLEM, estimate_answers, rounded_cap
from overbrainer.ui.tui.wizard_files import (
    Answers,
    TopicAnswer,
    check_answers,
    config_text,
    env_text,
    existing_files,
    write_project,
)
from tests.tui_support import Terminal, needs_tmux, open_terminal


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


PRICED_PARENT: Json = {
    "id": "parent-model",
    "pricing": {"prompt": "0.000003", "completion": "0.000015"},
}
PRICED = Listing(
    value={
        "data": [
            {"id": "gen-model", "pricing": {"prompt": "0.000001", "completion": "0.000002"}},
            PRICED_PARENT,
            {"id": "embed-model"},
        ]
    }
)


def at_models(listing: Listing | None) -> Wizard:
    """Step 4 of an OpenRouter project whose model list said `listing` (None: awaited)."""
    state = press(wizard.start("p"), "enter", "enter", *"sk-test-key", "enter")
    assert state.step == 4
    ask = wizard.wanted_listing(state)
    assert ask is not None and ask.api_key == "sk-test-key"
    assert "sk-test-key" not in repr(ask)
    return attrs.evolve(state, listing_for=ask, listing=listing)


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


def test_an_unlisted_model_is_flagged_and_kept_on_a_second_enter() -> None:
    state = at_models(PRICED)
    state = press(typed(state, "gen-modle"), "down")
    state = typed(state, "parent-model")
    shown = wizard_screen.lines(state)
    assert "openrouter lists 3 models" in shown
    flag = "model gen-modle is not in openrouter's list (did you mean gen-model?)"
    assert f"! {flag}" in shown
    state = press(state, "enter")
    assert (state.step, state.error) == (
        4,
        f"{flag}: Enter again keeps it (a list can be incomplete)",
    )
    state = press(state, "enter")
    assert state.step == 5
    assert wizard.answers(state).generator == "gen-modle"


def test_an_awaited_or_unreachable_list_never_holds_the_models_step() -> None:
    state = press(typed(at_models(None), "g"), "down", *"p")
    assert "checking openrouter's model list…" in wizard_screen.lines(state)
    assert press(state, "enter").step == 5
    down = attrs.evolve(state, listing=Listing(cause="unreachable (connection refused)"))
    note = "model names not checked: openrouter is unreachable (connection refused)"
    assert note in wizard_screen.lines(down)
    assert press(down, "enter").step == 5
    refused = attrs.evolve(state, listing=Listing(status=401, keyed=True))
    note = "model names not checked: openrouter refused the key (HTTP 401)"
    assert note in wizard_screen.lines(refused)
    other_key = press(state, "up", "up", "up")  # the listing is for these answers only
    assert wizard.wanted_listing(other_key) is None
    assert wizard.wanted_listing(attrs.evolve(other_key, values=(("api_key", "sk-2"),))) is not None


def at_summary(tmp_path: Path, listing: Listing | None) -> Wizard:
    """The summary of a one-topic project, its estimate worked out, the model list `listing`."""
    state = press(typed(at_models(listing), "gen-model"), "down", *"parent-model", "enter")
    state = press(state, "a", *"rust", "enter", "enter", "enter")
    assert state.step == 7
    chosen = wizard.wanted_estimate(state)
    assert chosen is not None
    found = estimate_answers(tmp_path, chosen)
    assert found.problem == "" and len(found.stages) == 3
    state = attrs.evolve(state, estimate_for=chosen, estimate=found)
    assert wizard.wanted_estimate(state) is None
    return state


def test_the_summary_shows_the_estimate_and_a_cap_rounded_up_from_its_high_end(
    tmp_path: Path,
) -> None:
    state = at_summary(tmp_path, PRICED)
    assert state.estimate is not None
    subtopics, questions, answers = state.estimate.stages
    generator, parent = Price(1.0, 2.0), Price(3.0, 15.0)
    costs = [subtopics.cost(generator), questions.cost(generator), answers.cost(parent)]
    low = sum(c[0] for c in costs if c is not None)
    high = sum(c[1] for c in costs if c is not None)
    shown = wizard_screen.lines(state)
    assert costs[2] is not None
    # 300 answers (10 × 30) of the parent: 1,200 tokens expected each, 16,384 at most.
    expected = (
        f"          answers: {answers.expected.input_tokens:,} in + "
        f"360,000-4,915,200 out tokens, {money(costs[2][0])}-{money(costs[2][1])}"
    )
    assert expected in shown
    assert all(len(line) <= 80 for line in shown)  # the summary fits an 80-column terminal
    total = f"          total {money(low)}-{money(high)} (high: every reply at max_tokens)"
    assert total in shown
    cap = wizard_screen.lines(state)[shown.index(total) + 2]
    assert cap == (
        f"▶ spend cap in USD (empty: no cap): {rounded_cap(high)}  "
        "(the estimate's high end, rounded up)"
    )
    assert wizard.answers(state).max_cost_usd == float(rounded_cap(high)) >= high
    assert press(state, "enter").submit


def test_the_cap_is_edited_and_checked(tmp_path: Path) -> None:
    state = at_summary(tmp_path, PRICED)
    state = press(state, *["backspace"] * 8, *"abc", "enter")
    assert (state.submit, state.error) == (False, CAP_PROBLEM)
    state = press(state, *["backspace"] * 3, *"-5", "enter")
    assert state.error == CAP_PROBLEM
    state = press(state, "backspace", "backspace", *"$12.50")
    assert wizard.answers(state).max_cost_usd == 12.5
    assert press(state, "enter").submit
    none = press(state, *["backspace"] * 6)
    assert wizard.answers(none).max_cost_usd is None
    assert press(none, "enter").submit


@pytest.mark.parametrize(
    ("listing", "why"),
    [
        (None, "cost: asking openrouter for prices…"),
        (
            Listing(cause="unreachable (no answer within 10s)"),
            "cost unknown: openrouter is unreachable (no answer within 10s)",
        ),
        (
            Listing(value={"data": [{"id": "gen-model"}, PRICED_PARENT]}),
            "cost unknown: openrouter lists no price for gen-model",
        ),
    ],
)
def test_an_unknown_cost_shows_tokens_only_and_no_cap(
    tmp_path: Path, listing: Listing | None, why: str
) -> None:
    state = at_summary(tmp_path, listing)
    shown = wizard_screen.lines(state)
    assert f"          {why}" in shown
    # Tokens only, where the price is unknown: the generator's stages here, and no total.
    generated = [line for line in shown if "subtopics: " in line or "questions: " in line]
    assert len(generated) == 2 and not any("$" in line for line in generated)
    assert not any(line.strip().startswith("total") for line in shown)
    assert "▶ spend cap in USD (empty: no cap): " in shown
    assert wizard.answers(state).max_cost_usd is None


@pytest.mark.parametrize(
    ("high", "cap"),
    [
        (74.81, "75"),
        (75.0, "75"),
        (0.0437, "0.044"),
        (1234.0, "1300"),
        (9.99, "10"),
        (0.0001, "0.01"),
        (0.0, ""),
    ],
)
def test_the_cap_default_is_the_high_end_rounded_up_to_two_figures(high: float, cap: str) -> None:
    assert rounded_cap(high) == cap


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


# The wizard in a real terminal (tmux), against a loopback provider that lists its models.

STUB_MODELS: Json = {
    "data": [
        {"id": "gen-model", "pricing": {"prompt": "0.000001", "completion": "0.000002"}},
        {"id": "parent-model", "pricing": {"prompt": "0.000003", "completion": "0.000015"}},
        {"id": "embed-model", "pricing": {"prompt": "0.0000001", "completion": "0"}},
    ]
}
KEY = "sk-wizard-secret-1234"


async def to_the_models(term: Terminal, url: str) -> None:
    """Steps 1 to 3: the directory's name, a custom `stub` provider at `url`, a key."""
    await term.wait_for("step 1 of 7: project name")
    await term.keys("Enter")
    await term.wait_for("step 2 of 7: provider")
    await term.keys("Left", "Down")
    await term.type("stub")
    await term.keys("Down", "Down")
    await term.type(url)
    await term.keys("Enter")
    await term.wait_for("step 3 of 7: API key")
    await term.type(KEY)
    await term.keys("Enter")
    await term.wait_for("step 4 of 7: models")


def config_of(root: Path) -> dict[str, object]:
    """The overbrainer.toml the wizard wrote."""
    return tomllib.loads((root / "overbrainer.toml").read_text())


@needs_tmux
async def test_the_terminal_wizard_flags_a_model_then_shows_the_estimate_and_writes_its_cap(
    tmp_path: Path,
) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    async with open_stub() as stub, open_terminal(root, "tui") as term:
        stub.models = STUB_MODELS
        await to_the_models(term, stub.url)
        await term.wait_for("stub lists 3 models")
        await term.type("gen-model")
        await term.keys("Down")
        await term.type("parent-model")
        await term.keys("Down", "Down")
        await term.type("embed-modle")
        await term.keys("Enter")
        flagged = "model embed-modle is not in stub's list (did you mean embed-model?)"
        shown = await term.wait_for(f"✗ {flagged}: Enter again keeps it")
        # The line wraps at 100 columns, at a space: compare without whitespace.
        assert "(alistcanbeincomplete)" in "".join(shown.split())
        await term.keys("Enter")
        await term.wait_for("step 5 of 7: topics")
        await term.keys("a")
        await term.type("rust")
        await term.keys("Down")
        await term.type("ownership and borrowing")
        await term.keys("Down", "BSpace", "BSpace")
        await term.type("0")
        await term.keys("Enter")
        await term.wait_for("✗ subtopics: a whole number, at least 1")
        await term.keys("BSpace")
        await term.type("3")
        await term.keys("Down", "BSpace", "BSpace")
        await term.type("4")
        await term.keys("Enter")
        await term.wait_for("▶ rust: 3 subtopics × 4 questions")
        await term.wait_for("    ownership and borrowing")
        await term.keys("Enter")
        await term.wait_for("step 6 of 7: training")
        await term.keys("Enter")
        shown = await term.wait_for("(the estimate's high end, rounded up)")
        assert KEY not in shown
        assert "embedder  embed-modle (not in stub's list)" in shown
        # 1 list of subtopics, 3 batches of questions, 12 answers: each writes 400, 400 and
        # 1,200 tokens expected, and 16,384 at most.
        assert "estimate  subtopics: " in shown and " in + 400-16,384 out tokens, $" in shown
        assert " in + 1,200-49,152 out tokens, $" in shown
        assert " in + 14,400-196,608 out tokens, $" in shown
        total = re.search(r"total \$([\d.,]+)-\$([\d.,]+) \(high", shown)
        cap = re.search(r"▶ spend cap in USD \(empty: no cap\): (\S+)  \(", shown)
        assert total is not None and cap is not None, shown
        assert float(cap[1]) >= float(total[2].replace(",", "")) > 0
        await term.keys("Enter")
        await term.wait_for("Start auto now?")
        config = config_of(root)
        assert config["pipeline"] == {"max_cost_usd": float(cap[1])}
        assert config["topics"] == [
            {
                "name": "rust",
                "description": "ownership and borrowing",
                "subtopics": 3,
                "questions_per_subtopic": 4,
            }
        ]
        assert config["roles"]["embedder"]["model"] == "embed-modle"  # type: ignore[index]
        await term.keys("n")
        await term.wait_for(f"spend cap  ${float(cap[1]):.2f}")  # the Project view
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown


@asynccontextmanager
async def silent_provider() -> AsyncIterator[str]:
    """The base URL of a server that takes connections and never answers."""

    async def hold(stream: trio.SocketStream) -> None:
        async with stream:
            await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        [listener] = await nursery.start(
            functools.partial(trio.serve_tcp, host="127.0.0.1"), hold, 0
        )
        host, port = listener.socket.getsockname()[:2]
        yield f"http://{host}:{port}/v1"
        nursery.cancel_scope.cancel()


@needs_tmux
async def test_a_silent_provider_never_holds_the_wizard_and_an_edited_cap_is_written(
    tmp_path: Path,
) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    async with silent_provider() as url, open_terminal(root, "tui") as term:
        await to_the_models(term, url)
        await term.wait_for("checking stub's model list…")
        await term.type("gen-model")
        await term.keys("Down")
        await term.type("parent-model")
        await term.keys("Enter")
        await term.wait_for("step 5 of 7: topics")
        await term.keys("a")
        await term.type("rust")
        await term.keys("Enter", "Enter")
        await term.wait_for("step 6 of 7: training")
        await term.keys("Enter")
        # Still no answer from the provider: the summary has the tokens, and says so.
        shown = await term.wait_for("cost: asking stub for prices…")
        assert " in + 360,000-4,915,200 out tokens\n" in shown  # 300 answers, no price
        assert "$" not in shown
        await term.type("abc")
        await term.keys("Enter")
        await term.wait_for(f"✗ {CAP_PROBLEM}")
        await term.keys("BSpace", "BSpace", "BSpace")
        await term.type("12.5")
        shown = await term.wait_for("cost unknown: stub is unreachable (", limit=30)
        assert "▶ spend cap in USD (empty: no cap): 12.5\n" in shown
        await term.keys("Enter")
        await term.wait_for("Start auto now?")
        assert config_of(root)["pipeline"] == {"max_cost_usd": 12.5}
        await term.keys("n")
        await term.wait_for("spend cap  $12.50")  # the Project view
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown
