"""The Compare view of a compare with the base model (`compare --base`): the child's rate and
interval against its base beside the parent's, in the list and the summary."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from overbrainer.compare.verdicts import Verdict
from overbrainer.model.errors import UsageError
from overbrainer.project.directory import open_project
from overbrainer.ui.tui.compare_plan import prepare_compare
from overbrainer.ui.tui.compares import read_compares
from overbrainer.ui.tui.snapshot import Snapshot
from overbrainer.ui.tui.state import State, View
from tests.compare_support import BASE_GGUF, GGUF, RUN_ID, add_base_export, make_compare_project
from tests.test_tui_compare import shown
from tests.tui_compare_support import write_compare


def test_the_view_shows_the_child_against_its_base_beside_the_parent(tmp_path: Path) -> None:
    write_compare(
        tmp_path / "run_a",
        "compare_20261001-000000",
        "2026-10-01T00:00:00Z",
        (Verdict.WIN, Verdict.TIE, Verdict.LOSS, Verdict.LOSS),
        base=(Verdict.WIN, Verdict.WIN, Verdict.TIE, Verdict.LOSS),
    )
    write_compare(
        tmp_path / "run_b",
        "compare_20261002-000000",
        "2026-10-02T00:00:00Z",
        (Verdict.WIN, Verdict.TIE, Verdict.WIN, Verdict.LOSS),
    )
    rows = read_compares(tmp_path)
    assert [(r.run, r.percent, r.has_base, r.base_percent) for r in rows] == [
        ("run_b", "75%", False, ""),
        ("run_a", "50%", True, "75%"),
    ]
    with_base = rows[1]
    assert with_base.summary[1] == (
        "win or tie 50.0% (95%: 15-85%): 1 wins, 1 ties, 2 losses, 0 errors, 0 unparsed"
    )
    assert with_base.summary[2] == (
        "against its base: win or tie 75.0% (95%: 30-95%): 2 wins, 1 ties, 1 losses, 0 unparsed"
    )
    assert len(rows[0].summary) == 3  # a compare without its base: no such line

    state = State(view=View.COMPARE, snapshot=Snapshot(compares=rows))
    screen = shown(state, cols=140)
    assert "▶ run_b  Q4_K_M   75% win or tie     4 questions" in screen
    assert "  run_a  Q4_K_M   50% win or tie (vs base 75%)     4 questions" in screen
    state = State(view=View.COMPARE, snapshot=Snapshot(compares=rows), compare_index=1)
    assert "against its base: win or tie 75.0% (95%: 30-95%)" in shown(state, cols=140)


async def test_the_confirmation_names_the_base_with_include_base(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=3, compare="include_base = true")
    with trio.fail_after(30), pytest.raises(UsageError, match="has no GGUF of its base model"):
        await prepare_compare(open_project(root), None)
    add_base_export(root)
    with trio.fail_after(30):
        prepared = await prepare_compare(open_project(root), None)
    assert prepared.lines == (
        f"run {RUN_ID}, {GGUF}",
        f"and its base model ([compare] include_base), {BASE_GGUF}",
        "3 questions of data/eval.jsonl, on target `local`",
        "the judge is called once per question, against the parent and again against the base",
        "y compares, n or Esc does not",
    )
