"""A paid 2xx reply we cannot read (cut off, not JSON, not UTF-8) is counted, so the cap holds."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.model.usage import Price, Usage
from overbrainer.pipeline.spend import decimal, estimate_tokens, exact_cost, usd, worst_usage
from overbrainer.storage.history import HistoryStatus
from tests.pipeline_support import PRICES, history, make_project, overbrainer, write_questions
from tests.test_spend_cap import CAPPED, request_of

PARENT = Price(1000.0, 2000.0)
"""The parent's price in `PRICES`: $0.001 per input token, $0.002 per output token."""

UNREADABLE = (
    b'{"choices": [{"message": {"content": "cut off',
    b"<html>502 bad gateway</html>",
    b'{"choices": [{"message": {"content": "\xff\xfe not UTF-8"}}]}',
)


def unreadable_usage(recorded: Recorded) -> Usage:
    """What an unreadable reply counts: its prompt by bytes / 3, its whole `max_tokens` out."""
    return Usage(estimate_tokens(recorded.system, recorded.prompt), request_of(recorded).max_tokens)


async def test_unreadable_paid_replies_are_counted_and_the_cap_holds(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    write_questions(root, 12)
    env = {
        "OVERBRAINER_ROLES__PARENT__MAX_TOKENS": "100",
        "OVERBRAINER_PIPELINE__MAX_RETRIES": "0",
    }
    count = iter(range(10**6))
    async with open_stub(lambda _: Reply(body=UNREADABLE[next(count) % 3])) as stub:
        stub.models = PRICES
        result = await overbrainer(root, "answers", "--max-cost", "1", url=stub.url, env=env)
        asked = stub.completions
    n = len(asked)
    # Before, each was free: all 12 went out and the summary said $0 against a $1 cap.
    assert 0 < n < 12
    usages = [unreadable_usage(r) for r in asked]
    counted = sum((exact_cost(u, PARENT) for u in usages), Fraction(0))
    assert counted <= 1
    worst = exact_cost(worst_usage(request_of(asked[-1])), PARENT)
    assert counted + worst > 1
    assert result.code == 1, result.stderr
    assert result.out_lines == [
        f"answers: 0 done, 0 skipped, {n} failed, 0 excluded; "
        f"tokens {sum(u.input_tokens for u in usages)} in, {100 * n} out; "
        f"cost ${float(counted):.4f} (estimated)"
    ]
    found = CAPPED.fullmatch(result.stderr.strip().splitlines()[-1])
    assert found is not None, result.stderr
    assert found.group(1) == usd(counted)[1:]
    assert "could not be read: counted as its prompt and its whole max_tokens" in result.stderr
    assert "a reply had no token usage" not in result.stderr
    [line] = history(root)
    assert (line.status, line.failed, line.cost_estimated) == (HistoryStatus.INTERRUPTED, n, True)
    assert line.cost is not None and abs(decimal(line.cost) - counted) < Fraction(1, 10**9)


async def test_an_unreadable_reply_then_a_good_one_counts_both(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    write_questions(root, 1)
    env = {"OVERBRAINER_ROLES__PARENT__MAX_TOKENS": "100"}
    async with open_stub(lambda _: Reply(content="A.", reasoning="R.", usage=(100, 50))) as stub:
        stub.models = PRICES
        stub.queue(Reply(body=UNREADABLE[0]))
        result = await overbrainer(root, "answers", url=stub.url, env=env)
        first = stub.completions[0]
    assert result.code == 0, result.stderr
    lost = unreadable_usage(first)
    cost = exact_cost(lost, PARENT) + exact_cost(Usage(100, 50), PARENT)
    assert result.out_lines == [
        f"answers: 1 done, 0 skipped, 0 failed, 0 excluded; "
        f"tokens {lost.input_tokens + 100} in, {100 + 50} out; cost ${float(cost):.4f} (estimated)"
    ]
    [line] = history(root)
    assert (line.status, line.done, line.output_tokens, line.cost_estimated) == (
        HistoryStatus.OK,
        1,
        150,
        True,
    )
