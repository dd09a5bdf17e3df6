"""The init wizard in a real terminal (tmux), against a loopback provider that lists its models."""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.llm.types import Json
from overbrainer.ui.tui.wizard_estimate import CAP_PROBLEM
from tests.tui_support import Terminal, needs_tmux, open_terminal

STUB_MODELS: Json = {
    "data": [
        {"id": "gen-model", "pricing": {"prompt": "0.000001", "completion": "0.000002"}},
        {"id": "parent-model", "pricing": {"prompt": "0.000003", "completion": "0.000015"}},
        {"id": "embed-model", "pricing": {"prompt": "0.0000001", "completion": "0"}},
    ]
}


KEY = "sk-wizard-secret-1234"


async def to_the_models(term: Terminal, url: str) -> None:
    """Steps 1 to 3: the directory's name, a custom `stub` provider at `url`, a key."""
    await term.wait_for("step 1 of 7: project name")
    await term.keys("Enter")
    await term.wait_for("step 2 of 7: provider")
    await term.keys("Left", "Down")
    await term.type("stub")
    await term.keys("Down", "Down")
    await term.type(url)
    await term.keys("Enter")
    await term.wait_for("step 3 of 7: API key")
    await term.type(KEY)
    await term.keys("Enter")
    await term.wait_for("step 4 of 7: models")


def config_of(root: Path) -> dict[str, object]:
    """The overbrainer.toml the wizard wrote."""
    return tomllib.loads((root / "overbrainer.toml").read_text())


@needs_tmux
async def test_the_terminal_wizard_flags_a_model_then_shows_the_estimate_and_writes_its_cap(
    tmp_path: Path,
) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    async with open_stub() as stub, open_terminal(root, "tui") as term:
        stub.models = STUB_MODELS
        await to_the_models(term, stub.url)
        await term.wait_for("stub lists 3 models")
        await term.type("gen-model")
        await term.keys("Down")
        await term.type("parent-model")
        await term.keys("Down", "Down")
        await term.type("embed-modle")
        await term.keys("Enter")
        flagged = "model embed-modle is not in stub's list (did you mean embed-model?)"
        shown = await term.wait_for(f"✗ {flagged}: Enter again keeps it")
        # The line wraps at 100 columns, at a space: compare without whitespace.
        assert "(alistcanbeincomplete)" in "".join(shown.split())
        await term.keys("Enter")
        await term.wait_for("step 5 of 7: topics")
        await term.keys("a")
        await term.type("rust")
        await term.keys("Down")
        await term.type("ownership and borrowing")
        await term.keys("Down", "BSpace", "BSpace")
        await term.type("0")
        await term.keys("Enter")
        await term.wait_for("✗ subtopics: a whole number, at least 1")
        await term.keys("BSpace")
        await term.type("3")
        await term.keys("Down", "BSpace", "BSpace")
        await term.type("4")
        await term.keys("Enter")
        await term.wait_for("▶ rust: 3 subtopics × 4 questions")
        await term.wait_for("    ownership and borrowing")
        await term.keys("Enter")
        await term.wait_for("step 6 of 7: training")
        await term.keys("Enter")
        shown = await term.wait_for("(the estimate's high end, rounded up)")
        assert KEY not in shown
        assert "embedder  embed-modle (not in stub's list)" in shown
        # 1 list of subtopics, 3 batches of questions, 12 answers: nothing measured yet, so
        # each request writes its stage's floor (60, 100 and 100 tokens), and 16,384 at most.
        assert "estimate  subtopics: " in shown and " in + 60-16,384 out tokens, $" in shown
        assert " in + 300-49,152 out tokens, $" in shown
        assert " in + 1,200-196,608 out tokens, $" in shown
        total = re.search(r"total \$([\d.,]+)-\$([\d.,]+) \(high", shown)
        cap = re.search(r"▶ spend cap in USD \(empty: no cap\): (\S+)  \(", shown)
        assert total is not None and cap is not None, shown
        assert float(cap[1]) >= float(total[2].replace(",", "")) > 0
        await term.keys("Enter")
        await term.wait_for("Start auto now?")
        config = config_of(root)
        assert config["pipeline"] == {"max_cost_usd": float(cap[1])}
        assert config["topics"] == [
            {
                "name": "rust",
                "description": "ownership and borrowing",
                "subtopics": 3,
                "questions_per_subtopic": 4,
            }
        ]
        assert config["roles"]["embedder"]["model"] == "embed-modle"  # type: ignore[index]
        await term.keys("n")
        await term.wait_for(f"spend cap  ${float(cap[1]):.2f}")  # the Project view
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown


@asynccontextmanager
async def silent_provider() -> AsyncIterator[str]:
    """The base URL of a server that takes connections and never answers."""

    async def hold(stream: trio.SocketStream) -> None:
        async with stream:
            await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        [listener] = await nursery.start(
            functools.partial(trio.serve_tcp, host="127.0.0.1"), hold, 0
        )
        host, port = listener.socket.getsockname()[:2]
        yield f"http://{host}:{port}/v1"
        nursery.cancel_scope.cancel()


@needs_tmux
async def test_a_silent_provider_never_holds_the_wizard_and_an_edited_cap_is_written(
    tmp_path: Path,
) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    async with silent_provider() as url, open_terminal(root, "tui") as term:
        await to_the_models(term, url)
        await term.wait_for("checking stub's model list…")
        await term.type("gen-model")
        await term.keys("Down")
        await term.type("parent-model")
        await term.keys("Enter")
        await term.wait_for("step 5 of 7: topics")
        await term.keys("a")
        await term.type("rust")
        await term.keys("Enter", "Enter")
        await term.wait_for("step 6 of 7: training")
        await term.keys("Enter")
        # Still no answer from the provider: the summary has the tokens, and says so.
        shown = await term.wait_for("cost: asking stub for prices…")
        assert " in + 30,000-4,915,200 out tokens\n" in shown  # 300 answers, no price
        assert "$" not in shown
        await term.type("abc")
        await term.keys("Enter")
        await term.wait_for(f"✗ {CAP_PROBLEM}")
        await term.keys("BSpace", "BSpace", "BSpace")
        await term.type("12.5")
        shown = await term.wait_for("cost unknown: stub is unreachable (", limit=30)
        assert "▶ spend cap in USD (empty: no cap): 12.5\n" in shown
        await term.keys("Enter")
        await term.wait_for("Start auto now?")
        assert config_of(root)["pipeline"] == {"max_cost_usd": 12.5}
        await term.keys("n")
        await term.wait_for("spend cap  $12.50")  # the Project view
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown
