"""`overbrainer answers` end to end: the real command in a subprocess against the stub."""

from __future__ import annotations

from pathlib import Path

from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.storage.history import HistoryStatus
from overbrainer.storage.records import Exclusion
from tests.pipeline_support import (
    PRICES,
    completion_prompts,
    history,
    make_project,
    overbrainer,
    read_examples,
    write_questions,
)
from tests.ports import free_port


def thoughtful(request: Recorded) -> Reply:
    return Reply(
        content=f"Answer to {request.prompt}",
        reasoning=f"Thinking about {request.prompt}",
        usage=(100, 50),
    )


async def test_answers_stores_every_answer_then_a_rerun_sends_nothing(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    questions = write_questions(root, 4)
    async with open_stub(thoughtful) as stub:
        stub.models = PRICES
        first = await overbrainer(root, "answers", url=stub.url)
        assert first.code == 0, first.stderr
        assert first.out_lines == [
            "answers: 4 done, 0 skipped, 0 failed, 0 excluded; tokens 400 in, 200 out; cost $0.8000"
        ]
        examples = {e.id: e for e in read_examples(root)}
        assert set(examples) == {q.id for q in questions}
        for q in questions:
            e = examples[q.id]
            assert (e.topic, e.subtopic) == ("ownership", "Basics")
            assert [(m.role, m.content, m.reasoning_content) for m in e.messages] == [
                ("user", q.text, None),
                ("assistant", f"Answer to {q.text}", f"Thinking about {q.text}"),
            ]
            assert e.meta.model == "parent-model"
            assert e.meta.finish_reason is FinishReason.STOP
            assert e.meta.reasoning_kind is ReasoningKind.RAW
            assert e.meta.excluded is None
        system = completion_prompts(stub)
        assert sorted(system) == sorted(q.text for q in questions)
        assert all(
            r.system is not None and r.system.startswith("You are an expert in ownership.")
            for r in stub.completions
        )
        asked = len(stub.requests)

        second = await overbrainer(root, "answers", url=stub.url)
        assert second.code == 0, second.stderr
        assert second.out_lines == [
            "answers: 0 done, 4 skipped, 0 failed, 0 excluded; tokens 0 in, 0 out; cost $0.0000"
        ]
        assert [r for r in stub.requests[asked:] if r.is_completion] == []
    lines = history(root)
    assert [(h.stage.value, h.status, h.done, h.skipped, h.cost) for h in lines] == [
        ("answers", HistoryStatus.OK, 4, 0, 0.8),
        ("answers", HistoryStatus.OK, 0, 4, 0.0),
    ]
    assert (lines[0].provider, lines[0].model) == ("stub", "parent-model")
    assert (lines[0].input_tokens, lines[0].output_tokens) == (400, 200)
    assert "answers: 4 to process" in first.stderr
    assert "answers: finished" in first.stderr
    assert not (root / ".overbrainer" / "lock").read_text()


async def test_unknown_topic_fails_before_any_request_or_history(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    async with open_stub(thoughtful) as stub:
        result = await overbrainer(root, "answers", "--topic", "nope", url=stub.url)
        assert stub.requests == []
    assert result.code == 2
    assert result.stderr.strip().splitlines()[-1] == "error: unknown topic `nope`"
    assert history(root) == []


async def test_faults_end_with_the_right_counts_then_a_rerun_retries_the_failed(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    questions = write_questions(root, 6)
    retry_now = {"retry-after": "0"}
    async with open_stub(thoughtful) as stub:
        stub.models = PRICES
        stub.queue(
            Reply(status=429, content="slow down", headers={"retry-after": "0.1"}),
            Reply(content="fine", reasoning="thought", usage=(100, 50)),
            Reply(body=b'{"choices": []}', usage=(1, 1)),
            Reply(content="cut", reasoning="long thought", finish_reason="length", usage=(100, 50)),
            Reply(content="", refusal="I cannot help with that", usage=(100, 50)),
            Reply(status=500, content="boom", headers=retry_now),
            Reply(status=500, content="boom", headers=retry_now),
            Reply(status=500, content="boom", headers=retry_now),
            Reply(content="last", reasoning="thought", usage=(100, 50)),
        )
        first = await overbrainer(root, "answers", url=stub.url)
        assert first.code == 1
        assert first.out_lines == [
            "answers: 2 done, 0 skipped, 2 failed, 2 excluded; tokens 400 in, 200 out; cost $0.8000"
        ]
        err = first.stderr
        assert err.strip().splitlines()[-1] == (
            "error: 2 answers item(s) failed; run the command again to retry them"
        )
        assert f"answers: {questions[0].id}: HTTP 429: slow down; retrying in 0.1s" in err
        assert f"answers: {questions[1].id} failed: invalid response" in err
        assert f"answers: {questions[4].id}: HTTP 500: boom; retrying in 0.0s" in err
        assert f"answers: {questions[4].id} failed: HTTP 500: boom" in err
        stored = {e.id: e for e in read_examples(root)}
        assert set(stored) == {questions[i].id for i in (0, 2, 3, 5)}
        assert stored[questions[2].id].meta.excluded is Exclusion.TRUNCATED
        assert stored[questions[2].id].messages[-1].reasoning_content == "long thought"
        assert stored[questions[3].id].meta.excluded is Exclusion.REFUSED
        assert stored[questions[3].id].meta.finish_reason is FinishReason.REFUSAL
        asked = len(stub.completions)

        second = await overbrainer(root, "answers", url=stub.url)
        assert second.code == 0, second.stderr
        assert second.out_lines == [
            "answers: 2 done, 4 skipped, 0 failed, 0 excluded; tokens 200 in, 100 out; cost $0.4000"
        ]
        assert sorted(completion_prompts(stub)[asked:]) == sorted(
            [questions[1].text, questions[4].text]
        )
    assert [(h.status, h.done, h.failed, h.excluded) for h in history(root)] == [
        (HistoryStatus.FAILED, 2, 2, 2),
        (HistoryStatus.OK, 2, 0, 0),
    ]


async def test_a_401_stops_the_stage_and_keeps_the_finished_answers(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    questions = write_questions(root, 4)
    async with open_stub(thoughtful) as stub:
        stub.queue(
            Reply(content="one", reasoning="r", usage=(100, 50)),
            Reply(status=401, content="bad key sk-secret"),
        )
        result = await overbrainer(root, "answers", url=stub.url)
        assert len(stub.completions) == 2
    assert result.code == 1
    assert result.out_lines == [
        "answers: 1 done, 0 skipped, 0 failed, 0 excluded; tokens 100 in, 50 out; cost unknown"
    ]
    assert result.stderr.strip().splitlines()[-1] == (
        "error: answers stopped: HTTP 401: authentication failed, check the provider API key"
    )
    assert "sk-secret" not in result.stderr
    assert [e.id for e in read_examples(root)] == [questions[0].id]
    [line] = history(root)
    # The spec: a fatal error stops the stage; only a non-fatal one gives `failed += 1`.
    assert (line.status, line.done, line.failed) == (HistoryStatus.FAILED, 1, 0)
    assert "failed: HTTP 401" not in result.stderr


async def test_a_timeout_is_retried(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1, pipeline="request_timeout_secs = 1")
    write_questions(root, 1)
    async with open_stub(thoughtful) as stub:
        stub.queue(Reply(delay=3.0), Reply(content="late", reasoning="r", usage=(100, 50)))
        result = await overbrainer(root, "answers", url=stub.url)
    assert result.code == 0, result.stderr
    assert ": request failed: no answer within 1s; retrying in " in result.stderr
    assert result.out_lines[0].startswith("answers: 1 done, 0 skipped, 0 failed, 0 excluded")


async def test_a_provider_that_refuses_connections_stops_the_stage_at_once(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    port = free_port()
    result = await overbrainer(root, "answers", url=f"http://127.0.0.1:{port}/v1", limit=20)
    assert result.code == 1, result.stderr
    assert result.out_lines == [
        "answers: 0 done, 0 skipped, 1 failed, 0 excluded; tokens 0 in, 0 out; cost unknown"
    ]
    err = result.stderr.splitlines()
    # The price listing, then both items' first attempts: three refusals in a row.
    assert err[-1] == f"error: cannot reach provider `stub` at 127.0.0.1:{port}: connection refused"
    assert read_examples(root) == []
    [line] = history(root)
    assert (line.status, line.done, line.failed) == (HistoryStatus.FAILED, 0, 1)


async def test_a_template_that_cannot_render_stops_force_before_it_rewrites(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    async with open_stub(thoughtful) as stub:
        assert (await overbrainer(root, "answers", url=stub.url)).code == 0
        stored = (root / "data" / "answers.jsonl").read_bytes()
        (root / "prompts").mkdir()
        for name in ("answer_system.txt", "questions.txt", "subtopics.txt"):
            (root / "prompts" / name).write_text("About {{ topic }} and {{ nope }}.\n")
            (root / "prompts" / name).rename(root / "prompts" / f"{name}.off")
        for stage, name in (("answers", "answer_system.txt"), ("questions", "questions.txt")):
            (root / "prompts" / f"{name}.off").rename(root / "prompts" / name)
            result = await overbrainer(root, stage, "--force", url=stub.url)
            (root / "prompts" / name).rename(root / "prompts" / f"{name}.off")
            assert (result.code, result.stdout) == (2, "")
            assert result.stderr.splitlines()[-1] == (
                f"error: cannot render template {name}: 'nope' is undefined"
            )
        assert len(stub.completions) == 2
    assert (root / "data" / "answers.jsonl").read_bytes() == stored
    assert len((root / "data" / "questions.jsonl").read_text().splitlines()) == 2
    assert len(history(root)) == 1


async def test_malformed_200_bodies_are_retried_until_every_answer_is_stored(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    questions = write_questions(root, 4)
    cut = b'{"choices": [{"message": {"content": "half'
    async with open_stub(thoughtful) as stub:
        stub.queue(Reply(body=cut), Reply(body=b"<html>bad gateway</html>"))
        result = await overbrainer(root, "answers", url=stub.url)
        assert result.code == 0, result.stderr
        assert result.out_lines[0].startswith("answers: 4 done, 0 skipped, 0 failed, 0 excluded")
        assert len(stub.completions) == 6
    assert {e.id for e in read_examples(root)} == {q.id for q in questions}
