"""Runpod's own log stream of a pod (`GET /pods/{id}/logs`, SSE) and the copy kept of it."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator
from pathlib import Path

import attrs

from overbrainer.model import redact
from overbrainer.storage import write_atomic
from overbrainer.targets.runpod.errors import RunpodError
from overbrainer.targets.runpod.http import Reply, RunpodHttp, runpod_shaped
from overbrainer.targets.runpod.pod_record import POD_DIR
from overbrainer.targets.runpod.sanitize import sanitize

MAX_TAIL = 5000
"""Lines of history Runpod backfills at most."""
KEPT_LOG = f"{POD_DIR}/pod.log"
KEPT_CURSOR = f"{POD_DIR}/pod.log.cursor"
KEPT_CAP = 20 * 1024 * 1024
"""Bytes of `.pod/pod.log` kept at most; later lines are dropped."""
SOURCES = ("container", "system")
_ERROR_BYTES = 64 * 1024


class PodLogsGone(RunpodError):
    """Runpod no longer has the pod (a 404 in its own error shape)."""


@attrs.frozen
class PodLogLine:
    """One line of a pod's log: its cursor (the event ID), time, source and text."""

    cursor: str
    ts: str
    source: str
    line: str

    def kept(self) -> str:
        """The line as kept in `.pod/pod.log`: `<ts> <source> <text>`, printable, masked."""
        return f"{sanitize(self.ts)} {sanitize(self.source)} {redact.redact(sanitize(self.line))}"


def _event(event_id: str, data: list[str]) -> PodLogLine | None:
    try:
        body = json.loads("\n".join(data))
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    ts, source, line = body.get("ts"), body.get("source"), body.get("line")
    if not (isinstance(ts, str) and isinstance(source, str) and isinstance(line, str)):
        return None
    return PodLogLine(event_id or ts, ts, source, line)


async def stream_pod_logs(
    http: RunpodHttp,
    pod_id: str,
    *,
    source: str | None = None,
    tail: int | None = None,
    cursor: str | None = None,
) -> AsyncGenerator[PodLogLine, None]:
    """The pod's log lines as Runpod sends them, after `cursor` (`Last-Event-ID`) or the last
    `tail` ones. Ends when Runpod ends the stream; PodLogsGone when the pod is gone."""
    path = f"pods/{pod_id}/logs"
    params: dict[str, str] = {}
    if source is not None:
        params["source"] = source
    if tail is not None:
        params["tail"] = str(min(max(tail, 0), MAX_TAIL))
    headers = {"accept": "text/event-stream"}
    if cursor:
        headers["last-event-id"] = cursor
    async with http.stream(path, params=params, headers=headers) as response:
        if response.status_code != 200:
            data = bytearray()
            async for chunk in response.aiter_bytes():
                data += chunk
                if len(data) > _ERROR_BYTES:
                    break
            reply = Reply(response.status_code, bytes(data), None)
            if reply.status == 404 and runpod_shaped(reply):
                raise PodLogsGone(f"pod {pod_id} no longer exists", 404)
            raise http.failed("GET", path, reply)
        event_id = ""
        data_lines: list[str] = []
        async for text in response.aiter_lines():
            if text == "":
                if data_lines:
                    found = _event(event_id, data_lines)
                    if found is not None:
                        yield found
                event_id, data_lines = "", []
            elif text.startswith(":"):
                continue  # a keepalive comment
            else:
                field, _, value = text.partition(":")
                value = value.removeprefix(" ")
                if field == "id":
                    event_id = value
                elif field == "data":
                    data_lines.append(value)
        if data_lines:
            found = _event(event_id, data_lines)
            if found is not None:
                yield found


def read_cursor(run_dir: Path) -> str | None:
    """The ID of the last line kept in `.pod/pod.log`, None when none was (blocking)."""
    try:
        text = (run_dir / KEPT_CURSOR).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text if text and text.isprintable() else None


def keep_lines(run_dir: Path, lines: list[PodLogLine]) -> None:
    """Append lines to `.pod/pod.log` (up to its cap), then record the cursor (blocking)."""
    if not lines:
        return
    folder = run_dir / POD_DIR
    folder.mkdir(mode=0o700, exist_ok=True)
    path = run_dir / KEPT_LOG
    size = path.stat().st_size if path.exists() else 0
    text = "".join(line.kept() + "\n" for line in lines).encode("utf-8")
    if size + len(text) <= KEPT_CAP:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, text)
        finally:
            os.close(fd)
    write_atomic(run_dir / KEPT_CURSOR, lines[-1].cursor + "\n")
