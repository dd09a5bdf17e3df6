"""The public Python API (`overbrainer.api`): the example script, events, the sync wrapper,
cancellation, Ctrl-C, errors, and `__all__` against docs/api.md."""

from __future__ import annotations

import functools
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

import overbrainer.api as ob
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.project.directory import Project, project_lock
from tests.pipeline_support import (
    FIXED_CONCURRENCY,
    command_env,
    completion_prompts,
    history,
    make_project,
    read_examples,
    wait_until,
    write_questions,
)
from tests.ports import free_port

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "docs" / "examples" / "api_example.py"
API_DOC = REPO / "docs" / "api.md"


def init_demo(root: Path) -> Path:
    """`overbrainer init ROOT --demo`: a project on the embedded stand-in (no key, no port)."""
    subprocess.run(
        [sys.executable, "-m", "overbrainer", "init", str(root), "--demo"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return root


async def init_demo_async(root: Path) -> Path:
    """`init_demo` from a Trio test."""
    with trio.fail_after(60):
        await trio.run_process(
            [sys.executable, "-m", "overbrainer", "init", str(root), "--demo"],
            capture_stdout=True,
            capture_stderr=True,
        )
    return root


def answer(request: Recorded) -> Reply:
    return Reply(content=f"Answer to {request.prompt}", reasoning="thinking", usage=(100, 50))


def test_the_example_script_runs_the_demo_project(tmp_path: Path) -> None:
    root = init_demo(tmp_path / "demo")
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:8] == [
        "subtopics: started, 1 to do",
        "subtopics: finished, 1 done, 0 failed",
        "questions: started, 3 to do",
        "questions: finished, 3 done, 0 failed",
        "answers: started, 9 to do",
        "answers: finished, 9 done, 0 failed",
        "split: started, 9 to do",
        "split: finished, 9 done, 0 failed",
    ]
    # The summary lines are the command line's stdout lines, word for word.
    cli_root = init_demo(tmp_path / "cli")
    cli = subprocess.run(
        [sys.executable, "-m", "overbrainer", "-C", str(cli_root), "run", "--no-train"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr
    assert lines[8:12] == cli.stdout.splitlines()
    assert lines[12:] == [
        "outcome: done (exit code 0)",
        "history: subtopics ok, 1 done, cost $0.0000",
        "history: questions ok, 3 done, cost $0.0001",
        "history: answers ok, 9 done, cost $0.0002",
        "history: split ok, 0 done, cost unknown",
        "training runs: 0",
    ]
    assert done.stderr == ""  # the API prints nothing of its own


async def test_run_stages_reports_each_event_in_order_and_how_it_ended(tmp_path: Path) -> None:
    project = ob.open_project(await init_demo_async(tmp_path / "demo"))
    seen: list[ob.Event] = []
    events_file = tmp_path / "events.jsonl"
    with trio.fail_after(60):
        result = await project.run_stages(
            ["questions", ob.Stage.SUBTOPICS], on_event=seen.append, events_file=events_file
        )
    assert result.ok
    assert (result.outcome, result.exit_code, result.error) == (ob.Outcome.DONE, 0, None)
    kinds = [
        (type(event).__name__, event.stage)
        for event in seen
        if isinstance(event, ob.StageStarted | ob.ItemDone | ob.StageFinished)
    ]
    subtopics, questions = ob.Stage.SUBTOPICS, ob.Stage.QUESTIONS
    assert kinds == [
        ("StageStarted", subtopics),
        ("ItemDone", subtopics),
        ("StageFinished", subtopics),
        ("StageStarted", questions),
        ("ItemDone", questions),
        ("ItemDone", questions),
        ("ItemDone", questions),
        ("StageFinished", questions),
    ]
    # The callback sees the same events, as many, as the events file.
    assert len(events_file.read_text().splitlines()) == len(seen)
    assert result.lines == (
        "subtopics: 1 done, 0 skipped, 0 failed, 0 excluded; tokens 73 in, 36 out; cost $0.0000",
        "questions: 3 done, 0 skipped, 0 failed, 0 excluded; tokens 283 in, 108 out; cost $0.0001",
    )
    records = project.history()
    assert [(r.stage, r.status, r.done) for r in records] == [
        (subtopics, ob.HistoryStatus.OK, 1),
        (questions, ob.HistoryStatus.OK, 3),
    ]
    assert project.runs() == []


async def test_run_stages_returns_the_history_records_of_its_stages(tmp_path: Path) -> None:
    project = ob.open_project(await init_demo_async(tmp_path / "demo"))
    with trio.fail_after(60):
        result = await project.run_stages(["subtopics", "questions"])
    assert result.stages == tuple(project.history())


def test_the_sync_wrapper_runs_a_stage(tmp_path: Path) -> None:
    project = ob.open_project(init_demo(tmp_path / "demo") / "prompts")
    assert project.root == tmp_path / "demo"  # found above, as `-C` finds it
    handlers = [signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)]
    result = project.run_stages_sync(["subtopics"])
    # The caller's handlers are back: Ctrl-C after the call is the caller's again.
    assert [signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)] == handlers
    assert (result.outcome, result.exit_code) == (ob.Outcome.DONE, 0)
    [record] = project.history()
    assert (record.stage, record.done) == (ob.Stage.SUBTOPICS, 1)


async def test_the_sync_wrapper_refuses_inside_trio(tmp_path: Path) -> None:
    project = ob.open_project(await init_demo_async(tmp_path / "demo"))
    with pytest.raises(ob.InsideTrio, match=r"await project\.run_stages"):
        project.run_stages_sync(["subtopics"])
    with pytest.raises(ob.InsideTrio, match=r"await project\.run\("):
        project.run_sync(train=False)
    assert project.history() == []  # nothing ran


async def test_cancelling_the_calling_scope_stops_the_stage_and_records_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path / "p", concurrency=3, pipeline=FIXED_CONCURRENCY)
    write_questions(root, 10)
    released = trio.Event()

    async def held(request: Recorded) -> Reply:
        await released.wait()
        return answer(request)

    returned = False
    async with open_stub(held) as stub:
        monkeypatch.setenv("OVERBRAINER_PROVIDERS__STUB__BASE_URL", stub.url)
        project = ob.open_project(root)

        async def work() -> None:
            nonlocal returned
            await project.run_stages(["answers"])
            returned = True

        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(work)
                await wait_until(lambda: len(stub.completions) == 3)
                nursery.cancel_scope.cancel()
        released.set()
    assert not returned  # the cancellation went out as Trio's, not as a result
    [line] = history(root)
    assert (line.stage, line.status, line.done) == (
        ob.Stage.ANSWERS,
        ob.HistoryStatus.INTERRUPTED,
        0,
    )
    with project_lock(Project(root)):  # the lock was given back
        pass


