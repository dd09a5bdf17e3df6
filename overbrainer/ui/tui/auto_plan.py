"""The `A` confirmation: what `overbrainer estimate` says of the whole run, asked before it
starts (the run is paid: as for `C` and `h`, nothing is asked of a provider before `y`)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from overbrainer.events.bus import open_event_bus
from overbrainer.events.frontend import Line, Report
from overbrainer.flows.estimate import estimate_flow
from overbrainer.flows.setup import CommandOptions, single_error
from overbrainer.model.errors import OverbrainerError
from overbrainer.training import RUN_NO_TRAIN_HINT
from overbrainer.ui.front import TuiFrontend
from overbrainer.ui.tui.messages import AutoPrepared, Msg

log = logging.getLogger(__name__)

ESTIMATING = "estimating overbrainer run (the providers' prices too)..."
AUTO_ASK = "y runs it, n or Esc does not"
AUTO_ASK_TRAINING = "y runs it, d runs it without training (run --no-train), n or Esc does not"
TUI_NO_TRAIN_HINT = "; A then d in the Pipeline view makes the dataset without training"
"""What the TUI says where the CLI names `run --no-train` (a key, not a flag)."""


def confirm_lines(estimate: tuple[str, ...], training: bool) -> tuple[str, ...]:
    """The confirmation's lines: the question, the estimate's lines, the keys."""
    return (
        "run the whole pipeline (overbrainer run)?",
        *estimate,
        AUTO_ASK_TRAINING if training else AUTO_ASK,
    )


def tui_words(error: str) -> str:
    """`run`'s error with the CLI's `--no-train` hint told as the TUI's own key."""
    return error.replace(RUN_NO_TRAIN_HINT, TUI_NO_TRAIN_HINT)


async def estimate_run(
    task: int, options: CommandOptions, detach: trio.Event, post: Callable[[Msg], None]
) -> None:
    """Run `overbrainer estimate` for every paid stage; its lines (or why it failed) reach the
    app as AutoPrepared."""
    lines: list[str] = []

    def report(item: Report) -> None:
        if isinstance(item, Line):
            lines.append(item.text)

    try:
        async with open_event_bus() as bus:
            await estimate_flow(options, TuiFrontend(bus, detach, report), ())
    except OverbrainerError as error:
        post(AutoPrepared(task, error=error.message))
        return
    except BaseExceptionGroup as group:
        found = single_error(group)
        if found is None:
            raise  # cancelled (the app quits), or a bug: as every task's
        post(AutoPrepared(task, error=found.message))
        return
    post(AutoPrepared(task, tuple(lines)))
