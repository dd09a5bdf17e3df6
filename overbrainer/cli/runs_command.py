"""`overbrainer runs ls`, `runs show RUN_ID` and `runs logs RUN_ID [--tail N]`: read-only views
of `runs/` (each with `--json`)."""

from __future__ import annotations

import collections
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from overbrainer.cli.completion import complete_run_ids
from overbrainer.cli.context import json_report, project_dir
from overbrainer.cli.group import cli
from overbrainer.cli.options import json_option
from overbrainer.cli.runs_views import POD_RECORD_MISSING, missing_pod_words, pod_record_missing
from overbrainer.model.errors import OverbrainerError, UsageError

if TYPE_CHECKING:
    from overbrainer.model.json_values import JsonValue
    from overbrainer.training import RunRecord, Runs
    from overbrainer.ui.json_report import JsonReport

# The project, training and targets layers are imported on use: defining the commands (for
# `--help` and completion) needs only click.

_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SECRETS = (
    (re.compile(r"hf_[A-Za-z0-9]{16,}"), "hf_***"),
    (re.compile(r"sk-[A-Za-z0-9_-]{16,}"), "sk-***"),
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1***"),
)

NO_RUNS = "no runs yet: start one with `overbrainer train`"


def no_runs(skipped: list[str]) -> str:
    """What `runs ls` says when it lists nothing: `no runs yet`, unless some were unreadable."""
    if not skipped:
        return NO_RUNS
    named = ", ".join(skipped[:3]) + (", …" if len(skipped) > 3 else "")
    warnings = "the warning" if len(skipped) == 1 else "the warnings"
    return f"no readable runs ({len(skipped)} skipped: {named}; see {warnings} above)"


def ls_line(record: RunRecord, width: int, pod: str | None = None, state: str | None = None) -> str:
    """One `runs ls` line: ID, state, target, creation time, a stopped run's snapshot, its pod."""
    shown = state or record.state.value
    line = f"{record.id:<{width}}  {shown:<9}  {record.target}  {record.created}"
    if record.snapshot is not None:
        snap = record.snapshot
        line += f"  step {snap.step} ({snap.reason}): partial model in output/"
    if pod is not None:
        line += f"  {pod}"
    return line


def machine_words(run_dir: Path) -> str | None:
    """What the run's kind says of its machine from local files (a pod's `pod.json`, a Ray
    job's last seen state; no API call); None when it has nothing to add. An unreadable pod
    record is named on the run's line rather than failing the whole listing."""
    from overbrainer.targets import describe_job

    return describe_job(run_dir)


def redact(line: str, secrets: tuple[str, ...] = ()) -> str:
    """A log line as a printable one-liner with token-like secrets (and `secrets`) masked."""
    line = _CONTROL.sub("", line.replace("\t", " "))
    for secret in secrets:
        if len(secret) >= 8:
            line = line.replace(secret, "***")
    for pattern, replacement in _SECRETS:
        line = pattern.sub(replacement, line)
    return line


def _known_secrets() -> tuple[str, ...]:
    value = os.environ.get("OVERBRAINER_HF_TOKEN", "")
    return (value,) if value and not value.startswith("vault:") else ()


def _fail(error: OverbrainerError) -> None:
    click.echo(f"error: {error.message}", err=True)
    sys.exit(error.exit_code)


def _runs() -> Runs:
    """The project's run store (its lookup fails as `open_project` does)."""
    from overbrainer.project.directory import open_project
    from overbrainer.training import Runs

    return Runs(open_project(project_dir()).runs)


def _json(fill: Callable[[JsonReport], None]) -> None:
    """Run `fill` as the `--json` command's flow: its error, like its results, ends up in the
    document `run_flow` prints."""
    from overbrainer.cli.running import run_flow

    report = json_report()
    assert report is not None

    async def flow() -> None:
        fill(report)

    run_flow(flow)


@cli.group()
def runs() -> None:
    """List training runs, show one in full, and print their job logs."""


@runs.command("ls")
@json_option
def runs_ls() -> None:
    """List the runs, oldest first: ID, state, target, creation time, snapshot, pod."""
    if json_report() is not None:
        _json(_ls_json)
        return
    try:
        store = _runs()
        records, skipped = store.scan()
    except OverbrainerError as error:
        _fail(error)
        return
    if not records:
        # On stderr: stdout stays a list of runs, empty when there are none, for scripts.
        click.echo(no_runs(skipped), err=True)
        return
    width = max(len(record.id) for record in records)
    for record in records:
        run_dir = store.dir_of(record.id)
        if pod_record_missing(run_dir, record):
            pod = missing_pod_words(record.id)
            click.echo(ls_line(record, width, pod, POD_RECORD_MISSING))
            continue
        click.echo(ls_line(record, width, machine_words(run_dir)))


