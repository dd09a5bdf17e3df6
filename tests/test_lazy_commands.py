"""Commands load on use: a command imports its own module, not every command's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

from overbrainer.cli.commands_registry import COMMAND_MODULES
from overbrainer.cli.estimate_command import PAID_STAGE_NAMES
from overbrainer.cli.group import cli
from overbrainer.pipeline.estimate import PAID_STAGES
from tests.pipeline_support import make_project


def test_every_listed_command_loads_from_its_module() -> None:
    context = click.Context(cli)
    assert cli.list_commands(context) == sorted(COMMAND_MODULES)
    for name in COMMAND_MODULES:
        command = cli.get_command(context, name)
        assert command is not None and command.name == name, name


def test_starting_imports_no_command_module() -> None:
    code = (
        "import sys, overbrainer.cli.main; "
        "print(sorted(m for m in sys.modules if m.endswith('_command') or m.endswith('_commands')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


LOADED = """
import runpy, sys
sys.argv = ["overbrainer", *sys.argv[1:]]
try:
    runpy.run_module("overbrainer", run_name="__main__")
except SystemExit:
    pass
print(sorted({"rich", "urwid"} & sys.modules.keys()), file=sys.stderr)
"""


def terminal_libraries_loaded(*args: str) -> str:
    """Which of rich and urwid `overbrainer ARGS` imported, run in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED, *args], capture_output=True, text=True, timeout=60
    )
    return done.stderr.splitlines()[-1]


def test_commands_that_draw_no_bar_never_import_rich_nor_urwid(tmp_path: Path) -> None:
    # Each spawned command would pay ~40 ms for rich at start-up (bench/startup.py).
    code = (
        "import importlib, sys, overbrainer.cli.main\n"
        "from overbrainer.cli.commands_registry import COMMAND_MODULES\n"
        "for module in set(COMMAND_MODULES.values()) - {'overbrainer.cli.tui_command'}:\n"
        "    importlib.import_module(module)\n"
        "print(sorted({'rich', 'urwid'} & sys.modules.keys()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
    root = make_project(tmp_path / "p")
    assert terminal_libraries_loaded("--version") == "[]"
    assert terminal_libraries_loaded("-C", str(root), "config", "check") == "[]"
    # The check that can fail: a command that does draw with them loads them.
    assert terminal_libraries_loaded("-C", str(root), "tui") == "['urwid']"


HEAVY = ("trio", "httpx2", "rich", "urwid", "huggingface_hub", "paramiko", "prometheus_client")
"""Libraries a command imports only when it runs: `--version`, `--help` and completion need
none of them (each start-up would pay for them, bench/startup.py)."""

HEAVY_LOADED = """
import runpy, sys
sys.argv = ["overbrainer", *sys.argv[1:]]
try:
    runpy.run_module("overbrainer", run_name="__main__")
except SystemExit:
    pass
print(sorted({HEAVY} & sys.modules.keys()), file=sys.stderr)
""".replace("{HEAVY}", repr(set(HEAVY)))


def heavy_loaded(*args: str, env: dict[str, str] | None = None) -> str:
    """Which heavy libraries `overbrainer ARGS` imported, run in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", HEAVY_LOADED, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    return done.stderr.splitlines()[-1]


def test_version_help_and_completion_import_no_heavy_library(tmp_path: Path) -> None:
    assert heavy_loaded("--version") == "[]"
    assert heavy_loaded("--help") == "[]"
    assert heavy_loaded("split", "--help") == "[]"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    script = {**environ, "_OVERBRAINER_COMPLETE": "bash_source"}
    assert heavy_loaded(env=script) == "[]"
    words = {**environ, "_OVERBRAINER_COMPLETE": "zsh_complete", "COMP_CWORD": "1"}
    assert heavy_loaded(env={**words, "COMP_WORDS": "overbrainer "}) == "[]"
    root = make_project(tmp_path / "p")
    # The check that can fail: a command that runs imports Trio.
    assert heavy_loaded("-C", str(root), "history") == "['trio']"


def test_defining_every_command_imports_no_heavy_library() -> None:
    code = (
        "import importlib, sys, overbrainer.cli.main\n"
        "from overbrainer.cli.commands_registry import COMMAND_MODULES\n"
        "for module in set(COMMAND_MODULES.values()):\n"
        "    importlib.import_module(module)\n"
        f"print(sorted({set(HEAVY)!r} & sys.modules.keys()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_estimate_offers_the_paid_stages() -> None:
    assert tuple(stage.value for stage in PAID_STAGES) == PAID_STAGE_NAMES
