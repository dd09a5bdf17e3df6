"""Shell completion (bash, zsh, fish): click's protocol, the reference's `COMPLETE=SHELL`, and
the dynamic candidates (run IDs with their state, topic names, target names)."""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.shell_completion import CompletionItem, shell_complete

from overbrainer.cli.context import PROJECT_DIR_PARAM

if TYPE_CHECKING:
    from overbrainer.config.settings import Settings
    from overbrainer.project.directory import Project

# The readers import the project, config and training layers when a candidate is asked for:
# the entry imports this module on every start, where completion is rarely wanted.

PROG_NAME = "overbrainer"
COMPLETE_VAR = "_OVERBRAINER_COMPLETE"
"""click's variable: `_OVERBRAINER_COMPLETE=bash_source overbrainer` prints the bash script."""

SHELLS = ("bash", "zsh", "fish")
"""What `COMPLETE=SHELL overbrainer` (the reference's way) accepts."""


def completion_instruction(environ: Mapping[str, str]) -> str | None:
    """The completion request this process was started for (`bash_source`, `zsh_complete`, …).

    click's own variable first; then the reference's `COMPLETE=bash|zsh|fish`, which prints
    the script that registers completion (a `COMPLETE` with another value is not ours).
    """
    instruction = environ.get(COMPLETE_VAR)
    if instruction:
        return instruction
    shell = environ.get("COMPLETE", "")
    return f"{shell}_source" if shell in SHELLS else None


def run_completion(group: click.Command, instruction: str) -> int:
    """Print the script or the candidates for `instruction`; quiet whatever goes wrong.

    A shell calls this on every Tab: a traceback or a log line would be drawn into the user's
    command line, so nothing but the candidates reaches the terminal.
    """
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    try:
        return shell_complete(group, {}, PROG_NAME, COMPLETE_VAR, instruction)
    except Exception:  # completion never fails loudly: no candidates instead
        return 1


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Nothing a candidate reader logs reaches the terminal."""
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(previous)


def _project(ctx: click.Context) -> Project:
    from overbrainer.project.directory import open_project

    start = ctx.find_root().params.get(PROJECT_DIR_PARAM)
    return open_project(start if isinstance(start, Path) else Path("."))


def _candidates(
    read: Callable[[click.Context], list[CompletionItem]],
) -> Callable[[click.Context, click.Parameter, str], list[CompletionItem]]:
    """A click `shell_complete` callback from `read`: prefix-filtered, empty on any failure."""

    def complete(
        ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        try:
            with _quiet():
                items = read(ctx)
        except Exception:  # a broken project or config gives no candidates
            return []
        return [item for item in items if str(item.value).startswith(incomplete)]

    return complete


def _run_ids(ctx: click.Context) -> list[CompletionItem]:
    from overbrainer.training import Runs

    records = Runs(_project(ctx).runs).list()
    return [CompletionItem(r.id, help=f"{r.state.value}, {r.target}") for r in records]


def _settings(ctx: click.Context) -> Settings:
    from overbrainer.config import load_settings
    from overbrainer.targets import ensure_kinds

    ensure_kinds()  # completion does not run the `cli` group's callback

    return load_settings(_project(ctx).root, dict(os.environ))


def _topics(ctx: click.Context) -> list[CompletionItem]:
    return [CompletionItem(topic.name) for topic in _settings(ctx).topics]


def _targets(ctx: click.Context) -> list[CompletionItem]:
    settings = _settings(ctx)
    return [CompletionItem(name) for name in settings.targets]


complete_run_ids = _candidates(_run_ids)
"""Run IDs of the project, each with `<state>, <target>` as its help (zsh and fish show it)."""

complete_topics = _candidates(_topics)
"""Topic names of the project's configuration, for `--topic`."""

complete_targets = _candidates(_targets)
"""Target names of the project's `[targets]`, for `--target`."""
