"""A paid retry (a reply we could not read) waits for room under the spend cap, as a new request
does: it is refused only when it could not fit even with nothing else in flight."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import trio
import trio.testing

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.pipeline.spend import SpendCap
from tests.pipeline_support import (
    FIXED_CONCURRENCY,
    PRICES,
    make_project,
    start,
    wait_until,
    write_questions,
)


async def test_a_retry_waits_for_another_request_to_settle() -> None:
    ledger = SpendCap(1.0)
    first = await ledger.reserve(Fraction(2, 5))
    other = await ledger.reserve(Fraction(2, 5))
    assert first is not None and other is not None
    assert first.charge(Fraction(3, 10))  # $0.30 + $0.40 fits alone
    renewed: list[bool] = []

    async def renew() -> None:
        renewed.append(await first.renew())

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(renew)
            # $0.30 spent + $0.40 in flight + $0.40 is over $1: it waits (before: refused).
            await trio.testing.wait_all_tasks_blocked()
            assert renewed == [] and not ledger.reached
            other.settle(Fraction(1, 20))
    assert renewed == [True]
    assert (ledger.spent, ledger.reserved) == (Fraction(7, 20), Fraction(2, 5))


async def test_two_retries_at_once_never_wait_on_each_other() -> None:
    ledger = SpendCap(1.0)
    first = await ledger.reserve(Fraction(2, 5))
    second = await ledger.reserve(Fraction(2, 5))
    assert first is not None and second is not None
    assert first.charge(Fraction(3, 10)) and second.charge(Fraction(3, 10))
    assert await first.renew()  # $0.60 + $0.40: exactly $1
    results: list[bool] = []

    async def renew() -> None:
        results.append(await second.renew())

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(renew)
            await trio.testing.wait_all_tasks_blocked()
            assert results == []
            first.settle(Fraction(1, 10))  # $0.70 spent: $0.40 more does not fit even alone
    assert results == [False]
    assert ledger.refused == Fraction(2, 5)
    assert (ledger.reserved_money, ledger.in_flight) == (0, 0)


async def test_answers_retry_a_cut_reply_once_the_other_request_settles(tmp_path: Path) -> None:
    # Each answer's worst case is about $21 (10,000 tokens out at $0.002, its prompt at most
    # $1): two fit under $45 at once. A cut reply counts about $20.3 (its prompt by bytes / 3,
    # its whole max_tokens), so its retry fits only once the other request has settled.
    root = make_project(tmp_path / "p", concurrency=2, pipeline=FIXED_CONCURRENCY)
    questions = write_questions(root, 2)
    env = {"OVERBRAINER_ROLES__PARENT__MAX_TOKENS": "10000"}
    released = trio.Event()
    first_prompt: list[str] = []
    retry_after_release: list[bool] = []

    async def reply(request: Recorded) -> Reply:
        prompt = request.prompt or ""
        if not first_prompt:
            first_prompt.append(prompt)
            return Reply(cut=True)
        if prompt == first_prompt[0]:
            retry_after_release.append(released.is_set())
            return Reply(content="A.", reasoning="R.", usage=(100, 50))
        await released.wait()  # the other request stays in flight, its worst case reserved
        return Reply(content="B.", reasoning="R.", usage=(100, 50))

    async with open_stub(reply) as stub, trio.open_nursery() as nursery:
        stub.models = PRICES
        process = await start(nursery, root, "answers", "--max-cost", "45", url=stub.url, env=env)
        await wait_until(lambda: "could not be read" in (root / "stderr.txt").read_text())
        released.set()
        with trio.fail_after(30):
            code = await process.wait()
    stderr = (root / "stderr.txt").read_text()
    assert code == 0, stderr
    assert "spend cap reached" not in stderr
    assert retry_after_release == [True]
    assert len(stub.completions) == 3
    assert {q.text for q in questions} == {r.prompt for r in stub.completions}
    [line] = (root / "stdout.txt").read_text().splitlines()
    assert line.startswith("answers: 2 done, 0 skipped, 0 failed, 0 excluded"), line
