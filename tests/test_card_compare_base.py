"""The model card of a run whose newest compare asked the base model too (`compare --base`):
the child-against-its-base sentence after the parent's."""

from __future__ import annotations

from pathlib import Path

import pytest

from overbrainer.compare.verdicts import Verdict
from tests.hub_support import FakeHub, dry_run_card, hub_env, make_run
from tests.tui_compare_support import write_compare

pytestmark = pytest.mark.hub


def test_the_card_adds_the_child_against_its_base(tmp_path: Path, hub: FakeHub) -> None:
    root = tmp_path / "project"
    run_dir = make_run(root)
    env = hub_env(tmp_path, hub.url, token=None)
    write_compare(
        run_dir,
        "compare_20261203-130000",
        "2026-12-03T13:00:00Z",
        (Verdict.WIN, Verdict.TIE, Verdict.LOSS, Verdict.LOSS, Verdict.LOSS),
        base=(Verdict.WIN, Verdict.WIN, Verdict.TIE, Verdict.LOSS, Verdict.UNPARSED),
    )
    card = dry_run_card(root, run_dir, env)
    # The base's rate is over its 4 judged questions: the unparsed one is said apart, in the
    # same words as the parent's sentence.
    assert (
        "The child won or tied 40.0% of 5 judged questions against the parent "
        "(95% interval 11.8% to 76.9%). Median latency 1.00 s. "
        "The child won or tied 75.0% of 4 judged questions against its base model "
        "(95% interval 30.1% to 95.4%). 1 of the 5 questions could not be judged "
        "(1 unparsed verdict) and is left out.\n" in card
    )

    # A newer compare without the base: the card speaks of that one alone.
    write_compare(
        run_dir,
        "compare_20261204-130000",
        "2026-12-04T13:00:00Z",
        (Verdict.WIN, Verdict.TIE, Verdict.WIN, Verdict.LOSS),
    )
    card = dry_run_card(root, run_dir, env)
    assert "The child won or tied 75.0% of 4 judged questions against the parent" in card
    assert "its base model" not in card
