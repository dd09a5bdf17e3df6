"""The Logs view's pod log task: what `runs logs RUN --pod` prints, on real files and Runpod's
fake stream."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from overbrainer.flows import pod_logs
from overbrainer.flows.setup import CommandOptions
from overbrainer.targets.runpod.pod_record import PodRecord, PodState, save_pod_record
from overbrainer.ui.tui import pod_log
from overbrainer.ui.tui.messages import Msg, Notice, PodLogLines, TaskDone
from overbrainer.ui.tui.pod_log import read_pod_log
from overbrainer.ui.tui.task_spec import TaskKind, TaskSpec
from tests.hub_support import RUN_ID, make_run
from tests.runpod_fake import KEY, RunpodFake, open_fake, pod_json

SPEC = TaskSpec(TaskKind.POD_LOG, run_id=RUN_ID)
KEPT = "2026-06-01T12:00:00.000001Z container starting the container"


def keep_logs(run_dir: Path) -> None:
    """The kept logs of a Runpod run: its scripts' and the pod's (as its machine keeps them)."""
    (run_dir / ".pod").mkdir()
    (run_dir / ".pod" / "bootstrap.log").write_text("bootstrap: unpacking\nbootstrap: ready\n")
    (run_dir / ".pod" / "pod.log").write_text(KEPT + "\n")
    (run_dir / ".pod" / "pod.log.cursor").write_text("2026-06-01T12:00:00.000001Z\n")


def kept_pod_run(root: Path) -> None:
    """A run whose pod pod0001 was kept, with its kept logs."""
    run_dir = make_run(root)
    keep_logs(run_dir)
    save_pod_record(run_dir, PodRecord(RUN_ID, PodState.KEPT, keep=True, pod_id="pod0001"))


@contextlib.asynccontextmanager
async def live_pod(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[RunpodFake]:
    """The Runpod fake, set as the project's Runpod, running pod0001."""
    async with open_fake() as fake:
        monkeypatch.setenv("OVERBRAINER_RUNPOD__API_KEY", KEY)
        monkeypatch.setenv("OVERBRAINER_RUNPOD__BASE_URL", fake.url)
        fake.pods["pod0001"] = pod_json("pod0001", "overbrainer", "NVIDIA A40", {}, "RUNNING")
        yield fake


async def read(root: Path, detach: trio.Event | None = None) -> list[Msg]:
    posted: list[Msg] = []
    with trio.fail_after(30):
        await read_pod_log(
            1, SPEC, CommandOptions(project_dir=root), detach or trio.Event(), posted.append
        )
    return posted


async def test_a_run_without_a_pod_log_gets_the_commands_line(tmp_path: Path) -> None:
    make_run(tmp_path / "p")
    assert await read(tmp_path / "p") == [
        Notice(f"runs: no pod log kept for run {RUN_ID}"),
        TaskDone(1),
    ]


async def test_an_unknown_run_is_the_tasks_error(tmp_path: Path) -> None:
    make_run(tmp_path / "p")
    spec = TaskSpec(TaskKind.POD_LOG, run_id="gone_20260101-000000")
    posted: list[Msg] = []
    with trio.fail_after(30):
        await read_pod_log(
            1, spec, CommandOptions(project_dir=tmp_path / "p"), trio.Event(), posted.append
        )
    assert len(posted) == 1 and isinstance(posted[0], TaskDone)
    assert posted[0].error is not None and "gone_20260101-000000" in posted[0].error


async def test_kept_lines_only_without_a_runpod_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OVERBRAINER_RUNPOD__API_KEY", raising=False)
    kept_pod_run(tmp_path / "p")
    lines = (
        "== .pod/bootstrap.log ==",
        "bootstrap: unpacking",
        "bootstrap: ready",
        "== pod ==",
        KEPT,
    )
    assert await read(tmp_path / "p") == [
        PodLogLines(1, RUN_ID, lines, first=True),
        Notice(f"pod log of run {RUN_ID}: the kept lines (no Runpod key to catch up)"),
        TaskDone(1),
    ]


async def test_a_live_pods_stream_follows_the_kept_lines_then_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pod_logs, "CATCH_UP", 1.0)
    kept_pod_run(tmp_path / "p")
    async with live_pod(monkeypatch) as fake:
        fake.log("pod0001", "container", "starting the container")
        fake.log("pod0001", "container", "step 3 done \x1b[31mred\x1b[0m")
        posted = await read(tmp_path / "p")
        asked = [r for r in fake.requests if r.path == "/v2/pods/pod0001/logs"]
        fake.vanish("pod0001")
        gone = await read(tmp_path / "p")
    assert isinstance(posted[0], PodLogLines) and posted[0].first
    assert posted[1:] == [
        PodLogLines(1, RUN_ID, ("2026-06-01T12:00:00.000002Z container step 3 done red",)),
        TaskDone(1),
    ]
    assert asked[0].headers.get("last-event-id") == "2026-06-01T12:00:00.000001Z"
    assert gone[1:] == [
        PodLogLines(
            1, RUN_ID, ("runs: pod pod0001 no longer exists, so Runpod has no more of its logs",)
        ),
        TaskDone(1),
    ]
    assert fake.violations == []


async def test_detach_stops_the_catch_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept_pod_run(tmp_path / "p")
    async with live_pod(monkeypatch):
        detach = trio.Event()
        posted: list[Msg] = []

        def post(message: Msg) -> None:
            posted.append(message)
            detach.set()  # `s` went back as soon as the kept lines showed

        with trio.fail_after(5):  # well before CATCH_UP's 10 s
            await read_pod_log(1, SPEC, CommandOptions(project_dir=tmp_path / "p"), detach, post)
    assert [type(m) for m in posted] == [PodLogLines, TaskDone]
    assert posted[-1] == TaskDone(1)


async def test_a_read_past_its_limit_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pod_log, "LIMIT", 0.0)
    keep_logs(make_run(tmp_path / "p"))
    assert await read(tmp_path / "p") == [
        Notice(f"pod log of run {RUN_ID}: stopped reading after 0 s"),
        TaskDone(1),
    ]
