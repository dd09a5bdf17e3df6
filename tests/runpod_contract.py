"""Runpod REST v2 exchanges checked against Runpod's own OpenAPI file, as `runpod_fake` does.

The checks use `openapi-core` on `tests/fixtures/runpod-openapi-v2.json` (or `RUNPOD_OPENAPI`),
unmodified: nothing is rewritten, so a call the file does not describe (a path, a method) or a
field it does not allow is a violation, and so is a query parameter it does not declare.
"""

from __future__ import annotations

import functools
import json
import os
import re
import urllib.parse
from pathlib import Path
from typing import Any

from openapi_core import Config, OpenAPI
from openapi_core.testing import MockRequest, MockResponse

from overbrainer.net.http_server import Request, Response

# Runpod's own OpenAPI 3.1 description of REST v2 (runpod/docs, api-reference-v2/openapi.json,
# snapshot of 2026-08-20), kept beside the tests so they run on any clone.
SPEC = Path(
    os.environ.get("RUNPOD_OPENAPI", Path(__file__).parent / "fixtures" / "runpod-openapi-v2.json")
)
SERVER = "https://api.runpod.io"

Json = Any


@functools.cache
def description() -> Json:
    """Runpod's description as JSON (read once per test process)."""
    return json.loads(SPEC.read_text(encoding="utf-8"))


@functools.cache
def openapi() -> OpenAPI:
    """The parsed OpenAPI description (parsed once per test process)."""
    # Runpod's errors are `application/problem+json`: JSON, which openapi-core must be told.
    config = Config(
        extra_media_type_deserializers={
            "application/problem+json": lambda data: json.loads(data),
            # The log stream's schema is a string: the body is checked as its text.
            "text/event-stream": lambda data: data.decode() if isinstance(data, bytes) else data,
        }
    )
    return OpenAPI.from_dict(description(), config=config)


def mock_request(request: Request) -> MockRequest:
    """The request as openapi-core sees it, on Runpod's own server URL."""
    query = urllib.parse.parse_qs(request.query, keep_blank_values=True)
    args = {name: values[-1] for name, values in query.items()}
    body: bytes | None = request.body or None
    headers = {name.title(): value for name, value in request.headers.items()}
    return MockRequest(
        SERVER,
        request.method.lower(),
        request.path,
        args=args,
        data=body,
        headers=headers,
        content_type=request.headers.get("content-type", "application/json"),
    )


def check_request(request: Request) -> str | None:
    """Why the request does not match the description, None when it does."""
    try:
        openapi().validate_request(mock_request(request))
    except Exception as error:
        return f"{request.method} {request.target}: {type(error).__name__}: {error}"
    undeclared = sorted(set(urllib.parse.parse_qs(request.query)) - query_names(request))
    if undeclared:
        # openapi-core lets unknown query parameters pass; the description declares them all.
        return f"{request.method} {request.target}: undeclared query parameters {undeclared}"
    return None


def query_names(request: Request) -> set[str]:
    """The query parameters the description declares for the request's operation."""
    document = description()
    for template, item in document["paths"].items():
        pattern = "^" + re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(template)) + "$"
        if re.match(pattern, request.path) and request.method.lower() in item:
            declared = item.get("parameters", []) + item[request.method.lower()].get(
                "parameters", []
            )
            return {
                parameter["name"]
                for parameter in (resolve(document, p) for p in declared)
                if parameter.get("in") == "query"
            }
    return set()


def resolve(document: Json, node: Json) -> Json:
    """`node`, or what its `$ref` (`#/components/...`) points to."""
    if "$ref" not in node:
        return node
    found = document
    for part in node["$ref"].removeprefix("#/").split("/"):
        found = found[part]
    return found


def check_response(request: Request, response: Response) -> str | None:
    """Why the response does not match the description, None when it does."""
    if response.drop or response.reset:
        return None
    headers = dict(response.headers)
    try:
        openapi().validate_response(
            mock_request(request),
            MockResponse(
                response.body,
                status_code=response.status,
                headers=headers,
                content_type=headers.get("content-type", "application/json"),
            ),
        )
    except Exception as error:
        return f"answer {response.status} to {request.method} {request.target}: {error}"
    return None