SCRIPT = """\
import logging, sys
import overbrainer.api as ob
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
result = ob.open_project(sys.argv[1]).run_stages_sync(["answers"])
print(f"outcome: {result.outcome.value}; {result.error.message if result.error else ''}")
sys.exit(result.exit_code)
"""


async def test_sigint_drains_the_requests_in_flight_and_ends_interrupted(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=3, pipeline=FIXED_CONCURRENCY)
    write_questions(root, 10)
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    released = trio.Event()

    async def held(request: Recorded) -> Reply:
        # Held until the test has seen the stage stop: a request after the signal is the API's.
        await released.wait()
        return answer(request)

    stderr = tmp_path / "stderr.txt"
    async with open_stub(held) as stub, trio.open_nursery() as nursery:
        with (tmp_path / "stdout.txt").open("wb") as out, stderr.open("wb") as err:
            process: trio.Process = await nursery.start(
                functools.partial(
                    trio.run_process,
                    [sys.executable, str(script), str(root)],
                    env=command_env(stub.url),
                    stdout=out,
                    stderr=err,
                    check=False,
                )
            )
        await wait_until(lambda: len(stub.completions) == 3)
        in_flight = set(completion_prompts(stub))
        process.send_signal(signal.SIGINT)
        await wait_until(lambda: "answers: stopping:" in stderr.read_text())
        released.set()
        with trio.fail_after(30):
            code = await process.wait()
    assert code == 130, stderr.read_text()
    assert len(stub.completions) == 3  # nothing asked after the signal
    assert {e.messages[0].content for e in read_examples(root)} == in_flight
    assert (tmp_path / "stdout.txt").read_text() == (
        "outcome: interrupted; interrupted: the stage resumes on its next run\n"
    )
    [line] = history(root)
    assert (line.status, line.done) == (ob.HistoryStatus.INTERRUPTED, 3)


