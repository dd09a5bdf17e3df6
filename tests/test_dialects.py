"""Provider dialects: each one's request body (literal JSON), detection by host, the `dialect`
key's errors through the real command, and bodies checked against OpenAI's description."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from overbrainer.config.dialects import DIALECTS, Dialect, detect, fits
from overbrainer.config.settings import BatchApi, Protocol, Provider
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.llm.batches import batch_api
from overbrainer.llm.batches.inline import request_of
from overbrainer.llm.batches.openai import batch_line
from overbrainer.llm.batches.types import BatchItem
from overbrainer.llm.errors import StatusError
from overbrainer.llm.openai import chat_body
from overbrainer.llm.types import CompletionRequest, Effort, Json
from tests.llm_helpers import client_on
from tests.real_parts import missing

PLAIN = CompletionRequest("q", system="sys", max_tokens=100)
THINK = CompletionRequest("q", system="sys", max_tokens=100, reasoning=True)
HIGH = CompletionRequest("q", system="sys", max_tokens=100, reasoning=True, effort=Effort.HIGH)
OFF = CompletionRequest("q", system="sys", max_tokens=100, reasoning=True, effort=Effort.NONE)
MESSAGES = '"messages":[{"role":"system","content":"sys"},{"role":"user","content":"q"}]'


def compact(body: dict[str, Json]) -> str:
    return json.dumps(body, separators=(",", ":"))


# What each dialect sends for `reasoning = true` alone, with effort `high`, and without reasoning.
BODIES = {
    Dialect.OPENAI: (
        '"max_completion_tokens":100,"reasoning_effort":"medium"',
        '"max_completion_tokens":100,"reasoning_effort":"high"',
        '"max_completion_tokens":100',
    ),
    Dialect.OPENROUTER: (
        '"max_tokens":100,"reasoning":{"effort":"medium"}',
        '"max_tokens":100,"reasoning":{"effort":"high"}',
        '"max_tokens":100',
    ),
    Dialect.OPENAI_COMPATIBLE: (
        '"max_tokens":100',
        '"max_tokens":100,"reasoning_effort":"high"',
        '"max_tokens":100',
    ),
    Dialect.VLLM: (
        '"max_tokens":100,"chat_template_kwargs":{"enable_thinking":true}',
        '"max_tokens":100,"chat_template_kwargs":{"enable_thinking":true},'
        '"reasoning_effort":"high"',
        '"max_tokens":100',
    ),
    Dialect.LLAMA_CPP: (
        '"max_tokens":100,"chat_template_kwargs":{"enable_thinking":true}',
        '"max_tokens":100,"chat_template_kwargs":{"enable_thinking":true}',
        '"max_tokens":100',
    ),
    Dialect.OLLAMA: (
        '"max_tokens":100,"reasoning_effort":"medium"',
        '"max_tokens":100,"reasoning_effort":"high"',
        '"max_tokens":100',
    ),
    Dialect.LITELLM: (
        '"max_tokens":100',
        '"max_tokens":100,"reasoning_effort":"high"',
        '"max_tokens":100',
    ),
    Dialect.DEEPSEEK: (
        '"max_tokens":100,"thinking":{"type":"enabled"}',
        '"max_tokens":100,"thinking":{"type":"enabled"},"reasoning_effort":"high"',
        '"max_tokens":100',
    ),
    Dialect.TOGETHER: (
        '"max_tokens":100,"reasoning":{"enabled":true}',
        '"max_tokens":100,"reasoning":{"enabled":true},"reasoning_effort":"high"',
        '"max_tokens":100',
    ),
    Dialect.GROQ: (
        '"max_completion_tokens":100',
        '"max_completion_tokens":100,"reasoning_effort":"high"',
        '"max_completion_tokens":100',
    ),
    Dialect.FIREWORKS: (
        '"max_tokens":100',
        '"max_tokens":100,"reasoning_effort":"high"',
        '"max_tokens":100',
    ),
}


@pytest.mark.parametrize("dialect", list(BODIES), ids=lambda d: d.value)
def test_each_dialect_body(dialect: Dialect) -> None:
    spec = DIALECTS[dialect]
    think, high, plain = BODIES[dialect]
    head = '{"model":"m",' + MESSAGES + ","
    assert compact(chat_body(spec, "m", THINK)) == head + think + "}"
    assert compact(chat_body(spec, "m", HIGH)) == head + high + "}"
    assert compact(chat_body(spec, "m", PLAIN)) == head + plain + "}"


def test_every_openai_wire_dialect_has_a_body_table() -> None:
    assert set(BODIES) == {d for d, s in DIALECTS.items() if s.protocol is Protocol.OPENAI}


def test_effort_none_is_sent_only_when_set_and_without_switching_thinking_on() -> None:
    assert compact(chat_body(DIALECTS[Dialect.OPENAI], "m", OFF)).endswith(
        '"max_completion_tokens":100,"reasoning_effort":"none"}'
    )
    assert compact(chat_body(DIALECTS[Dialect.OPENROUTER], "m", OFF)).endswith(
        '"max_tokens":100,"reasoning":{"effort":"none"}}'
    )
    # DeepSeek's `thinking: enabled` would contradict the role's `none`.
    assert compact(chat_body(DIALECTS[Dialect.DEEPSEEK], "m", OFF)).endswith(
        '"max_tokens":100,"reasoning_effort":"none"}'
    )
    # A request without reasoning never carries an effort, whatever the dialect.
    for spec in DIALECTS.values():
        if spec.protocol is Protocol.OPENAI:
            body = chat_body(spec, "m", CompletionRequest("q", effort=Effort.NONE))
            assert "reasoning_effort" not in body and "reasoning" not in body


def test_the_effort_reaches_the_body_in_the_field_order_of_before() -> None:
    request = CompletionRequest("q", temperature=0.5, reasoning=True, json_list=True)
    body = chat_body(DIALECTS[Dialect.OPENAI], "m", request)
    assert list(body) == [
        "model",
        "messages",
        "max_completion_tokens",
        "temperature",
        "reasoning_effort",
        "response_format",
    ]


def test_batch_bodies_follow_the_dialect() -> None:
    item = BatchItem("id-1", HIGH)
    line = json.loads(batch_line(DIALECTS[Dialect.OPENAI], "m", item))
    assert line["body"] == chat_body(DIALECTS[Dialect.OPENAI], "m", HIGH)
    assert line["body"]["reasoning_effort"] == "high"
    inline = request_of(DIALECTS[Dialect.OPENROUTER], "m", item)
    assert inline == {
        "custom_id": "id-1",
        "body": chat_body(DIALECTS[Dialect.OPENROUTER], "m", HIGH),
    }
    assert json.dumps(inline).count('"reasoning": {"effort": "high"}') == 1


# --- OpenAI's description: every field we send is one it declares ---------------------------

SPEC_PATHS = (
    Path(__file__).parent / "fixtures" / "openai-openapi.json",
    Path("/work/shared/openai/openapi.json"),
)


def _resolve(spec: dict[str, Json], node: Json) -> Iterator[dict[str, Json]]:
    """The object schemas `node` stands for, `$ref`s followed and `allOf` parts flattened."""
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if isinstance(ref, str):
        target: Json = spec
        for name in ref.removeprefix("#/").split("/"):
            assert isinstance(target, dict)
            target = target[name]
        yield from _resolve(spec, target)
        return
    yield node
    parts = node.get("allOf")
    for part in parts if isinstance(parts, list) else []:
        yield from _resolve(spec, part)


def _declared(spec: dict[str, Json], schema: str) -> dict[str, Json]:
    components = spec["components"]
    assert isinstance(components, dict)
    schemas = components["schemas"]
    assert isinstance(schemas, dict)
    found: dict[str, Json] = {}
    for part in _resolve(spec, schemas[schema]):
        properties = part.get("properties")
        if isinstance(properties, dict):
            found.update(properties)
    return found


@pytest.fixture(scope="module")
def chat_properties() -> dict[str, Json]:
    """The declared properties of `CreateChatCompletionRequest`, allOf and $ref resolved."""
    path = next((p for p in SPEC_PATHS if p.exists()), None)
    if path is None:
        missing("OpenAI's description (tests/fixtures/openai-openapi.json) is not here")
    spec = json.loads(path.read_text(encoding="utf-8"))
    return _declared(spec, "CreateChatCompletionRequest")


def _requests() -> list[CompletionRequest]:
    efforts: list[Effort | None] = [None, *Effort]
    asked = [
        CompletionRequest("q", system, temperature=t, reasoning=r, effort=e, json_list=j)
        for system in (None, "sys")
        for t in (None, 0.7)
        for r in (False, True)
        for e in (efforts if r else [None])
        for j in (False, True)
    ]
    return asked


@pytest.mark.parametrize("dialect", [Dialect.OPENAI, Dialect.OPENAI_COMPATIBLE])
def test_every_field_sent_is_declared_by_openai(
    dialect: Dialect, chat_properties: dict[str, Json]
) -> None:
    spec = DIALECTS[dialect]
    assert "reasoning_effort" in chat_properties and "reasoning" not in chat_properties
    for request in _requests():
        live = chat_body(spec, "gpt-5", request)
        line = json.loads(batch_line(spec, "gpt-5", BatchItem("c", request)))
        for body in (live, line["body"]):
            undeclared = sorted(set(body) - set(chat_properties))
            assert undeclared == [], (request, undeclared)
    # Sanity: the check can fail, OpenRouter's object is no field of OpenAI's.
    routed = chat_body(DIALECTS[Dialect.OPENROUTER], "m", THINK)
    assert set(routed) - set(chat_properties) == {"reasoning"}


def test_the_openai_dialect_never_sends_the_deprecated_token_field() -> None:
    for request in _requests():
        body = chat_body(DIALECTS[Dialect.OPENAI], "gpt-5", request)
        assert "max_tokens" not in body and "max_completion_tokens" in body


# --- detection --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("protocol", "url", "expected"),
    [
        (Protocol.OPENAI, "https://api.openai.com/v1", Dialect.OPENAI),
        (Protocol.OPENAI, "https://API.OpenAI.com./v1", Dialect.OPENAI),
        (Protocol.OPENAI, "https://openrouter.ai/api/v1", Dialect.OPENROUTER),
        (Protocol.OPENAI, "https://eu.openrouter.ai/api/v1", Dialect.OPENROUTER),
        (Protocol.OPENAI, "https://api.deepseek.com/v1", Dialect.DEEPSEEK),
        (Protocol.OPENAI, "https://api.groq.com/openai/v1", Dialect.GROQ),
        (Protocol.OPENAI, "https://api.together.xyz/v1", Dialect.TOGETHER),
        (Protocol.OPENAI, "https://api.together.ai/v1", Dialect.TOGETHER),
        (Protocol.OPENAI, "https://api.fireworks.ai/inference/v1", Dialect.FIREWORKS),
        (Protocol.ANTHROPIC, "https://api.anthropic.com/v1", Dialect.ANTHROPIC),
        # Anthropic's OpenAI-compatible endpoint is not its Messages API.
        (Protocol.OPENAI, "https://api.anthropic.com/v1", None),
        # Loopback and ports say nothing of the server behind them.
        (Protocol.OPENAI, "http://127.0.0.1:11434/v1", None),
        (Protocol.OPENAI, "http://localhost:8000/v1", None),
        (Protocol.OPENAI, "http://[::1]:4000/v1", None),
        (Protocol.OPENAI, "https://notopenai.com/v1", None),
        (Protocol.OPENAI, "https://api.openai.com.evil.example/v1", None),
        (Protocol.OPENAI, None, None),
        (Protocol.STUB, "https://api.openai.com/v1", None),
    ],
)
def test_detection(protocol: Protocol, url: str | None, expected: Dialect | None) -> None:
    assert detect(protocol, url) is expected


def test_the_default_and_the_batch_api_follow_the_dialect() -> None:
    def provider(url: str, dialect: Dialect | None = None) -> Provider:
        return Provider(Protocol.OPENAI, url, dialect=dialect)

    local = provider("http://127.0.0.1:8000/v1")
    assert local.spec.dialect is Dialect.OPENAI_COMPATIBLE
    assert local.batch_kind is BatchApi.OPENAI
    assert provider("https://openrouter.ai/api/v1").batch_kind is BatchApi.INLINE
    assert provider("https://api.groq.com/openai/v1").batch_kind is BatchApi.OPENAI
    served = provider("http://127.0.0.1:8080/v1", Dialect.LLAMA_CPP)
    assert (served.batch_kind, served.discount) == (None, None)
    # An explicit batch_api still wins over the dialect's.
    explicit = Provider(
        Protocol.OPENAI, "http://h/v1", batch_api=BatchApi.OPENAI, dialect=Dialect.VLLM
    )
    assert explicit.batch_kind is BatchApi.OPENAI
    assert Provider(Protocol.ANTHROPIC, "http://127.0.0.1:1/v1").spec.dialect is Dialect.ANTHROPIC
    assert Provider(Protocol.STUB).spec.dialect is Dialect.OPENAI_COMPATIBLE
    assert fits(Dialect.OPENAI, Protocol.STUB) and not fits(Dialect.ANTHROPIC, Protocol.OPENAI)


# --- a cancel sends no body (OpenAI's and Anthropic's descriptions declare none) --------------


@pytest.mark.parametrize("kind", [BatchApi.OPENAI, BatchApi.INLINE, BatchApi.ANTHROPIC])
async def test_a_batch_cancel_sends_no_body(kind: BatchApi) -> None:
    protocol = Protocol.ANTHROPIC if kind is BatchApi.ANTHROPIC else Protocol.OPENAI
    with trio.fail_after(10):
        async with open_stub() as stub, client_on(stub, protocol) as client:
            api = batch_api(kind, client.http, "m", client.dialect)
            with pytest.raises(StatusError):  # the stub has no batches: 404, after the request
                await api.cancel("batch_1")
    (recorded,) = stub.requests
    assert (recorded.method, recorded.raw) == ("POST", b"")
    assert recorded.path.endswith("/batch_1/cancel")
