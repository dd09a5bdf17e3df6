"""Commands load on use: a command imports its own module, not every command's."""

from __future__ import annotations

import subprocess
import sys

import click

from overbrainer.cli.commands_registry import COMMAND_MODULES
from overbrainer.cli.group import cli


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
