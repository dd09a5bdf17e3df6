"""The unfinished `--force` runs of a project, as `estimate` reports them."""

from __future__ import annotations

from collections.abc import Sequence

from overbrainer.events.types import Stage
from overbrainer.pipeline.replacing import answers_to_redo
from overbrainer.pipeline.rescoring import pending_rescores
from overbrainer.project.directory import Project
from overbrainer.storage import load_force_state


def _redo(project: Project, stage: Stage, topics: frozenset[str]) -> int:
    """How many items the unfinished force of `stage` still redoes in `topics`. Blocking."""
    if stage is Stage.QUALITY:
        return len(pending_rescores(project, topics))
    if stage is Stage.ANSWERS:
        return len(answers_to_redo(project, topics))
    state = load_force_state(project.force_state(stage.value))
    return 0 if state is None else len(state.pending_keys(topics))


def unfinished_forces(
    project: Project, stages: Sequence[Stage], topics: frozenset[str]
) -> list[str]:
    """`answers: 12 to redo for the --force run started …; the next `overbrainer answers`
    continues it`, for each of `stages` with an unfinished force. Blocking: reads the states."""
    lines = []
    for stage in stages:
        state = load_force_state(project.force_state(stage.value))
        if state is None:
            continue
        redo = _redo(project, stage, topics)
        if redo:
            started = state.started or "earlier"
            lines.append(
                f"{stage}: {redo:,} to redo for the --force run started {started}; "
                f"the next `overbrainer {stage}` continues it"
            )
    return lines
