"""A parent with `reasoning = true` whose first answers carry no reasoning stops `answers`."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Reply
from overbrainer.storage.history import HistoryStatus
from overbrainer.storage.records import Exclusion
from tests.batch_fakes import FakeBatches, open_fake
from tests.pipeline_support import (
    history,
    make_project,
    overbrainer,
    read_examples,
    write_questions,
)

FIX = (
    "though `[roles.parent] reasoning = true`: set `reasoning = false` for the parent in "
    "overbrainer.toml, or enable the server's reasoning parser "
    "(vLLM `--reasoning-parser`, llama-server `--reasoning-format`)"
)


async def test_five_answers_without_reasoning_stop_the_stage(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=4)
    write_questions(root, 30)
    # A server without its reasoning parser: the answer, and no reasoning field at all.
    async with open_stub(lambda _: Reply(content="An answer.", delay=0.05)) as stub:
        result = await overbrainer(root, "answers", url=stub.url)
        asked = len(stub.completions)
    # Before, all 30 were asked, paid for and excluded, and the command exited 0.
    assert 5 <= asked < 30
    assert result.code == 2, result.stderr
    assert result.out_lines == [
        f"answers: 0 done, 0 skipped, 0 failed, {asked} excluded; "
        f"tokens {10 * asked} in, {5 * asked} out; cost unknown"
    ]
    assert result.stderr.strip().splitlines()[-1] == (
        "error: answers stopped: the parent model `parent-model` returned no reasoning in "
        f"5 of its first 5 answers, {FIX}"
    )
    # The requests in flight when it stopped were paid for: their answers are kept.
    stored = read_examples(root)
    assert len(stored) == asked
    assert {e.meta.excluded for e in stored} == {Exclusion.NO_RAW_REASONING}
    [line] = history(root)
    assert (line.status, line.excluded) == (HistoryStatus.FAILED, asked)


async def test_ten_of_the_first_fifty_without_reasoning_stop_the_stage(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    write_questions(root, 40)
    count = itertools.count()

    def reply(_: object) -> Reply:
        thinks = next(count) % 3 != 0  # answers 1, 4, 7, … come without reasoning
        return Reply(content="An answer.", reasoning="Thinking." if thinks else None)

    async with open_stub(reply) as stub:
        result = await overbrainer(root, "answers", url=stub.url)
        asked = len(stub.completions)
    assert asked == 28  # the 10th answer without reasoning
    assert result.code == 2, result.stderr
    assert result.out_lines[0].startswith("answers: 18 done, 0 skipped, 0 failed, 10 excluded")
    assert result.stderr.strip().splitlines()[-1] == (
        "error: answers stopped: the parent model `parent-model` returned no reasoning in "
        f"10 of its first 28 answers, {FIX}"
    )


async def test_a_parent_that_reasons_now_and_then_late_is_not_stopped(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    write_questions(root, 12)
    count = itertools.count()

    def reply(_: object) -> Reply:
        thinks = next(count) != 2  # one answer in twelve without reasoning
        return Reply(content="An answer.", reasoning="Thinking." if thinks else None)

    async with open_stub(reply) as stub:
        result = await overbrainer(root, "answers", url=stub.url)
    assert result.code == 0, result.stderr
    assert result.out_lines[0].startswith("answers: 11 done, 0 skipped, 0 failed, 1 excluded")


async def test_a_batch_whose_answers_carry_no_reasoning_stops_the_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = FakeBatches._chat_answer

    def without_reasoning(body: dict[str, Any], n: int) -> dict[str, Any]:
        reply = answer(body, n)
        del reply["choices"][0]["message"]["reasoning"]
        return reply

    monkeypatch.setattr(FakeBatches, "_chat_answer", staticmethod(without_reasoning))
    root = make_project(tmp_path / "p")
    write_questions(root, 8)
    env = {"OVERBRAINER_PIPELINE__BATCH_POLL_SECS": "0.05"}
    async with open_fake() as fake:
        result = await overbrainer(root, "answers", "--batch", url=fake.url, env=env)
        assert fake.submissions == 1
    assert result.code == 2, result.stderr
    # The batch was paid for as a whole: every one of its answers is stored.
    assert result.out_lines[0].startswith("answers: 0 done, 0 skipped, 0 failed, 8 excluded")
    assert result.stderr.strip().splitlines()[-1] == (
        "error: answers stopped: the parent model `parent-model` returned no reasoning in "
        f"5 of its first 5 answers, {FIX}"
    )
    assert len(read_examples(root)) == 8
