"""Shared helpers of the LLM client tests: a client on a stub, and a stub with custom routes."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable

import trio

from overbrainer.devtools.stub_provider import StubProvider, serving
from overbrainer.devtools.stub_wire import JSON_HEADERS, openai_error
from overbrainer.llm.client import ProtocolClient, ProviderConnection, open_client
from overbrainer.llm.types import Json, Protocol
from overbrainer.net.http_server import Request, Response

KEY = "sk-or-v1-SECRET-0123456789abcdef"
"""An API key that must never show up in errors, reprs or logs."""


@contextlib.asynccontextmanager
async def client_on(
    stub: StubProvider,
    protocol: Protocol = Protocol.OPENAI,
    model: str = "m",
    key: str | None = KEY,
    *,
    max_retries: int = 5,
    request_timeout: float = 600.0,
) -> AsyncIterator[ProtocolClient]:
    """A `ProtocolClient` for `model` on the stub's base URL."""
    connection = ProviderConnection(protocol, stub.url, key, request_timeout=request_timeout)
    async with open_client(connection, model, max_retries) as client:
        yield client


class RoutedStub(StubProvider):
    """A stub whose `/embeddings` answer and extra routes the test decides; targets recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []
        self.embeddings_answer: Callable[[list[str]], Json] | None = None
        self.models_delay = 0.0
        self.models_status = 200

    async def respond(self, request: Request, wrong: list[str]) -> tuple[Response, bool]:
        """The test's own answers to its routes (scripted: not checked), else the stub's."""
        self.targets.append(request.target)
        if (
            not wrong
            and self.embeddings_answer is not None
            and request.path.endswith("/embeddings")
        ):
            body = json.loads(request.body)
            answer = self.embeddings_answer(body["input"])
            return Response(200, json.dumps(answer).encode(), JSON_HEADERS), True
        if request.path.endswith("/models"):
            await trio.sleep(self.models_delay)
            if self.models_status != 200:
                return openai_error("listing broke", self.models_status), True
        return await super().respond(request, wrong)


@contextlib.asynccontextmanager
async def open_routed() -> AsyncIterator[RoutedStub]:
    """A `RoutedStub` serving on 127.0.0.1 for the block."""
    async with serving(RoutedStub()) as stub:
        yield stub
