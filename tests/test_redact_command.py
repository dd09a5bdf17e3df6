"""No known secret leaves the real command: every output byte is scanned for sentinel keys.

The key is given as a literal or resolved from a fake Vault; the provider fails in the ways
that used to quote it (an echoed `Authorization` header on a retried 500, a 400, a 401, a base
URL with userinfo, a bug's traceback).
"""

from __future__ import annotations

import base64
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from overbrainer.devtools.stub_provider import StubProvider, open_stub
from overbrainer.devtools.stub_script import Reply
from overbrainer.net.http_server import Request, Response, serve_http
from tests.pipeline_support import (
    PRICES,
    Result,
    command,
    command_env,
    make_project,
    write_questions,
)

KEY = "sk-SENTINEL-4f9c2b7e1d0a"
VAULT_KEY = "sk-VAULTED-SENTINEL-8e21c3"
VAULT_TOKEN = "hvs.SENTINEL-TOKEN-77ab01"
URL_PASSWORD = "url-SENTINEL-pw-5c0d9e"
URL_USER = "alice"
BASIC = base64.b64encode(f"{URL_USER}:{URL_PASSWORD}".encode()).decode()
SENTINELS = (KEY, VAULT_KEY, VAULT_TOKEN, URL_PASSWORD, BASIC)

# A bug whose message quotes the key it was handed, in the real command's process.
CRASHING = """\
import sys
import overbrainer.llm.openai as openai
def auth_headers(api_key):
    raise RuntimeError(f"cannot build headers from {api_key!r}")
openai.auth_headers = auth_headers
from overbrainer.cli.entry import main
sys.argv = ["overbrainer", *sys.argv[1:]]
main()
"""


@contextlib.asynccontextmanager
async def open_vault(value: str) -> AsyncIterator[str]:
    """A Vault KV v2 stand-in serving `secret/overbrainer#api_key` to the sentinel token."""

    async def handle(request: Request) -> Response:
        if request.headers.get("x-vault-token") != VAULT_TOKEN:
            return Response(403, b'{"errors":["permission denied"]}')
        if request.path != "/v1/secret/data/overbrainer":
            return Response(404, b'{"errors":[]}')
        return Response(200, json.dumps({"data": {"data": {"api_key": value}}}).encode())

    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(serve_http, handle)
        yield f"http://{host}:{port}"
        nursery.cancel_scope.cancel()


def leaks(result: Result, root: Path) -> list[str]:
    """Where a sentinel appears: stdout, stderr or any file under `root` (byte-exact scan)."""
    found = []
    outputs = {"stdout": result.stdout.encode(), "stderr": result.stderr.encode()}
    outputs |= {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    for where, data in outputs.items():
        found += [f"{s} in {where}" for s in SENTINELS if s.encode() in data]
    return found


async def run_answers(root: Path, stub: StubProvider, env: dict[str, str], crash: bool) -> Result:
    """`answers --events FILE` at debug level, or the same with a bug patched in."""
    args = ["--events", str(root.parent / "events.jsonl"), "answers"]
    line = command(root, *args)
    if crash:
        line = [sys.executable, "-c", CRASHING, *line[3:]]
    with trio.fail_after(60):
        done = await trio.run_process(
            line,
            env=command_env(stub.url, {"OVERBRAINER_LOG": "debug", **env}),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    return Result(done.returncode, done.stdout.decode(), done.stderr.decode())


SCENARIOS = {
    "500 echoing the key, retried": Reply(status=500, echo_auth=True),
    "400 echoing the key": Reply(status=400, echo_auth=True),
    "401": Reply(status=401, echo_auth=True),
    "base URL with userinfo": Reply(status=500, echo_auth=True),
    "a bug's traceback": Reply(),
}


@pytest.mark.parametrize("source", ["literal", "vault"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_no_sentinel_leaves_the_command(tmp_path: Path, source: str, scenario: str) -> None:
    root = make_project(tmp_path / "p")
    write_questions(root, 2)
    reply = SCENARIOS[scenario]
    key = KEY if source == "literal" else VAULT_KEY
    async with open_stub(lambda _: reply) as stub, open_vault(VAULT_KEY) as vault:
        stub.models = PRICES
        env = {"OVERBRAINER_PROVIDERS__STUB__API_KEY": KEY}
        if source == "vault":
            env = {
                "OVERBRAINER_PROVIDERS__STUB__API_KEY": "vault:secret/overbrainer#api_key",
                "VAULT_ADDR": vault,
                "VAULT_TOKEN": VAULT_TOKEN,
            }
        if scenario == "base URL with userinfo":
            userinfo = f"{URL_USER}:{URL_PASSWORD}@"
            env["OVERBRAINER_PROVIDERS__STUB__BASE_URL"] = stub.url.replace("://", f"://{userinfo}")
        result = await run_answers(root, stub, env, crash=scenario == "a bug's traceback")
        sent = [r.headers.get("authorization", "") for r in stub.requests]

    assert leaks(result, tmp_path) == []
    if scenario == "a bug's traceback":
        assert result.code == 1
        assert "RuntimeError: cannot build headers from '***'" in result.stderr
        return
    # The provider really got the key, and its echo really reached the output, masked.
    assert sent and all(key in header or BASIC in header for header in sent), result
    assert result.code == 1, result.stderr
    events = (tmp_path / "events.jsonl").read_text()
    if scenario == "401":
        assert "authentication failed, check the provider API key" in result.stderr
    else:
        assert "upstream rejected the request with headers authorization: " in result.stderr
        assert "***" in events
    if scenario.startswith("500"):
        assert "retrying in" in result.stderr
