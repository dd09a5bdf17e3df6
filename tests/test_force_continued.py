"""A `--force` is never armed invisibly: a refused run leaves none, a killed one is continued.

Through the real command against the stub: `answers --force` refused by the spend cap before
its first request leaves no force state (so `estimate` and the next plain run see nothing to
redo), and a forced `answers` or `quality` killed with SIGKILL mid-way is continued by the next
plain run, which says so, and counted by `estimate` meanwhile.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

from overbrainer.devtools.stub_provider import StubProvider, open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.storage.records import Example
from tests.force_support import OLD, delayed, force_state, old_answers, whole_lines
from tests.pipeline_support import (
    FIXED_CONCURRENCY,
    PRICES,
    completion_prompts,
    make_project,
    overbrainer,
    read_examples,
    start,
    wait_until,
    write_answered,
    write_questions,
)
from tests.test_quality import PRICES as JUDGE_PRICES
from tests.test_quality import case_of, judge, judge_prompts, judged_project

CONTINUING = re.compile(
    r"INFO (\w+): continuing the --force run started \d{4}-\d\d-\d\dT[\d:.]+Z: (\d+) to redo$",
    re.MULTILINE,
)


def to_do(stdout: str, stage: str) -> int:
    """The `N` of `estimate: STAGE: N to do` in an `estimate` output."""
    found = re.search(rf"^estimate: {stage}: ([\d,]+) to do", stdout, re.MULTILINE)
    assert found is not None, stdout
    return int(found.group(1).replace(",", ""))


async def estimated(root: Path, stage: str, stub: StubProvider) -> int:
    """What `overbrainer estimate STAGE` says is still to do."""
    result = await overbrainer(root, "estimate", stage, url=stub.url)
    assert result.code == 0, result.stderr
    return to_do(result.stdout, stage)


def _new_answers(root: Path) -> set[str]:
    # Whole lines only: the killed run may be mid-write.
    lines = whole_lines(root / "data" / "answers.jsonl")
    examples = [Example.from_json(line) for line in lines]
    return {e.id for e in examples if e.messages[-1].content != OLD}


def _held_after(
    count: int, reply: Callable[[Recorded], Reply], released: trio.Event
) -> Callable[[Recorded], Awaitable[Reply]]:
    """The stub's replies by `reply` for the first `count` requests; later ones wait for
    `released`, so a kill lands mid-run whatever the machine's speed."""
    seen = 0

    async def held(request: Recorded) -> Reply:
        nonlocal seen
        seen += 1
        if seen > count:
            await released.wait()
        return reply(request)

    return held


async def test_a_forced_run_refused_by_the_cap_leaves_nothing_to_redo(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=2)
    questions = write_questions(root, 20)
    old_answers(root, questions)
    answers = root / "data" / "answers.jsonl"
    before = answers.read_bytes()
    # $0.20 an answer at the stub's prices: one request's worst case is above the cap.
    env = {"OVERBRAINER_ROLES__PARENT__MAX_TOKENS": "50"}
    async with open_stub(delayed(0.0)) as stub:
        stub.models = PRICES
        baseline = await estimated(root, "answers", stub)
        refused = await overbrainer(
            root, "answers", "--force", "--max-cost", "0.01", url=stub.url, env=env
        )
        assert refused.code == 1, refused.stderr
        assert "spend cap" in refused.stderr
        assert stub.completions == []
        assert force_state(root, "answers") is None
        assert answers.read_bytes() == before

        estimate = await overbrainer(root, "estimate", "answers", url=stub.url, env=env)
        assert estimate.code == 0, estimate.stderr
        assert to_do(estimate.stdout, "answers") == baseline  # the questions still to come
        assert "redo" not in estimate.stdout

        plain = await overbrainer(root, "answers", url=stub.url, env=env)
        assert plain.code == 0, plain.stderr
        assert plain.out_lines[0].startswith("answers: 0 done, 20 skipped")
        assert "--force" not in plain.stderr
        assert stub.completions == []
    assert answers.read_bytes() == before


async def _kill_when(process: trio.Process, ready: Callable[[], bool]) -> None:
    await wait_until(ready)
    os.kill(process.pid, signal.SIGKILL)
    with trio.fail_after(10):
        assert await process.wait() == -signal.SIGKILL


