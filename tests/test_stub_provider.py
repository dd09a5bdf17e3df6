"""The stub provider: routes, scripted replies, recording, defaults and its command line."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import httpx2
import pytest
import trio

from overbrainer.devtools.stub_model import default_embedding
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.devtools.stub_script import Reply

CHAT = {"model": "m", "messages": [{"role": "user", "content": "q"}]}
MESSAGES = {**CHAT, "max_tokens": 100}
HEADERS = {"authorization": "Bearer k", "anthropic-version": "2023-06-01"}


async def post(url: str, body: object) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=None) as client:
        return await client.post(url, json=body, headers=HEADERS)


async def test_default_list_reply_has_the_asked_count_and_is_deterministic() -> None:
    prompt = 'subtopic "Borrowing". Reply with a JSON array of 4 strings and nothing else.'
    body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
    with trio.fail_after(10):
        async with open_stub() as stub:
            first = (await post(f"{stub.url}/chat/completions", body)).json()
            second = (await post(f"{stub.url}/chat/completions", body)).json()
    items = json.loads(first["choices"][0]["message"]["content"])
    assert len(items) == 4 and len(set(items)) == 4
    assert all("Borrowing" in item for item in items)
    assert first["choices"][0]["message"]["content"] == second["choices"][0]["message"]["content"]
    assert stub.requests[0].prompt == prompt
    assert stub.requests[0].headers["authorization"] == "Bearer k"


async def test_default_answer_carries_raw_reasoning_and_usage() -> None:
    body = {
        "model": "p",
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "What is a borrow?"},
        ],
    }
    with trio.fail_after(10):
        async with open_stub() as stub:
            answer = (await post(f"{stub.url}/chat/completions", body)).json()
    message = answer["choices"][0]["message"]
    assert message["content"] == "Here is a careful answer to: What is a borrow?"
    assert "What is a borrow?" in message["reasoning"]
    assert answer["usage"]["completion_tokens"] == 60
    assert stub.requests[0].system == "sys"


async def test_queued_replies_come_first_in_order_then_the_responder() -> None:
    with trio.fail_after(10):
        async with open_stub(lambda r: Reply(content="from responder")) as stub:
            stub.queue(
                Reply(status=429, content="slow down", headers={"retry-after": "2"}),
                Reply(body=b"{not json"),
                Reply(content="c", refusal="no", finish_reason="stop", usage=(3, 4)),
            )
            url = f"{stub.url}/chat/completions"
            limited = await post(url, CHAT)
            malformed = await post(url, CHAT)
            refused = (await post(url, CHAT)).json()
            later = (await post(url, CHAT)).json()
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "2"
    assert limited.json()["error"]["message"] == "slow down"
    assert malformed.content == b"{not json"
    assert refused["choices"][0]["message"]["refusal"] == "no"
    assert refused["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    assert later["choices"][0]["message"]["content"] == "from responder"
    assert len(stub.completions) == 4


async def test_anthropic_messages_shape() -> None:
    body = {**MESSAGES, "model": "claude", "system": "s"}
    with trio.fail_after(10):
        async with open_stub() as stub:
            stub.queue(Reply(content="a", thinking="t", finish_reason="length", usage=(5, 6)))
            answer = (await post(f"{stub.url}/messages", body)).json()
    assert answer["content"] == [
        {"type": "thinking", "thinking": "t", "signature": "stub"},
        {"type": "text", "text": "a"},
    ]
    assert answer["stop_reason"] == "max_tokens"
    assert answer["usage"] == {"input_tokens": 5, "output_tokens": 6}
    assert stub.requests[0].system == "s"


async def test_models_embeddings_drop_and_unknown_routes() -> None:
    with trio.fail_after(10):
        async with open_stub() as stub:
            stub.models = {"data": [{"id": "m", "pricing": {"prompt": "0.000001"}}]}
            async with httpx2.AsyncClient() as client:
                listing = await client.get(f"{stub.url}/models", headers=HEADERS)
                unknown = await client.get(f"{stub.url}/nothing", headers=HEADERS)
            # A route OpenAI does not have is a violation, as the 404 is.
            assert stub.violations == ["GET /v1/nothing: not an operation of the description"]
            stub.violations.clear()
            embedding = {"model": "e", "input": ["a b", "c"]}
            vectors = (await post(f"{stub.url}/embeddings", embedding)).json()
            stub.queue(Reply(drop=True))
            with pytest.raises(httpx2.HTTPError):
                await post(f"{stub.url}/chat/completions", CHAT)
    assert listing.json()["data"][0]["id"] == "m"
    assert stub.requests[0].path == "/v1/models"
    assert unknown.status_code == 404
    assert [d["index"] for d in vectors["data"]] == [0, 1]
    assert vectors["data"][0]["embedding"] == default_embedding("a b")


async def test_a_delay_holds_the_reply(autojump_clock: trio.abc.Clock) -> None:
    with trio.fail_after(100):
        async with open_stub(delay=30) as stub:
            start = trio.current_time()
            await post(f"{stub.url}/chat/completions", CHAT)
            assert trio.current_time() - start >= 30


def test_command_line_prints_its_url_and_stops_on_sigint() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "overbrainer.devtools.stub_provider", "--delay", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        pid = process.pid
        assert process.stderr.readline() == (
            f"stand-in provider at {url}, pid {pid}: stop it with Ctrl-C or `kill {pid}`\n"
        )
        answer = httpx2.post(f"{url}/chat/completions", json=CHAT)
        assert answer.status_code == 200
        os.kill(process.pid, signal.SIGINT)
        assert process.wait(timeout=10) == 0
    finally:
        process.kill()
        process.wait()


async def raw_exchange(url: str, body: bytes) -> bytes:
    """Send one POST on a plain socket and read until the server closes; raises on a reset."""
    host_port = url.split("//", 1)[1].split("/", 1)[0]
    host, port = host_port.split(":")
    stream = await trio.open_tcp_stream(host, int(port))
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host_port}\r\n"
        f"connection: close\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode()
    async with stream:
        await stream.send_all(head + body)
        got = b""
        while chunk := await stream.receive_some(65536):
            got += chunk
    return got


async def test_a_cut_reply_sends_its_head_and_half_its_body_then_closes() -> None:
    with trio.fail_after(10):
        async with open_stub() as stub:
            stub.queue(Reply(content="x" * 400, cut=True), Reply(content="x" * 400))
            cut = await raw_exchange(stub.url, json.dumps(CHAT).encode())
            whole = await raw_exchange(stub.url, json.dumps(CHAT).encode())
    head, _, body = cut.partition(b"\r\n\r\n")
    whole_body = whole.partition(b"\r\n\r\n")[2]
    assert head.startswith(b"HTTP/1.1 200 ")
    assert f"content-length: {len(whole_body)}".encode() in head.lower()
    assert len(body) == len(whole_body) // 2  # the same answer but its serial, cut in half
    assert body.startswith(b'{"id": "chatcmpl-stub-') and not body.endswith(b"}")


async def test_a_reset_resets_the_connection_without_an_answer() -> None:
    with trio.fail_after(10):
        async with open_stub() as stub:
            stub.queue(Reply(reset=True))
            with pytest.raises(trio.BrokenResourceError) as caught:
                await raw_exchange(stub.url, json.dumps(CHAT).encode())
    assert isinstance(caught.value.__cause__, ConnectionResetError)
    assert len(stub.completions) == 1


async def test_a_reply_without_usage_has_no_usage_field() -> None:
    with trio.fail_after(10):
        async with open_stub() as stub:
            stub.queue(Reply(content="a", usage=None), Reply(content="b", usage=None))
            openai = (await post(f"{stub.url}/chat/completions", CHAT)).json()
            anthropic = (await post(f"{stub.url}/messages", MESSAGES)).json()
    assert "usage" not in openai and openai["choices"][0]["message"]["content"] == "a"
    assert "usage" not in anthropic and anthropic["content"][-1]["text"] == "b"


def test_command_line_on_a_busy_port_says_so_in_one_line() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "overbrainer.devtools.stub_provider", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"error: cannot listen on 127.0.0.1:{port}: address already in use\n"
