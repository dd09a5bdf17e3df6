"""Floats in our files are laid out as serde_json (the reference) writes them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.model.serde_float import serde_float
from tests.pipeline_support import PRICES, make_project, overbrainer


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.00002, "0.00002"),
        (0.0001, "0.0001"),
        (0.000015, "0.000015"),
        (0.000001, "1e-6"),
        (1.5e-7, "1.5e-7"),
        (0.0, "0.0"),
        (2.0, "2.0"),
        (0.3, "0.3"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e16"),
        (1.25e17, "1.25e17"),
        (-0.00002, "-0.00002"),
    ],
)
def test_the_layout_is_ryus(value: float, text: str) -> None:
    assert serde_float(value) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_finite_float_reads_back_as_itself(value: float) -> None:
    text = serde_float(value)
    assert float(text) == value
    assert math.copysign(1.0, float(text)) == math.copysign(1.0, value)
    assert json.loads(text) == value


async def test_the_history_writes_a_small_cost_as_the_reference_does(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")

    def two_names(_request: Recorded) -> Reply:
        # 10 in, 5 out at the listed $1 and $2 per million: $0.00002.
        return Reply(content=json.dumps(["Borrowing", "Moves"]), usage=(10, 5))

    async with open_stub(two_names) as stub:
        stub.models = PRICES
        result = await overbrainer(root, "subtopics", "--topic", "ownership", url=stub.url)
    assert result.code == 0, result.stderr
    line = (root / ".overbrainer" / "history.jsonl").read_text()
    assert ',"input_tokens":10,"output_tokens":5,"cost":0.00002}\n' in line
