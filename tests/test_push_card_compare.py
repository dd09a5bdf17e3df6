"""The card's `## Compared with the parent` lines, from summaries the real compare code makes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import attrs
import pytest

from overbrainer.compare.answers import ChildAnswer
from overbrainer.compare.stats import summarize
from overbrainer.compare.verdicts import Verdict
from overbrainer.hub.card_results import _compare, win_rate_lines
from tests.hub_support import FakeHub, hub_env, make_run, push_command

# X: position-inconsistent (the two orders disagreed).
W, T, L, U, E, X = (
    Verdict.WIN,
    Verdict.TIE,
    Verdict.LOSS,
    Verdict.UNPARSED,
    Verdict.ERROR,
    Verdict.INCONSISTENT,
)


def summary_of(verdicts: list[Verdict]) -> dict[str, Any]:
    """`summary` as `compare.json` holds it: an answer of 1 s per question, none for an error."""
    answers = [
        ChildAnswer(id=f"q{i}", error="boom")
        if verdict is E
        else ChildAnswer(id=f"q{i}", answer="a", finish="stop", seconds=1.0)
        for i, verdict in enumerate(verdicts)
    ]
    return attrs.asdict(summarize(verdicts, answers))


def test_all_parsed_gives_the_rate_of_every_question_and_its_interval() -> None:
    assert _compare(summary_of([W, T, L, L])) == (
        "The child won or tied 50.0% of 4 judged questions against the parent"
        " (95% interval 15.0% to 85.0%). Median latency 1.00 s."
    )


def test_unparsed_verdicts_leave_the_denominator_and_are_counted() -> None:
    # The rate is 2 of 4, not of the 5 questions asked.
    assert _compare(summary_of([W, T, L, L, U])) == (
        "The child won or tied 50.0% of 4 judged questions against the parent"
        " (95% interval 15.0% to 85.0%). 1 of the 5 questions could not be judged"
        " (1 unparsed verdict) and is left out. Median latency 1.00 s."
    )


def test_the_reference_childs_counts() -> None:
    verdicts = [W] * 35 + [T] * 3 + [L] * 150 + [U] * 6
    assert win_rate_lines(summary_of(verdicts), "the parent") == [
        "The child won or tied 20.2% of 188 judged questions against the parent"
        " (95% interval 15.1% to 26.5%).",
        "6 of the 194 questions could not be judged (6 unparsed verdicts) and are left out.",
    ]


def test_all_unparsed_claims_no_rate() -> None:
    text = _compare(summary_of([U, U, U]))
    assert text == (
        "None of the 3 questions could be judged against the parent (3 unparsed verdicts):"
        " no win rate. Median latency 1.00 s."
    )
    assert "%" not in text


def test_position_inconsistent_verdicts_are_left_out_with_the_unparsed() -> None:
    assert win_rate_lines(summary_of([W, W, L, X, X, U]), "the parent") == [
        "The child won or tied 66.7% of 3 judged questions against the parent"
        " (95% interval 20.8% to 93.9%).",
        "3 of the 6 questions could not be judged (1 unparsed verdict,"
        " 2 position-inconsistent verdicts) and are left out.",
    ]
    assert win_rate_lines(summary_of([X]), "the parent") == [
        "The only question could not be judged against the parent"
        " (1 position-inconsistent verdict): no win rate."
    ]


def test_child_errors_stay_in_the_denominator_as_losses() -> None:
    assert win_rate_lines(summary_of([W, T, E, E, U]), "the parent") == [
        "The child won or tied 50.0% of 4 judged questions against the parent"
        " (95% interval 15.0% to 85.0%).",
        "2 of them were child errors (no answer), counted as losses.",
        "1 of the 5 questions could not be judged (1 unparsed verdict) and is left out.",
    ]
    assert win_rate_lines(summary_of([W, E]), "the parent")[1] == (
        "1 of them was a child error (no answer), counted as a loss."
    )


def test_a_summary_without_counts_or_interval_says_only_what_it_holds() -> None:
    assert _compare({"win_or_tie": 0.65}) == (
        "The child won or tied 65.0% of the judged questions against the parent."
    )
    assert _compare({"latency_p50": 2}) == "Median latency 2.00 s."
    assert _compare({"questions": "many", "win_or_tie": True}) == ""
    assert _compare(None) == ""


@pytest.mark.hub
def test_the_pushed_card_counts_an_unparsed_verdict(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    run_dir = make_run(root)
    compare = run_dir / "compares" / "compare_20261203-130000"
    compare.mkdir(parents=True)
    summary = summary_of([W, T, L, L, U])
    (compare / "compare.json").write_text(json.dumps({"summary": summary}))
    result = subprocess.run(
        push_command(root, "--dry-run"),
        env=hub_env(tmp_path, hub.url, token=None),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stderr
    card = (run_dir / "hub" / "README.md").read_text()
    assert (
        "## Compared with the parent\n\n"
        "The child won or tied 50.0% of 4 judged questions against the parent"
        " (95% interval 15.0% to 85.0%). 1 of the 5 questions could not be judged"
        " (1 unparsed verdict) and is left out. Median latency 1.00 s.\n"
    ) in card


def test_the_docs_show_what_the_card_says() -> None:
    docs = Path(__file__).resolve().parent.parent / "docs" / "export-and-push.md"
    text = docs.read_text(encoding="utf-8")
    assert f"\n    {_compare(summary_of([W, T, L, E, U]))}\n" in text
    flowing = " ".join(text.split())
    assert f"(`{win_rate_lines(summary_of([W, W, L, X, X, U]), 'the parent')[1]}`)" in flowing
    assert f"`{win_rate_lines(summary_of([U, U, U]), 'the parent')[0]}`" in flowing
