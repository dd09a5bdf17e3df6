"""A project from `overbrainer init` pointed at a real third-party server, and the real command.

The project is what a new user gets: `overbrainer init --provider PRESET`'s files (the
server's provider section, with its dialect), then the few edits the user makes: the models,
how many subtopics and questions, no `[training]` for a dataset-only run. Each edit must find
its line: a template that changes under the tests fails them here, not as a puzzling count
later.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import attrs


@attrs.frozen
class Run:
    """A finished `overbrainer` command: exit code, output, and how long it took."""

    code: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def out_lines(self) -> list[str]:
        """The lines on stdout."""
        return self.stdout.splitlines()


@attrs.frozen
class Roles:
    """What the project asks of the server: its models and the parent's reasoning."""

    generator: str
    parent: str
    judge: str | None = None
    reasoning: bool = False
    max_tokens: int | None = None


def _replace(text: str, pattern: str, replacement: str, count: int = 1) -> str:
    new, found = re.subn(pattern, replacement, text, flags=re.MULTILINE)
    if found != count:
        raise AssertionError(f"init's overbrainer.toml: {pattern!r} matched {found}, not {count}")
    return new


def init_project(
    root: Path,
    preset: str,
    roles: Roles,
    *,
    subtopics: int,
    questions: int,
    pipeline: str = "",
) -> Path:
    """`overbrainer init root --provider preset`, then the edits a user makes for `roles`."""
    done = subprocess.run(
        [sys.executable, "-m", "overbrainer", "init", str(root), "--provider", preset],
        env=command_env({}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    path = root / "overbrainer.toml"
    text = path.read_text(encoding="utf-8")
    [provider] = re.findall(r"^\[providers\.([a-z_]+)\]$", text, flags=re.MULTILINE)
    # A dataset-only project: everything from the training section on goes.
    text = text[: text.index("# Training:")]
    text = _replace(text, r"^subtopics = \d+", f"subtopics = {subtopics}")
    text = _replace(text, r"^questions_per_subtopic = \d+", f"questions_per_subtopic = {questions}")
    limit = "" if roles.max_tokens is None else f"\nmax_tokens = {roles.max_tokens}"
    for role, model in (("generator", roles.generator), ("parent", roles.parent)):
        section = rf'(^\[roles\.{role}\][^\[]*?^model = )"[^"]*"'
        text = _replace(text, section, rf'\g<1>"{model}"{limit}')
    reasoning = "true" if roles.reasoning else "false"
    text = _replace(text, r"^reasoning = true", f"reasoning = {reasoning}")
    if pipeline:
        text = _replace(text, r"^\[pipeline\]\n", f"[pipeline]\n{pipeline}\n")
    if roles.judge is not None:
        judge = f'provider = "{provider}", model = "{roles.judge}"'
        if roles.max_tokens is not None:
            judge += f", max_tokens = {roles.max_tokens}"
        text += f"\n[quality]\njudge = {{ {judge} }}\n"
    path.write_text(text, encoding="utf-8")
    return root


def command_env(extra: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without OVERBRAINER_* keys, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERBRAINER_", "VAULT_"))}
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def overbrainer(root: Path, *args: str, env: Mapping[str, str], limit: float) -> Run:
    """Run `overbrainer -C root ARGS` to its end, within `limit` seconds."""
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "overbrainer", "-C", str(root), *args],
            env=command_env(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=limit,
            check=False,
        )
    except subprocess.TimeoutExpired as late:
        # What it had said before it was killed is the clue to where it hung.
        said = late.stderr.decode(errors="replace") if isinstance(late.stderr, bytes) else ""
        tail = "\n".join(said.splitlines()[-15:])
        raise AssertionError(
            f"overbrainer {' '.join(args)} ran past {limit:.0f} s:\n{tail}"
        ) from None
    return Run(done.returncode, done.stdout, done.stderr, time.monotonic() - started)
