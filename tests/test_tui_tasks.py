"""The TUI's background tasks: one cancelled with the app ends quietly, a bug is logged as one."""

from __future__ import annotations

import logging
from pathlib import Path

import attrs
import pytest
import trio

from overbrainer.devtools.stub_model import default_reply
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.events.frontend import Frontend
from overbrainer.events.types import Stage
from overbrainer.flows.pipeline import PipelineRequest
from overbrainer.flows.setup import CommandOptions
from overbrainer.ui.tui import tasks
from overbrainer.ui.tui.messages import Msg, TaskDone
from overbrainer.ui.tui.task_spec import TaskKind, TaskSpec
from overbrainer.ui.tui.tasks import TaskHandle, run_task
from tests.pipeline_support import make_project

SUBTOPICS = TaskSpec(TaskKind.STAGE, stage=Stage.SUBTOPICS)


async def test_a_stage_cancelled_with_the_app_ends_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = make_project(tmp_path / "p")
    asked = trio.Event()
    never = trio.Event()

    async def hold(request: Recorded) -> Reply:
        asked.set()
        await never.wait()  # the reply is still awaited when the app's nursery is cancelled
        return default_reply(request)

    posted: list[Msg] = []
    options = attrs.evolve(CommandOptions(root), lock_held=True)
    async with open_stub(hold) as stub:
        monkeypatch.setenv("OVERBRAINER_PROVIDERS__STUB__BASE_URL", stub.url)
        with trio.fail_after(30):
            async with trio.open_nursery() as app:
                app.start_soon(run_task, 1, SUBTOPICS, options, TaskHandle(), posted.append)
                await asked.wait()
                app.cancel_scope.cancel()
    assert app.cancel_scope.cancelled_caught  # the cancellation went out, never swallowed
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert [m for m in posted if isinstance(m, TaskDone)] == []


async def test_a_bug_in_a_task_is_still_logged_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def buggy(options: CommandOptions, front: Frontend, request: PipelineRequest) -> None:
        async def broken() -> None:
            raise RuntimeError("a bug in the flow")

        async with trio.open_nursery() as nursery:  # the bug comes out in a group
            nursery.start_soon(broken)
            await trio.sleep_forever()

    monkeypatch.setattr(tasks, "pipeline_flow", buggy)
    posted: list[Msg] = []
    with trio.fail_after(30):
        await run_task(1, SUBTOPICS, CommandOptions(tmp_path), TaskHandle(), posted.append)
    bugs = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in bugs] == ["overbrainer subtopics failed (a bug)"]
    assert bugs[0].exc_info is not None  # with its traceback
    done = [m for m in posted if isinstance(m, TaskDone)]
    assert len(done) == 1
    assert (done[0].error or "").startswith("overbrainer subtopics failed: ExceptionGroup(")
