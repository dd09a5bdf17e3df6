"""`runs logs RUN_ID --pod [--source container|system] [--follow]` (§6.7): a pod's logs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import trio

from overbrainer.config.load import load_settings
from overbrainer.config.secrets import resolve_secret
from overbrainer.events.frontend import Frontend
from overbrainer.flows.setup import CommandOptions
from overbrainer.model import redact
from overbrainer.model.errors import EXIT_INTERRUPTED, EXIT_OK
from overbrainer.project.directory import open_project
from overbrainer.targets import (
    KEPT_LOG,
    MAX_TAIL,
    NO_KEY,
    PodLogsGone,
    RunpodKeyError,
    load_pod_record,
    open_runpod,
    pod_poll,
    read_cursor,
    sanitize,
    stream_pod_logs,
)
from overbrainer.training import Runs

CATCH_UP = 10.0
"""Seconds Runpod's stream is read without `--follow`."""
GONE = "runs: pod {pod} no longer exists, so Runpod has no more of its logs"
POD_SCRIPT_LOGS = (".pod/bootstrap.log", ".pod/watchdog.log")
UNREADABLE = "runs: cannot read "
"""How the line that stands for a kept log that cannot be read begins (`NAME: CAUSE` follows)."""


def _kept(run_dir: Path, name: str) -> list[str] | None:
    """The lines of kept log `name`, masked; None when there is none; one line saying why
    when it cannot be read."""
    try:
        text = (run_dir / name).read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return None
    except OSError as error:
        return [f"{UNREADABLE}{name}: {error.strerror or type(error).__name__}"]
    return [redact.redact(sanitize(line)) for line in text.splitlines()]


def _of_source(line: str, source: str | None) -> bool:
    parts = line.split(" ", 2)
    kept = len(parts) > 1 and parts[1] == source
    return source is None or kept or line.startswith(UNREADABLE)


def no_pod_log(run_id: str) -> str:
    """The line said for a run with no pod log kept and no live pod."""
    return f"runs: no pod log kept for run {run_id}"


@attrs.frozen
class KeptPodLog:
    """What `runs logs RUN --pod` prints before Runpod's stream: the kept logs, masked, under
    their `== name ==` headers; and the pod whose stream follows them (None: none does)."""

    lines: tuple[str, ...]
    live: str | None = None
    cursor: str | None = None
    """Runpod's ID of the last line kept (the stream goes on after it); None: tail instead."""


def read_kept_pod_log(run_dir: Path, source: str | None = None) -> KeptPodLog:
    """The kept pod logs of the run in `run_dir` (blocking; PodRecordError when pod.json is
    unreadable). No lines and no live pod: nothing was kept (`no_pod_log`)."""
    pod = load_pod_record(run_dir)
    live = pod.live_pod if pod is not None else None
    out: list[str] = []
    for name in () if source == "system" else POD_SCRIPT_LOGS:
        lines = _kept(run_dir, name)
        if lines is not None:
            out += [f"== {name} ==", *lines]
    kept = _kept(run_dir, KEPT_LOG)
    if kept is None and live is None:
        return KeptPodLog(tuple(out))
    out.append("== pod ==")
    out += [line for line in kept or [] if _of_source(line, source)]
    cursor = read_cursor(run_dir) if kept is not None and live is not None else None
    return KeptPodLog(tuple(out), live, cursor)


async def catch_up(
    url: str,
    key: str,
    kept: KeptPodLog,
    emit: Callable[[str], None],
    *,
    source: str | None = None,
    follow: bool = False,
) -> str | None:
    """Hand `emit` Runpod's lines of `kept.live` after the kept ones, for CATCH_UP seconds
    (`follow`: until cancelled); the line saying the pod is gone, or None."""
    live = kept.live
    assert live is not None
    cursor = kept.cursor
    async with open_runpod(url, key) as api:
        while True:
            with trio.move_on_after(CATCH_UP if not follow else float("inf")):
                try:
                    async for line in stream_pod_logs(
                        api.http,
                        live,
                        source=source,
                        tail=MAX_TAIL if cursor is None else None,
                        cursor=cursor,
                    ):
                        emit(line.kept())
                        cursor = line.cursor
                except PodLogsGone:
                    return GONE.format(pod=live)
            if not follow:
                return None
            await trio.sleep(pod_poll())


async def runs_pod_logs(
    options: CommandOptions, front: Frontend, run_id: str, *, source: str | None, follow: bool
) -> int:
    """Print the pod logs kept for a run, then Runpod's lines after them while its pod lives
    (`follow`: until Ctrl-C). Read-only: nothing is written, no lock is taken."""
    project = open_project(options.project_dir)
    runs = Runs(project.runs)
    runs.load(run_id)
    run_dir = runs.dir_of(run_id)
    kept = await trio.to_thread.run_sync(read_kept_pod_log, run_dir, source)
    if not kept.lines:
        front.line(no_pod_log(run_id))
        return EXIT_OK
    for line in kept.lines:
        front.line(line)
    if kept.live is None:
        return EXIT_OK
    settings = load_settings(project.root)
    secret = settings.runpod.api_key
    if secret is None or not secret.text.strip():
        raise RunpodKeyError(NO_KEY)
    async with front.interrupt() as interrupt:
        key = await interrupt.race(lambda: resolve_secret(secret, "runpod.api_key"))
        if key is None:
            return EXIT_INTERRUPTED
        ended = await interrupt.race(
            lambda: catch_up(
                settings.runpod.url, key, kept, front.line, source=source, follow=follow
            )
        )
        if ended is None and interrupt.caught:
            return EXIT_INTERRUPTED
    if ended:
        front.line(ended)
    return EXIT_OK
