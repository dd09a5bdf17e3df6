"""`compare --json`: the report's figures and files (`--rejudge` of an answered compare)."""

from __future__ import annotations

import json
import signal
from decimal import Decimal
from pathlib import Path

import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from tests.compare_support import (
    JUDGE_PRICES,
    RUN_ID,
    SCRIPTED,
    answered_compare,
    make_compare_project,
    question_number,
    scripted_judge,
)
from tests.pipeline_support import overbrainer, start, wait_until


async def test_the_document_holds_the_reports_figures_and_files(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p")
    compare_id = answered_compare(root)
    async with open_stub(scripted_judge) as stub:
        stub.models = JUDGE_PRICES
        done = await overbrainer(root, "compare", "--rejudge", compare_id, "--json", url=stub.url)
    assert done.code == 0, done.stderr
    document = json.loads(done.stdout)
    assert (document["command"], document["exit_code"], document["error"]) == ("compare", 0, None)
    result = document["compare"]
    folder = f"runs/{RUN_ID}/compares/{compare_id}"
    assert (result["report_md"], result["report_json"]) == (
        f"{folder}/compare.md",
        f"{folder}/compare.json",
    )
    # The path the text prints on stdout goes to stderr with `--json`.
    assert f"{folder}/compare.md" in done.stderr.splitlines()
    report = json.loads((root / result["report_json"]).read_text())
    summary = report["summary"]
    assert (result["compare_id"], result["run_id"]) == (compare_id, RUN_ID)
    counts = ("questions", "wins", "ties", "losses", "unparsed", "errors", "inconsistent")
    assert {k: result[k] for k in counts} == {k: summary[k] for k in counts}
    assert (result["wins"], result["ties"], result["losses"], result["unparsed"]) == (1, 1, 2, 1)
    assert result["win_or_tie"] == summary["win_or_tie"] == 0.5
    low, high = result["win_or_tie_low"], result["win_or_tie_high"]
    assert (low, high) == (summary["win_or_tie_low"], summary["win_or_tie_high"])
    assert 0 < low < 0.5 < high < 1
    assert result["latency"] == {
        "p50_secs": 0.5,
        "p95_secs": 0.5,
        "first_token_p50_secs": 0.1,
        "mean_secs": 0.5,
        "tokens_per_second": 12.5,
    }
    assert result["both_orders"] is False
    assert set(result["costs"]) == {
        "parent_per_1k_usd",
        "child_per_1k_usd",
        "ratio",
        "child_under_load_per_1k_usd",
        "ratio_under_load",
        "child_price_from_pod",
    }
    assert result["verdicts_file"].startswith(f"{folder}/verdicts-")
    judge = result["judge"]
    # Six scripted replies (q3 asked twice) of (50 in, 10 out) at $10/$20 per million: exact.
    assert (judge["input_tokens"], judge["output_tokens"]) == (300, 60)
    assert Decimal(judge["cost"]) == Decimal("0.0042")
    assert (judge["cost_estimated"], judge["earlier_verdicts"], judge["is_parent"]) == (
        False,
        0,
        False,
    )


async def test_ctrl_c_while_judging_gives_130_and_no_report(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", concurrency=1)
    compare_id = answered_compare(root)
    held = trio.Event()

    async def hold_after_one(request: Recorded) -> Reply:
        if question_number(request) != 0:
            await held.wait()  # released only once the process has ended
        return Reply(SCRIPTED[2], usage=(50, 10))

    env = {"OVERBRAINER_PIPELINE__DRAIN_SECS": "0.5"}
    async with open_stub(hold_after_one) as stub, trio.open_nursery() as nursery:
        stub.models = JUDGE_PRICES
        process = await start(
            nursery, root, "compare", "--rejudge", compare_id, "--json", url=stub.url, env=env
        )
        await wait_until(lambda: len([r for r in stub.requests if r.is_completion]) == 2)
        process.send_signal(signal.SIGINT)
        with trio.fail_after(30):
            await process.wait()
        held.set()
    assert process.returncode == 130
    document = json.loads((root / "stdout.txt").read_text())
    assert document["exit_code"] == 130
    assert document["error"] == (
        f"interrupted: the verdicts so far are kept; resume with "
        f"`overbrainer compare --rejudge {compare_id}`"
    )
    assert document["compare"] is None
