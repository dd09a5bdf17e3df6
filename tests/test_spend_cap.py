"""The spend cap through the real command against the stub: a ceiling, with or without usage."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.llm.types import CompletionRequest
from overbrainer.model.usage import Price, Usage
from overbrainer.pipeline.spend import decimal, estimate_tokens, exact_cost, usd, worst_usage
from overbrainer.storage.history import HistoryStatus
from tests.pipeline_support import (
    PRICES,
    events,
    history,
    make_project,
    overbrainer,
    read_examples,
    write_questions,
)

PARENT = Price(1000.0, 2000.0)
"""The parent's price in `PRICES`: $0.001 per input token, $0.002 per output token."""

CAPPED = re.compile(
    r"error: spend cap reached: \$(\S+) of \$(\S+) "
    r"\(the next request could cost up to \$(\S+)\); run the command again to continue"
)


def request_of(recorded: Recorded) -> CompletionRequest:
    """What the command asked, read back from the stub's log (for the worst case)."""
    body = recorded.body_json
    assert isinstance(body, dict)
    tokens = body["max_tokens"]
    assert isinstance(tokens, int)
    return CompletionRequest(
        recorded.prompt or "",
        recorded.system,
        max_tokens=tokens,
        json_list="response_format" in body,
    )


async def test_the_cap_is_a_ceiling_at_concurrency_8(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=8)
    write_questions(root, 20)
    env = {"OVERBRAINER_ROLES__PARENT__MAX_TOKENS": "100"}
    reply = Reply(content="An answer.", reasoning="Some thinking.", usage=(30, 60), delay=0.2)
    async with open_stub(lambda _: reply) as stub:
        stub.models = PRICES
        result = await overbrainer(root, "answers", "--max-cost", "1", url=stub.url, env=env)
        asked = stub.completions
    # Every request's cost from the stub's log: the usage it scripted, at the listed price.
    n = len(asked)
    each = exact_cost(Usage(30, 60), PARENT)
    assert each == Fraction(15, 100)
    spent = n * each
    assert spent <= 1
    # It stopped only when the next request's worst case did not fit under the cap.
    worst = exact_cost(worst_usage(request_of(asked[-1])), PARENT)
    assert spent + worst > 1
    assert 0 < n < 8  # the old rule sent a whole batch of 8 at once, then more
    assert result.code == 1, result.stderr
    assert result.out_lines == [
        f"answers: {n} done, 0 skipped, 0 failed, 0 excluded; "
        f"tokens {30 * n} in, {60 * n} out; cost ${float(spent):.4f}"
    ]
    last = result.stderr.strip().splitlines()[-1]
    found = CAPPED.fullmatch(last)
    assert found is not None, last
    assert found.groups() == (usd(spent)[1:], "1.0000", usd(worst)[1:])
    assert len(read_examples(root)) == n
    [line] = history(root)
    assert (line.status, line.done, line.input_tokens, line.output_tokens) == (
        HistoryStatus.INTERRUPTED,
        n,
        30 * n,
        60 * n,
    )
    assert line.cost is not None and decimal(line.cost) == spent
    assert line.reason == f"spend cap reached: {usd(spent)} of $1.0000"
    assert not line.cost_estimated


