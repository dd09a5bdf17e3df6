"""The push confirmation: what `overbrainer push RUN` would send, planned without network."""

from __future__ import annotations

import os

from overbrainer.config import load_settings
from overbrainer.hub.plan import PushPlan, plan_push
from overbrainer.hub.repo import default_name
from overbrainer.model.sizes import format_size
from overbrainer.project.directory import Project
from overbrainer.training import Runs

SHOWN_FILES = 6
"""Files listed by name in the confirmation; the rest are counted."""


def confirm_lines(plan: PushPlan, project_name: str) -> tuple[str, ...]:
    """The confirmation's lines: repo, visibility, files and bytes."""
    named = default_name(project_name)
    repo = str(plan.repo) if plan.repo is not None else f"<your namespace>/{named} (the token's)"
    files = [f"  {item.repo_path} ({format_size(item.size)})" for item in plan.files[:SHOWN_FILES]]
    more = len(plan.files) - SHOWN_FILES
    if more > 0:
        files.append(f"  and {more} more")
    return (
        f"push run {plan.record.id} to the Hugging Face Hub",
        f"repo: {repo}",
        f"visibility: {'private' if plan.private else 'public'}",
        f"files: {len(plan.files)}, {format_size(plan.bytes)} ({plan.bytes} bytes), and README.md",
        *files,
        "y pushes, any other key does not",
    )


def plan_lines(project: Project, run_id: str) -> tuple[str, ...]:
    """Plan `run_id`'s push with the project's settings (blocking; OverbrainerError if refused)."""
    settings = load_settings(project.root, dict(os.environ))
    plan = plan_push(Runs(project.runs), settings, run_id, repo=None, public=False)
    return confirm_lines(plan, settings.project.name)
