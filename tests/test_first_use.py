"""First use: the embedded stand-in, the pre-flight before any request, `config check --online`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
import trio

from overbrainer.devtools.embedded import stub_listing, stub_transport
from overbrainer.devtools.stub_provider import open_stub
from tests.pipeline_support import PRICES, make_project, overbrainer
from tests.ports import free_port

KEY = "sk-test-SECRET-4242"

# Any IPv4/IPv6 socket operation of the command fails the test: the embedded provider must not
# need a port, a connection or a name lookup (trio's own wake-up socketpair is AF_UNIX).
NO_NETWORK = """
import socket, sys
def refuse(*args, **kwargs):
    raise AssertionError("network used")
for name in ("bind", "connect", "connect_ex", "listen"):
    original = getattr(socket.socket, name)
    def guarded(self, *args, _original=original, **kwargs):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            refuse()
        return _original(self, *args, **kwargs)
    setattr(socket.socket, name, guarded)
socket.getaddrinfo = refuse
from overbrainer.cli.entry import main
sys.argv = ["overbrainer", *sys.argv[1:]]
main()
"""


def clean_env() -> dict[str, str]:
    """This environment without overbrainer's or Vault's variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERBRAINER_", "VAULT_"))}
    env["NO_COLOR"] = "1"
    return env