def _ls_json(report: JsonReport) -> None:
    """`runs ls --json`: `runs` oldest first, `skipped` the unreadable ones' IDs."""
    from overbrainer.cli.runs_views import run_json, target_kinds

    store = _runs()
    records, skipped = store.scan()
    kinds = target_kinds(store.root.parent) if records else {}
    report.put("runs", [run_json(record, store.dir_of(record.id), kinds) for record in records])
    report.put("skipped", skipped)


@runs.command("show")
@click.argument("run_id", shell_complete=complete_run_ids)
@json_option
def runs_show(run_id: str) -> None:
    """Show one run in full: its record, state, job, snapshot, machine, files, last metrics."""
    from overbrainer.cli.runs_views import show_json, show_lines, target_kinds

    def facts() -> dict[str, JsonValue]:
        store = _runs()
        record = store.load(run_id)
        return show_json(record, store.dir_of(run_id), target_kinds(store.root.parent))

    if json_report() is not None:
        _json(lambda report: report.put("run", facts()))
        return
    try:
        run = facts()
    except OverbrainerError as error:
        _fail(error)
        return
    for line in show_lines(run):
        click.echo(redact(line))


@runs.command("logs")
@click.argument("run_id", shell_complete=complete_run_ids)
@click.option("--tail", type=click.IntRange(min=0), metavar="N", help="Only the last N lines.")
@click.option("--pod", is_flag=True, help="A Runpod run: its pod's logs instead of job.log.")
@click.option(
    "--source",
    type=click.Choice(["container", "system"]),
    help="With --pod: only Runpod's container or system lines.",
)
@click.option("--follow", is_flag=True, help="With --pod: go on printing until Ctrl-C.")
@json_option
def runs_logs(run_id: str, tail: int | None, pod: bool, source: str | None, follow: bool) -> None:
    """Print the job.log of a run, one printable line per log line, secrets masked."""
    if pod:
        if tail is not None:
            raise click.UsageError("--tail does not go with --pod")
        if json_report() is not None:
            raise click.UsageError("--json does not go with --pod")
        _pod_logs(run_id, source, follow)
        return
    if source is not None or follow:
        raise click.UsageError("--source and --follow go with --pod")
    if json_report() is not None:
        _json(lambda report: _logs_json(report, run_id, tail))
        return
    try:
        raw = _job_log(run_id)
    except OverbrainerError as error:
        _fail(error)
        return
    if raw is None:
        click.echo(f"runs: no job.log for run {run_id} yet")
        return
    try:
        for line in _log_lines(raw, tail):
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _job_log(run_id: str) -> bytes | None:
    """The bytes of the run's `job.log`; None when it has none yet."""
    runs = _runs()
    runs.load(run_id)
    path = runs.dir_of(run_id) / "job.log"
    if path.is_symlink():
        raise UsageError(f"refusing to read runs/{run_id}/job.log: it is a symbolic link")
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise UsageError(f"cannot read runs/{run_id}/job.log: {error.strerror}") from None


def _log_lines(raw: bytes, tail: int | None) -> list[str]:
    """The log's printable lines (the last `tail` of them), secrets masked."""
    text = raw.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    lines: collections.deque[str] | list[str] = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if tail is not None:
        lines = collections.deque(lines, maxlen=tail)
    secrets = _known_secrets()
    return [redact(line, secrets) for line in lines]


def _logs_json(report: JsonReport, run_id: str, tail: int | None) -> None:
    """`runs logs --json`: the run, the log's path (`exists` false before it is written) and
    its lines."""
    raw = _job_log(run_id)
    report.put("run_id", run_id)
    report.put("path", f"runs/{run_id}/job.log")
    report.put("exists", raw is not None)
    report.put("lines", [] if raw is None else _log_lines(raw, tail))


def _pod_logs(run_id: str, source: str | None, follow: bool) -> None:
    # Imported on use, so that `runs ls` and `runs logs` do not pay for them at start-up.
    from overbrainer.cli.context import cli_frontend
    from overbrainer.cli.running import run_flow
    from overbrainer.flows.pod_logs import runs_pod_logs
    from overbrainer.flows.setup import CommandOptions

    options = CommandOptions(project_dir=project_dir())
    run_flow(lambda: runs_pod_logs(options, cli_frontend(), run_id, source=source, follow=follow))
