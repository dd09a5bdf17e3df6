"""`overbrainer init [DIR]`: write a new project."""

from __future__ import annotations

import logging
import shlex
from pathlib import Path

import click

from overbrainer.cli.context import project_dir
from overbrainer.cli.group import cli
from overbrainer.model.errors import OverbrainerError

PRESET_NAMES = (
    "openrouter",
    "openai",
    "anthropic",
    "deepseek",
    "groq",
    "together",
    "fireworks",
    "ollama",
    "vllm",
    "llama.cpp",
    "litellm",
    "openai-compatible",
)
"""`init --provider` choices: `project/presets.py`'s (kept here so `--help` imports nothing)."""

log = logging.getLogger(__name__)


@cli.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--demo",
    is_flag=True,
    help="A small project on the embedded stand-in provider: runs offline, no key needed.",
)
@click.option(
    "--provider",
    "provider",
    type=click.Choice(PRESET_NAMES),
    help="Write the project for this kind of provider (default: openrouter).",
)
def init(directory: Path | None, demo: bool, provider: str | None) -> None:
    """Write a new project in DIR (default: the -C directory)."""
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.project.init import init_project
    from overbrainer.project.presets import PRESETS

    if demo and provider is not None:
        click.echo("error: --demo and --provider cannot be combined", err=True)
        raise SystemExit(2)
    root = directory if directory is not None else project_dir()
    preset = None if provider is None else PRESETS[provider]
    try:
        written = init_project(root, demo=demo, preset=preset)
    except OverbrainerError as error:
        click.echo(f"error: {error.message}", err=True)
        raise SystemExit(error.exit_code) from None
    for path in written:
        log.info("created %s", path)
    where, ob = _hint_prefixes(directory, root)
    if demo:
        click.echo(f"next: make the demo dataset with `{where}{ob} run --no-train`")
        return
    if preset is not None and preset.local:
        click.echo(
            "next: copy .env.example to .env (the server's address is in it), start the "
            f"server, then `{where}{ob} config check --online` and `{ob} run`"
        )
        return
    click.echo(
        "next: copy .env.example to .env and put the provider's key in it, "
        f"then `{where}{ob} config check` and `{ob} run`"
    )


def _hint_prefixes(directory: Path | None, root: Path) -> tuple[str, str]:
    """`cd DIR && ` for `init DIR`, else `overbrainer -C DIR` for `-C DIR init`, so the hint
    works when pasted where the user typed `init`."""
    if directory is not None:
        return f"cd {shlex.quote(str(root))} && ", "overbrainer"
    if root == Path("."):
        return "", "overbrainer"
    return "", f"overbrainer -C {shlex.quote(str(root))}"
