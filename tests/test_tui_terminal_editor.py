"""`overbrainer tui` end to end in a real terminal (tmux): the editor borrows the terminal to
edit overbrainer.toml (reloaded) and one record of the Dataset view."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import attrs

from overbrainer.storage.ids import question_id
from overbrainer.storage.records import RejectedQuestion
from tests.pipeline_support import (
    make_project,
    write_questions,
)
from tests.tui_support import needs_tmux, open_terminal

pytestmark = needs_tmux


async def test_the_editor_borrows_the_terminal_and_config_changes_are_reloaded(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    config = root / "overbrainer.toml"
    editor = 'sh -c \'echo "# touched by the editor" >> "$1"\' editor'
    async with open_terminal(root, "tui", env={"VISUAL": editor}) as term:
        await term.wait_for("nothing run yet")
        await term.keys("1", "e")
        await term.wait_for("edited overbrainer.toml")
        assert config.read_text().endswith("# touched by the editor\n")
        await term.wait_for("✓ config reloaded", limit=10)
        good = config.read_text()
        config.write_text(good + "[pipeline\n")
        shown = await term.wait_for("✗ overbrainer.toml: ", limit=10)
        assert "TOML syntax error" in shown
        config.write_text(good.replace('name = "demo"', 'name = "renamed"'))
        shown = await term.wait_for("✓ config reloaded", limit=10)
        await term.wait_for("renamed", limit=10)
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown


async def test_the_dataset_view_edits_one_record_refuses_a_bad_edit_and_deletes_one(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    questions = write_questions(root, 3)
    data = root / "data" / "questions.jsonl"
    before = data.read_text().splitlines()
    editor = tmp_path / "editor.sh"
    # The first edit rewords the question, the second leaves the file broken.
    editor.write_text(
        "#!/bin/sh\n"
        f'if [ -e "{tmp_path}/edited" ]; then echo "{{broken" > "$1"; exit 0; fi\n'
        f'touch "{tmp_path}/edited"\n'
        'sed -i "s/Question 0 about ownership?/A better question?/" "$1"\n'
    )
    editor.chmod(0o755)
    first = questions[0]
    new = question_id(first.subtopic_id, "A better question?")
    async with open_terminal(root, "tui", env={"VISUAL": str(editor)}) as term:
        await term.wait_for("nothing run yet")
        await term.keys("2", "Down", "Down", "e")
        await term.wait_for(f"question {first.id} edited: new id {new}")
        after = data.read_text().splitlines()
        reworded = attrs.evolve(first, id=new, text="A better question?")
        assert after == [*before[1:], reworded.to_json()]
        await term.wait_for("▶ A better question?")
        await term.keys("e")
        shown = await term.wait_for("nothing changed: the edited question is not valid: not JSON")
        assert data.read_text().splitlines() == after
        await term.keys("d")
        await term.wait_for(f"delete question {new}? y deletes it, any other key does not")
        await term.keys("y")
        await term.wait_for(f"deleted question {new}, now rejected")
        assert data.read_text().splitlines() == before[1:]
        rejected = RejectedQuestion(new, "ownership", first.subtopic_id, "A better question?")
        assert (root / "data" / "rejected.jsonl").read_text() == rejected.to_json() + "\n"
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown
    left = [
        n
        for n in os.listdir(tempfile.gettempdir())
        if n.startswith((f"overbrainer-questions-{first.id}-", f"overbrainer-questions-{new}-"))
    ]
    assert left == []  # the temp files are removed