def guarded(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real command with every network socket refused."""
    return subprocess.run(
        [sys.executable, "-c", NO_NETWORK, *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.quick  # an end-to-end path of the quick tier
def test_a_demo_project_runs_on_the_embedded_stand_in_without_any_network(
    tmp_path: Path,
) -> None:
    made = guarded("init", "demo", "--demo", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert made.stdout == (
        "next: make the demo dataset with `cd demo && overbrainer run --no-train`\n"
    )
    ran = guarded("-C", "demo", "run", "--no-train", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "network used" not in ran.stderr
    assert ran.stdout.splitlines() == [
        "subtopics: 1 done, 0 skipped, 0 failed, 0 excluded; tokens 73 in, 36 out; cost $0.0000",
        "questions: 3 done, 0 skipped, 0 failed, 0 excluded; tokens 283 in, 108 out; cost $0.0001",
        "answers: 9 done, 0 skipped, 0 failed, 0 excluded; tokens 225 in, 540 out; cost $0.0002",
        "split: 8 train, 1 eval, 0 excluded, 0 orphaned",
    ]
    data = tmp_path / "demo" / "data"
    assert len((data / "train.jsonl").read_text().splitlines()) == 8
    assert len((data / "eval.jsonl").read_text().splitlines()) == 1
    checked = guarded("-C", "demo", "config", "check", "--online", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.splitlines()[-2:] == [
        "roles.generator (stub, stub-generator): reachable, no key needed, model listed, "
        "price known ($0.10 in, $0.40 out per million tokens)",
        "roles.parent (stub, stub-parent): reachable, no key needed, model listed, "
        "price known ($0.10 in, $0.40 out per million tokens)",
    ]


def test_the_guard_catches_a_command_that_uses_the_network(tmp_path: Path) -> None:
    assert guarded("init", "demo", cwd=tmp_path).returncode == 0
    (tmp_path / "demo" / ".env").write_text(
        "OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL=http://127.0.0.1:9/v1\n"
    )
    result = guarded("-C", "demo", "subtopics", cwd=tmp_path)
    assert result.returncode != 0
    assert "network used" in result.stderr


async def test_the_embedded_transport_answers_like_the_stand_in() -> None:
    transport = stub_transport(["a-model"])
    with trio.fail_after(10):
        async with httpx2.AsyncClient(transport=transport) as client:
            listing = await client.get("http://stub.invalid/v1/models")
            body = {"model": "a-model", "messages": [{"role": "user", "content": "Why?"}]}
            answer = await client.post("http://stub.invalid/v1/chat/completions", json=body)
    # The listing's entries, completed with the fields OpenAI's listing requires.
    expected = stub_listing(["a-model"])
    assert isinstance(expected, dict) and isinstance(expected["data"], list)
    assert [{k: m[k] for k in ("id", "pricing")} for m in listing.json()["data"]] == expected[
        "data"
    ]
    assert listing.json()["object"] == "list"
    assert answer.status_code == 200
    assert answer.json()["choices"][0]["message"]["content"] == "Here is a careful answer to: Why?"
    assert [r.path for r in transport.stub.requests] == ["/v1/models", "/v1/chat/completions"]


async def test_a_vault_key_without_vault_addr_stops_a_stage_before_any_request(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    env = {"OVERBRAINER_PROVIDERS__STUB__API_KEY": "vault:secret/overbrainer#key"}
    async with open_stub() as stub:
        result = await overbrainer(root, "answers", url=stub.url, env=env)
    assert result.code == 2
    assert result.stderr == (
        "error: cannot resolve providers.stub.api_key: "
        "a vault: reference was found but VAULT_ADDR is not set\n"
    )
    assert stub.requests == []


async def test_a_loopback_provider_needs_no_key(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:
        stub.models = PRICES
        result = await overbrainer(root, "config", "check", url=stub.url)
    assert result.code == 0, result.stderr
    assert stub.requests == []


async def online(root: Path, url: str, key: str = KEY) -> tuple[int, list[str], str]:
    env = {"OVERBRAINER_PROVIDERS__STUB__API_KEY": key}
    result = await overbrainer(root, "config", "check", "--online", url=url, env=env, limit=30)
    assert KEY not in result.stdout + result.stderr
    assert key not in result.stdout + result.stderr
    return result.code, result.out_lines[-2:], result.stderr


async def test_online_check_of_a_working_provider(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:
        stub.models, stub.api_key = PRICES, KEY
        code, lines, stderr = await online(root, stub.url)
    assert (code, stderr) == (0, "")
    assert lines == [
        "roles.generator (stub, gen-model): reachable, key accepted, model listed, "
        "price known ($1.00 in, $2.00 out per million tokens)",
        "roles.parent (stub, parent-model): reachable, key accepted, model listed, "
        "price known ($1000.00 in, $2000.00 out per million tokens)",
    ]
    # One listing for the provider both roles use, and nothing else.
    assert [(r.method, r.path) for r in stub.requests] == [("GET", "/v1/models")]
    assert stub.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_online_check_of_a_rejected_key(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:
        stub.models, stub.api_key = PRICES, KEY
        code, lines, stderr = await online(root, stub.url, key="sk-wrong-SECRET-1")
    assert code == 2
    assert lines == [
        "roles.generator (stub, gen-model): reachable, key refused (HTTP 401)",
        "roles.parent (stub, parent-model): reachable, key refused (HTTP 401)",
    ]
    assert stderr == "error: roles.generator and roles.parent cannot work (see above)\n"


async def test_online_check_of_an_unknown_model(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:
        stub.models = {"data": [{"id": "gen-model"}]}
        code, lines, stderr = await online(root, stub.url)
    assert code == 2
    assert lines == [
        "roles.generator (stub, gen-model): reachable, key accepted, model listed, price unknown",
        "roles.parent (stub, parent-model): reachable, key accepted, model not listed",
    ]
    assert stderr == "error: roles.parent cannot work (see above)\n"


async def test_online_check_of_an_unreachable_provider(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    start = trio.current_time()
    port = free_port()
    code, lines, stderr = await online(root, f"http://127.0.0.1:{port}/v1")
    assert code == 2
    cause = f"request failed: cannot connect to 127.0.0.1:{port}: connection refused"
    assert lines == [
        f"roles.generator (stub, gen-model): unreachable ({cause})",
        f"roles.parent (stub, parent-model): unreachable ({cause})",
    ]
    assert stderr == "error: roles.generator and roles.parent cannot work (see above)\n"
    assert trio.current_time() - start < 30


def test_stub_listing_is_json() -> None:
    assert json.loads(json.dumps(stub_listing(["m", "m"]))) == {
        "data": [{"id": "m", "pricing": {"prompt": "0.0000001", "completion": "0.0000004"}}]
    }
