"""`overbrainer estimate --json` as a real subprocess against the stub provider."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from overbrainer.devtools.stub_provider import open_stub
from tests.pipeline_support import PRICES, make_project, overbrainer

PARENT = (Decimal("0.001"), Decimal("0.002"))
"""USD per token of the parent in `PRICES`."""


async def test_json_gives_each_stage_and_the_total_as_the_lines_do(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")  # two topics, 2 subtopics x 2 questions each
    async with open_stub() as stub:
        stub.models = PRICES
        text = await overbrainer(root, "estimate", url=stub.url)
        result = await overbrainer(root, "estimate", "--json", url=stub.url)
    assert result.code == 0, result.stderr
    found = json.loads(result.stdout)  # stdout holds the document alone
    assert (found["command"], found["exit_code"], found["error"]) == ("estimate", 0, None)
    # The human lines are the same, on stderr.
    assert all(line in result.stderr for line in text.stdout.splitlines())
    stages = {stage["stage"]: stage for stage in found["stages"]}
    assert list(stages) == ["subtopics", "questions", "answers"]
    answers = stages["answers"]
    assert (answers["items"], answers["requests"], answers["present"], answers["planned"]) == (
        8,
        8,
        0,
        8,
    )
    assert (answers["model"], answers["measured"]) == ("parent-model", 0)
    low, high = answers["low"], answers["high"]
    assert low["output_tokens"] == 8 * 100
    assert high["output_tokens"] == 8 * 16384
    # Exact money: the tokens times the listed price, as a decimal string.
    assert (
        Decimal(low["cost"]) == low["input_tokens"] * PARENT[0] + low["output_tokens"] * PARENT[1]
    )
    assert Decimal(high["cost"]) == (
        high["input_tokens"] * PARENT[0] + high["output_tokens"] * PARENT[1]
    )
    assert Decimal(low["batch_cost"]) == Decimal(low["cost"]) / 2  # half price through a batch
    assert stages["questions"]["low"]["batch_cost"] is None  # only answers go through a batch
    total = found["total"]
    assert Decimal(total["cost_low"]) == sum(Decimal(s["low"]["cost"]) for s in stages.values())
    assert Decimal(total["cost_high"]) == sum(Decimal(s["high"]["cost"]) for s in stages.values())
    assert (total["unpriced_models"], found["notes"]) == ([], [])


async def test_json_without_prices_says_unknown_as_null(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:  # its listing has no prices, nor does the configuration
        result = await overbrainer(root, "estimate", "--json", url=stub.url)
    found = json.loads(result.stdout)
    assert found["exit_code"] == 0
    assert [stage["low"]["cost"] for stage in found["stages"]] == [None, None, None]
    assert found["total"] == {
        "cost_low": None,
        "cost_high": None,
        "unpriced_models": ["gen-model", "parent-model"],
    }


async def test_json_of_a_broken_configuration_is_a_document_with_exit_2(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    (root / "overbrainer.toml").write_text("[project\n")
    result = await overbrainer(root, "estimate", "--json", url="http://127.0.0.1:9/v1")
    assert result.code == 2
    found = json.loads(result.stdout)
    assert found["exit_code"] == 2
    assert found["error"].startswith("invalid configuration: TOML syntax error")
    assert "stages" not in found
