"""`--json` on the stage commands and `run`: the history record of each stage they ran."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.storage.history import HistoryRecord
from overbrainer.ui.json_report import json_value
from tests.batch_fakes import open_fake
from tests.pipeline_support import (
    FIXED_CONCURRENCY,
    PRICES,
    history,
    make_project,
    overbrainer,
    start,
    wait_until,
    write_questions,
)
from tests.test_batch_answers import FAST, some_fail
from tests.test_quality import JUDGE, judge_any

INTERRUPTED = "interrupted: the stage resumes on its next run"


def answered(request: Recorded) -> Reply:
    return Reply(content=f"Answer to {request.prompt}", reasoning="thinking", usage=(100, 50))


def as_written(records: list[HistoryRecord]) -> list[object]:
    """The history lines as `--json` writes them: every field, money as decimal strings."""
    return [json_value(record) for record in records]


async def test_run_lists_every_stage_exactly_as_the_history_wrote_it(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", pipeline=f"\n[quality]\n{JUDGE}\n")
    async with open_stub(judge_any()) as stub:
        stub.models = PRICES
        done = await overbrainer(root, "run", "--no-train", "--json", url=stub.url)
    assert done.code == 0, done.stderr
    document = json.loads(done.stdout)  # stdout holds the document alone
    assert document["command"] == "run"
    assert (document["version"], document["exit_code"], document["error"]) == (1, 0, None)
    stages = document["stages"]
    assert [s["stage"] for s in stages] == ["subtopics", "questions", "answers", "quality", "split"]
    assert stages == as_written(history(root))
    assert {s["status"] for s in stages} == {"ok"}
    answers = stages[2]
    assert (answers["provider"], answers["model"], answers["done"]) == ("stub", "parent-model", 8)
    assert answers["cost_estimated"] is False  # a flag, though named like money
    assert answers["started_at"].endswith("Z") and answers["ended_at"].endswith("Z")
    # The parent's listed price: (in × 0.001 + out × 0.002) per reply, summed exactly.
    tokens = answers["input_tokens"] * 0.001 + answers["output_tokens"] * 0.002
    assert isinstance(answers["cost"], str) and float(answers["cost"]) == round(tokens, 9)
    assert stages[3]["stage"] == "quality" and stages[3]["cost"] is None  # judge-model unlisted
    split = stages[4]
    assert split["split"]["train"] + split["split"]["eval"] == 8 - split["excluded"]
    assert (split["provider"], split["cost"]) == (None, None)
    # The summary lines went to stderr, as they are printed without `--json`.
    assert "\nsplit: " in done.stderr
    assert done.stderr.count("answers: 8 done, 0 skipped, 0 failed") == 1


async def test_a_failed_item_exits_1_and_lists_the_stage_failed(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    write_questions(root, 2)
    retry_now = {"retry-after": "0"}
    async with open_stub(answered) as stub:
        stub.models = PRICES
        stub.queue(*[Reply(status=500, content="boom", headers=retry_now)] * 3)
        done = await overbrainer(root, "answers", "--json", url=stub.url)
    assert done.code == 1, done.stderr
    document = json.loads(done.stdout)
    assert document["exit_code"] == 1
    assert document["error"] == "1 answers item(s) failed; run the command again to retry them"
    [stage] = document["stages"]
    assert (stage["stage"], stage["status"], stage["done"], stage["failed"]) == (
        "answers",
        "failed",
        1,
        1,
    )
    assert (stage["input_tokens"], stage["output_tokens"], stage["cost"]) == (100, 50, "0.2")
    assert [stage] == as_written(history(root))


async def test_bad_input_before_any_stage_lists_none(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    done = await overbrainer(root, "answers", "--topic", "nope", "--json", url="http://127.0.0.1:9")
    assert done.code == 2
    document = json.loads(done.stdout)
    assert (document["exit_code"], document["error"]) == (2, "unknown topic `nope`")
    assert document["stages"] == []
    assert done.stderr.strip().splitlines()[-1] == "error: unknown topic `nope`"


async def test_ctrl_c_exits_130_and_lists_the_interrupted_stage(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=2, pipeline=FIXED_CONCURRENCY)
    write_questions(root, 6)
    released = trio.Event()

    async def held(request: Recorded) -> Reply:
        await released.wait()  # no reply before the signal, however slow the machine
        return answered(request)

    async with open_stub(held) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "answers", "--json", url=stub.url)
        await wait_until(lambda: len(stub.completions) == 2)
        process.send_signal(signal.SIGINT)
        await wait_until(lambda: "answers: stopping:" in (root / "stderr.txt").read_text())
        released.set()
        with trio.fail_after(30):
            code = await process.wait()
    assert code == 130
    document = json.loads((root / "stdout.txt").read_text())
    assert (document["exit_code"], document["error"]) == (130, INTERRUPTED)
    [stage] = document["stages"]
    assert (stage["stage"], stage["status"], stage["done"]) == ("answers", "interrupted", 2)
    assert [stage] == as_written(history(root))


async def test_answers_batch_lists_its_stage_at_the_batch_price(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 6)
    async with open_fake(some_fail) as fake:
        done = await overbrainer(root, "answers", "--batch", "--json", url=fake.url, env=FAST)
    assert done.code == 1, done.stderr
    document = json.loads(done.stdout)
    [stage] = document["stages"]
    assert (stage["status"], stage["done"], stage["failed"], stage["cost"]) == (
        "failed",
        4,
        2,
        "0.4",
    )
    assert [stage] == as_written(history(root))
