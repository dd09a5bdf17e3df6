"""`overbrainer tui` end to end in a real terminal (tmux): the first-use wizard in a folder
with no project."""

from __future__ import annotations

from pathlib import Path

from overbrainer.devtools.stub_provider import open_stub
from tests.pipeline_support import (
    overbrainer,
)
from tests.tui_support import needs_tmux, open_terminal

pytestmark = needs_tmux


async def test_the_wizard_writes_a_project_that_passes_config_check_then_auto_runs(
    tmp_path: Path,
) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    async with open_stub() as stub, open_terminal(root, "tui") as term:
        await term.wait_for("step 1 of 7: project name")
        assert "▶ project name: fresh" in await term.screen()
        await term.keys("Enter")
        await term.wait_for("step 2 of 7: provider")
        await term.keys("Left", "Down")
        await term.type("stub")
        await term.keys("Down", "Down")
        await term.type("ftp://nowhere")
        await term.keys("Enter")
        await term.wait_for("✗ the base URL starts with http:// or https://")
        for _ in "ftp://nowhere":
            await term.keys("BSpace")
        await term.type(stub.url)
        await term.keys("Enter")
        await term.wait_for("step 3 of 7: API key")
        await term.type("sk-secret-1234")
        shown = await term.wait_for("••••••••••••••")
        assert "sk-secret" not in shown
        await term.keys("Enter")
        await term.wait_for("step 4 of 7: models")
        await term.type("gen-model")
        await term.keys("Down")
        await term.type("parent-model")
        await term.keys("Enter")
        await term.wait_for("step 5 of 7: topics")
        await term.keys("Enter")
        await term.wait_for("✗ at least one topic is needed: a adds one")
        await term.keys("a")
        await term.type("rust")
        await term.keys("Enter")
        await term.wait_for("▶ rust: 10 subtopics × 30 questions")
        await term.keys("Enter")
        await term.wait_for("step 6 of 7: training")
        await term.keys("Enter")
        shown = await term.wait_for("step 7 of 7: summary")
        assert "sk-secret" not in shown
        await term.keys("Enter")
        await term.wait_for("Start auto now?")
        env = root / ".env"
        assert env.stat().st_mode & 0o777 == 0o600
        assert "OVERBRAINER_PROVIDERS__STUB__API_KEY=sk-secret-1234\n" in env.read_text()
        await term.keys("y")
        shown = await term.wait_for(" orphaned", limit=120)  # the split line
        assert "answers: 300 done, 0 skipped, 0 failed" in shown  # 10 subtopics × 30
        assert "split: 270 train, 30 eval, 0 excluded, 0 orphaned" in shown
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
        assert "EXIT=0" in shown
        check = await overbrainer(root, "config", "check", url=stub.url)
    assert check.code == 0, check.stderr
    for name in ("overbrainer.toml", ".env.example", ".gitignore", "prompts/subtopics.txt"):
        assert (root / name).is_file()


async def test_the_wizard_quits_on_ctrl_c_and_never_overwrites(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    async with open_terminal(root, "tui") as term:
        await term.wait_for("step 1 of 7")
        await term.keys("C-c")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=130" in shown
    assert sorted(p.name for p in root.iterdir()) == []
    (root / ".env").write_text("KEEP=1\n")
    async with open_terminal(root, "tui") as term:
        shown = await term.wait_for("EXIT=")
    assert "EXIT=2" in shown
    # The terminal wraps the long line anywhere, a space included: compare without whitespace.
    wanted = ".env already exists: the wizard never overwrites a file"
    assert "".join(wanted.split()) in "".join(shown.split())
    assert (root / ".env").read_text() == "KEEP=1\n"