async def test_failed_items_are_a_failed_result_not_an_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path / "p")
    monkeypatch.setenv(
        "OVERBRAINER_PROVIDERS__STUB__BASE_URL", f"http://127.0.0.1:{free_port()}/v1"
    )
    monkeypatch.setenv("OVERBRAINER_PIPELINE__MAX_RETRIES", "0")
    project = ob.open_project(root)
    with trio.fail_after(60):
        result = await project.run_stages(["subtopics"], topics=["ownership"])
    assert (result.outcome, result.exit_code, result.ok) == (ob.Outcome.FAILED, 1, False)
    assert isinstance(result.error, ob.WorkFailed)
    assert result.error.message == "1 subtopics item(s) failed; run the command again to retry them"
    assert result.lines == (
        "subtopics: 0 done, 0 skipped, 1 failed, 0 excluded; tokens 0 in, 0 out; cost unknown",
    )
    [record] = project.history()
    assert (record.status, record.failed) == (ob.HistoryStatus.FAILED, 1)


async def test_run_without_training_runs_every_stage(tmp_path: Path) -> None:
    project = ob.open_project(await init_demo_async(tmp_path / "demo"))
    with trio.fail_after(60):
        result = await project.run(train=False)
    assert isinstance(result, ob.RunResult)
    assert (result.outcome, result.train, result.push) == (ob.Outcome.DONE, None, None)
    assert [line.split(":")[0] for line in result.lines] == [
        "subtopics",
        "questions",
        "answers",
        "split",
    ]
    assert [r.stage.value for r in project.history()] == [
        "subtopics",
        "questions",
        "answers",
        "split",
    ]


def test_a_missing_project_raises_the_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ob.UsageError) as raised:
        ob.open_project(tmp_path / "nowhere")
    assert raised.value.exit_code == 2
    assert raised.value.message == (
        f"cannot read {tmp_path}/nowhere/overbrainer.toml: No such file or directory; "
        f"{tmp_path}/nowhere does not exist: make a project there with "
        f"`overbrainer init {tmp_path}/nowhere`"
    )


async def test_bad_input_is_a_refused_result_with_exit_code_2(tmp_path: Path) -> None:
    project = ob.open_project(await init_demo_async(tmp_path / "demo"))
    refused = await project.run_stages(["judge"])
    assert (refused.outcome, refused.exit_code, refused.ok) == (ob.Outcome.REFUSED, 2, False)
    assert isinstance(refused.error, ob.UsageError)
    assert refused.error.message == (
        "not a pipeline stage: 'judge' (run_stages runs subtopics, questions, answers, quality, "
        "split)"
    )
    unknown = await project.run_stages(["subtopics"], topics="nope")  # one name, not letters
    assert unknown.exit_code == 2
    assert unknown.error is not None and "nope" in unknown.error.message
    with pytest.raises(ob.UsageError):
        unknown.check()
    negative = await project.run(max_cost=-1.0)
    assert (negative.outcome, negative.train, negative.push) == (ob.Outcome.REFUSED, None, None)
    assert negative.error is not None
    assert negative.error.message == "max_cost must be at least 0, not -1.0"
    assert project.history() == []


def test_all_names_what_docs_api_documents() -> None:
    text = API_DOC.read_text(encoding="utf-8")
    reference = text.split("\n## Reference\n", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `([A-Za-z_]+)`", reference, re.MULTILINE)
    assert sorted(documented) == sorted(ob.__all__)
    assert len(documented) == len(set(documented))
    for name in ob.__all__:
        getattr(ob, name)  # each name is importable from the face


TRAINING_SCRIPT = """\
import sys
import overbrainer.api as ob
result = ob.open_project(sys.argv[1]).run_sync()
train = result.train
assert isinstance(train, ob.TrainResult), (result.exit_code, result.error, result.results)
print(result.outcome.value, [s.stage.value for s in result.stages], train.state.value,
      train.run_id, train.step, result.push)
sys.exit(result.exit_code)
"""


async def test_run_hands_back_the_training_as_a_train_result(tmp_path: Path) -> None:
    from tests.pipeline_support import TRAINING, command_env
    from tests.train_helpers import kill_jobs, only_run, standin_env

    root = make_project(tmp_path / "p")
    with (root / "overbrainer.toml").open("a") as config:
        config.write(TRAINING)
    trainer = standin_env(tmp_path / "bin", STANDIN_STEPS="4", STANDIN_EVAL_EVERY="0")
    try:
        async with open_stub() as stub:
            with trio.fail_after(120):
                done = await trio.run_process(
                    [sys.executable, "-c", TRAINING_SCRIPT, str(root)],
                    env=command_env(stub.url, trainer),
                    capture_stdout=True,
                    capture_stderr=True,
                    check=False,
                )
    finally:
        kill_jobs(root)
    assert done.returncode == 0, done.stderr.decode()
    run_id = only_run(root)
    assert done.stdout.decode().split("\n")[0] == (
        f"done ['subtopics', 'questions', 'answers', 'split'] succeeded {run_id} 4 None"
    )
