"""`overbrainer tui` end to end in a real terminal (tmux), on the stub: `A` asks with the estimate
before the paid run, the Pipeline view's counts (records while a stage stores, skipped items,
a judge's tokens), and the Logs view's long lines wrapped."""

from __future__ import annotations

from pathlib import Path

import trio

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Json, Recorded, Reply
from tests.pipeline_support import make_project, wait_until, write_answered, write_questions
from tests.tui_support import needs_tmux, open_terminal

pytestmark = needs_tmux

PRICES: Json = {
    "data": [
        {"id": "judge-model", "pricing": {"prompt": "0.001", "completion": "0.002"}},
        {"id": "parent-model", "pricing": {"prompt": "0.000003", "completion": "0.000015"}},
        {"id": "gen-model", "pricing": {"prompt": "0.000001", "completion": "0.000002"}},
    ]
}
JUDGE = 'judge = { provider = "stub", model = "judge-model", max_tokens = 100 }'


def row(shown: str, stage: str) -> list[str]:
    """The Pipeline view's row of `stage`, as its columns."""
    found = [line for line in shown.splitlines() if line[2:].startswith(f"{stage} ")]
    assert found, shown
    return found[0][2:].split()


async def test_a_asks_with_the_estimate_n_spends_nothing_and_y_runs(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub, open_terminal(root, "tui", url=stub.url) as term:
        stub.models = PRICES
        await term.wait_for("nothing run yet in this session")
        await term.keys("A")
        shown = await term.wait_for("y runs it, n or Esc does not", limit=30)
        assert "run the whole pipeline (overbrainer run)?" in shown
        assert "subtopics: 2 to do" in shown  # `overbrainer estimate`'s lines
        assert "estimate: total $" in shown
        await term.keys("n")
        await term.wait_for("not run")
        assert stub.completions == []  # asked before anything is paid
        await term.keys("A")
        await term.wait_for("y runs it, n or Esc does not", limit=30)
        await term.keys("Escape")
        await term.wait_for("not run")
        assert stub.completions == []
        await term.keys("A")
        await term.wait_for("y runs it, n or Esc does not", limit=30)
        await term.keys("y")
        shown = await term.wait_for("split: 7 train, 1 eval, 0 excluded, 0 orphaned")
        assert stub.completions != []
        await term.wait_for("done: overbrainer run")  # the task has ended: q asks nothing
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown


async def test_a_second_run_shows_its_items_skipped_not_done(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub, open_terminal(root, "tui", url=stub.url) as term:
        await term.wait_for("nothing run yet in this session")
        await term.keys("Enter")
        shown = await term.wait_for("subtopics: 2 done, 0 skipped, 0 failed")
        await term.keys("Enter")
        shown = await term.wait_for("subtopics: 0 done, 2 skipped, 0 failed")
        shown = await term.wait_gone("running overbrainer subtopics")
        # stage, records, done, skipped, failed: the second run stored nothing and skipped 2.
        assert row(shown, "subtopics")[:5] == ["subtopics", "4", "0", "2", "0"], shown
        await term.keys("q")
        await term.wait_for("EXIT=0")


async def test_records_climb_while_the_stage_stores(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    write_questions(root, 6)
    released = trio.Event()

    async def held(request: Recorded) -> Reply:
        # Two answers are stored, then the stage waits for the test: its records are read
        # while it still runs.
        if len(stub.completions) > 2:
            await released.wait()
        return default_reply(request)

    async with open_stub(held) as stub, open_terminal(root, "tui", url=stub.url) as term:
        await term.wait_for("nothing run yet")
        await term.keys("Down", "Down", "Enter")
        await wait_until(lambda: len(stub.completions) == 3)
        shown = await term.wait_for("▶…answers         2     2")
        assert "answers: " not in shown  # the stage has not ended
        released.set()
        shown = await term.wait_for("answers: 6 done, 0 skipped, 0 failed")
        await term.wait_for("done: overbrainer answers")  # the task has ended: q asks nothing
        await term.keys("q")
        await term.wait_for("EXIT=0")


async def test_the_quality_row_counts_the_tokens_of_a_judge_that_never_scores(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", pipeline=f"\n[quality]\n{JUDGE}\n")
    write_answered(root, 4)
    async with open_stub(lambda _: Reply(content="no verdict", usage=(100, 20))) as stub:
        stub.models = PRICES
        async with open_terminal(root, "tui", url=stub.url) as term:
            await term.wait_for("nothing run yet")
            await term.keys("Down", "Down", "Down", "Enter")
            shown = await term.wait_for("quality: 0 done, 0 skipped, ")
            shown = await term.wait_gone("running overbrainer quality")
            asked = len(stub.completions)
            columns = row(shown, "quality")
            # stage, records, done, skipped, failed, rate/s, tok in, tok out, tok/s, spend
            assert columns[6:8] == [str(100 * asked), str(20 * asked)], shown
            assert columns[9] == f"${asked * (100 * 0.001 + 20 * 0.002):.4f}"  # beside its cost
            await term.keys("q")
            await term.wait_for("EXIT=0")


async def test_the_logs_view_wraps_a_long_line(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    size = (80, 24)
    async with open_stub() as stub, open_terminal(root, "tui", url=stub.url, size=size) as term:
        await term.wait_for("nothing run yet")
        await term.keys("Enter")
        await term.wait_for("subtopics: 2 done, 0 skipped, 0 failed")
        await term.keys("5")
        shown = await term.wait_for("Logs: INFO and above")
        lines = shown.splitlines()
        start = next(i for i, line in enumerate(lines) if "INFO  subtopics: 2 done" in line)
        # The summary line (over 80 columns with its time and level) goes on below its
        # message's start: nothing is cut at the screen's edge.
        assert lines[start + 1].startswith(" " * 15), shown
        assert "cost unknown" in lines[start + 1], shown
        await term.keys("q")
        await term.wait_for("EXIT=0")