async def test_a_killed_forced_answers_run_is_continued_by_the_plain_run(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=2, pipeline=FIXED_CONCURRENCY)
    questions = write_questions(root, 10)
    old_answers(root, questions)
    released = trio.Event()
    responder = _held_after(4, delayed(0.0), released)
    async with open_stub(responder) as stub, trio.open_nursery() as nursery:
        baseline = await estimated(root, "answers", stub)
        process = await start(nursery, root, "answers", "--force", url=stub.url)
        await _kill_when(process, lambda: len(_new_answers(root)) == 4)
        released.set()
        redone = _new_answers(root)
        state = force_state(root, "answers")
        assert state is not None and state.get("started")

        estimate = await overbrainer(root, "estimate", "answers", url=stub.url)
        assert estimate.code == 0, estimate.stderr
        assert to_do(estimate.stdout, "answers") == baseline + 6
        assert f"estimate: answers: 6 to redo for the --force run started {state['started']}; " in (
            estimate.stdout
        )

        stub.responder = delayed(0.0)
        asked = len(stub.completions)
        plain = await overbrainer(root, "answers", url=stub.url)
        assert plain.code == 0, plain.stderr
        assert CONTINUING.findall(plain.stderr) == [("answers", "6")]
        assert f"started {state['started']}:" in plain.stderr
        assert plain.out_lines[0].startswith("answers: 6 done, 4 skipped")
        texts = {q.id: q.text for q in questions}
        assert sorted(completion_prompts(stub)[asked:]) == sorted(
            text for key, text in texts.items() if key not in redone
        )
    assert _new_answers(root) == set(texts)
    assert len(read_examples(root)) == 10
    assert force_state(root, "answers") is None


def _scores(root: Path) -> list[str]:
    return whole_lines(root / "data" / "quality.jsonl")


async def test_a_killed_forced_quality_run_is_continued_by_the_plain_run(tmp_path: Path) -> None:
    root = judged_project(tmp_path / "p", concurrency=2)
    (root / "overbrainer.toml").write_text(
        (root / "overbrainer.toml")
        .read_text()
        .replace("[pipeline]", f"[pipeline]\n{FIXED_CONCURRENCY}")
    )
    write_answered(root, 11)  # one excluded answer (case 0): 10 to score
    async with open_stub(judge()) as stub, trio.open_nursery() as nursery:
        stub.models = JUDGE_PRICES
        first = await overbrainer(root, "quality", url=stub.url)
        assert first.code == 0, first.stderr
        assert first.out_lines[0].startswith("quality: 10 done")

        # Refused by the cap before its first request: nothing armed, nothing to redo.
        refused = await overbrainer(
            root, "quality", "--force", "--max-cost", "0.0001", url=stub.url
        )
        assert refused.code == 1, refused.stderr
        assert force_state(root, "quality") is None
        assert len(stub.completions) == 10
        plain = await overbrainer(root, "quality", url=stub.url)
        assert plain.out_lines[0].startswith("quality: 0 done, 10 skipped"), plain.stdout

        released = trio.Event()
        stub.responder = _held_after(4, judge(), released)
        process = await start(nursery, root, "quality", "--force", url=stub.url)
        await _kill_when(process, lambda: len(_scores(root)) == 14)
        released.set()
        rescored = {case_of(r.prompt or "") for r in stub.completions[10:14]}
        state = force_state(root, "quality")
        assert state is not None and state.get("started")

        estimate = await overbrainer(root, "estimate", "quality", url=stub.url)
        assert estimate.code == 0, estimate.stderr
        assert to_do(estimate.stdout, "quality") == 6
        assert "estimate: quality: 6 to redo for the --force run started" in estimate.stdout

        stub.responder = judge()
        asked = len(stub.completions)
        plain = await overbrainer(root, "quality", url=stub.url)
        assert plain.code == 0, plain.stderr
        assert CONTINUING.findall(plain.stderr) == [("quality", "6")]
        assert plain.out_lines[0].startswith("quality: 6 done, 4 skipped")
        again = _judged_since(stub, asked)
        assert sorted(again) == sorted(set(range(1, 11)) - rescored)
        assert force_state(root, "quality") is None

        # Finished: a further plain run scores nothing.
        last = await overbrainer(root, "quality", url=stub.url)
        assert last.code == 0, last.stderr
        assert last.out_lines[0].startswith("quality: 0 done, 10 skipped")
        assert "--force" not in last.stderr


def _judged_since(stub: StubProvider, start_at: int) -> list[int]:
    return judge_prompts(stub.completions[start_at:])
