"""`overbrainer tui` end to end in a real terminal (tmux): the Compare view, a compare and a
rejudge at work, and the Hub push confirmed from the Training view."""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs
import pytest
import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from tests.compare_support import GGUF as COMPARE_GGUF
from tests.compare_support import RUN_ID as COMPARE_RUN
from tests.compare_support import (
    answered_compare,
    make_compare_project,
    scripted_judge,
    standin_release,
)
from tests.hub_support import RUN_ID, fake_hub, hub_env, make_run
from tests.pipeline_support import (
    overbrainer,
)
from tests.tui_compare_support import write_compare
from tests.tui_support import needs_tmux, open_terminal

pytestmark = needs_tmux


@pytest.mark.hub
async def test_the_compare_view_shows_a_report_and_training_confirms_a_push(
    tmp_path: Path,
) -> None:
    root = tmp_path / "p"
    run_dir = make_run(root)
    write_compare(run_dir, "compare_20261203-130000", "2026-12-03T13:00:00Z")
    with fake_hub(tmp_path) as hub:
        env = hub_env(tmp_path, hub.url)
        async with open_terminal(root, "tui", env=env) as term:
            await term.wait_for("nothing run yet")
            await term.keys("4")
            shown = await term.wait_for(
                "compare: 50% win or tie (compare_20261203-130000, 5 questions)"
            )
            assert f"▶ {RUN_ID}  succeeded" in shown
            await term.keys("h")
            shown = await term.wait_for("y pushes, any other key does not")
            assert "repo: <your namespace>/my-project (the token's)" in shown
            assert "visibility: private" in shown
            assert "files: 5, 0.1 MB (102853 bytes), and README.md" in shown, shown
            await term.keys("n")
            await term.wait_for("not pushed")
            assert hub.log() == []  # the confirmation needs no network
            assert not (run_dir / "hub").exists()
            await term.keys("h")
            await term.wait_for("y pushes")
            await term.keys("y")
            await term.wait_for("/alice/my-project/commit/")
            await term.keys("6")
            shown = await term.wait_for("Questions: all, 5 of 5")
            assert f"▶ {RUN_ID}  Q4_K_M   50% win or tie     5 questions" in shown
            assert "  ! q3  Question 3" in shown
            assert "child: Child answer 0." in shown
            await term.keys("f", "j")
            shown = await term.wait_for("Questions: losses, 2 of 5")
            assert "▶ ! q3  Question 3" in shown
            assert "child: (no answer: timed out)" in shown
            await term.keys("C")  # no run has an export: the plan says so, nothing starts
            await term.wait_for("\nno run has a GGUF: export one with")
            await term.keys("q")
            shown = await term.wait_for("EXIT=")
        assert "EXIT=0" in shown
        assert len(hub.calls("commit")) == 1
    assert json.loads((run_dir / "hub" / "push.json").read_text())["repo"] == "alice/my-project"


async def test_compare_asks_before_it_starts_and_n_starts_nothing(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=3)
    async with open_terminal(root, "tui") as term:
        await term.wait_for("Pipeline")
        await term.keys("6", "C")
        shown = await term.wait_for("y compares, n or Esc does not")
        assert f"run {COMPARE_RUN}, {COMPARE_GGUF}" in shown
        assert "3 questions of data/eval.jsonl, on target `local`" in shown
        assert "the judge is called once per question" in shown
        await term.keys("n")
        await term.wait_for("not compared")
        await term.keys("C")
        await term.wait_for("y compares, n or Esc does not")
        await term.keys("Escape")
        await term.wait_for("not compared")
        assert not (root / "runs" / COMPARE_RUN / "compares").exists()  # nothing started
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown


async def test_a_compare_shows_its_job_phase_and_c_cancels_it(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=2)
    with standin_release(tmp_path / "release", mode="hang") as pin:
        env = {**pin, "OVERBRAINER_CACHE": str(tmp_path / "c"), "OVERBRAINER_TEST_POLL_S": "0.2"}
        async with open_stub(scripted_judge) as stub:
            async with open_terminal(root, "tui", url=stub.url, env=env) as term:
                await term.wait_for("Pipeline")
                await term.keys("6", "C")
                await term.wait_for("y compares, n or Esc does not")
                await term.keys("y")
                # The child's stand-in server hangs in its first answer: the job stays there.
                shown = await term.wait_for("\ncompare: answering 0/2", limit=60)
                assert f"Running\n  overbrainer compare --run {COMPARE_RUN}: answering 0/2" in (
                    shown
                )
                await term.keys("c")
                shown = await term.wait_for("compare failed: ", limit=60)
                assert "Running" not in shown
                await term.keys("q")
                shown = await term.wait_for("EXIT=")
            assert [r for r in stub.requests if r.is_completion] == []  # the judge never asked
    assert "EXIT=0" in shown
    [record] = (root / "runs" / COMPARE_RUN / "compares").glob("*/run.json")
    assert json.loads(record.read_text())["state"] == "cancelled"


async def test_a_rejudge_shows_its_judging_with_rate_and_spend(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=8)
    compare_id = answered_compare(root)
    pace = {"delay": 0.0}

    def judge(request: Recorded) -> Reply:
        return attrs.evolve(scripted_judge(request), delay=pace["delay"])

    async with open_stub(judge) as stub:
        stub.models = {
            "data": [
                {"id": name, "pricing": {"prompt": "0.00001", "completion": "0.00002"}}
                for name in ("judge-model", "judge-2")
            ]
        }
        first = await overbrainer(root, "compare", "--rejudge", compare_id, url=stub.url)
        assert first.code == 0, first.stderr
        pace["delay"] = 0.8  # the next judge is slow enough to be seen at work
        other = {
            "OVERBRAINER_ROLES__JUDGE__MODEL": "judge-2",
            "OVERBRAINER_COMPARE__CONCURRENCY": "1",
        }
        async with open_terminal(root, "tui", url=stub.url, env=other) as term:
            await term.wait_for("Pipeline")
            await term.keys("6")
            await term.wait_for(compare_id)
            await term.keys("J")
            await term.wait_for("y rejudges, n or Esc does not")
            await term.keys("y")
            # Verdicts come in bursts: any count before the last, once the rate shows.
            progress = re.compile(r"^compare: judging [1-7]/8, \d+\.\d/s, \$0\.\d{4}\s*$", re.M)
            with trio.fail_after(60):
                while not progress.search(shown := await term.screen()):
                    assert "compare written" not in shown, shown
                    await trio.sleep(0.05)
            assert f"overbrainer compare --rejudge {compare_id}: judging " in shown
            await term.wait_for("compare written: see the Compare view", limit=60)
            await term.keys("q")
            shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown
    folder = root / "runs" / COMPARE_RUN / "compares" / compare_id
    assert len(list(folder.glob("verdicts-*.jsonl"))) == 2
