"""`GET /metrics` over real HTTP on 127.0.0.1: content type, 404s, the cap, timeouts, the port."""

from __future__ import annotations

import errno
import logging
import socket
from pathlib import Path

import httpx2
import pytest
import trio
import trio.testing

from overbrainer.config.load import load_settings
from overbrainer.config.settings import Settings
from overbrainer.events.bus import open_event_bus
from overbrainer.events.types import ItemDone, Stage, StageModel, StageStarted
from overbrainer.metrics.endpoint import MAX_CONNECTIONS, open_metrics
from overbrainer.metrics.observer import MetricsObserver
from overbrainer.model.usage import Usage
from overbrainer.net import http_server
from overbrainer.net.http_server import ACCEPT_PAUSE
from overbrainer.project.directory import Project
from tests.pipeline_support import wait_until
from tests.scrape import samples
from tests.test_http_server import failing_accept

CONFIG = """
[project]
name = "demo"
[providers.openrouter]
protocol = "openai"
[roles]
generator = { provider = "openrouter", model = "gen" }
parent = { provider = "openrouter", model = "parent" }
"""

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def settings(tmp_path: Path, listen: str | None) -> Settings:
    (tmp_path / "overbrainer.toml").write_text(CONFIG)
    env = {"OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY": "sk-metrics-test"}
    if listen is not None:
        env["OVERBRAINER_METRICS__LISTEN"] = listen
    return load_settings(tmp_path, env)


async def raw_request(address: str, data: bytes) -> bytes:
    host, port = address.rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        await stream.send_all(data)
        reply = b""
        while chunk := await stream.receive_some(65536):
            reply += chunk
            if b"\r\n\r\n" in reply:
                break
        return reply


