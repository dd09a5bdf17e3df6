"""`overbrainer skill install`: the bundled agent skill, written where a coding agent finds it."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

import click

from overbrainer import __version__
from overbrainer.cli.context import project_dir
from overbrainer.cli.group import cli
from overbrainer.model.errors import EXIT_USAGE
from overbrainer.project.directory import find_root
from overbrainer.storage import write_atomic


class SkillRefused(click.ClickException):
    """Nothing was written: one `error:` line and exit 2."""

    exit_code = EXIT_USAGE


SKILL_DIR = Path("overbrainer")
SKILL_FILE = "SKILL.md"


def bundled_skill() -> str:
    """The SKILL.md shipped with this version of overbrainer."""
    return resources.files("overbrainer.templates").joinpath(SKILL_FILE).read_text("utf-8")


def skill_path(global_: bool, directory: Path | None, project: Path, home: str) -> Path:
    """Where the skill goes: `DIR/overbrainer/`, `~/.claude/skills/overbrainer/`, or the
    project's `.claude/skills/overbrainer/`."""
    if directory is not None:
        return directory / SKILL_DIR / SKILL_FILE
    if global_:
        if not home:
            raise SkillRefused("HOME is not set: --global needs it (or use --dir DIR)")
        return Path(home) / ".claude" / "skills" / SKILL_DIR / SKILL_FILE
    return project / ".claude" / "skills" / SKILL_DIR / SKILL_FILE


def install_skill(path: Path, force: bool) -> str:
    """Write the skill at `path`; the line saying what was done. A different file there is
    replaced only with `force`."""
    text = bundled_skill()
    try:
        existing = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        existing = None
    except (OSError, UnicodeDecodeError) as error:
        raise SkillRefused(f"cannot read {path}: {error}") from None
    if existing == text:
        return f"{path} is up to date"
    if existing is not None and not force:
        raise SkillRefused(
            f"{path} differs from the skill of overbrainer {__version__}; use --force to replace it"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    except OSError as error:
        raise SkillRefused(f"cannot write {path}: {error.strerror or error}") from None
    return f"{'replaced' if existing is not None else 'installed'} {path}"


@cli.group()
def skill() -> None:
    """The agent skill that teaches a coding agent to drive overbrainer."""


@skill.command()
@click.option(
    "--global",
    "global_",
    is_flag=True,
    help="Install for every project: ~/.claude/skills/overbrainer/SKILL.md.",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Install into another agent's skills directory: DIR/overbrainer/SKILL.md.",
)
@click.option("--force", is_flag=True, help="Replace an installed skill that differs.")
def install(global_: bool, directory: Path | None, force: bool) -> None:
    """Write SKILL.md (default: this project's .claude/skills/overbrainer/SKILL.md)."""
    if global_ and directory is not None:
        raise click.UsageError("--global and --dir cannot be used together")
    path = skill_path(global_, directory, find_root(project_dir()), os.environ.get("HOME", ""))
    click.echo(install_skill(path, force))
