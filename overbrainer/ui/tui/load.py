"""Read what the views show of the project (blocking: the loop calls it in a worker thread)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import attrs

from overbrainer.config import load_settings
from overbrainer.config.settings import Settings
from overbrainer.model.errors import OverbrainerError
from overbrainer.model.job_kind import JobKind
from overbrainer.project.directory import Project
from overbrainer.storage import Example, format_history, read_history
from overbrainer.targets import POD_DIR, load_pod_record
from overbrainer.training import Runs, RunState
from overbrainer.ui.tui.benches import read_benches
from overbrainer.ui.tui.compares import read_compares
from overbrainer.ui.tui.dataset_index import PagedTree, dataset_tree
from overbrainer.ui.tui.snapshot import RunRow, Snapshot

log = logging.getLogger(__name__)

DATA_FILES = ("subtopics", "questions", "answers", "quality", "train", "eval")
TREE_FILES = ("subtopics", "questions", "answers")


def _count(path: Path) -> int:
    try:
        with path.open("rb") as lines:
            return sum(1 for line in lines if line.strip())
    except FileNotFoundError:
        return 0


def config_lines(settings: Settings) -> tuple[str, ...]:
    """The Project view's summary of the configuration (no secret values)."""
    lines = [f"project    {settings.project.name}"]
    for name, role in settings.roles.all():
        reasoning = ", reasoning" if role.reasoning else ""
        lines.append(f"{name:<10} {role.provider} / {role.model}{reasoning}")
    for topic in settings.topics:
        lines.append(
            f"topic      {topic.name}: {topic.subtopics} subtopics × "
            f"{topic.questions_per_subtopic} questions"
        )
    cap = settings.pipeline.max_cost_usd
    lines.append(f"spend cap  {'none' if cap is None else f'${cap:.2f}'}")
    training = settings.training
    if training is None:
        lines.append("training   none ([training] not set)")
    else:
        lines.append(
            f"training   {training.base_model} ({training.adapter.value}) on {training.target}"
        )
    return tuple(lines)


def _tree(project: Project) -> PagedTree:
    return dataset_tree({name: project.data_file(name) for name in TREE_FILES})


def kept_pod(run_dir: Path) -> str:
    """The pod an ended run left on Runpod (kept with --keep-pod, or not deleted); "" if none."""
    try:
        record = load_pod_record(run_dir)
    except OverbrainerError as error:
        log.debug("%s", error.message)
        return ""
    return (record.live_pod or "") if record is not None else ""


def kept_job_pods(run_dir: Path) -> tuple[tuple[str, str], ...]:
    """The pods the run's ended compares and exports left on Runpod (kept, or not deleted), as
    (compare or export ID, pod ID)."""
    found: list[tuple[str, str]] = []
    for kind in JobKind:
        jobs = Runs(run_dir / kind.dir_name())
        for record in jobs.list():
            pod = kept_pod(jobs.dir_of(record.id)) if record.state.ended else ""
            if pod:
                found.append((record.id, pod))
    return tuple(found)


def _runs(project: Project) -> tuple[RunRow, ...]:
    rows = []
    runs = Runs(project.runs)
    for record in runs.list():
        failed = record.state in (RunState.FAILED, RunState.CANCELLED)
        run_dir = runs.dir_of(record.id)
        pod = kept_pod(run_dir) if record.state.ended else ""
        rows.append(
            RunRow(
                record.id,
                record.state.value,
                record.target,
                record.created,
                failed=failed,
                pod=pod,
                job_pods=kept_job_pods(run_dir),
                pod_log=(run_dir / POD_DIR).is_dir(),
            )
        )
    return tuple(rows)


PREVIEW_TAIL = 65536
"""Bytes read from the end of answers.jsonl for the preview."""


def latest_answer(project: Project) -> str:
    """The newest stored answer as `question → reply` on one line ("" when there is none)."""
    try:
        with project.data_file("answers").open("rb") as data:
            data.seek(0, os.SEEK_END)
            size = data.tell()
            data.seek(max(size - PREVIEW_TAIL, 0))
            tail = data.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    for line in reversed(tail.splitlines()):
        try:
            example = Example.from_json(line)
        except Exception:  # a torn last line, or the cut first one: try the one before
            continue
        texts = [" ".join(m.content.split()) for m in example.messages]
        return " → ".join(texts[-2:])
    return ""


def data_counts(project: Project) -> tuple[tuple[str, int], ...]:
    """The records of each data file, by its name (the Pipeline view's records column)."""
    return tuple((name, _count(project.data_file(name))) for name in DATA_FILES)


def glimpse_project(project: Project) -> Snapshot:
    """Read the configuration, counts and history of `project`: its first screen."""
    problem = ""
    try:
        settings: Settings | None = load_settings(project.root, dict(os.environ))
    except OverbrainerError as error:
        log.warning("overbrainer.toml: %s", error.message)
        settings, problem = None, error.message
    try:
        history = tuple(format_history(read_history(project.history)))
    except OSError as error:
        history = (f"cannot read {project.history}: {error.strerror}",)
    return Snapshot(
        name=settings.project.name if settings else project.root.name,
        config=config_lines(settings) if settings else (f"overbrainer.toml: {problem}",),
        counts=data_counts(project),
        history=history,
        training=settings is not None and settings.training is not None,
        topics=tuple(t.name for t in settings.topics) if settings else (),
    )


def load_rest(project: Project, glimpse: Snapshot) -> Snapshot:
    """`glimpse` with the runs, compares, benches and dataset tree of `project`."""
    runs_dir = project.runs
    benches = read_benches(runs_dir) if runs_dir.is_dir() else ()
    return attrs.evolve(
        glimpse,
        runs=_runs(project),
        tree=_tree(project),
        compares=read_compares(runs_dir),
        benches=benches,
    )


def load_snapshot(project: Project) -> Snapshot:
    """Read the configuration, counts, history, runs and dataset tree of `project`."""
    return load_rest(project, glimpse_project(project))