async def test_get_metrics_serves_the_observed_counts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with trio.fail_after(10):
        async with open_metrics(settings(tmp_path, "127.0.0.1:0"), Project(tmp_path)) as metrics:
            assert metrics.observer is not None and metrics.address is not None
            assert metrics.address.startswith("127.0.0.1:")
            async with open_event_bus(observer=metrics.observer) as bus:
                bus.publish(StageStarted(Stage.ANSWERS, 1))
                bus.publish(StageModel(Stage.ANSWERS, "parent"))
                bus.publish(ItemDone(Stage.ANSWERS, "q1", Usage(400, 20)))
                async with httpx2.AsyncClient() as client:
                    reply = await client.get(f"http://{metrics.address}/metrics")
            assert reply.status_code == 200
            assert reply.headers["content-type"] == OPENMETRICS
            lines = reply.text.splitlines()
            assert (
                'overbrainer_tokens_total{direction="in",model="parent",stage="answers"} 400.0'
                in lines
            )
            assert 'overbrainer_stage_running{stage="answers"} 1.0' in lines
            assert "sk-metrics-test" not in reply.text
            assert samples(reply.text)["overbrainer_stage_items_total"] == {
                (("stage", "answers"), ("result", "done")): 1
            }
    assert f"metrics at http://{metrics.address}/metrics" in caplog.messages
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_other_paths_and_methods_get_404_not_found(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with (
            open_metrics(settings(tmp_path, "127.0.0.1:0"), Project(tmp_path)) as metrics,
            httpx2.AsyncClient() as client,
        ):
            base = f"http://{metrics.address}"
            for method, path in [
                ("GET", "/"),
                ("GET", "/metrics/"),
                ("GET", "/metricsx"),
                ("POST", "/metrics"),
                ("PUT", "/metrics"),
                ("DELETE", "/metrics"),
            ]:
                reply = await client.request(method, base + path)
                assert (reply.status_code, reply.text) == (404, "not found\n"), (method, path)
            head = await client.head(base + "/metrics")
            assert head.status_code == 404
            # A query string does not change the path.
            assert (await client.get(base + "/metrics?x=1")).status_code == 200


async def test_the_33rd_connection_is_closed_at_once(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with open_metrics(settings(tmp_path, "127.0.0.1:0"), Project(tmp_path)) as metrics:
            assert metrics.address is not None
            host, port = metrics.address.rsplit(":", 1)
            held = [await trio.open_tcp_stream(host, int(port)) for _ in range(MAX_CONNECTIONS)]
            extra = await trio.open_tcp_stream(host, int(port))
            await extra.send_all(b"GET /metrics HTTP/1.1\r\nhost: a\r\n\r\n")
            try:
                answer = await extra.receive_some(100)
            except trio.BrokenResourceError:  # reset rather than closed: refused all the same
                answer = b""
            assert answer == b""
            # The 32 held connections are still served.
            await held[-1].send_all(b"GET /metrics HTTP/1.1\r\nhost: a\r\n\r\n")
            assert (await held[-1].receive_some(100)).startswith(b"HTTP/1.1 200")
            await held[0].aclose()
            await trio.testing.wait_all_tasks_blocked()  # the server notices the close
            again = await raw_request(metrics.address, b"GET /x HTTP/1.1\r\nhost: a\r\n\r\n")
            assert again.startswith(b"HTTP/1.1 404")
            for stream in [*held[1:], extra]:
                await stream.aclose()


async def test_the_port_is_freed_when_the_block_ends(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with open_metrics(settings(tmp_path, "127.0.0.1:0"), Project(tmp_path)) as metrics:
            assert metrics.address is not None
            host, port = metrics.address.rsplit(":", 1)
            # A connection still open when the command ends is closed too.
            lingering = await trio.open_tcp_stream(host, int(port))
        assert await lingering.receive_some(100) == b""
        await lingering.aclose()
        with pytest.raises(OSError):
            await trio.open_tcp_stream(host, int(port))
        # The exact port can be bound again, by a plain socket and by the endpoint itself.
        with socket.socket() as again:
            # Closed connections linger in TIME_WAIT; a listener still there would refuse this.
            again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            again.bind((host, int(port)))
            again.listen()
        listen = settings(tmp_path, metrics.address)
        async with open_metrics(listen, Project(tmp_path)) as second:
            assert second.address == metrics.address


async def test_a_slow_client_is_cut_at_the_configured_header_timeout(tmp_path: Path) -> None:
    with trio.fail_after(10):
        listen = settings(tmp_path, "127.0.0.1:0")
        async with open_metrics(listen, Project(tmp_path), header_timeout=0.3) as metrics:
            assert metrics.address is not None
            host, port = metrics.address.rsplit(":", 1)
            # The server's clock starts when it accepts, so take ours before connecting.
            start = trio.current_time()
            stream = await trio.open_tcp_stream(host, int(port))
            await stream.send_all(b"GET /metrics HTTP/1.1\r\nhost: a\r\n")
            assert await stream.receive_some(100) == b""
            assert 0.3 <= trio.current_time() - start < 3
            await stream.aclose()


async def test_the_default_header_timeout_is_10_s(
    tmp_path: Path, autojump_clock: trio.abc.Clock
) -> None:
    listen = settings(tmp_path, "127.0.0.1:0")
    # An observer of our own: reading the history goes through a worker thread, which the
    # autojump clock would take for idleness and jump past the deadline.
    with trio.fail_after(60):
        async with open_metrics(listen, Project(tmp_path), MetricsObserver()) as metrics:
            assert metrics.address is not None
            host, port = metrics.address.rsplit(":", 1)
            start = trio.current_time()
            stream = await trio.open_tcp_stream(host, int(port))
            assert await stream.receive_some(100) == b""
            assert 10 <= trio.current_time() - start < 11
            await stream.aclose()


async def test_a_taken_port_warns_and_the_block_runs_without_metrics(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        ran = False
        with trio.fail_after(10):
            async with open_metrics(settings(tmp_path, address), Project(tmp_path)) as metrics:
                ran = True
                assert metrics.observer is None and metrics.url is None
    assert ran
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"cannot serve the metrics on {address}: Address already in use"]


async def test_a_non_loopback_address_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with trio.fail_after(10):
        async with open_metrics(settings(tmp_path, "0.0.0.0:0"), Project(tmp_path)) as metrics:
            assert metrics.address is not None and metrics.address.startswith("0.0.0.0:")
    assert "metrics on 0.0.0.0:0 have no authentication" in caplog.messages
    assert f"metrics at http://{metrics.address}/metrics" in caplog.messages


async def test_without_listen_nothing_is_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    observer = MetricsObserver()
    async with open_metrics(settings(tmp_path, None), Project(tmp_path), observer) as metrics:
        assert metrics.observer is None and metrics.address is None
    assert caplog.messages == []


async def test_a_server_failure_after_start_stops_the_metrics_not_the_command(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def serve_then_fail(
        *args: object, task_status: trio.TaskStatus[tuple[str, int]], **kwargs: object
    ) -> None:
        task_status.started(("127.0.0.1", 9))
        await failing.wait()
        raise OSError(errno.EMFILE, "Too many open files")

    failing = trio.Event()
    # The endpoint imports the server on use: the module's own name is the one it finds.
    monkeypatch.setattr(http_server, "serve_http", serve_then_fail)
    with trio.fail_after(10):
        async with open_metrics(settings(tmp_path, "127.0.0.1:0"), Project(tmp_path)) as metrics:
            assert metrics.address == "127.0.0.1:9"
            failing.set()
            await trio.testing.wait_all_tasks_blocked()  # the failure is handled meanwhile
            # The command goes on working after it.
            assert warnings(caplog) == [
                "the metrics endpoint stopped: [Errno 24] Too many open files"
            ]
    assert warnings(caplog) == ["the metrics endpoint stopped: [Errno 24] Too many open files"]


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not has_ipv6_loopback(), reason="no IPv6 loopback here")
async def test_ipv6_is_served_and_logged_in_brackets(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with trio.fail_after(10):
        async with open_metrics(settings(tmp_path, "[::1]:0"), Project(tmp_path)) as metrics:
            assert metrics.address is not None and metrics.address.startswith("[::1]:")
            async with httpx2.AsyncClient() as client:
                reply = await client.get(f"{metrics.url}")
            assert reply.status_code == 200
    assert f"metrics at http://{metrics.address}/metrics" in caplog.messages
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_the_runpod_spend_is_read_at_each_scrape(tmp_path: Path) -> None:
    project = Project(tmp_path)
    pod = project.runs / "20260101-000000-abcd" / "pod.json"
    with trio.fail_after(10):
        async with (
            open_metrics(settings(tmp_path, "127.0.0.1:0"), project) as metrics,
            httpx2.AsyncClient() as client,
        ):
            url = f"{metrics.url}"
            assert "overbrainer_runpod_spend_usd{" not in (await client.get(url)).text
            await trio.Path(pod.parent).mkdir(parents=True)
            await trio.Path(pod).write_text('{"state":"deleted","estimated_spend":0.64}')
            lines = (await client.get(url)).text.splitlines()
            assert 'overbrainer_runpod_spend_usd{run_id="20260101-000000-abcd"} 0.64' in lines


async def test_a_broken_listener_stops_the_metrics_with_its_error_at_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    raised = failing_accept(monkeypatch, errno.EBADF, errno.EBADF)
    with trio.fail_after(10):
        async with open_metrics(settings(tmp_path, "127.0.0.1:0"), Project(tmp_path)):
            await wait_until(lambda: bool(raised))
            await trio.sleep(3 * ACCEPT_PAUSE)  # long enough to see a retry, were there one
    assert raised == [errno.EBADF]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["the metrics endpoint stopped: [Errno 9] Bad file descriptor"]
