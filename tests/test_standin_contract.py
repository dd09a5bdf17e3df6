"""The stand-ins' contract: it rejects what the published APIs refuse, and the stand-ins obey it."""

from __future__ import annotations

import json

import httpx2
import pytest
import trio

from overbrainer.devtools.embedded import stub_transport
from overbrainer.devtools.stub_provider import check_exchanges, open_stub
from overbrainer.devtools.stub_script import Reply
from tests import anthropic_contract, openai_contract
from tests.standin_contract import StandinContract

CHAT = {"model": "m", "messages": [{"role": "user", "content": "q"}]}
HEADERS = {"content-type": "application/json", "authorization": "Bearer k"}
ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "a", "refusal": None},
            "finish_reason": "stop",
            "logprobs": None,
        }
    ],
}


def chat_violations(body: object, *, dialect: str = "openai", key: str | None = "k") -> list[str]:
    return openai_contract.check_request(
        "POST", "/v1/chat/completions", HEADERS, json.dumps(body).encode(), dialect=dialect, key=key
    )


def test_a_valid_chat_request_passes() -> None:
    nullable = {**CHAT, "stop": None, "max_completion_tokens": None, "prediction": None}
    assert chat_violations(CHAT) == []
    assert chat_violations(nullable) == []  # OpenAPI 3.0's `nullable`, typeless ones too


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"model": "x"}, "'messages' is a required property"),
        ({"messages": CHAT["messages"]}, "'model' is a required property"),
        ({**CHAT, "messages": []}, "should be non-empty"),
        ({**CHAT, "messages": [{"role": "robot", "content": "q"}]}, "messages/0"),
        ({**CHAT, "reasoning_effort": "extreme"}, "'extreme' is not one of"),
        ({**CHAT, "reasoning": {"effort": "medium"}}, "does not declare (openai): ['reasoning']"),
        ({**CHAT, "stop": 5}, "stop"),  # `nullable` lets a null through, not anything
        ({**CHAT, "max_tokens": 9, "reasoning_effort": "low"}, "`max_tokens` with"),
    ],
)
def test_the_contract_rejects_what_openai_refuses(body: object, why: str) -> None:
    wrong = chat_violations(body)
    assert len(wrong) == 1 and why in wrong[0], wrong


def test_auth_query_and_routes_are_checked() -> None:
    body = json.dumps(CHAT).encode()
    no_auth = {"content-type": "application/json"}
    assert openai_contract.check_request(
        "POST", "/v1/chat/completions", no_auth, body, key="k"
    ) == ["POST /v1/chat/completions: no `Authorization: Bearer` header where a key is expected"]
    wrong_key = {**no_auth, "authorization": "Bearer other"}  # answered 401: no violation
    assert (
        openai_contract.check_request("POST", "/v1/chat/completions", wrong_key, body, key="k")
        == []
    )
    assert openai_contract.check_request("GET", "/v1/models?x=1", {}, b"") == [
        "GET /v1/models?x=1: undeclared query parameters ['x']"
    ]
    assert openai_contract.check_request("GET", "/v1/nothing", {}, b"") == [
        "GET /v1/nothing: not an operation of the description"
    ]


def test_a_dialect_allows_its_own_fields_only() -> None:
    reasoning = {**CHAT, "reasoning": {"effort": "medium"}}
    assert chat_violations(reasoning, dialect="openrouter") == []
    assert chat_violations({**CHAT, "chat_template_kwargs": {}}, dialect="vllm") == []
    assert chat_violations({**CHAT, "chat_template_kwargs": {}}, dialect="openrouter") != []


def test_answers_lacking_required_fields_are_violations() -> None:
    assert openai_contract.check_response("POST", "/v1/chat/completions", 200, dumps(ANSWER)) == []
    lacking = {key: value for key, value in ANSWER.items() if key != "created"}
    choice = {"index": 0, "message": {"role": "assistant", "content": "a", "refusal": None}}
    choice |= {"finish_reason": "refusal", "logprobs": None}
    assert openai_contract.check_response("POST", "/v1/chat/completions", 200, dumps(lacking)) == [
        "answer 200 to POST /v1/chat/completions: (body): 'created' is a required property"
    ]
    assert "finish_reason" in "".join(
        openai_contract.check_response(
            "POST", "/v1/chat/completions", 200, dumps({**ANSWER, "choices": [choice]})
        )
    )
    assert (
        openai_contract.check_response(
            "POST", "/v1/chat/completions", 400, b'{"error": {"message": "x"}}'
        )
        != []
    )


def test_batch_files_are_checked_line_by_line() -> None:
    good = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": CHAT}
    extra = {**good, "custom_id": "b", "note": 1}
    empty = {**good, "custom_id": "c", "body": {"model": "m"}}
    text = "\n".join(json.dumps(line) for line in (good, extra, empty, good))
    wrong = openai_contract.check_batch_input(text)
    assert len(wrong) == 3, wrong
    assert "line 2: keys" in wrong[0] and "line 3" in wrong[1] and "unique" in wrong[2]
    response = {"status_code": 200, "request_id": "r", "body": {**ANSWER, "created": None}}
    out = {"id": "o", "custom_id": "a", "response": response, "error": None}
    assert "created" in "".join(openai_contract.check_batch_output(json.dumps(out)))


