"""No error is lost: a bug in one answer beside a 403 in another still reaches the log."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import trio

from overbrainer.config.settings import Pipeline, Topic
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.events.types import Stage
from overbrainer.llm.client import ProtocolClient
from overbrainer.llm.retry import Gate, OnRetry
from overbrainer.llm.types import Completion, CompletionRequest
from overbrainer.pipeline import answers
from overbrainer.pipeline.answers import answers_stage
from overbrainer.pipeline.engine import StageStopped
from overbrainer.storage.history import HistoryStatus, read_history
from overbrainer.storage.records import Example, Question
from tests.generator_harness import harness
from tests.pipeline_support import write_questions


async def test_a_type_error_beside_a_403_is_logged_with_its_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ownership = Topic("ownership", subtopics=1, questions_per_subtopic=2)
    async with harness(tmp_path / "p", ownership, pipeline=Pipeline(concurrency=2)) as h:
        buggy, forbidden = write_questions(h.root, 2)

        def reply(request: Recorded) -> Reply:
            if request.prompt == forbidden.text:
                return Reply(status=403, content="no access")
            return Reply(content="an answer", reasoning="thought", usage=(100, 50))

        h.stub.responder = reply

        # Both requests end before either task goes on, so neither error cancels the other.
        complete = ProtocolClient.complete
        ended = 0
        both_ended = trio.Event()

        async def complete_together(
            self: ProtocolClient,
            request: CompletionRequest,
            on_retry: OnRetry | None = None,
            gate: Gate | None = None,
        ) -> Completion:
            nonlocal ended
            try:
                return await complete(self, request, on_retry, gate)
            finally:
                ended += 1
                if ended == 2:
                    both_ended.set()  # the first wakes for sure; this one goes on at once
                else:
                    await both_ended.wait()

        build = answers.build_example

        def build_or_fail(question: Question, *args: object) -> Example:
            if question.id == buggy.id:
                raise TypeError("a bug in building the example")
            return build(question, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(ProtocolClient, "complete", complete_together)
        monkeypatch.setattr(answers, "build_example", build_or_fail)
        with (
            caplog.at_level(logging.ERROR),
            pytest.raises(StageStopped) as stopped,
        ):
            await h.run(Stage.ANSWERS, answers_stage)

    assert stopped.value.message.startswith("answers stopped: HTTP 403")
    [record] = [r for r in caplog.records if r.exc_info is not None]
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], TypeError)
    assert "HTTP 403" in record.getMessage()
    assert "TypeError: a bug in building the example" in caplog.text
    assert "in build_or_fail" in caplog.text  # the traceback down to where it was raised
    [line] = read_history(h.root / ".overbrainer" / "history.jsonl")
    assert line.status is HistoryStatus.FAILED
