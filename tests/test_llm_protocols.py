"""Both protocols against the stub over real HTTP: request bodies, headers and answer parsing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import trio

from overbrainer.devtools.stub_provider import StubProvider, open_stub
from overbrainer.devtools.stub_script import Reply
from overbrainer.llm.errors import InvalidResponse, Unsupported
from overbrainer.llm.openai import STRING_LIST_FORMAT
from overbrainer.llm.types import (
    Completion,
    CompletionRequest,
    Effort,
    FinishReason,
    Json,
    Protocol,
    Reasoning,
    ReasoningKind,
)
from overbrainer.model.usage import Usage
from tests.llm_helpers import KEY, client_on, open_routed

OPENAI = Protocol.OPENAI
ANTHROPIC = Protocol.ANTHROPIC


@pytest.fixture
async def stub() -> AsyncIterator[StubProvider]:
    async with open_stub() as served:
        yield served


async def ask(
    stub: StubProvider, request: CompletionRequest, protocol: Protocol = OPENAI, *replies: Reply
) -> tuple[Completion, dict[str, Json], dict[str, str]]:
    """Send `request` once; the completion, the body and the headers the stub received."""
    stub.queue(*replies)
    with trio.fail_after(10):
        async with client_on(stub, protocol) as client:
            completion = await client.complete(request)
    recorded = stub.requests[-1]
    assert isinstance(recorded.body_json, dict)
    return completion, recorded.body_json, recorded.headers


# --- openai request bodies -----------------------------------------------------------------


async def test_openai_plain_body_and_headers(stub: StubProvider) -> None:
    _, body, headers = await ask(stub, CompletionRequest("hi", max_tokens=100))
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 100,
    }
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["content-type"] == "application/json"
    assert "x-api-key" not in headers and "anthropic-version" not in headers
    assert stub.requests[-1].path == "/v1/chat/completions"


async def test_compatible_reasoning_alone_asks_no_effort(stub: StubProvider) -> None:
    # A loopback server is `openai-compatible`: only fields OpenAI declares, and an effort only
    # when the role sets one (the server's own reasoning parser decides the rest).
    request = CompletionRequest("q", system="sys", temperature=0.3, reasoning=True)
    _, body, _ = await ask(stub, request)
    assert list(body) == ["model", "messages", "max_tokens", "temperature"]
    assert body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "q"},
    ]
    assert body["max_tokens"] == 16384
    assert body["temperature"] == 0.3


@pytest.mark.parametrize("effort", [Effort.LOW, Effort.MEDIUM, Effort.HIGH])
async def test_compatible_efforts(stub: StubProvider, effort: Effort) -> None:
    _, body, _ = await ask(stub, CompletionRequest("q", reasoning=True, effort=effort))
    assert body["reasoning_effort"] == effort.value
    assert "reasoning" not in body


async def test_openai_effort_none_turns_thinking_off(stub: StubProvider) -> None:
    _, body, _ = await ask(stub, CompletionRequest("q", reasoning=True, effort=Effort.NONE))
    assert body["reasoning_effort"] == "none"
    assert "reasoning" not in body


async def test_openai_without_reasoning_sends_no_reasoning(stub: StubProvider) -> None:
    _, body, _ = await ask(stub, CompletionRequest("q", effort=Effort.HIGH))
    assert "reasoning" not in body and "reasoning_effort" not in body


async def test_openai_json_list_response_format(stub: StubProvider) -> None:
    _, body, _ = await ask(stub, CompletionRequest("q", json_list=True))
    literal = (
        '{"type":"json_schema","json_schema":{"name":"string_list","strict":false,"schema":'
        '{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}}},'
        '"required":["items"],"additionalProperties":false}}}'
    )
    assert body["response_format"] == json.loads(literal) == STRING_LIST_FORMAT
    assert list(body)[-1] == "response_format"


async def test_no_key_means_no_auth_header(stub: StubProvider) -> None:
    with trio.fail_after(10):
        async with client_on(stub, OPENAI, key=None) as client:
            await client.complete(CompletionRequest("q"))
        async with client_on(stub, ANTHROPIC, key=None) as client:
            await client.complete(CompletionRequest("q"))
    assert "authorization" not in stub.requests[0].headers
    assert "x-api-key" not in stub.requests[1].headers
    assert stub.requests[1].headers["anthropic-version"] == "2023-06-01"


# --- anthropic request bodies --------------------------------------------------------------


async def test_anthropic_plain_body_and_headers(stub: StubProvider) -> None:
    request = CompletionRequest("hi", system="sys", max_tokens=50, json_list=True)
    _, body, headers = await ask(stub, request, ANTHROPIC)
    assert body == {
        "model": "m",
        "max_tokens": 50,
        "system": "sys",
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert list(body) == ["model", "max_tokens", "system", "messages"]
    assert headers["x-api-key"] == KEY
    assert headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers
    assert stub.requests[-1].path == "/v1/messages"


async def test_anthropic_adaptive_thinking(stub: StubProvider) -> None:
    _, body, _ = await ask(stub, CompletionRequest("q", reasoning=True), ANTHROPIC)
    assert body["thinking"] == {"type": "adaptive"}
    assert "output_config" not in body and "system" not in body


async def test_anthropic_adaptive_thinking_with_effort(stub: StubProvider) -> None:
    request = CompletionRequest("q", reasoning=True, effort=Effort.HIGH)
    _, body, _ = await ask(stub, request, ANTHROPIC)
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "high"}


async def test_anthropic_thinking_budget(stub: StubProvider) -> None:
    request = CompletionRequest("q", max_tokens=8000, reasoning=True, thinking_budget=2048)
    _, body, _ = await ask(stub, request, ANTHROPIC)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert "output_config" not in body


async def test_anthropic_without_reasoning_sends_no_thinking(stub: StubProvider) -> None:
    request = CompletionRequest("q", effort=Effort.LOW, thinking_budget=2048)
    _, body, _ = await ask(stub, request, ANTHROPIC)
    assert "thinking" not in body and "output_config" not in body


# --- openai reasoning extraction -----------------------------------------------------------

TEXT: Json = {"type": "reasoning.text", "text": "step 1", "signature": "sig"}
TEXT2: Json = {"type": "reasoning.text", "text": "step 2"}
BLANK_TEXT: Json = {"type": "reasoning.text", "text": "  "}
SUMMARY: Json = {"type": "reasoning.summary", "summary": "overview"}
ENCRYPTED: Json = {"type": "reasoning.encrypted", "data": "opaque"}
UNKNOWN: Json = {"type": "reasoning.server_tool_call", "id": "x"}


@pytest.mark.parametrize(
    ("reply", "content", "reasoning"),
    [
        (
            Reply(content="42", reasoning="6 times 7"),
            "42",
            Reasoning("6 times 7", ReasoningKind.RAW),
        ),
        (Reply(reasoning_content="thinking"), "ok", Reasoning("thinking", ReasoningKind.RAW)),
        (
            Reply(reasoning="  ", reasoning_content="second"),
            "ok",
            Reasoning("second", ReasoningKind.RAW),
        ),
        (
            Reply(reasoning_details=[TEXT, SUMMARY, TEXT2]),
            "ok",
            Reasoning("step 1\nstep 2", ReasoningKind.RAW),
        ),
        (
            Reply(reasoning_details=[SUMMARY, ENCRYPTED, SUMMARY]),
            "ok",
            Reasoning("overview\noverview", ReasoningKind.SUMMARY),
        ),
        (Reply(reasoning_details=[ENCRYPTED]), "ok", Reasoning(None, ReasoningKind.REDACTED)),
        (Reply(reasoning_details=[BLANK_TEXT]), "ok", Reasoning(None, ReasoningKind.REDACTED)),
        (
            Reply(reasoning="overview", reasoning_details=[SUMMARY, ENCRYPTED]),
            "ok",
            Reasoning("overview", ReasoningKind.SUMMARY),
        ),
        (
            Reply(reasoning="plain", reasoning_details=[UNKNOWN]),
            "ok",
            Reasoning("plain", ReasoningKind.RAW),
        ),
        (Reply(reasoning_details=[UNKNOWN]), "ok", Reasoning.none()),
        (
            Reply(content="<think>a</think>b", reasoning_details=[UNKNOWN]),
            "b",
            Reasoning("a", ReasoningKind.RAW),
        ),
        (
            Reply(content="<think>\nfirst, borrow\n</think>\n\nUse a reference."),
            "Use a reference.",
            Reasoning("first, borrow", ReasoningKind.RAW),
        ),
        (
            Reply(content="only closing</think>answer"),
            "answer",
            Reasoning("only closing", ReasoningKind.RAW),
        ),
        (Reply(content="<think> </think> answer "), "answer", Reasoning.none()),
        (
            Reply(content="<think>x</think>kept", reasoning="field"),
            "<think>x</think>kept",
            Reasoning("field", ReasoningKind.RAW),
        ),
        (Reply(content="plain <think> only"), "plain <think> only", Reasoning.none()),
    ],
    ids=[
        "reasoning",
        "reasoning_content",
        "blank-reasoning-falls-to-reasoning_content",
        "details-text",
        "details-summary",
        "details-encrypted",
        "details-blank-text",
        "details-decide-kind-of-direct-text",
        "unknown-details-leave-direct-raw",
        "unknown-details-only",
        "unknown-details-then-think-tags",
        "think-tags",
        "closing-tag-only",
        "empty-thought",
        "field-wins-over-think-tags",
        "no-closing-tag",
    ],
)
async def test_openai_reasoning_extraction(
    stub: StubProvider, reply: Reply, content: str, reasoning: Reasoning
) -> None:
    completion, _, _ = await ask(stub, CompletionRequest("q"), OPENAI, reply)
    assert (completion.content, completion.reasoning) == (content, reasoning)


# --- anthropic answers ---------------------------------------------------------------------


def messages_body(blocks: list[Json], stop: str = "end_turn") -> bytes:
    usage = {"input_tokens": 7, "output_tokens": 9}
    return json.dumps({"content": blocks, "stop_reason": stop, "usage": usage}).encode()


@pytest.mark.parametrize(
    ("reply", "content", "reasoning"),
    [
        (Reply(content="A", thinking="hmm"), "A", Reasoning("hmm", ReasoningKind.SUMMARY)),
        (Reply(content="A", thinking=""), "A", Reasoning(None, ReasoningKind.REDACTED)),
        (Reply(content="A"), "A", Reasoning.none()),
        (
            Reply(
                body=messages_body(
                    [
                        {"type": "thinking", "thinking": "one"},
                        {"type": "text", "text": "Hel"},
                        {"type": "tool_use", "id": "t", "name": "x", "input": {}},
                        {"type": "thinking", "thinking": "two"},
                        {"type": "text", "text": "lo"},
                    ]
                )
            ),
            "Hello",
            Reasoning("one\ntwo", ReasoningKind.SUMMARY),
        ),
        (
            Reply(
                body=messages_body(
                    [{"type": "redacted_thinking", "data": "x"}, {"type": "text", "text": "B"}]
                )
            ),
            "B",
            Reasoning(None, ReasoningKind.REDACTED),
        ),
    ],
    ids=["thinking-is-summary", "empty-thinking", "no-thinking", "blocks-joined", "redacted"],
)
async def test_anthropic_answers(
    stub: StubProvider, reply: Reply, content: str, reasoning: Reasoning
) -> None:
    completion, _, _ = await ask(stub, CompletionRequest("q"), ANTHROPIC, reply)
    assert (completion.content, completion.reasoning) == (content, reasoning)


# --- finish reasons, refusal, usage --------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "finish"),
    [
        (Reply(finish_reason="stop"), FinishReason.STOP),
        (Reply(finish_reason="length"), FinishReason.LENGTH),
        (Reply(finish_reason="content_filter"), FinishReason.CONTENT_FILTER),
        (Reply(finish_reason="tool_calls"), FinishReason.OTHER),
        (Reply(refusal="I can't help with that", finish_reason="stop"), FinishReason.REFUSAL),
        (Reply(refusal="  ", finish_reason="length"), FinishReason.LENGTH),
        (
            Reply(body=b'{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":3}}'),
            FinishReason.OTHER,
        ),
    ],
)
async def test_openai_finish_reasons(
    stub: StubProvider, reply: Reply, finish: FinishReason
) -> None:
    completion, _, _ = await ask(stub, CompletionRequest("q"), OPENAI, reply)
    assert completion.finish is finish


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("stop", FinishReason.STOP),
        ("stop_sequence", FinishReason.STOP),
        ("length", FinishReason.LENGTH),
        ("refusal", FinishReason.REFUSAL),
        ("pause_turn", FinishReason.OTHER),
    ],
)
async def test_anthropic_stop_reasons(stub: StubProvider, stop: str, finish: FinishReason) -> None:
    completion, _, _ = await ask(stub, CompletionRequest("q"), ANTHROPIC, Reply(finish_reason=stop))
    assert completion.finish is finish


async def test_usage_of_both_protocols(stub: StubProvider) -> None:
    openai, _, _ = await ask(stub, CompletionRequest("q"), OPENAI, Reply(usage=(123, 45)))
    anthropic, _, _ = await ask(stub, CompletionRequest("q"), ANTHROPIC, Reply(usage=(7, 8)))
    partial, _, _ = await ask(
        stub,
        CompletionRequest("q"),
        OPENAI,
        Reply(body=b'{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":3}}'),
    )
    missing, _, _ = await ask(
        stub, CompletionRequest("q"), ANTHROPIC, Reply(body=b'{"content":[],"stop_reason":"x"}')
    )
    none, _, _ = await ask(
        stub, CompletionRequest("q"), OPENAI, Reply(body=b'{"choices":[{"message":{}}]}')
    )
    assert openai.usage == Usage(123, 45)
    assert anthropic.usage == Usage(7, 8)
    assert partial.usage == Usage(3, 0)
    assert (missing.usage, missing.content, missing.finish) == (Usage(0, 0), "", FinishReason.OTHER)
    assert (none.usage, none.content) == (Usage(0, 0), "")


async def test_no_choices_is_an_invalid_response(stub: StubProvider) -> None:
    stub.queue(Reply(body=b'{"choices":[]}'))
    with trio.fail_after(10):
        async with client_on(stub) as client:
            with pytest.raises(InvalidResponse) as caught:
                await client.complete(CompletionRequest("q"))
    assert caught.value.message == "invalid response: no choices"
    assert len(stub.completions) == 1


# --- embeddings and models -----------------------------------------------------------------


async def test_embeddings_body_and_order(stub: StubProvider) -> None:
    texts = ["borrow checker", "lifetimes", "traits and generics"]
    with trio.fail_after(10):
        async with client_on(stub, model="emb") as client:
            assert await client.embed([]) == []
            vectors = await client.embed(texts)
    assert len(stub.requests) == 1
    assert stub.requests[0].path == "/v1/embeddings"
    assert stub.requests[0].body_json == {
        "model": "emb",
        "input": texts,
        "encoding_format": "float",
    }
    assert vectors == [pytest.approx(stub.embedder(t)) for t in texts]


async def test_embeddings_are_sorted_by_index() -> None:
    with trio.fail_after(10):
        async with open_routed() as stub:
            stub.embeddings_answer = lambda inputs: {
                "data": [
                    {"index": i, "embedding": [float(i), 0.5]} for i in reversed(range(len(inputs)))
                ]
            }
            async with client_on(stub) as client:
                vectors = await client.embed(["a", "b", "c"])
    assert vectors == [[0.0, 0.5], [1.0, 0.5], [2.0, 0.5]]


async def test_embeddings_count_mismatch_is_not_retried() -> None:
    with trio.fail_after(10):
        async with open_routed() as stub:
            stub.embeddings_answer = lambda inputs: {"data": [{"index": 0, "embedding": [1.0]}]}
            async with client_on(stub) as client:
                with pytest.raises(InvalidResponse) as caught:
                    await client.embed(["a", "b"])
    assert caught.value.message == "invalid response: 1 embeddings for 2 inputs"
    assert stub.targets == ["/v1/embeddings"]


async def test_anthropic_has_no_embeddings(stub: StubProvider) -> None:
    with trio.fail_after(10):
        async with client_on(stub, ANTHROPIC) as client:
            with pytest.raises(Unsupported) as caught:
                await client.embed(["a"])
    assert caught.value.message == "embeddings are not supported by this protocol"
    assert caught.value.stops_stage and not caught.value.retryable
    assert stub.requests == []


@pytest.mark.parametrize("protocol", [OPENAI, ANTHROPIC])
async def test_models_listing(protocol: Protocol) -> None:
    with trio.fail_after(10):
        async with open_routed() as stub:
            stub.models = {"data": [{"id": "a", "pricing": {"prompt": "0.1"}}]}
            async with client_on(stub, protocol) as client:
                listing = await client.models()
    # The stand-in completes each entry with the fields OpenAI's listing requires.
    assert isinstance(listing, dict) and isinstance(listing["data"], list)
    assert [(m["id"], m["pricing"]) for m in listing["data"] if isinstance(m, dict)] == [
        ("a", {"prompt": "0.1"})
    ]
    # A server of unknown make gets the reference's query (NanoGPT's prices); Anthropic, plain.
    detailed = "?detailed=true" if protocol is OPENAI else ""
    assert stub.targets == [f"/v1/models{detailed}"]
    assert stub.requests[0].method == "GET"