def test_anthropic_requests_and_answers_follow_the_sdk_types() -> None:
    good = {**CHAT, "max_tokens": 10}
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}

    def wrong(body: object) -> list[str]:
        raw = json.dumps(body).encode()
        return anthropic_contract.check_request("POST", "/v1/messages", headers, raw, key="k")

    assert wrong(good) == []
    assert "max_tokens" in "".join(wrong(CHAT))
    assert "role" in "".join(wrong({**good, "messages": [{"role": "robot", "content": "q"}]}))
    assert "['reasoning_effort']" in "".join(wrong({**good, "reasoning_effort": "low"}))
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "a"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    assert anthropic_contract.model_errors(anthropic_contract.Message, message) == [
        "stop_sequence: always sent, missing"
    ]


async def test_the_stub_refuses_a_bad_request_as_openai_would() -> None:
    with trio.fail_after(10):
        async with open_stub() as stub:
            async with httpx2.AsyncClient() as client:
                url = f"{stub.url}/chat/completions"
                robot = {**CHAT, "messages": [{"role": "robot", "content": "q"}]}
                refused = await client.post(url, json=robot)
                stub.api_key = "k"
                no_key = await client.post(url, json=CHAT)
            assert len(stub.violations) == 2
            stub.violations.clear()  # expected: the test sent them on purpose
    assert refused.status_code == 400
    assert refused.json()["error"]["type"] == "invalid_request_error"
    assert no_key.status_code == 401
    assert stub.completions == stub.requests  # recorded, yet no scripted reply was used


async def test_without_the_contract_the_stub_still_refuses_what_the_api_refuses() -> None:
    before = check_exchanges(None)  # as under `python -m overbrainer.devtools.stub_provider`
    try:
        with trio.fail_after(10):
            async with open_stub() as stub, httpx2.AsyncClient() as client:
                url = f"{stub.url}/chat/completions"
                answers = [
                    await client.post(url, json=body)
                    for body in (
                        {"model": "x"},
                        {"messages": CHAT["messages"]},
                        {**CHAT, "reasoning_effort": "extreme"},
                        {**CHAT, "messages": [{"role": "robot", "content": "q"}]},
                    )
                ]
    finally:
        check_exchanges(before)
    assert [a.status_code for a in answers] == [400] * 4
    assert [a.json()["error"]["param"] for a in answers] == [
        "messages",
        "model",
        "reasoning_effort",
        "messages[0].role",
    ]


async def test_scripted_faults_are_not_checked_but_their_requests_are(
    standin_contract: StandinContract,
) -> None:
    with trio.fail_after(10):
        async with open_stub() as stub, httpx2.AsyncClient() as client:
            stub.queue(Reply(body=b"{not json"), Reply(content="x", usage=None))
            url = f"{stub.url}/chat/completions"
            malformed = await client.post(url, json=CHAT)
            bare = await client.post(url, json=CHAT)
    assert malformed.content == b"{not json" and "usage" not in bare.json()
    assert standin_contract.stubs == [stub] and stub.violations == []


async def test_the_embedded_demo_provider_answers_in_valid_shapes() -> None:
    transport = stub_transport(["gen", "parent"])
    prompt = 'subtopic "Borrowing". Reply with a JSON array of 3 strings and nothing else.'
    bodies = [
        {"model": "gen", "messages": [{"role": "user", "content": prompt}]},
        {"model": "parent", "messages": [{"role": "user", "content": "What is a borrow?"}]},
    ]
    async with httpx2.AsyncClient(transport=transport, base_url="http://stub/v1") as client:
        answers = [await client.post("/chat/completions", json=body) for body in bodies]
        listing = await client.get("/models")
        vectors = await client.post("/embeddings", json={"model": "e", "input": ["a"]})
    checked = [("POST", "/v1/chat/completions", a) for a in answers]
    checked += [("GET", "/v1/models", listing), ("POST", "/v1/embeddings", vectors)]
    for method, target, answer in checked:
        assert answer.status_code == 200
        assert openai_contract.check_response(method, target, 200, answer.content) == []
    assert transport.stub.violations == []


def dumps(value: object) -> bytes:
    return json.dumps(value).encode()


async def test_an_answer_of_the_stubs_own_off_the_description_is_a_violation() -> None:
    with trio.fail_after(10):
        async with open_stub() as stub, httpx2.AsyncClient() as client:
            # `refusal` is Anthropic's stop reason; OpenAI's finish_reason has no such value.
            stub.queue(
                Reply(finish_reason="refusal"), Reply(finish_reason="refusal", off_contract=True)
            )
            await client.post(f"{stub.url}/chat/completions", json=CHAT)
            await client.post(f"{stub.url}/chat/completions", json=CHAT)
            (violation,) = stub.violations
            stub.violations.clear()
    assert "choices/0/finish_reason: 'refusal' is not one of" in violation
