"""A 200 reply whose body is cut midway was billed: it is counted under the cap like an
unreadable one (its prompt, its whole `max_tokens`), in `answers` and in `quality`."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.model.usage import Price, Usage
from overbrainer.pipeline.spend import estimate_tokens, exact_cost, usd
from tests.pipeline_support import (
    PRICES,
    make_project,
    overbrainer,
    write_answered,
    write_questions,
)
from tests.test_quality import JUDGE
from tests.test_quality import PRICES as JUDGE_PRICES
from tests.test_spend_cap import CAPPED, request_of

PRICE = Price(1000.0, 2000.0)
"""The parent's price in `PRICES` and the judge's in `JUDGE_PRICES`: $0.001 in, $0.002 out."""


def cut_usage(recorded: Recorded) -> Usage:
    """What a cut reply counts: its prompt by bytes / 3, its whole `max_tokens` out."""
    return Usage(estimate_tokens(recorded.system, recorded.prompt), request_of(recorded).max_tokens)


def check_capped(asked: list[Recorded], cap: int, stage: str, out: list[str], err: str) -> None:
    """Every request was a cut reply: all counted, within the cap, the next one refused."""
    usages = [cut_usage(r) for r in asked]
    counted = sum((exact_cost(u, PRICE) for u in usages), Fraction(0))
    assert counted <= cap
    found = CAPPED.fullmatch(err.strip().splitlines()[-1])
    assert found is not None, err
    # The request refused is the next one, its worst case said in the error.
    refused = Fraction(found.group(3))
    assert counted + refused > cap, err
    tokens_in = sum(u.input_tokens for u in usages)
    tokens_out = sum(u.output_tokens for u in usages)
    [line] = out
    assert line.startswith(f"{stage}: 0 done, 0 skipped, ")
    assert line.endswith(
        f"0 excluded; tokens {tokens_in} in, {tokens_out} out; "
        f"cost ${float(counted):.4f} (estimated)"
    )
    assert found.group(1) == usd(counted)[1:]
    assert "could not be read: counted as its prompt and its whole max_tokens" in err


async def test_answers_count_cut_bodies_and_stay_within_the_cap(tmp_path: Path) -> None:
    # Two at once: a paid retry waits for the other to settle, so the request refused could
    # not fit even alone (tests/test_spend_retry.py pins the waiting).
    root = make_project(tmp_path / "p", concurrency=2)
    write_questions(root, 12)
    env = {"OVERBRAINER_ROLES__PARENT__MAX_TOKENS": "100"}
    async with open_stub(lambda _: Reply(cut=True)) as stub:
        stub.models = PRICES
        result = await overbrainer(root, "answers", "--max-cost", "1", url=stub.url, env=env)
        asked = stub.completions
    # Before, a cut body was a free transport error: 36 requests (12 × 3 tries), `cost $0.0000`.
    assert 0 < len(asked) < 12
    assert result.code == 1, result.stderr
    check_capped(asked, 1, "answers", result.out_lines, result.stderr)


async def test_quality_counts_cut_bodies_and_stays_within_the_cap(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=2, pipeline=f"\n[quality]\n{JUDGE}\n")
    write_answered(root, 20)

    def reply(request: Recorded) -> Reply:
        body = request.body_json
        if isinstance(body, dict) and body.get("model") == "judge-model":
            return Reply(cut=True)
        return default_reply(request)

    async with open_stub(reply) as stub:
        stub.models = JUDGE_PRICES
        # A judge request's worst case is about $1 (the prompt shows the whole answer).
        result = await overbrainer(root, "quality", "--max-cost", "5", url=stub.url)
        asked = stub.completions
    assert 0 < len(asked) < 19
    assert result.code == 1, result.stderr
    check_capped(asked, 5, "quality", result.out_lines, result.stderr)
