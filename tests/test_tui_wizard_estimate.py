"""The init wizard against the provider's model list: unlisted models, the estimate, the cap."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from overbrainer.llm import Listing
from overbrainer.llm.types import Json
from overbrainer.model.usage import Price
from overbrainer.pipeline.estimate import money
from overbrainer.ui.tui import wizard, wizard_screen
from overbrainer.ui.tui.wizard import Wizard
from overbrainer.ui.tui.wizard_estimate import CAP_PROBLEM, estimate_answers, rounded_cap
from tests.tui_wizard_support import press, typed

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
    # 300 answers (10 × 30) of the parent: 100 tokens at least each, 16,384 at most.
    expected = (
        f"          answers: {answers.expected.input_tokens:,} in + "
        f"30,000-4,915,200 out tokens, {money(costs[2][0])}-{money(costs[2][1])}"
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
