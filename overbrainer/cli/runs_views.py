"""What `runs ls --json` and `runs show` say of a run: its record, state, machine, files, metrics.

Each reads local files only (no API call, no lock): `runs/<id>/run.json`, what the run's kind
keeps beside it (a pod's `pod.json`), `metrics.jsonl` and the directory's files."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from overbrainer.model.errors import OverbrainerError
from overbrainer.model.json_values import JsonValue, utc_time
from overbrainer.model.utc import parse_rfc3339

if TYPE_CHECKING:
    from overbrainer.training import RunRecord

POD_RECORD_MISSING = "unknown (pod record missing)"
"""`runs ls`'s state of a running Runpod run whose `pod.json` is gone: its pod may still bill."""


def pod_record_missing(run_dir: Path, record: RunRecord) -> bool:
    """Whether a running run made a pod's keys (`ssh/id_ed25519`, made before any create) but
    has no `pod.json`: nobody knows from runs/ whether its pod still runs and bills."""
    from overbrainer.targets import client_key_path, pod_record_path
    from overbrainer.training import RunState

    return (
        record.state is RunState.RUNNING
        and client_key_path(run_dir).is_file()
        and not pod_record_path(run_dir).exists()
    )


def missing_pod_words(run_id: str) -> str:
    """What `runs ls` says in place of the machine of a run whose pod record is missing."""
    return f"check its pod with `overbrainer pod ls` (`overbrainer pod rm {run_id}`)"


def target_kinds(root: Path) -> dict[str, str]:
    """The kind of each configured target; empty when the configuration cannot be read (the
    listing still works: the kind is then only what the run's files say)."""
    from overbrainer.config import load_settings
    from overbrainer.targets import ensure_kinds

    ensure_kinds()  # config reads `[targets.*]` with the kinds' settings
    try:
        settings = load_settings(root)
    except OverbrainerError:
        return {}
    return {name: target.kind for name, target in settings.targets.items()}


def _created(text: str) -> str | None:
    moment = parse_rfc3339(text)
    return None if moment is None else utc_time(moment)


def run_json(record: RunRecord, run_dir: Path, kinds: Mapping[str, str]) -> dict[str, JsonValue]:
    """A run of `runs ls --json`: the facts of its line, the machine's as the kind gives them."""
    from overbrainer.targets import job_machine

    missing = pod_record_missing(run_dir, record)
    machine: JsonValue = None
    machine_kind = None
    if missing:
        machine_kind = "runpod"
        machine = {"kind": "runpod", "words": missing_pod_words(record.id), "details": None}
    else:
        found = job_machine(run_dir)
        if found is not None:
            machine_kind = found.kind
            machine = {"kind": found.kind, "words": found.words, "details": found.details}
    snapshot: JsonValue = None
    if record.snapshot is not None:
        snap = record.snapshot
        snapshot = {"step": snap.step, "reason": snap.reason, "checkpoint": snap.checkpoint}
    return {
        "id": record.id,
        "state": POD_RECORD_MISSING if missing else record.state.value,
        "recorded_state": record.state.value,
        "pod_record_missing": missing,
        "target": record.target,
        "target_kind": kinds.get(record.target, machine_kind),
        "created": _created(record.created),
        "snapshot": snapshot,
        "machine": machine,
    }


def run_files(run_dir: Path) -> list[tuple[str, int]]:
    """Every file under the run's directory with its size in bytes, by path; links are not
    followed (a link is no file of the run's)."""
    found: list[tuple[str, int]] = []
    for folder, dirs, files in os.walk(run_dir):
        dirs.sort()
        here = Path(folder)
        for name in files:
            path = here / name
            try:
                status = path.lstat()
            except OSError:
                continue
            if path.is_symlink():
                continue
            found.append((path.relative_to(run_dir).as_posix(), status.st_size))
    return sorted(found)


def metrics_json(run_dir: Path) -> dict[str, JsonValue] | None:
    """Where `metrics.jsonl` ended, read as the follower reads it: the step, the last training
    log's time and loss, the last eval loss; None when no training log has a loss."""
    from overbrainer.training import local_summary

    summary = local_summary(run_dir)
    last = summary.last_train
    if last is None:
        return None
    return {
        "step": summary.step,
        "time": utc_time(last.time),
        "loss": last.loss,
        "eval_loss": summary.eval_loss,
    }


def show_json(record: RunRecord, run_dir: Path, kinds: Mapping[str, str]) -> dict[str, JsonValue]:
    """`runs show --json`'s run: `runs ls`'s facts, the rest of its record, files, metrics."""
    job: JsonValue = None
    if record.job is not None:
        container: JsonValue = None
        if record.job.container is not None:
            container = {"engine": record.job.container.engine, "name": record.job.container.name}
        job = {
            "dir": record.job.dir,
            "pid": record.job.pid,
            "ref": record.job.ref,
            "container": container,
        }
    return {
        **run_json(record, run_dir, kinds),
        "remote_dir": record.remote_dir,
        "message": record.message,
        "resumed_from": record.resumed_from,
        "snapshots": record.snapshots,
        "job": job,
        "files": [{"path": path, "size_bytes": size} for path, size in run_files(run_dir)],
        "metrics": metrics_json(run_dir),
    }


def show_lines(run: Mapping[str, JsonValue]) -> list[str]:
    """`runs show`'s text: one fact per line, the files last."""
    kind = run["target_kind"]
    lines = [
        f"run: {run['id']}",
        f"state: {run['state']}",
        f"target: {run['target']}" + (f" ({kind})" if kind else ""),
        f"created: {run['created'] or '?'}",
        f"remote dir: {run['remote_dir']}",
    ]
    job = run["job"]
    if isinstance(job, dict):
        where = f"ref {job['ref']}" if job["ref"] else f"pid {job['pid']}"
        line = f"job: {where} in {job['dir']}"
        container = job["container"]
        if isinstance(container, dict):
            line += f" ({container['engine']} container {container['name']})"
        lines.append(line)
    if run["message"]:
        lines.append(f"message: {run['message']}")
    if run["resumed_from"]:
        lines.append(f"resumed from: {run['resumed_from']}")
    snapshot = run["snapshot"]
    if isinstance(snapshot, dict):
        lines.append(
            f"snapshot: step {snapshot['step']} ({snapshot['reason']}): {snapshot['checkpoint']}"
        )
    machine = run["machine"]
    if isinstance(machine, dict):
        lines.append(f"machine: {machine['words']}")
    metrics = run["metrics"]
    if isinstance(metrics, dict):
        parts = [f"step {metrics['step']}"]
        if metrics["loss"] is not None:
            parts.append(f"loss {metrics['loss']:.4g}")
        if metrics["eval_loss"] is not None:
            parts.append(f"eval loss {metrics['eval_loss']:.4g}")
        lines.append(f"metrics: {', '.join(parts)} (at {metrics['time']})")
    files = run["files"]
    assert isinstance(files, list)
    lines.append("files:" if files else "files: none")
    for item in files:
        assert isinstance(item, dict)
        lines.append(f"  {item['path']}  {item['size_bytes']:,} bytes")
    return lines
