"""The README's first command: its overbrainer part, run here, prints what the README shows.

`.ci/run` runs the whole line verbatim in a fresh virtual environment and hands its output to
this test through `OVERBRAINER_TEST_README_OUTPUT`; without it the test runs the line's
overbrainer commands with the installed package. Log lines are compared without their time
stamps, stdout and stderr each in order (the two streams may interleave differently).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z  ")


def first_block() -> tuple[str, list[str]]:
    """The README's first `$ command` line and the output lines shown under it."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("    $ "))
    shown = []
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        shown.append(line[4:])
    return lines[start][6:], shown


def streams(lines: list[str]) -> tuple[list[str], list[str]]:
    """The log lines (time stamps cut) and the other lines, each in order."""
    logs = [STAMP.sub("", line) for line in lines if STAMP.match(line)]
    return logs, [line for line in lines if not STAMP.match(line)]


def test_the_first_command_is_one_line_with_a_venv_and_the_demo() -> None:
    command, shown = first_block()
    assert command.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install")
    assert command.endswith("overbrainer init demo --demo && overbrainer -C demo run --no-train")
    assert shown, "the README shows the command's output"


def test_the_first_command_prints_what_the_readme_shows(tmp_path: Path) -> None:
    command, shown = first_block()
    recorded = os.environ.get("OVERBRAINER_TEST_README_OUTPUT")
    if recorded is not None:
        printed = Path(recorded).read_text(encoding="utf-8").splitlines()
        # What pip said before overbrainer's first line is the installer's, not ours.
        first = next(
            i for i, line in enumerate(printed) if STAMP.sub("", line) == streams(shown[:1])[0][0]
        )
        assert streams(printed[first:]) == streams(shown)
        return
    ours = command[command.index("overbrainer init") :]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERBRAINER_", "VAULT_"))}
    done = subprocess.run(
        ["bash", "-c", ours], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    logs, others = streams(shown)
    assert [STAMP.sub("", line) for line in done.stderr.splitlines()] == logs
    assert done.stdout.splitlines() == others
