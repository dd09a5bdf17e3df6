"""`import questions`: the command's order of work around the import itself."""

from __future__ import annotations

from pathlib import Path

from overbrainer.events.frontend import Frontend
from overbrainer.flows.setup import CommandOptions, open_command
from overbrainer.pipeline.importing import ImportInterrupted, plan_import, write_import


async def import_questions_flow(
    options: CommandOptions, front: Frontend, path: Path, topic: str | None
) -> None:
    """Under the project's lock, add the file's questions and print the summary line.

    Ctrl-C while the file is checked stops the command with nothing written (exit 130); once
    the write has begun it is finished, so the files hold the whole import or none of it.
    """
    front.result("import", None)
    async with open_command(options, front) as command:
        plan = await command.interrupt.race(
            lambda: plan_import(command.project, command.settings, path, topic)
        )
        if plan is None:
            raise ImportInterrupted()
        counts = await write_import(command.project, plan)
        front.line(counts.line())
        front.result("import", counts)