async def test_a_provider_without_usage_is_capped_on_estimates(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=8)
    write_questions(root, 20)
    env = {"OVERBRAINER_ROLES__PARENT__MAX_TOKENS": "200"}
    # 150 + 150 bytes of answer: an estimated 100 output tokens, $0.20 at the parent's price.
    reply = Reply(content="a" * 150, reasoning="r" * 150, usage=None, delay=0.1)
    async with open_stub(lambda _: reply) as stub:
        stub.models = PRICES
        result = await overbrainer(
            root, "--events", str(tmp_path / "events.jsonl"), "answers", "--max-cost", "1",
            url=stub.url, env=env,
        )  # fmt: skip
        asked = stub.completions
    # The estimate of each request, recomputed from what the stub received and answered.
    estimates = [
        Usage(estimate_tokens(r.system, r.prompt), estimate_tokens("a" * 150, "r" * 150))
        for r in asked
    ]
    counted = sum((exact_cost(u, PARENT) for u in estimates), Fraction(0))
    assert 0 < len(asked) < 8
    assert counted <= 1  # the cap holds on the estimates: the real spend is off by their error
    assert result.code == 1, result.stderr
    [summary] = result.out_lines
    tokens_in = sum(u.input_tokens for u in estimates)
    assert summary == (
        f"answers: {len(asked)} done, 0 skipped, 0 failed, 0 excluded; "
        f"tokens {tokens_in} in, {100 * len(asked)} out; cost ${float(counted):.4f} (estimated)"
    )
    assert CAPPED.fullmatch(result.stderr.strip().splitlines()[-1])
    [line] = history(root)
    assert (line.status, line.cost_estimated) == (HistoryStatus.INTERRUPTED, True)
    assert line.cost is not None and abs(decimal(line.cost) - counted) < Fraction(1, 10**9)
    raw = (root / ".overbrainer" / "history.jsonl").read_text()
    assert '"cost_estimated":true,"reason":"spend cap reached: $' in raw
    done = [e for e in events(tmp_path / "events.jsonl") if e["event"] == "item_done"]
    assert len(done) == len(asked)
    assert all(e["estimated"] is True for e in done)
    # The records keep what the provider said: no usage.
    assert {(e.meta.input_tokens, e.meta.output_tokens) for e in read_examples(root)} == {(0, 0)}


async def test_replies_with_usage_mark_nothing_estimated(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    async with open_stub(lambda _: Reply(content="A.", reasoning="R.", usage=(3, 4))) as stub:
        stub.models = PRICES
        result = await overbrainer(
            root, "--events", str(tmp_path / "ev.jsonl"), "answers", url=stub.url
        )
    assert result.code == 0, result.stderr
    assert not result.out_lines[0].endswith("(estimated)")
    raw = (root / ".overbrainer" / "history.jsonl").read_text()
    assert "cost_estimated" not in raw and "reason" not in raw
    assert all("estimated" not in json.dumps(e) for e in events(tmp_path / "ev.jsonl"))


async def test_one_cap_covers_every_stage_of_run(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=8)
    prices = {"gen-model": Price(100.0, 100.0), "parent-model": Price(1000.0, 1000.0)}
    env = {
        "OVERBRAINER_ROLES__GENERATOR__MAX_TOKENS": "200",
        "OVERBRAINER_ROLES__PARENT__MAX_TOKENS": "100",
    }
    async with open_stub() as stub:
        stub.models = {
            "data": [
                {"id": model, "pricing": {"prompt": str(p.input_per_million / 1e6),
                                          "completion": str(p.output_per_million / 1e6)}}
                for model, p in prices.items()
            ]
        }  # fmt: skip
        result = await overbrainer(root, "run", "--max-cost", "0.6", url=stub.url, env=env)
        asked = stub.completions
    assert result.code == 1, result.stderr
    # What every request cost, from the stub's log: its (deterministic) default usage.
    costs = []
    for recorded in asked:
        body = recorded.body_json
        assert isinstance(body, dict)
        tokens_in, tokens_out = default_reply(recorded).usage or (0, 0)
        model = body["model"]
        assert isinstance(model, str)
        costs.append(exact_cost(Usage(tokens_in, tokens_out), prices[model]))
    spent = sum(costs, Fraction(0))
    assert spent <= Fraction(6, 10)
    lines = history(root)
    assert [(h.stage.value, h.status) for h in lines] == [
        ("subtopics", HistoryStatus.OK),
        ("questions", HistoryStatus.OK),
        ("answers", HistoryStatus.INTERRUPTED),
    ]
    assert sum(decimal(h.cost or 0.0) for h in lines) == spent
    # Answers got only what the earlier stages left: the cap is the command's, not the stage's.
    answers = lines[2]
    assert 0 < answers.done < 8
    assert answers.reason == f"spend cap reached: {usd(spent)} of $0.6000"
    worst = exact_cost(worst_usage(request_of(asked[-1])), prices["parent-model"])
    assert spent + worst > Fraction(6, 10)
    assert len(result.out_lines) == 3
    assert CAPPED.fullmatch(result.stderr.strip().splitlines()[-1])
