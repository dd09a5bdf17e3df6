"""The `Contract` the tests install in every stand-in provider (tests/conftest.py).

OpenAI-shaped exchanges are checked with tests/openai_contract.py (OpenAI's published
description), Anthropic's (`/messages`, `/messages/batches`) with tests/anthropic_contract.py
(Anthropic's SDK types). The stubs that saw a request are kept, so that the test fails when one
is left with a violation, however it was started.
"""

from __future__ import annotations

from overbrainer.devtools.stub_provider import StubProvider
from overbrainer.net.http_server import Request, Response
from tests import anthropic_contract, openai_contract


def is_anthropic(request: Request) -> bool:
    """Whether the request is for Anthropic's API (Messages or Message Batches)."""
    return request.path.removeprefix("/v1").startswith("/messages")


def check_request(request: Request, *, dialect: str, key: str | None) -> list[str]:
    """Why the request breaks the API it is sent to (empty when it does not)."""
    if is_anthropic(request):
        return anthropic_contract.check_request(
            request.method, request.target, request.headers, request.body, key=key
        )
    return openai_contract.check_request(
        request.method, request.target, request.headers, request.body, dialect=dialect, key=key
    )


def check_response(request: Request, response: Response) -> list[str]:
    """Why the answer breaks the API (dropped or reset connections are not answers)."""
    if response.drop or response.reset:
        return []
    if is_anthropic(request):
        return anthropic_contract.check_response(
            request.method, request.target, response.status, response.body
        )
    return openai_contract.check_response(
        request.method, request.target, response.status, response.body
    )


class StandinContract:
    """Checks each stub's exchanges and remembers the stubs it checked."""

    def __init__(self) -> None:
        self.stubs: list[StubProvider] = []

    def request(self, stub: StubProvider, request: Request) -> list[str]:
        """Why `request` breaks the API `stub` pretends to be."""
        if all(seen is not stub for seen in self.stubs):
            self.stubs.append(stub)
        return check_request(request, dialect=stub.dialect, key=stub.api_key)

    def response(self, stub: StubProvider, request: Request, response: Response) -> list[str]:
        """Why the stub's own answer breaks the API."""
        return check_response(request, response)

    def violations(self) -> list[str]:
        """The violations left on the stubs checked."""
        return [violation for stub in self.stubs for violation in stub.violations]
