"""`GET /metrics` on `[metrics] listen`, served inside a command's nursery while it runs."""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import attrs
import trio

from overbrainer.config.settings import Settings
from overbrainer.model.error_groups import error_leaves, unwrapped
from overbrainer.project.directory import Project

if TYPE_CHECKING:
    # Imported on use (with the Prometheus client and the HTTP server): most commands serve
    # no metrics.
    from overbrainer.metrics.observer import MetricsObserver
    from overbrainer.net.http_server import Handler, Request, Response

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 32
"""Connections served at once; one more is closed at once."""

HEADER_TIMEOUT = 10.0
"""Seconds a connection may take to send a whole request."""

_TEXT = (("content-type", "text/plain; charset=utf-8"),)


@attrs.frozen
class MetricsServing:
    """What `open_metrics` gives: the observer to build buses with, and where it is served.

    Both are None when `[metrics] listen` is unset or its address could not be bound; a bus
    built with `observer=None` simply has no metrics.
    """

    observer: MetricsObserver | None = None
    address: str | None = None

    @property
    def url(self) -> str | None:
        """`http://ADDRESS/metrics`, or None when nothing is served."""
        return None if self.address is None else f"http://{self.address}/metrics"


def metrics_handler(observer: MetricsObserver) -> Handler:
    """The HTTP handler: OpenMetrics on `GET /metrics`, `404 not found` for anything else."""

    from overbrainer.metrics.families import CONTENT_TYPE
    from overbrainer.net.http_server import Response

    async def handle(request: Request) -> Response:
        if request.method == "HEAD":
            return Response(404)  # a HEAD answer carries no body
        if request.method != "GET" or request.path != "/metrics":
            return Response(404, b"not found\n", _TEXT)
        try:
            body = await trio.to_thread.run_sync(observer.encode)
        except Exception:
            log.exception("cannot encode the metrics")
            return Response(500, b"cannot encode the metrics\n", _TEXT)
        return Response(200, body, (("content-type", CONTENT_TYPE),))

    return handle


class _Started:
    """Passes `started` on to the nursery, remembering that the server got that far."""

    def __init__(self, outer: trio.TaskStatus[tuple[str, int]]) -> None:
        self.outer = outer
        self.serving = False

    def started(self, value: tuple[str, int]) -> None:
        """The server is bound and accepting."""
        self.serving = True
        self.outer.started(value)


async def _serve_until_it_fails(
    handler: Handler,
    host: str,
    port: int,
    header_timeout: float,
    *,
    task_status: trio.TaskStatus[tuple[str, int]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve; a bind error reaches `nursery.start`, a later failure only stops the metrics."""
    from overbrainer.net.http_server import serve_http

    status = _Started(task_status)
    try:
        await serve_http(
            handler,
            host,
            port,
            max_connections=MAX_CONNECTIONS,
            header_timeout=header_timeout,
            task_status=status,  # type: ignore[arg-type]
        )
    except Exception as error:  # out of file descriptors, say: never the command's failure
        if not status.serving:
            raise
        causes = "; ".join(str(leaf) for leaf in error_leaves(error))
        log.warning("the metrics endpoint stopped: %s", causes)


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextlib.asynccontextmanager
async def open_metrics(
    settings: Settings,
    project: Project,
    observer: MetricsObserver | None = None,
    *,
    header_timeout: float = HEADER_TIMEOUT,
    enabled: bool = True,
) -> AsyncIterator[MetricsServing]:
    """Serve the project's metrics on `[metrics] listen` until the block ends.

    Does nothing when `listen` is unset or not `enabled`. Never fails the command: an address
    that cannot be bound logs «cannot serve the metrics on ADDRESS: …» and the block runs
    without metrics. Leaving the block closes every connection and frees the port.
    """
    listen = settings.metrics
    if not enabled or listen.listen is None or listen.host is None or listen.port is None:
        yield MetricsServing()
        return
    if not _is_loopback(listen.host):
        log.warning("metrics on %s have no authentication", listen.listen)
    if observer is None:
        from overbrainer.metrics.observer import MetricsObserver

        observer = await trio.to_thread.run_sync(MetricsObserver.for_project, project)
    async with unwrapped(), trio.open_nursery() as nursery:
        serve = functools.partial(
            _serve_until_it_fails,
            metrics_handler(observer),
            listen.host,
            listen.port,
            header_timeout,
        )
        try:
            host, port = await nursery.start(serve)
        except OSError as error:
            log.warning(
                "cannot serve the metrics on %s: %s", listen.listen, error.strerror or error
            )
            yield MetricsServing()
            return
        serving = MetricsServing(observer, _address(host, port))
        log.info("metrics at %s", serving.url)
        try:
            yield serving
        finally:
            nursery.cancel_scope.cancel()
