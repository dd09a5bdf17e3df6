"""`overbrainer tui` end to end in a real terminal (tmux): the Training view starts a run
and follows it, detaches, stops or cancels it, and exports a run."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import trio

from tests import train_helpers
from tests.export_support import add_run
from tests.pipeline_support import (
    wait_until,
)
from tests.tui_support import Terminal, needs_tmux, open_terminal

pytestmark = needs_tmux


async def test_training_starts_shows_its_loss_then_quitting_detaches_with_a_note(
    tmp_path: Path,
) -> None:
    root = train_helpers.make_project(tmp_path / "p")
    env = train_helpers.standin_env(tmp_path / "bin", STANDIN_STEPS="2000", STANDIN_PACE="0.05")
    try:
        async with open_terminal(root, "tui", env=env) as term:
            await term.wait_for("nothing run yet")
            await term.keys("4", "t")
            shown = await term.wait_for(" created")
            run_id = shown.split("run ", 1)[1].split(" created")[0].split()[-1]
            await term.wait_for(f"Loss of run {run_id}  last ", limit=60)  # the chart's title
            await term.keys("q")
            await term.wait_for("work is running: quit and stop it? y/n")
            await term.keys("y")
            shown = await term.wait_for("EXIT=", limit=30)
        assert "EXIT=0" in shown
        note = f"run {run_id} keeps training: follow it with `overbrainer train attach {run_id}`"
        assert note in "".join(shown.splitlines())
        record = json.loads((root / "runs" / run_id / "run.json").read_text())
        assert record["state"] == "running"
    finally:
        train_helpers.kill_jobs(root)


def run_state(root: Path, run_id: str) -> str:
    """The state run.json records for `run_id`."""
    return str(json.loads((root / "runs" / run_id / "run.json").read_text())["state"])


async def start_training(term: Terminal) -> str:
    """Start a run in the Training view; its ID once its loss shows."""
    await term.wait_for("nothing run yet")
    await term.keys("4", "t")
    shown = await term.wait_for(" created")
    run_id = shown.split("run ", 1)[1].split(" created")[0].split()[-1]
    await term.wait_for(f"Loss of run {run_id}  last ", limit=60)
    return run_id


@contextlib.asynccontextmanager
async def training_in_tui(tmp_path: Path) -> AsyncIterator[tuple[Path, Terminal, str]]:
    """The TUI on a project whose run it started and follows; on exit `q` must end it with 0."""
    root = train_helpers.make_project(tmp_path / "p")
    env = train_helpers.standin_env(tmp_path / "bin", STANDIN_STEPS="2000", STANDIN_PACE="0.05")
    try:
        async with open_terminal(root, "tui", env=env) as term:
            yield root, term, await start_training(term)
            await term.keys("q")
            shown = await term.wait_for("EXIT=", limit=30)
        assert "EXIT=0" in shown
    finally:
        train_helpers.kill_jobs(root)


async def test_c_asks_then_cancels_the_followed_run_under_the_tuis_own_lock(
    tmp_path: Path,
) -> None:
    async with training_in_tui(tmp_path) as (root, term, run_id):
        await term.keys("c")
        await term.wait_for(f"cancel run {run_id}? y cancels it, d detaches")
        assert run_state(root, run_id) == "running"
        await term.keys("y")
        await wait_until(lambda: run_state(root, run_id) == "cancelled", limit=60)
        await term.wait_for(f"{run_id}  cancelled", limit=10)  # the Runs list
        await term.keys("5")  # the status line may have moved on: the Logs view keeps it
        await term.wait_for(f"train: run {run_id} cancelled")
    assert (root / "runs" / run_id / "cancelled").exists()


async def test_s_on_a_followed_run_asks_for_the_snapshot_and_the_follower_collects_it(
    tmp_path: Path,
) -> None:
    async with training_in_tui(tmp_path) as (root, term, run_id):
        await term.keys("s")
        await wait_until(lambda: run_state(root, run_id) == "stopped", limit=60)
        await term.keys("5")  # the status line has moved on: the Logs view keeps the line
        await term.wait_for(f"train: snapshot of run {run_id} requested: the task follo")


async def test_s_on_a_run_nobody_follows_runs_the_real_stop_and_follows_it(
    tmp_path: Path,
) -> None:
    async with training_in_tui(tmp_path) as (root, term, run_id):
        await term.keys("c", "d")  # detach: the run keeps training, nobody follows it
        await term.wait_for(f"interrupted: run {run_id} keeps running")
        await term.keys("s")
        await wait_until(lambda: run_state(root, run_id) == "stopped", limit=60)
        await term.keys("5")
        await term.wait_for(f"train: snapshot of run {run_id} requested: its job saves")
    assert run_state(root, run_id) == "stopped"


async def stalling_server(
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """An HTTP server that starts every reply and never finishes it: a download that hangs."""

    async def serve(stream: trio.SocketStream) -> None:
        await stream.receive_some(65536)
        await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + b"x" * 1000)
        await trio.sleep_forever()

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        task_status.started(port)
        await trio.serve_listeners(serve, listeners, handler_nursery=nursery)


async def test_e_exports_the_selected_run_and_c_cancels_its_job(tmp_path: Path) -> None:
    root = train_helpers.make_project(tmp_path / "p")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    run_dir = add_run(root, model)
    env = train_helpers.standin_env(tmp_path / "bin")
    async with trio.open_nursery() as nursery:
        port = await nursery.start(stalling_server)
        env["OVERBRAINER_LLAMA_CPP_URL"] = f"http://127.0.0.1:{port}"
        try:
            async with open_terminal(root, "tui", env=env) as term:
                await term.wait_for("nothing run yet")
                await term.keys("4", "E")
                await term.wait_for("export: ", limit=30)  # its job's phase
                await term.keys("E")
                await term.wait_for(f"busy: overbrainer export {run_dir.name} is running")
                parts = [p for p in run_dir.rglob("*.part")]
                await wait_until(lambda: list(root.rglob("source.tar.gz.part")), limit=60)
                await term.keys("c")
                shown = await term.wait_for("was cancelled", limit=30)
                assert "export failed" not in shown
                await term.keys("q")
                shown = await term.wait_for("EXIT=", limit=30)
            assert "EXIT=0" in shown
            exports = list((run_dir / "exports").iterdir())
            assert len(exports) == 1
            assert json.loads((exports[0] / "run.json").read_text())["state"] == "cancelled"
            assert [p for p in run_dir.rglob("*.part")] == parts == []
        finally:
            train_helpers.kill_jobs(root)
            nursery.cancel_scope.cancel()
