"""`overbrainer tui` end to end: the real program in a real terminal (tmux), on the stub."""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import pytest
import trio

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.project.directory import ProjectLocked, open_project, project_lock
from overbrainer.storage.ids import question_id
from overbrainer.storage.records import RejectedQuestion
from overbrainer.targets.runpod.pod_record import PodRecord, PodState, save_pod_record
from tests import train_helpers
from tests.compare_support import GGUF as COMPARE_GGUF
from tests.compare_support import RUN_ID as COMPARE_RUN
from tests.compare_support import (
    answered_compare,
    make_compare_project,
    scripted_judge,
    standin_release,
)
from tests.export_support import add_run
from tests.hub_support import RUN_ID, fake_hub, hub_env, make_run
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
from tests.tui_app_support import add_job
from tests.tui_compare_support import write_compare
from tests.tui_support import Terminal, needs_tmux, open_terminal

pytestmark = needs_tmux


def answered(root: Path) -> bool:
    """Whether at least one answer is stored."""
    path = root / "data" / "answers.jsonl"
    return path.exists() and path.stat().st_size > 0


async def test_without_a_terminal_it_refuses_with_exit_2(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    result = await overbrainer(root, "tui", url="http://127.0.0.1:9/v1")
    assert result.code == 2
    assert result.stderr.splitlines() == [
        "error: overbrainer tui needs a terminal: stdout is not a TTY"
    ]
    assert not (root / ".overbrainer" / "lock").exists()  # refused before anything


async def test_keys_typed_while_it_starts_are_kept(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_terminal(root, "tui") as term:
        await term.keys("6", "f")  # at once: the program is still starting
        shown = await term.wait_for("no compare yet")
        assert "showing losses" in shown
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown


async def test_a_small_terminal_is_refused(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_terminal(root, "tui", size=(70, 20)) as term:
        shown = await term.wait_for("EXIT=")
    unwrapped = "".join(shown.splitlines())  # the line wraps at 70 columns
    refusal = "error: overbrainer tui needs a terminal of at least 80x24: this one is 70x20"
    assert refusal in unwrapped
    assert "EXIT=2" in shown


@pytest.mark.quick  # an end-to-end path of the quick tier
async def test_auto_mode_fills_the_pipeline_then_every_view_shows_and_q_quits(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub, open_terminal(root, "tui", url=stub.url) as term:
        shown = await term.wait_for("nothing run yet in this session")
        assert "▶ subtopics       0      0" in shown
        project = open_project(root)
        with pytest.raises(ProjectLocked, match="another overbrainer"), project_lock(project):
            pass
        await term.keys("A")
        shown = await term.wait_for("split: 7 train, 1 eval, 0 excluded, 0 orphaned")
        assert "subtopics: 2 done, 0 skipped, 0 failed" in shown
        # The records column comes from the read of the project that follows the run.
        await term.wait_for("  answers         8      8      0")
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


async def test_the_editor_borrows_the_terminal_and_config_changes_are_reloaded(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    config = root / "overbrainer.toml"
    editor = 'sh -c \'echo "# touched by the editor" >> "$1"\' editor'
    async with open_terminal(root, "tui", env={"VISUAL": editor}) as term:
        await term.wait_for("nothing run yet")
        await term.keys("1", "e")
        await term.wait_for("edited overbrainer.toml")
        assert config.read_text().endswith("# touched by the editor\n")
        await term.wait_for("✓ config reloaded", limit=10)
        good = config.read_text()
        config.write_text(good + "[pipeline\n")
        shown = await term.wait_for("✗ overbrainer.toml: ", limit=10)
        assert "TOML syntax error" in shown
        config.write_text(good.replace('name = "demo"', 'name = "renamed"'))
        shown = await term.wait_for("✓ config reloaded", limit=10)
        await term.wait_for("renamed", limit=10)
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown


async def test_the_dataset_view_edits_one_record_refuses_a_bad_edit_and_deletes_one(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    questions = write_questions(root, 3)
    data = root / "data" / "questions.jsonl"
    before = data.read_text().splitlines()
    editor = tmp_path / "editor.sh"
    # The first edit rewords the question, the second leaves the file broken.
    editor.write_text(
        "#!/bin/sh\n"
        f'if [ -e "{tmp_path}/edited" ]; then echo "{{broken" > "$1"; exit 0; fi\n'
        f'touch "{tmp_path}/edited"\n'
        'sed -i "s/Question 0 about ownership?/A better question?/" "$1"\n'
    )
    editor.chmod(0o755)
    first = questions[0]
    new = question_id(first.subtopic_id, "A better question?")
    async with open_terminal(root, "tui", env={"VISUAL": str(editor)}) as term:
        await term.wait_for("nothing run yet")
        await term.keys("2", "Down", "Down", "e")
        await term.wait_for(f"question {first.id} edited: new id {new}")
        after = data.read_text().splitlines()
        reworded = attrs.evolve(first, id=new, text="A better question?")
        assert after == [*before[1:], reworded.to_json()]
        await term.wait_for("▶ A better question?")
        await term.keys("e")
        shown = await term.wait_for("nothing changed: the edited question is not valid: not JSON")
        assert data.read_text().splitlines() == after
        await term.keys("d")
        await term.wait_for(f"delete question {new}? y deletes it, any other key does not")
        await term.keys("y")
        await term.wait_for(f"deleted question {new}, now rejected")
        assert data.read_text().splitlines() == before[1:]
        rejected = RejectedQuestion(new, "ownership", first.subtopic_id, "A better question?")
        assert (root / "data" / "rejected.jsonl").read_text() == rejected.to_json() + "\n"
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown
    left = [
        n
        for n in os.listdir(tempfile.gettempdir())
        if n.startswith((f"overbrainer-questions-{first.id}-", f"overbrainer-questions-{new}-"))
    ]
    assert left == []  # the temp files are removed


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


async def test_the_wizard_writes_a_project_that_passes_config_check_then_auto_runs(
    tmp_path: Path,
) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    async with open_stub() as stub, open_terminal(root, "tui") as term:
        await term.wait_for("step 1 of 7: project name")
        assert "▶ project name: fresh" in await term.screen()
        await term.keys("Enter")
        await term.wait_for("step 2 of 7: provider")
        await term.keys("Left", "Down")
        await term.type("stub")
        await term.keys("Down", "Down")
        await term.type("ftp://nowhere")
        await term.keys("Enter")
        await term.wait_for("✗ the base URL starts with http:// or https://")
        for _ in "ftp://nowhere":
            await term.keys("BSpace")
        await term.type(stub.url)
        await term.keys("Enter")
        await term.wait_for("step 3 of 7: API key")
        await term.type("sk-secret-1234")
        shown = await term.wait_for("••••••••••••••")
        assert "sk-secret" not in shown
        await term.keys("Enter")
        await term.wait_for("step 4 of 7: models")
        await term.type("gen-model")
        await term.keys("Down")
        await term.type("parent-model")
        await term.keys("Enter")
        await term.wait_for("step 5 of 7: topics")
        await term.keys("Enter")
        await term.wait_for("✗ at least one topic is needed: a adds one")
        await term.keys("a")
        await term.type("rust")
        await term.keys("Enter")
        await term.wait_for("▶ rust: 10 subtopics × 30 questions")
        await term.keys("Enter")
        await term.wait_for("step 6 of 7: training")
        await term.keys("Enter")
        shown = await term.wait_for("step 7 of 7: summary")
        assert "sk-secret" not in shown
        await term.keys("Enter")
        await term.wait_for("Start auto now?")
        env = root / ".env"
        assert env.stat().st_mode & 0o777 == 0o600
        assert "OVERBRAINER_PROVIDERS__STUB__API_KEY=sk-secret-1234\n" in env.read_text()
        await term.keys("y")
        shown = await term.wait_for(" orphaned", limit=120)  # the split line
        assert "answers: 300 done, 0 skipped, 0 failed" in shown  # 10 subtopics × 30
        assert "split: 270 train, 30 eval, 0 excluded, 0 orphaned" in shown
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
        assert "EXIT=0" in shown
        check = await overbrainer(root, "config", "check", url=stub.url)
    assert check.code == 0, check.stderr
    for name in ("overbrainer.toml", ".env.example", ".gitignore", "prompts/subtopics.txt"):
        assert (root / name).is_file()


async def test_the_wizard_quits_on_ctrl_c_and_never_overwrites(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    async with open_terminal(root, "tui") as term:
        await term.wait_for("step 1 of 7")
        await term.keys("C-c")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=130" in shown
    assert sorted(p.name for p in root.iterdir()) == []
    (root / ".env").write_text("KEEP=1\n")
    async with open_terminal(root, "tui") as term:
        shown = await term.wait_for("EXIT=")
    assert "EXIT=2" in shown
    # The terminal wraps the long line anywhere, a space included: compare without whitespace.
    wanted = ".env already exists: the wizard never overwrites a file"
    assert "".join(wanted.split()) in "".join(shown.split())
    assert (root / ".env").read_text() == "KEEP=1\n"


async def test_a_project_that_cannot_be_read_is_shown_not_fatal(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_terminal(root, "tui") as term:
        await term.wait_for("nothing run yet")
        (root / "overbrainer.toml").rename(root / "moved.toml")
        await term.wait_for("✗ overbrainer.toml: cannot read", limit=10)  # the reload's check
        await term.keys("C-r")
        await term.wait_for("error: cannot read the project: cannot read")
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown


@pytest.mark.hub
async def test_the_compare_view_shows_a_report_and_training_confirms_a_push(
    tmp_path: Path,
) -> None:
    root = tmp_path / "p"
    run_dir = make_run(root)
    write_compare(run_dir, "compare_20261203-130000", "2026-12-03T13:00:00Z")
    with fake_hub(tmp_path) as hub:
        env = hub_env(tmp_path, hub.url)
        async with open_terminal(root, "tui", env=env) as term:
            await term.wait_for("nothing run yet")
            await term.keys("4")
            shown = await term.wait_for(
                "compare: 50% win or tie (compare_20261203-130000, 5 questions)"
            )
            assert f"▶ {RUN_ID}  succeeded" in shown
            await term.keys("h")
            shown = await term.wait_for("y pushes, any other key does not")
            assert "repo: <your namespace>/my-project (the token's)" in shown
            assert "visibility: private" in shown
            assert "files: 5, 0.1 MB (102853 bytes), and README.md" in shown, shown
            await term.keys("n")
            await term.wait_for("not pushed")
            assert hub.log() == []  # the confirmation needs no network
            assert not (run_dir / "hub").exists()
            await term.keys("h")
            await term.wait_for("y pushes")
            await term.keys("y")
            await term.wait_for("/alice/my-project/commit/")
            await term.keys("6")
            shown = await term.wait_for("Questions: all, 5 of 5")
            assert f"▶ {RUN_ID}  Q4_K_M   50% win or tie     5 questions" in shown
            assert "  ! q3  Question 3" in shown
            assert "child: Child answer 0." in shown
            await term.keys("f", "j")
            shown = await term.wait_for("Questions: losses, 2 of 5")
            assert "▶ ! q3  Question 3" in shown
            assert "child: (no answer: timed out)" in shown
            await term.keys("C")  # no run has an export: the plan says so, nothing starts
            await term.wait_for("\nno run has a GGUF: export one with")
            await term.keys("q")
            shown = await term.wait_for("EXIT=")
        assert "EXIT=0" in shown
        assert len(hub.calls("commit")) == 1
    assert json.loads((run_dir / "hub" / "push.json").read_text())["repo"] == "alice/my-project"


async def test_compare_asks_before_it_starts_and_n_starts_nothing(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=3)
    async with open_terminal(root, "tui") as term:
        await term.wait_for("Pipeline")
        await term.keys("6", "C")
        shown = await term.wait_for("y compares, n or Esc does not")
        assert f"run {COMPARE_RUN}, {COMPARE_GGUF}" in shown
        assert "3 questions of data/eval.jsonl, on target `local`" in shown
        assert "the judge is called once per question" in shown
        await term.keys("n")
        await term.wait_for("not compared")
        await term.keys("C")
        await term.wait_for("y compares, n or Esc does not")
        await term.keys("Escape")
        await term.wait_for("not compared")
        assert not (root / "runs" / COMPARE_RUN / "compares").exists()  # nothing started
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown


async def test_the_training_view_shows_a_kept_pod_and_p_dismisses_it(tmp_path: Path) -> None:
    root = tmp_path / "p"
    run_dir = make_run(root)
    save_pod_record(run_dir, PodRecord(RUN_ID, PodState.KEPT, keep=True, pod_id="pod123"))
    add_job(run_dir, "compares", "compare_20261203-130000", "succeeded", PodState.KEPT)
    notice = f"pod pod123 kept: overbrainer pod rm {RUN_ID}"
    compare = "pod pod_comsuc kept: overbrainer pod rm compare_20261203-130000"
    async with open_terminal(root, "tui") as term:
        await term.wait_for("nothing run yet")
        await term.keys("4")
        shown = await term.wait_for(notice)
        assert compare in shown
        await term.keys("p")
        shown = await term.wait_for(f"pod notices of run {RUN_ID} dismissed")
        assert notice not in shown and compare not in shown
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown
    assert (run_dir / "pod.json").exists()  # the notice only: the pod record stays


async def test_s_in_the_logs_view_shows_the_runs_kept_pod_log_and_s_goes_back(
    tmp_path: Path,
) -> None:
    root = tmp_path / "p"
    run_dir = make_run(root)
    (run_dir / ".pod").mkdir()
    (run_dir / ".pod" / "bootstrap.log").write_text("bootstrap: unpacking the job\n")
    kept = "2026-12-03T12:00:01.000001Z container step 3 of 9 done"
    (run_dir / ".pod" / "pod.log").write_text(kept + "\n")
    save_pod_record(run_dir, PodRecord(RUN_ID, PodState.KEPT, keep=True, pod_id="pod123"))
    async with open_terminal(root, "tui", env={"OVERBRAINER_RUNPOD__API_KEY": ""}) as term:
        await term.wait_for("nothing run yet")
        await term.keys("5", "s")
        shown = await term.wait_for(f"Pod log of run {RUN_ID}: 4 lines")
        lines = shown.splitlines()
        at = next(n for n, line in enumerate(lines) if line.startswith("Pod log of run"))
        assert [line.rstrip() for line in lines[at + 1 : at + 5]] == [
            "== .pod/bootstrap.log ==",
            "bootstrap: unpacking the job",
            "== pod ==",
            kept,
        ]
        await term.wait_for("the kept lines (no Runpod key to catch up)")
        await term.keys("s")
        shown = await term.wait_for("Logs: INFO and above")
        assert "== pod ==" not in shown
        (run_dir / ".pod" / "pod.log").unlink()
        (run_dir / ".pod" / "bootstrap.log").unlink()
        (run_dir / "pod.json").unlink()
        await term.keys("s")
        await term.wait_for(f"runs: no pod log kept for run {RUN_ID}")
        await term.keys("q")
        shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown


async def test_a_compare_shows_its_job_phase_and_c_cancels_it(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=2)
    with standin_release(tmp_path / "release", mode="hang") as pin:
        env = {**pin, "OVERBRAINER_CACHE": str(tmp_path / "c"), "OVERBRAINER_TEST_POLL_S": "0.2"}
        async with open_stub(scripted_judge) as stub:
            async with open_terminal(root, "tui", url=stub.url, env=env) as term:
                await term.wait_for("Pipeline")
                await term.keys("6", "C")
                await term.wait_for("y compares, n or Esc does not")
                await term.keys("y")
                # The child's stand-in server hangs in its first answer: the job stays there.
                shown = await term.wait_for("\ncompare: answering 0/2", limit=60)
                assert f"Running\n  overbrainer compare --run {COMPARE_RUN}: answering 0/2" in (
                    shown
                )
                await term.keys("c")
                shown = await term.wait_for("compare failed: ", limit=60)
                assert "Running" not in shown
                await term.keys("q")
                shown = await term.wait_for("EXIT=")
            assert [r for r in stub.requests if r.is_completion] == []  # the judge never asked
    assert "EXIT=0" in shown
    [record] = (root / "runs" / COMPARE_RUN / "compares").glob("*/run.json")
    assert json.loads(record.read_text())["state"] == "cancelled"


async def test_a_rejudge_shows_its_judging_with_rate_and_spend(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=8)
    compare_id = answered_compare(root)
    pace = {"delay": 0.0}

    def judge(request: Recorded) -> Reply:
        return attrs.evolve(scripted_judge(request), delay=pace["delay"])

    async with open_stub(judge) as stub:
        stub.models = {
            "data": [
                {"id": name, "pricing": {"prompt": "0.00001", "completion": "0.00002"}}
                for name in ("judge-model", "judge-2")
            ]
        }
        first = await overbrainer(root, "compare", "--rejudge", compare_id, url=stub.url)
        assert first.code == 0, first.stderr
        pace["delay"] = 0.8  # the next judge is slow enough to be seen at work
        other = {
            "OVERBRAINER_ROLES__JUDGE__MODEL": "judge-2",
            "OVERBRAINER_COMPARE__CONCURRENCY": "1",
        }
        async with open_terminal(root, "tui", url=stub.url, env=other) as term:
            await term.wait_for("Pipeline")
            await term.keys("6")
            await term.wait_for(compare_id)
            await term.keys("J")
            await term.wait_for("y rejudges, n or Esc does not")
            await term.keys("y")
            # Verdicts come in bursts: any count before the last, once the rate shows.
            progress = re.compile(r"^compare: judging [1-7]/8, \d+\.\d/s, \$0\.\d{4}\s*$", re.M)
            with trio.fail_after(60):
                while not progress.search(shown := await term.screen()):
                    assert "compare written" not in shown, shown
                    await trio.sleep(0.05)
            assert f"overbrainer compare --rejudge {compare_id}: judging " in shown
            await term.wait_for("compare written: see the Compare view", limit=60)
            await term.keys("q")
            shown = await term.wait_for("EXIT=")
    assert "EXIT=0" in shown
    folder = root / "runs" / COMPARE_RUN / "compares" / compare_id
    assert len(list(folder.glob("verdicts-*.jsonl"))) == 2


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
