"""The `Contract` the tests install in every stand-in provider (tests/conftest.py).

OpenAI-shaped exchanges are checked with tests/openai_contract.py (OpenAI's published
description), Anthropic's (`/messages`, `/messages/batches`) with tests/anthropic_contract.py
(Anthropic's SDK types). The stubs that saw a request are kept, so that the test fails when one
is left with a violation, however it was started.
"""

from __future__ import annotations

import os
import re

from overbrainer.devtools.stub_provider import StubProvider
from overbrainer.net.http_server import Request, Response
from tests import anthropic_contract, openai_contract

KNOWN_OFF_API = (
    # The product lists models with `?detailed=true`, which OpenAI's `GET /models` does not declare.
    re.compile(r"^GET /v1/models\?detailed=true: undeclared query parameters \['detailed'\]$"),
    # A role's `temperature` goes to Anthropic's Messages API, whose SDK types (2.17) declare
    # no `temperature` (nor `top_p`, `top_k`) any more.
    re.compile(r"does not declare: \['temperature'\]$"),
)
"""Violations of the product's own requests, known and left to a fix of the product's request
shapes: they are recorded in `tolerated` (listed at the end of the session) instead of failing
the test. `STANDIN_STRICT=1` makes them fail; remove each entry with its fix."""

tolerated: list[str] = []
"""The tolerated violations seen since the last test started (tests/conftest.py drains it)."""


def _untolerated(wrong: list[str]) -> list[str]:
    if os.environ.get("STANDIN_STRICT") == "1":
        return wrong
    known = [w for w in wrong if any(p.search(w) for p in KNOWN_OFF_API)]
    tolerated.extend(known)
    return [w for w in wrong if w not in known]


def is_anthropic(request: Request) -> bool:
    """Whether the request is for Anthropic's API (Messages or Message Batches)."""
    return request.path.removeprefix("/v1").startswith("/messages")


def check_request(request: Request, *, dialect: str, key: str | None) -> list[str]:
    """Why the request breaks the API it is sent to (empty when it does not)."""
    if is_anthropic(request):
        return _untolerated(
            anthropic_contract.check_request(
                request.method, request.target, request.headers, request.body, key=key
            )
        )
    return _untolerated(
        openai_contract.check_request(
            request.method, request.target, request.headers, request.body, dialect=dialect, key=key
        )
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
