"""Commands load on use: a command imports its own module, not every command's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from overbrainer.cli.commands_registry import COMMAND_MODULES
from overbrainer.cli.group import cli
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
