"""`overbrainer compare` end to end: a real GGUF served by the real llama-server, fetched and
verified from a loopback release, judged by the stand-in provider (§A)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
import trio

from overbrainer.compare.verdicts import child_first
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from tests.compare_support import (
    RUN_ID,
    SCRIPTED,
    compare_env,
    make_compare_project,
    question_number,
    scripted_judge,
    standin_release,
)
from tests.llama_support import LlamaRelease
from tests.pipeline_support import overbrainer, start, wait_until

COMPARES = f"runs/{RUN_ID}/compares"


def _compare_dir(root: Path) -> Path:
    found = sorted((root / COMPARES).iterdir())
    assert len(found) == 1
    return found[0]


def _expected(number: int) -> str:
    """The verdict the scripted judge gives question `number` (seed 42)."""
    reply = SCRIPTED[number]
    first = child_first(f"q{number}", 42)
    if "verdict" not in reply:
        return "unparsed"
    if '"tie"' in reply:
        return "tie"
    said_a = '"A"' in reply or '"a"' in reply
    return "win" if said_a == first else "loss"


def _judge_requests(stub_requests: list[Recorded]) -> list[Recorded]:
    return [r for r in stub_requests if r.is_completion]


@pytest.mark.quick  # an end-to-end path of the quick tier
async def test_compare_of_five_questions_writes_the_report(
    tmp_path: Path, llama_release: LlamaRelease
) -> None:
    root = make_compare_project(tmp_path / "p", compare="concurrency = 2")
    cache = tmp_path / "cache"
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(
            root, "compare", url=stub.url, env=compare_env(llama_release, cache), limit=240
        )
        assert result.code == 0, result.stderr
        folder = _compare_dir(root)
        compare_id = folder.name
        assert result.out_lines == [f"{COMPARES}/{compare_id}/compare.md"]
        assert (cache / "llama.cpp" / "b0test" / "ubuntu-x64" / "llama-server").is_file()

        answers = [json.loads(x) for x in (folder / "child_answers.jsonl").read_text().splitlines()]
        assert [a["id"] for a in answers] == [f"q{n}" for n in range(5)]
        for answer in answers:
            assert "error" not in answer
            assert answer["seconds"] > 0
            assert answer["output_tokens"] > 0
            assert answer["finish"] in ("stop", "length")
        hardware = json.loads((folder / "hardware.json").read_text())
        assert hardware["build"] == "ubuntu-x64" and hardware["gpus"] == []
        load = json.loads((folder / "load.json").read_text())
        assert load["concurrency"] == 2 and load["requests"] == 5 and load["errors"] == 0

        # Two asks for the garbage reply of q3, one for each other question.
        judged = _judge_requests(stub.requests)
        assert sorted(question_number(r) for r in judged) == [0, 1, 2, 3, 3, 4]
        assert all(
            isinstance(r.body_json, dict) and r.body_json["model"] == "judge-model" for r in judged
        )
        expected = {f"q{n}": _expected(n) for n in range(5)}
        verdict_files = sorted(folder.glob("verdicts-*.jsonl"))
        assert len(verdict_files) == 1
        lines = [json.loads(x) for x in verdict_files[0].read_text().splitlines()]
        assert {x["id"]: x["verdict"] for x in lines} == expected
        assert {x["id"]: x["child_first"] for x in lines} == {
            f"q{n}": child_first(f"q{n}", 42) for n in range(5)
        }

        report = json.loads((folder / "compare.json").read_text())
        summary = report["summary"]
        wins = list(expected.values()).count("win")
        ties = list(expected.values()).count("tie")
        losses = list(expected.values()).count("loss")
        assert (summary["wins"], summary["ties"], summary["losses"]) == (wins, ties, losses)
        assert summary["unparsed"] == 1 and summary["errors"] == 0
        assert summary["win_or_tie"] == (wins + ties) / 4
        seconds = sorted(a["seconds"] for a in answers)
        assert summary["latency_p50"] == seconds[2] and summary["latency_p95"] == seconds[4]
        # Parent: mean 102 in, 1000 out at $1.1 / $2.2 per million -> $2.3122 per 1,000.
        assert report["costs"]["parent_per_1k"] == round((102 * 1.1 + 1000 * 2.2) / 1e6 * 1000, 6)
        assert report["under_load"]["concurrency"] == 2
        assert report["judge"] == "stub/judge-model" and report["judge_is_parent"] is False
        assert report["verdicts_file"] == verdict_files[0].name

        md = (folder / "compare.md").read_text()
        assert md.startswith(
            f"# Compare of run {RUN_ID}\n\n| | |\n|---|---|\n| Compare | {compare_id} |\n"
        )
        assert "| Base model | tiny/random-llama |" in md
        assert "| Hardware | " in md and ", CPU (ubuntu-x64) |" in md
        assert f"| Wins / ties / losses | {wins} / {ties} / {losses} |" in md
        assert "| Unparsed verdicts (not counted) | 1 |" in md
        assert "| Parent cost per 1,000 requests | $2.3122 |" in md
        assert "| Under load (2 parallel): requests per second | " in md
        assert "- The child ran on a CPU." in md
        assert "judge: " in result.stderr and " 5/5" in result.stderr

        # The same judge again: nothing left to judge, no request.
        before = len(_judge_requests(stub.requests))
        again = await overbrainer(
            root, "compare", "--rejudge", compare_id, url=stub.url,
            env=compare_env(llama_release, cache), limit=60,
        )  # fmt: skip
        assert again.code == 0, again.stderr
        assert len(_judge_requests(stub.requests)) == before
        assert json.loads((folder / "compare.json").read_text())["summary"] == summary

        # Another judge model: a new verdict file, every question judged again.
        other = await overbrainer(
            root, "compare", "--rejudge", compare_id, url=stub.url,
            env=compare_env(llama_release, cache, {"OVERBRAINER_ROLES__JUDGE__MODEL": "judge-2"}),
            limit=60,
        )  # fmt: skip
        assert other.code == 0, other.stderr
        assert len(sorted(folder.glob("verdicts-*.jsonl"))) == 2
        assert len(_judge_requests(stub.requests)) == before + 6


async def test_a_wrong_sha256_is_refused(tmp_path: Path, llama_release: LlamaRelease) -> None:
    root = make_compare_project(tmp_path / "p", questions=1)
    cache = tmp_path / "cache"
    wrong = "0" * 64
    env = compare_env(llama_release, cache, {"OVERBRAINER_LLAMA_CPP_UBUNTU_X64_SHA256": wrong})
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(root, "compare", url=stub.url, env=env, limit=120)
        assert result.code == 1, result.stderr
        assert _judge_requests(stub.requests) == []
    url = f"{llama_release.url}/releases/download/b0test/llama-b0test-bin-ubuntu-x64.tar.gz"
    folder = _compare_dir(root)
    assert result.stderr.splitlines()[-1] == (
        f"error: compare {folder.name} of run {RUN_ID} failed: {url} has SHA-256 "
        f"{llama_release.binary_sha256}, expected {wrong}: not used; its server log is "
        f"{COMPARES}/{folder.name}/server.log"
    )
    assert not (cache / "llama.cpp" / "b0test" / "ubuntu-x64").exists()
    assert list((cache / "llama.cpp" / "b0test").glob("*.tar.gz*")) == []
    record = json.loads((_compare_dir(root) / "run.json").read_text())
    assert record["state"] == "failed"


async def test_a_bad_model_file_fails_with_the_server_log(
    tmp_path: Path, llama_release: LlamaRelease
) -> None:
    root = make_compare_project(tmp_path / "p", questions=1, bad_gguf=True)
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(
            root, "compare", url=stub.url, env=compare_env(llama_release, tmp_path / "c"),
            limit=120,
        )  # fmt: skip
    assert result.code == 1
    folder = _compare_dir(root)
    error = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert error == [
        f"error: compare {folder.name} of run {RUN_ID} failed: llama-server exited before it "
        f"was ready:; its server log is {COMPARES}/{folder.name}/server.log"
    ] or error[0].startswith(
        f"error: compare {folder.name} of run {RUN_ID} failed: llama-server exited before it "
        "was ready:"
    )
    assert "llama-server exited before it was ready:" in (folder / "job.log").read_text()


@pytest.mark.sigint
async def test_ctrl_c_while_judging_keeps_the_verdicts_and_rejudge_resumes(
    tmp_path: Path, llama_release: LlamaRelease
) -> None:
    root = make_compare_project(tmp_path / "p", concurrency=1)
    cache = tmp_path / "cache"
    env = compare_env(llama_release, cache)

    def slow_after_two(request: Recorded) -> Reply:
        # q2 is in flight when Ctrl-C comes and answers within the grace; q3 is never asked.
        number = question_number(request)
        return Reply(SCRIPTED[2], delay=0.0 if number < 2 else 2.0 if number == 2 else 60.0)

    async with open_stub(slow_after_two) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "compare", url=stub.url, env=env)

        def two_verdicts() -> bool:
            files = list((root / COMPARES).glob("*/verdicts-*.jsonl"))
            return bool(files) and len(files[0].read_text().splitlines()) == 2

        await wait_until(two_verdicts, limit=180, every=0.1)
        await wait_until(lambda: len(_judge_requests(stub.requests)) == 3, limit=60)
        os.kill(process.pid, signal.SIGINT)
        with trio.fail_after(30):
            await process.wait()
    assert process.returncode == 130
    folder = _compare_dir(root)
    stderr = (root / "stderr.txt").read_text()
    assert stderr.splitlines()[-1] == (
        "interrupted: the verdicts so far are kept; resume with "
        f"`overbrainer compare --rejudge {folder.name}`"
    )
    verdicts = next(folder.glob("verdicts-*.jsonl")).read_text().splitlines()
    assert [json.loads(x)["id"] for x in verdicts] == ["q0", "q1", "q2"]
    assert not (folder / "compare.md").exists()

    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(
            root, "compare", "--rejudge", folder.name, url=stub.url, env=env, limit=60
        )
        assert result.code == 0, result.stderr
        assert sorted(question_number(r) for r in _judge_requests(stub.requests)) == [3, 3, 4]
    lines = next(folder.glob("verdicts-*.jsonl")).read_text().splitlines()
    assert [json.loads(x)["id"] for x in lines][:3] == ["q0", "q1", "q2"]
    assert len(lines) == 5


async def test_kill_9_while_judging_keeps_the_verdicts_and_rejudge_resumes(
    tmp_path: Path, llama_release: LlamaRelease
) -> None:
    root = make_compare_project(tmp_path / "p", concurrency=1)
    env = compare_env(llama_release, tmp_path / "cache")

    def stuck_on_q2(request: Recorded) -> Reply:
        return Reply(SCRIPTED[2], delay=60.0 if question_number(request) >= 2 else 0.0)

    async with open_stub(stuck_on_q2) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "compare", url=stub.url, env=env)
        await wait_until(lambda: len(_judge_requests(stub.requests)) == 3, limit=180, every=0.1)
        os.kill(process.pid, signal.SIGKILL)
        with trio.fail_after(10):
            await process.wait()
    assert process.returncode == -signal.SIGKILL
    folder = _compare_dir(root)
    verdicts = next(folder.glob("verdicts-*.jsonl")).read_text().splitlines()
    assert [json.loads(x)["id"] for x in verdicts] == ["q0", "q1"]
    assert not (folder / "compare.md").exists()

    # The next command finds the project unlocked and judges only what has no verdict.
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(
            root, "compare", "--rejudge", folder.name, url=stub.url, env=env, limit=60
        )
        assert result.code == 0, result.stderr
        assert sorted(question_number(r) for r in _judge_requests(stub.requests)) == [2, 3, 3, 4]
    lines = next(folder.glob("verdicts-*.jsonl")).read_text().splitlines()
    assert [json.loads(x)["id"] for x in lines] == ["q0", "q1", "q2", "q3", "q4"]
    assert (folder / "compare.md").is_file()


async def test_both_orders_counts_a_disagreement_as_position_inconsistent(
    tmp_path: Path, llama_release: LlamaRelease
) -> None:
    root = make_compare_project(tmp_path / "p", questions=3, compare="judge_both_orders = true")

    def always_a(request: Recorded) -> Reply:
        return Reply('{"verdict": "A", "reason": "the first one"}')

    async with open_stub(always_a) as stub:
        result = await overbrainer(
            root, "compare", url=stub.url, env=compare_env(llama_release, tmp_path / "c"),
            limit=240,
        )  # fmt: skip
        assert result.code == 0, result.stderr
        assert len(_judge_requests(stub.requests)) == 6
    folder = _compare_dir(root)
    report = json.loads((folder / "compare.json").read_text())
    assert report["judge_both_orders"] is True
    assert report["summary"]["inconsistent"] == 3
    assert report["summary"]["win_or_tie"] is None
    assert (
        "| Position-inconsistent verdicts (not counted) | 3 |"
        in (folder / "compare.md").read_text()
    )


async def test_keep_pod_is_refused_off_runpod(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=1)
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(root, "compare", "--keep-pod", url=stub.url, limit=60)
    assert result.code == 2
    assert result.stderr.splitlines()[-1] == "error: --keep-pod only applies to a runpod target"
    assert not (root / COMPARES).exists()


async def test_llama_server_exiting_mid_answer_fails_with_the_log_tail(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=2)
    with standin_release(tmp_path / "release") as pin:
        env = {**pin, "OVERBRAINER_CACHE": str(tmp_path / "c"), "OVERBRAINER_TEST_POLL_S": "0.2"}
        async with open_stub(scripted_judge) as stub:
            result = await overbrainer(root, "compare", url=stub.url, env=env, limit=120)
            assert _judge_requests(stub.requests) == []
    assert result.code == 1, result.stderr
    folder = _compare_dir(root)
    assert (
        f"error: compare {folder.name} of run {RUN_ID} failed: llama-server exited while "
        "answering:" in result.stderr
    )
    job_log = (folder / "job.log").read_text()
    assert "compare: llama-server exited while answering:\nstandin: listening\n" in job_log
    assert "standin: GGML_ASSERT failed, dying" in job_log
    assert result.stderr.rstrip().endswith(f"its server log is {COMPARES}/{folder.name}/server.log")
    assert json.loads((folder / "run.json").read_text())["state"] == "failed"


@pytest.mark.sigint
async def test_ctrl_c_while_the_child_answers_cancels_the_job(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=2)
    with standin_release(tmp_path / "release") as pin:
        env = {
            **pin,
            "OVERBRAINER_CACHE": str(tmp_path / "c"),
            "OVERBRAINER_TEST_POLL_S": "0.2",
            "STANDIN_LLAMA_MODE": "hang",
        }
        async with open_stub(scripted_judge) as stub, trio.open_nursery() as nursery:
            process = await start(nursery, root, "compare", url=stub.url, env=env)

            def answering() -> bool:
                logs = list((root / COMPARES).glob("*/server.log"))
                return bool(logs) and "standin: answering" in logs[0].read_text()

            await wait_until(answering, limit=60, every=0.1)
            os.kill(process.pid, signal.SIGINT)
            with trio.fail_after(60):
                await process.wait()
            assert _judge_requests(stub.requests) == []
    assert process.returncode == 130
    folder = _compare_dir(root)
    stderr = (root / "stderr.txt").read_text()
    assert stderr.splitlines()[-1] == (
        f"interrupted: compare {folder.name} of run {RUN_ID} cancelled"
    )
    assert json.loads((folder / "run.json").read_text())["state"] == "cancelled"
    server_pid = int((folder / "standin.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(server_pid, 0)


async def test_a_failing_judge_keeps_the_verdicts_and_says_how_to_resume(
    tmp_path: Path, llama_release: LlamaRelease
) -> None:
    root = make_compare_project(tmp_path / "p", questions=3, concurrency=1)

    def fails_on_q2(request: Recorded) -> Reply:
        if question_number(request) == 2:
            return Reply("overloaded", status=500)
        return scripted_judge(request)

    async with open_stub(fails_on_q2) as stub:
        result = await overbrainer(
            root, "compare", url=stub.url, env=compare_env(llama_release, tmp_path / "c"),
            limit=120,
        )  # fmt: skip
    assert result.code == 1, result.stderr
    folder = _compare_dir(root)
    last = result.stderr.splitlines()[-1]
    assert last.startswith("error: the judge failed on question q2: ")
    assert last.endswith(
        f"; the verdicts so far are kept; resume with `overbrainer compare --rejudge {folder.name}`"
    )
    lines = next(folder.glob("verdicts-*.jsonl")).read_text().splitlines()
    assert [json.loads(x)["id"] for x in lines] == ["q0", "q1"]
    assert not (folder / "compare.json").exists()


async def test_bad_input_is_refused_with_one_line_and_nothing_written(tmp_path: Path) -> None:
    root = make_compare_project(tmp_path / "p", questions=1)
    async with open_stub(scripted_judge) as stub:
        unknown = await overbrainer(root, "compare", "--rejudge", "compare_x", url=stub.url)
        both = await overbrainer(
            root, "compare", "--rejudge", "compare_x", "--limit", "2", url=stub.url
        )
        no_run = await overbrainer(root, "compare", "--run", "nope_1", url=stub.url)
        (root / "runs" / RUN_ID / "export.json").unlink()
        no_gguf = await overbrainer(root, "compare", url=stub.url)
        assert _judge_requests(stub.requests) == []
    assert (unknown.code, unknown.stderr.splitlines()[-1]) == (
        2,
        "error: no compare compare_x in runs/",
    )
    assert (
        both.code == 2 and "--limit, --keep-pod and --questions go without --rejudge" in both.stderr
    )
    assert (no_run.code, no_run.stderr.splitlines()[-1]) == (2, "error: no run nope_1 in runs/")
    assert (no_gguf.code, no_gguf.stderr.splitlines()[-1]) == (
        2,
        "error: no run has a GGUF: export one with `overbrainer export <run-id>`, then compare",
    )
    assert not (root / COMPARES).exists()


@pytest.mark.sigint
async def test_a_judge_request_outlasting_the_grace_is_cancelled(
    tmp_path: Path, llama_release: LlamaRelease
) -> None:
    root = make_compare_project(tmp_path / "p", questions=3, concurrency=1)
    env = compare_env(llama_release, tmp_path / "c", {"OVERBRAINER_PIPELINE__DRAIN_SECS": "0.5"})

    def slow_q1(request: Recorded) -> Reply:
        return Reply(SCRIPTED[2], delay=60.0 if question_number(request) == 1 else 0.0)

    async with open_stub(slow_q1) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "compare", url=stub.url, env=env)
        await wait_until(lambda: len(_judge_requests(stub.requests)) == 2, limit=180, every=0.1)
        os.kill(process.pid, signal.SIGINT)
        with trio.fail_after(20):
            await process.wait()
        assert len(_judge_requests(stub.requests)) == 2
    assert process.returncode == 130
    verdicts = next(_compare_dir(root).glob("verdicts-*.jsonl")).read_text().splitlines()
    assert [json.loads(x)["id"] for x in verdicts] == ["q0"]
