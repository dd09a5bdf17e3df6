"""`overbrainer estimate` and the estimate lines of `run`, against the stub provider."""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.events.types import Stage
from overbrainer.storage.history import append_history
from tests.pipeline_support import PRICES, history, make_project, overbrainer, write_questions

LINE = re.compile(
    r"estimate: (?P<stage>\w+): (?P<items>[\d,]+) to do \((?P<requests>[\d,]+) requests?"
    r"(?:; (?P<present>[\d,]+) present, (?P<planned>[\d,]+) planned)?\); "
    r"tokens about (?P<tin>[\d,]+) in, (?P<tout>[\d,]+) out \((?P<basis>[^)]+)\); "
    r"\$(?P<low>[\d.,]+)-\$(?P<high>[\d.,]+)"
    r"(?: \(\$(?P<batch_low>[\d.,]+)-\$(?P<batch_high>[\d.,]+) batch\))?"
)
# PRICES: the parent at $0.001 per input token and $0.002 per output token; the generator at
# a thousandth of that. Roles' max_tokens: 16384 (the default).
PARENT = (0.001, 0.002)
GENERATOR = (0.000001, 0.000002)
MAX_TOKENS = 16384


def parse(stdout: str) -> dict[str, dict[str, str]]:
    found = {}
    for line in stdout.splitlines():
        match = LINE.fullmatch(line)
        if match:
            found[match["stage"]] = match.groupdict()
    return found


def number(text: str) -> float:
    return float(text.replace(",", ""))


def money(value: float) -> float:
    return round(value, 2) if value >= 1 else round(value, 4)


async def test_a_fresh_project_is_estimated_from_its_topics_and_prompts(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")  # two topics, 2 subtopics x 2 questions each
    async with open_stub() as stub:
        stub.models = PRICES
        result = await overbrainer(root, "estimate", url=stub.url)
        assert stub.completions == []  # an estimate pays for nothing
    assert result.code == 0, result.stderr
    lines = parse(result.stdout)
    counts = {stage: (lines[stage]["items"], lines[stage]["requests"]) for stage in lines}
    assert counts == {"subtopics": ("2", "2"), "questions": ("4", "4"), "answers": ("8", "8")}
    answers = lines["answers"]
    assert answers["basis"] == "no answers measured yet: at least 100 out each"
    assert number(answers["tout"]) == 8 * 100
    tin = number(answers["tin"])
    assert number(answers["low"]) == money(tin * PARENT[0] + 8 * 100 * PARENT[1])
    # The high end: a token per prompt byte (bytes / 3 is `tin`) and every max_tokens.
    high = number(answers["high"])
    assert money(tin * PARENT[0] + 8 * MAX_TOKENS * PARENT[1]) < high
    assert high <= money((3 * tin + 8 * 32) * PARENT[0] + 8 * MAX_TOKENS * PARENT[1])
    # The parent's provider (openai protocol) has a batch API at half price by default.
    assert number(answers["batch_low"]) == money(number(answers["low"]) / 2)
    assert number(answers["batch_high"]) == money(number(answers["high"]) / 2)
    assert lines["questions"]["batch_low"] is None  # only answers can go through a batch
    assert result.stdout.splitlines()[-1].startswith("estimate: total $")


async def test_history_gives_the_tokens_per_item(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 6)
    async with open_stub() as stub:
        stub.models = PRICES
        first = await overbrainer(root, "answers", url=stub.url)
        assert first.code == 0, first.stderr
        write_questions(root, 10)  # the same six, and four more
        [record] = history(root)
        # A compare's judging in the history is not an answers execution: it changes nothing.
        judge = attrs.evolve(record, stage=Stage.JUDGE, input_tokens=10**6, output_tokens=10**6)
        assert append_history(root / ".overbrainer" / "history.jsonl", judge)
        result = await overbrainer(root, "estimate", "answers", url=stub.url)
    assert result.code == 0, result.stderr
    per_in, per_out = record.input_tokens / record.done, record.output_tokens / record.done
    # To do: the 4 unanswered questions. The 6 that the topics' counts still call for are not
    # counted: `answers` does not make questions (a plain `estimate` counts them, as planned).
    items = 4
    tin, tout = round(per_in * items), round(per_out * items)
    low = tin * PARENT[0] + tout * PARENT[1]
    line = parse(result.stdout)["answers"]
    assert (line["items"], line["requests"], line["tin"], line["tout"]) == (
        str(items),
        str(items),
        f"{tin:,}",
        f"{tout:,}",
    )
    assert line["basis"] == "measured over 6 earlier answers"
    assert number(line["low"]) == money(low)
    assert number(line["high"]) > money(tin * PARENT[0] + items * MAX_TOKENS * PARENT[1])
    assert number(line["batch_low"]) == money(number(line["low"]) / 2)


async def test_run_says_the_estimate_before_each_stage_and_warns_below_the_cap(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:
        stub.models = PRICES
        result = await overbrainer(root, "run", "--no-train", "--max-cost", "0.001", url=stub.url)
    stderr = result.stderr.splitlines()
    warning = next(i for i, line in enumerate(stderr) if "is below the estimate's low end" in line)
    first_stage = next(i for i, line in enumerate(stderr) if "subtopics: 2 to process" in line)
    assert warning < first_stage
    assert "the spend cap $0.0010 is below the estimate's low end $" in stderr[warning]
    assert any("estimate: subtopics: 2 to do (2 requests)" in line for line in stderr)
