"""The answers stage's rules: hidden reasoning, exclusions, system prompts, --force, events."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
import trio

from overbrainer.config.settings import Protocol, Role
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Recorded, Reply
from overbrainer.events.codec import event_from_json
from overbrainer.events.types import ItemDone, Stage, StageFinished, StageModel, StageStarted
from overbrainer.llm.types import Completion, Reasoning
from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.model.usage import Usage
from overbrainer.pipeline.answers import (
    ANTHROPIC_HIDES,
    MODEL_HIDES,
    build_example,
    hiding_warning,
)
from overbrainer.storage.records import Exclusion, Question
from tests.pipeline_support import (
    make_project,
    overbrainer,
    read_examples,
    start,
    wait_until,
    write_questions,
)
from tests.ports import free_port


@pytest.mark.parametrize(
    ("model", "hidden"),
    [
        ("deepseek/deepseek-r1", False),
        ("openai/gpt-oss-120b", False),
        ("gpt-oss-20b", False),
        ("openai/o3", True),
        ("o4-mini", True),
        ("o1", True),
        ("gpt-4o", True),
        ("x/GPT-5", True),
        ("anthropic/claude-sonnet-4", True),
        ("vendor/claude-3", True),
        ("google/gemini-2.5-pro", True),
        ("qwen/qwq-32b", False),
        ("omni-model", False),
    ],
)
def test_which_openai_models_hide_their_reasoning(model: str, hidden: bool) -> None:
    assert hiding_warning(Protocol.OPENAI, model) == (MODEL_HIDES if hidden else None)


def test_the_anthropic_protocol_always_hides() -> None:
    assert hiding_warning(Protocol.ANTHROPIC, "claude-opus-4") == ANTHROPIC_HIDES


QUESTION = Question("q1", "ownership", "s1", "Basics", "What is a borrow?")
RAW = Reasoning("because", ReasoningKind.RAW)


def example(
    completion: Completion,
    *,
    reasoning: bool = True,
    hides: bool = False,
    system: str | None = None,
) -> tuple[Exclusion | None, ReasoningKind, str | None]:
    role = Role(provider="p", model="m", reasoning=reasoning)
    e = build_example(QUESTION, completion, role, system, hides)
    return e.meta.excluded, e.meta.reasoning_kind, e.messages[-1].reasoning_content


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        (Completion("a", RAW), (None, ReasoningKind.RAW, "because")),
        (
            Completion("a", RAW, finish=FinishReason.LENGTH),
            (Exclusion.TRUNCATED, ReasoningKind.RAW, "because"),
        ),
        (
            Completion("", RAW, finish=FinishReason.LENGTH),
            (Exclusion.TRUNCATED, ReasoningKind.RAW, "because"),
        ),
        (
            Completion("a", RAW, finish=FinishReason.REFUSAL),
            (Exclusion.REFUSED, ReasoningKind.RAW, "because"),
        ),
        (
            Completion("a", RAW, finish=FinishReason.CONTENT_FILTER),
            (Exclusion.REFUSED, ReasoningKind.RAW, "because"),
        ),
        (Completion("  \n", RAW), (Exclusion.EMPTY, ReasoningKind.RAW, "because")),
        (Completion("a"), (Exclusion.NO_RAW_REASONING, ReasoningKind.NONE, None)),
        (
            Completion("a", Reasoning("gist", ReasoningKind.SUMMARY)),
            (Exclusion.NO_RAW_REASONING, ReasoningKind.SUMMARY, "gist"),
        ),
        (Completion("a", RAW, finish=FinishReason.OTHER), (None, ReasoningKind.RAW, "because")),
    ],
)
def test_the_first_exclusion_that_applies(
    completion: Completion, expected: tuple[Exclusion | None, ReasoningKind, str | None]
) -> None:
    assert example(completion) == expected


def test_a_summary_is_never_kept_on_a_usable_answer() -> None:
    summary = Completion("a", Reasoning("gist", ReasoningKind.SUMMARY))
    assert example(summary, reasoning=False) == (None, ReasoningKind.SUMMARY, None)


def test_a_hiding_parent_has_its_raw_reasoning_stored_as_a_summary() -> None:
    assert example(Completion("a", RAW), hides=True) == (
        Exclusion.NO_RAW_REASONING,
        ReasoningKind.SUMMARY,
        "because",
    )
    assert example(Completion("a", RAW), hides=True, reasoning=False) == (
        None,
        ReasoningKind.SUMMARY,
        None,
    )


def test_messages_and_meta_of_a_stored_answer() -> None:
    completion = Completion("It lends.", RAW, Usage(41, 812))
    role = Role(provider="p", model="deepseek/deepseek-r1", reasoning=True)
    e = build_example(QUESTION, completion, role, "You are an expert.", False)
    assert e.to_json() == (
        '{"id":"q1","topic":"ownership","subtopic":"Basics","messages":['
        '{"role":"system","content":"You are an expert."},'
        '{"role":"user","content":"What is a borrow?"},'
        '{"role":"assistant","content":"It lends.","reasoning_content":"because"}],'
        '"meta":{"model":"deepseek/deepseek-r1","input_tokens":41,"output_tokens":812,'
        '"finish_reason":"stop","reasoning_kind":"raw","excluded":null}}'
    )


def plain(request: Recorded) -> Reply:
    return Reply(content=f"A: {request.prompt}", reasoning="r", usage=(10, 5))


async def test_system_prompt_force_topic_and_the_events_file(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", pipeline="include_system_prompt = true")
    questions = write_questions(root, 2, topics=("ownership", "async"))
    events = tmp_path / "events.jsonl"
    async with open_stub(plain) as stub:
        first = await overbrainer(root, "--events", str(events), "answers", url=stub.url)
        assert first.code == 0, first.stderr
        stored = {e.id: e for e in read_examples(root)}
        assert len(stored) == 4
        owner = stored[questions[0].id].messages[0]
        assert owner.role == "system"
        assert owner.content.startswith("You are an expert in ownership.")
        assert stored[questions[2].id].messages[0].content.startswith("You are an expert in async.")

        asked = len(stub.completions)
        forced = await overbrainer(root, "answers", "--topic", "async", "--force", url=stub.url)
        assert forced.code == 0, forced.stderr
        assert forced.out_lines[0].startswith("answers: 2 done, 0 skipped, 0 failed")
        assert sorted(r.prompt or "" for r in stub.completions[asked:]) == sorted(
            q.text for q in questions if q.topic == "async"
        )
        assert sorted(e.id for e in read_examples(root)) == sorted(q.id for q in questions)

    decoded = [event_from_json(line) for line in events.read_text().splitlines()]
    assert decoded[0] == StageStarted(Stage.ANSWERS, 4)
    assert decoded[1] == StageModel(Stage.ANSWERS, "parent-model")
    done = [e for e in decoded if isinstance(e, ItemDone)]
    assert sorted(e.id for e in done) == sorted(q.id for q in questions)
    assert all(e.usage == Usage(10, 5) and e.cost is None for e in done)
    assert isinstance(decoded[-1], StageFinished)
    assert decoded[-1].stats.done == 4


async def test_a_hiding_parent_is_warned_about(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 1)
    async with open_stub(plain) as stub:
        result = await overbrainer(
            root, "answers", url=stub.url, env={"OVERBRAINER_ROLES__PARENT__MODEL": "openai/o3"}
        )
    assert result.code == 0, result.stderr
    assert f"parent openai/o3: {MODEL_HIDES}" in result.stderr
    assert result.out_lines[0].startswith("answers: 0 done, 0 skipped, 0 failed, 1 excluded")
    [stored] = read_examples(root)
    assert (stored.meta.excluded, stored.meta.reasoning_kind) == (
        Exclusion.NO_RAW_REASONING,
        ReasoningKind.SUMMARY,
    )


async def test_the_metrics_endpoint_counts_the_stage_while_it_runs(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", concurrency=1)
    write_questions(root, 3)
    port = free_port()
    released = trio.Event()

    async def respond(request: Recorded) -> Reply:
        if len(stub.completions) == 3:
            await released.wait()
        return plain(request)

    env = {"OVERBRAINER_METRICS__LISTEN": f"127.0.0.1:{port}"}
    async with open_stub(respond) as stub, trio.open_nursery() as nursery:
        process = await start(nursery, root, "answers", url=stub.url, env=env)
        await wait_until(lambda: len(stub.completions) == 3)
        async with httpx2.AsyncClient() as client:
            with trio.fail_after(5):
                scrape = await client.get(f"http://127.0.0.1:{port}/metrics")
        released.set()
        with trio.fail_after(10):
            assert await process.wait() == 0
    assert 'overbrainer_stage_items_total{result="done",stage="answers"} 2.0\n' in scrape.text


async def test_an_anthropic_parent_is_warned_about_and_its_thinking_excluded(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 1)

    def thinking(request: Recorded) -> Reply:
        return Reply(content="It lends.", thinking="Let me think.", usage=(10, 5))

    async with open_stub(thinking) as stub:
        result = await overbrainer(
            root,
            "answers",
            url=stub.url,
            env={"OVERBRAINER_PROVIDERS__STUB__PROTOCOL": "anthropic"},
        )
        assert [r.path for r in stub.completions] == ["/v1/messages"]
    assert result.code == 0, result.stderr
    assert f"parent parent-model: {ANTHROPIC_HIDES}" in result.stderr
    [stored] = read_examples(root)
    assert (stored.meta.excluded, stored.meta.reasoning_kind) == (
        Exclusion.NO_RAW_REASONING,
        ReasoningKind.SUMMARY,
    )
    assert stored.messages[-1].reasoning_content == "Let me think."
