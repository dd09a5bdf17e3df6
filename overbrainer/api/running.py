"""One path for every API call that runs work: the command's flow, its outcome as a value."""

from __future__ import annotations

from pathlib import Path

import attrs

from overbrainer.api.events import EventCallback
from overbrainer.api.front import Collector, QuietFrontend
from overbrainer.config.target_settings import load_kinds_on_use
from overbrainer.events.frontend import Frontend
from overbrainer.flows.pipeline import PipelineRequest, pipeline_flow
from overbrainer.flows.setup import CommandOptions
from overbrainer.model.errors import EXIT_OK, OverbrainerError
from overbrainer.targets import ensure_kinds


@attrs.frozen
class Ended:
    """How a flow ended: its exit code, its error, and what it handed its front end."""

    exit_code: int
    error: OverbrainerError | None
    collected: Collector


async def run_request(
    root: Path,
    request: PipelineRequest,
    *,
    front: Frontend | None,
    on_event: EventCallback | None,
    events_file: Path | None,
) -> Ended:
    """Run `request` on the project at `root` as the command line does (its lock, settings,
    bus, interrupt), with `front` (quiet by default). Our errors become the result; bugs,
    KeyboardInterrupt and the caller's cancellation go out as they are."""
    # The target kinds register their `[targets.<n>]` settings the first time config reads one,
    # as under the command line's `run_flow`: without them a project that trains is refused.
    load_kinds_on_use(ensure_kinds)
    collector = Collector(front or QuietFrontend(), on_event)
    options = CommandOptions(project_dir=root, events=events_file)
    try:
        await pipeline_flow(options, collector, request)
    except OverbrainerError as error:
        return Ended(error.exit_code, error, collector)
    return Ended(EXIT_OK, None, collector)
