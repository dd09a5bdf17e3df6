"""The stand-in provider inside the process: an httpx2 transport that calls `StubProvider`.

A `protocol = "stub"` provider talks to this transport instead of the network: no port is
opened, no process is started, nothing needs configuring. Its model listing prices every model
asked for at `STUB_PRICE` (fake prices, so that a demo shows a cost).
"""

from __future__ import annotations

from collections.abc import Iterable

import httpx2

from overbrainer.devtools.stub_provider import StubProvider
from overbrainer.devtools.stub_script import Json
from overbrainer.net.http_server import Request

STUB_PRICE = ("0.0000001", "0.0000004")
"""USD per input and output token listed for every model: $0.10 and $0.40 per million (fake)."""


def stub_listing(models: Iterable[str]) -> Json:
    """A `/models` listing of `models`, each at `STUB_PRICE`."""
    prompt, completion = STUB_PRICE
    data: list[Json] = [
        {"id": model, "pricing": {"prompt": prompt, "completion": completion}}
        for model in dict.fromkeys(models)
    ]
    return {"data": data}


class StubTransport(httpx2.AsyncBaseTransport):
    """Answers each httpx2 request with `StubProvider.handle`, in the calling task."""

    def __init__(self, stub: StubProvider) -> None:
        self.stub = stub

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """The stub's answer to `request`; a dropped reply is a broken connection."""
        body = await request.aread()
        target = request.url.raw_path.decode("ascii")
        headers = {name.lower(): value for name, value in request.headers.items()}
        answer = await self.stub.handle(Request(request.method, target, headers, body))
        if answer.drop:
            raise httpx2.RemoteProtocolError("the stand-in dropped the connection", request=request)
        return httpx2.Response(
            answer.status, headers=list(answer.headers), content=answer.body, request=request
        )


def stub_transport(models: Iterable[str]) -> StubTransport:
    """A fresh embedded stand-in that lists `models` with their (fake) prices."""
    stub = StubProvider()
    stub.models = stub_listing(models)
    return StubTransport(stub)
