"""`overbrainer tui` end to end in a real terminal (tmux), on the stub: the pipeline's stages
(auto mode, the run menu), quitting or Ctrl-C while one runs, and the metrics endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.project.directory import ProjectLocked, open_project, project_lock
from tests.pipeline_support import (
    completion_prompts,
    history,
    make_project,
    overbrainer,
    read_examples,
    wait_until,
    write_questions,
)
from tests.ports import free_port
from tests.tui_support import needs_tmux, open_terminal

pytestmark = needs_tmux


def answered(root: Path) -> bool:
    """Whether at least one answer is stored."""
    path = root / "data" / "answers.jsonl"
    return path.exists() and path.stat().st_size > 0


@pytest.mark.quick  # an end-to-end path of the quick tier
async def test_auto_mode_fills_the_pipeline_then_every_view_shows_and_q_quits(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub, open_terminal(root, "tui", url=stub.url) as term:
        shown = await term.wait_for("nothing run yet in this session")
        assert "▶ subtopics       0     0       0" in shown
        project = open_project(root)
        with pytest.raises(ProjectLocked, match="another overbrainer"), project_lock(project):
            pass
        await term.keys("A")
        await term.wait_for("y runs it, n or Esc does not", limit=30)  # the estimate, asked
        await term.keys("y")
        shown = await term.wait_for("split: 7 train, 1 eval, 0 excluded, 0 orphaned")
        assert "subtopics: 2 done, 0 skipped, 0 failed" in shown
        # The records column comes from the read of the project that follows the run.
        await term.wait_for("  answers         8     8       0      0")
        await term.keys("1")
        await term.wait_for("subtopics 4, questions 8, answers 8, train 7, eval 1")
        await term.keys("2")
        shown = await term.wait_for("(2 subtopics)")
        assert "Here is a careful answer" in shown
        await term.keys("Tab", "Tab", "Tab")
        await term.wait_for("no [training] section in overbrainer.toml: run stops after split")
        await term.keys("BTab")
        await term.wait_for("no run yet: t starts one")
        await term.keys("6")
        await term.wait_for("no compare yet: C compares the newest exported run")
        await term.keys("5", "f")
        shown = await term.wait_for("Logs: WARN and above")
        assert "answers: 8/8" not in shown
        await term.keys("x")
        await term.wait_for("log lines written to .overbrainer/logs-")
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown
    exported = list((root / ".overbrainer").glob("logs-*.log"))
    assert len(exported) == 1
    with project_lock(open_project(root)):
        pass  # released


async def test_quitting_while_a_stage_runs_asks_then_stops_it_and_it_resumes(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    questions = write_questions(root, 30)
    async with open_stub(delay=0.2) as stub:
        async with open_terminal(root, "tui", url=stub.url) as term:
            await term.wait_for("nothing run yet")
            await term.keys("Down", "Down", "Enter")
            await term.wait_for("running overbrainer answers")
            await wait_until(lambda: answered(root), limit=60)
            shown = await term.wait_for("latest answer", limit=10)
            assert "→ Here is a careful answer to: " in shown
            await term.keys("q")
            await term.wait_for("work is running: quit and stop it? y/n")
            await term.keys("n")
            shown = await term.wait_for("running: overbrainer answers")  # the question is gone
            assert "quit and stop it" not in shown
            await term.keys("q", "y")
            shown = await term.wait_for("EXIT=")
            assert "EXIT=0" in shown
        kept = read_examples(root)
        assert 0 < len(kept) < len(questions)
        history = (root / ".overbrainer" / "history.jsonl").read_text().splitlines()
        assert '"status":"interrupted"' in history[-1]
        rest = await overbrainer(root, "answers", url=stub.url)
        assert rest.code == 0, rest.stderr
        assert rest.out_lines[0].startswith(f"answers: {len(questions) - len(kept)} done, ")


async def test_ctrl_c_stops_the_running_stage_and_exits_130(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    questions = write_questions(root, 30)
    async with open_stub(delay=0.2) as stub:
        async with open_terminal(root, "tui", url=stub.url) as term:
            await term.wait_for("nothing run yet")
            await term.keys("Down", "Down", "Enter")
            await term.wait_for("running overbrainer answers")
            await wait_until(lambda: answered(root), limit=60)
            await term.keys("C-c")
            shown = await term.wait_for("EXIT=")
            assert "EXIT=130" in shown
        assert 0 < len(read_examples(root)) < len(questions)
        with project_lock(open_project(root)):
            pass  # released


async def scrape(port: int) -> str | None:
    """The body of `GET /metrics` on loopback `port`; None when nothing listens there."""
    try:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
    except OSError:
        return None
    async with stream:
        await stream.send_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        received = b""
        while chunk := await stream.receive_some():
            received += chunk
    head, _, body = received.decode().partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 200"), head
    return body


async def test_the_metrics_endpoint_lives_as_long_as_the_tui(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    port = free_port()
    env = {"OVERBRAINER_METRICS__LISTEN": f"127.0.0.1:{port}"}
    async with open_stub() as stub, open_terminal(root, "tui", url=stub.url, env=env) as term:
        await term.wait_for("nothing run yet in this session")
        before = await scrape(port)  # served before any task runs
        assert before is not None and "# EOF" in before
        await term.keys("Enter")
        await term.wait_for("subtopics: 2 done, 0 skipped, 0 failed")
        after = await scrape(port)  # the stage has ended; the endpoint has not
        assert after is not None
        assert 'overbrainer_stage_items_total{result="done",stage="subtopics"} 2.0' in after
        await term.keys("5")
        shown = await term.wait_for(f"metrics at http://127.0.0.1:{port}/metrics")
        assert "cannot serve the metrics" not in shown
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown
    assert await scrape(port) is None  # the port is free once the TUI has gone


def stored_subtopics(root: Path) -> list[dict[str, str]]:
    """The subtopic records of data/subtopics.jsonl, in file order."""
    lines = (root / "data" / "subtopics.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


async def test_r_runs_a_stage_on_one_topic_then_with_force(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:
        async with open_terminal(root, "tui", url=stub.url) as term:
            await term.wait_for("nothing run yet in this session")
            await term.keys("r")
            shown = await term.wait_for("r or Enter runs it, Esc or n does not")
            assert "t/←/→ topic: all (2)" in shown
            await term.keys("t")
            await term.wait_for("run overbrainer subtopics --topic ownership?")
            await term.keys("r")
            await term.wait_for("subtopics: 1 done, 0 skipped, 0 failed")
            assert {s["topic"] for s in stored_subtopics(root)} == {"ownership"}
            asked = len(completion_prompts(stub))
            await term.keys("r", "t", "f")
            shown = await term.wait_for("run overbrainer subtopics --topic ownership --force?")
            assert "f --force: on: every selected topic's subtopics are asked for again" in shown
            await term.keys("Enter")
            await wait_until(lambda: len(history(root)) == 2)  # the forced run has ended
            # and the TUI has seen it end: `q` would ask to stop work still running otherwise.
            await term.wait_gone("running overbrainer subtopics")
            assert len(completion_prompts(stub)) > asked  # asked again, not skipped
            await term.keys("q")
            shown = await term.wait_for("EXIT=")
        assert "EXIT=0" in shown
        assert {s["topic"] for s in stored_subtopics(root)} == {"ownership"}
        # The CLI goes on from what the TUI stored: only the other topic is asked for.
        result = await overbrainer(root, "subtopics", url=stub.url)
        assert result.code == 0, result.stderr
        assert result.out_lines[-1].startswith("subtopics: 1 done, 1 skipped, 0 failed")
    assert {s["topic"] for s in stored_subtopics(root)} == {"ownership", "async"}
