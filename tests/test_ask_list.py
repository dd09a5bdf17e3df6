"""`ask_list` through the engine against the stub: structured output, re-asks, token limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from overbrainer.config.settings import Pipeline, Topic
from overbrainer.devtools.stub_script import Reply
from overbrainer.events.types import Stage, StageStats
from overbrainer.llm.errors import InvalidResponse, StatusError
from overbrainer.model.usage import Usage
from overbrainer.pipeline.ask import AskedList, ask_list
from overbrainer.pipeline.engine import StageContext, StageItemsFailed, StageRun, StageStopped
from tests.generator_harness import Harness, harness

TOPIC = Topic("rust", subtopics=1, questions_per_subtopic=1)


class Asker:
    """A stage body that asks one list and keeps what it got."""

    def __init__(self) -> None:
        self.got: AskedList | None = None
        self.error: Exception | None = None

    async def __call__(self, ctx: StageContext, run: StageRun) -> None:
        run.start(1)
        try:
            self.got = await ask_list(run, "item", "Reply with a JSON array of 2 strings.")
        except InvalidResponse as error:
            self.error = error
            run.failed("item", error)
            return
        assert self.got is not None
        run.done("item", self.got.usage, self.got.cost)


def _sent(h: Harness) -> list[tuple[bool, int]]:
    """(structured, max_tokens) of each completion request."""
    sent = []
    for request in h.stub.completions:
        body = request.body_json
        assert isinstance(body, dict)
        tokens = body["max_tokens"]
        assert isinstance(tokens, int)
        sent.append(("response_format" in body, tokens))
    return sent


async def test_the_first_attempt_asks_for_structured_output(tmp_path: Path) -> None:
    async with harness(tmp_path, TOPIC) as h:
        h.stub.queue(Reply(content='{"items": ["a", "b"]}', usage=(10, 5)))
        asker = Asker()
        stats = await h.run(Stage.SUBTOPICS, asker)
    assert asker.got == AskedList(["a", "b"], Usage(10, 5), 0.00002)
    assert _sent(h) == [(True, 1000)]
    assert h.stub.completions[0].prompt == "Reply with a JSON array of 2 strings."
    assert h.stub.completions[0].system is None
    assert stats.usage == Usage(10, 5)
    assert h.failures() == []


async def test_a_failed_structured_request_is_retried_without_it(tmp_path: Path) -> None:
    async with harness(tmp_path, TOPIC) as h:
        h.stub.queue(
            Reply(status=400, body=b'{"error": {"message": "no response_format"}}'),
            Reply(content='["x"]', usage=(3, 4)),
        )
        asker = Asker()
        await h.run(Stage.SUBTOPICS, asker)
    assert asker.got is not None and asker.got.items == ["x"]
    assert _sent(h) == [(True, 1000), (False, 1000)]
    assert h.failures() == [
        (
            "item",
            "HTTP 400: no response_format; retrying without structured output",
            True,
        )
    ]


async def test_a_401_stops_at_once_without_another_request(tmp_path: Path) -> None:
    async with harness(tmp_path, TOPIC) as h:
        h.stub.queue(Reply(status=401, body=b"{}"), Reply(content='["x"]'))
        with pytest.raises(StageStopped) as stopped:
            await h.run(Stage.SUBTOPICS, Asker())
    assert stopped.value.message == (
        "subtopics stopped: HTTP 401: authentication failed, check the provider API key"
    )
    assert _sent(h) == [(True, 1000)]


async def test_without_retries_the_real_cause_is_raised(tmp_path: Path) -> None:
    async with harness(tmp_path, TOPIC, pipeline=Pipeline(max_retries=0)) as h:
        h.stub.queue(Reply(status=400, body=b'{"error": {"message": "bad request"}}'))
        with pytest.raises(StatusError) as caught:
            await h.run(Stage.SUBTOPICS, Asker())
    assert caught.value.message == "HTTP 400: bad request"
    assert _sent(h) == [(True, 1000)]


async def test_a_failure_without_structured_output_is_raised(tmp_path: Path) -> None:
    async with harness(tmp_path, TOPIC) as h:
        h.stub.queue(Reply(status=400, body=b"{}"), Reply(status=400, body=b"{}"))
        asker = Asker()
        with pytest.raises(StatusError):
            await h.run(Stage.SUBTOPICS, asker)
    assert asker.got is None
    assert _sent(h) == [(True, 1000), (False, 1000)]


async def test_a_cut_short_answer_doubles_the_limit_up_to_four_times(tmp_path: Path) -> None:
    cut = Reply(content='["unfinished', finish_reason="length", usage=(1, 1))
    pipeline = Pipeline(max_retries=4)
    async with harness(tmp_path, TOPIC, pipeline=pipeline) as h:
        h.stub.queue(cut, cut, cut, cut, Reply(content='["done"]', usage=(1, 1)))
        asker = Asker()
        stats = await h.run(Stage.SUBTOPICS, asker)
    assert _sent(h) == [(True, 1000), (True, 2000), (True, 4000), (True, 4000), (True, 4000)]
    cut_short = "the answer was cut short by the token limit; retrying with a higher limit"
    assert [f[1] for f in h.failures()] == [
        cut_short,
        cut_short,
        "the answer is not a list of strings",
        "the answer is not a list of strings",
    ]
    assert asker.got is not None and asker.got.usage == Usage(5, 5)
    assert stats.usage == Usage(5, 5)


async def test_no_list_after_every_attempt_fails_the_item(tmp_path: Path) -> None:
    async with harness(tmp_path, TOPIC) as h:  # max_retries = 2: three attempts
        h.stub.queue(*[Reply(content="I cannot list things.", usage=(2, 1))] * 3)
        asker = Asker()
        with pytest.raises(StageItemsFailed):
            await h.run(Stage.SUBTOPICS, asker)
    assert str(asker.error) == "invalid response: no list of strings after all retries"
    assert len(h.stub.completions) == 3
    assert h.failures() == [
        ("item", "the answer is not a list of strings", True),
        ("item", "the answer is not a list of strings", True),
        ("item", "the answer is not a list of strings", True),
        ("item", "invalid response: no list of strings after all retries", False),
    ]
    # Every attempt's tokens are counted even though the item failed.
    assert h.lines == [
        "subtopics: 0 done, 0 skipped, 1 failed, 0 excluded; tokens 6 in, 3 out; cost $0.0000"
    ]


async def test_a_plain_text_list_is_accepted(tmp_path: Path) -> None:
    async with harness(tmp_path, TOPIC) as h:
        h.stub.queue(Reply(content="Sure:\n1. Borrowing\n2. Lifetimes\n"))
        asker = Asker()
        stats = await h.run(Stage.SUBTOPICS, asker)
    assert asker.got is not None and asker.got.items == ["Borrowing", "Lifetimes"]
    assert stats == StageStats(done=1, usage=stats.usage, cost=stats.cost)
