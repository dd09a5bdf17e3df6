"""The summary line and the history line of a stage say the same counts, however it ended."""

from __future__ import annotations

import itertools
from pathlib import Path

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.storage.history import HistoryStatus
from tests.pipeline_support import PRICES, history, make_project, overbrainer, write_questions

SUMMARY_COUNTS = "answers: {done} done, {skipped} skipped, {failed} failed, {excluded} excluded;"


def summary_of(line: str, done: int, skipped: int, failed: int, excluded: int) -> bool:
    """Whether a summary line starts with these counts."""
    counts = dict(done=done, skipped=skipped, failed=failed, excluded=excluded)
    return line.startswith(SUMMARY_COUNTS.format(**counts))


async def test_a_stage_stopped_by_the_cap_records_its_excluded_answers(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    write_questions(root, 12)
    env = {"OVERBRAINER_ROLES__PARENT__MAX_TOKENS": "100"}
    # Every other answer is cut short by the token limit, so it is kept out of training.
    finish = itertools.cycle(["stop", "length"])

    def reply(_: Recorded) -> Reply:
        return Reply(content="A.", reasoning="R.", finish_reason=next(finish), usage=(100, 50))

    async with open_stub(reply) as stub:
        stub.models = PRICES
        result = await overbrainer(root, "answers", "--max-cost", "1.5", url=stub.url, env=env)
        n = len(stub.completions)
    assert result.code == 1, result.stderr
    assert "spend cap reached" in result.stderr
    excluded = n // 2
    [summary] = result.out_lines
    assert summary_of(summary, n - excluded, 0, 0, excluded), summary
    [line] = history(root)
    assert line.status is HistoryStatus.INTERRUPTED
    # The event tally of the reference recorded every excluded answer as done.
    assert (line.done, line.excluded) == (n - excluded, excluded)
    assert (line.input_tokens, line.output_tokens) == (100 * n, 50 * n)


async def test_a_rerun_with_nothing_to_do_records_no_cost_at_a_known_price(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    async with open_stub(lambda _: Reply(content="A.", reasoning="R.", usage=(100, 50))) as stub:
        stub.models = PRICES
        assert (await overbrainer(root, "answers", url=stub.url)).code == 0
        again = await overbrainer(root, "answers", url=stub.url)
    assert again.code == 0, again.stderr
    assert again.out_lines == [
        "answers: 0 done, 2 skipped, 0 failed, 0 excluded; tokens 0 in, 0 out; cost $0.0000"
    ]
    assert [line.cost for line in history(root)] == [0.4, 0.0]
    raw = (root / ".overbrainer" / "history.jsonl").read_text().splitlines()[1]
    assert raw.endswith('"input_tokens":0,"output_tokens":0,"cost":0.0}')


async def test_a_fatal_refusal_is_the_stages_failure_in_the_summary_and_the_history(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    write_questions(root, 3)
    async with open_stub(lambda _: Reply(status=401)) as stub:
        stub.models = PRICES
        result = await overbrainer(root, "answers", url=stub.url)
        asked = len(stub.completions)
    assert asked == 1
    assert result.code == 1, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "error: answers stopped: HTTP 401: authentication failed, check the provider API key"
    )
    assert result.out_lines == [
        "answers: 0 done, 0 skipped, 0 failed, 0 excluded; tokens 0 in, 0 out; cost $0.0000"
    ]
    # Both say 0 failed: the spec counts only a non-fatal final error as a failed item.
    [line] = history(root)
    assert (line.status, line.done, line.failed) == (HistoryStatus.FAILED, 0, 0)
