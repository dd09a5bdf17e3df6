"""`import questions`: the command's order of work around the import itself."""

from __future__ import annotations

from pathlib import Path

from overbrainer.events.frontend import Frontend
from overbrainer.flows.setup import CommandOptions, open_command
from overbrainer.pipeline.importing import import_questions


async def import_questions_flow(
    options: CommandOptions, front: Frontend, path: Path, topic: str | None
) -> None:
    """Under the project's lock, add the file's questions and print the summary line."""
    async with open_command(options, front) as command:
        counts = await import_questions(command.project, command.settings, path, topic)
        front.line(counts.line())
