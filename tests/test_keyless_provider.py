"""A provider without a key is used on any host, with no auth header, as in the reference.

`127.1` is 127.0.0.1 to the resolver, but not a loopback literal to the pre-flight: it stands
for a self-hosted server on another machine (Ollama, vLLM) that the pre-flight cannot vouch for.
"""

from __future__ import annotations

from pathlib import Path

from overbrainer.devtools.stub_provider import open_stub
from tests.pipeline_support import make_project, overbrainer

OFF_LOOPBACK = "127.1"

KEYLESS = (
    "providers.stub.api_key {state} (set OVERBRAINER_PROVIDERS__STUB__API_KEY if 127.1 "
    "needs one): its requests go without an auth header; roles.generator uses it"
)


def off_loopback(url: str) -> str:
    """The stub's URL under a host name the pre-flight does not take for loopback."""
    assert url.startswith("http://127.0.0.1:")
    return url.replace("127.0.0.1", OFF_LOOPBACK, 1)


async def test_a_keyless_provider_off_loopback_is_used_without_an_auth_header(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:
        result = await overbrainer(root, "subtopics", url=off_loopback(stub.url))
        requests = list(stub.requests)
    assert result.code == 0, result.stderr
    assert result.out_lines[0].startswith("subtopics: 2 done, 0 skipped, 0 failed")
    assert KEYLESS.format(state="is not set") in result.stderr
    assert len(requests) > 2
    assert [r for r in requests if "authorization" in r.headers or "x-api-key" in r.headers] == []


async def test_an_empty_key_is_no_key(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    env = {"OVERBRAINER_PROVIDERS__STUB__API_KEY": ""}
    async with open_stub() as stub:
        result = await overbrainer(root, "subtopics", url=off_loopback(stub.url), env=env)
        requests = list(stub.requests)
    assert result.code == 0, result.stderr
    assert KEYLESS.format(state="is empty") in result.stderr
    assert [r.headers.get("authorization") for r in requests] == [None] * len(requests)


async def test_config_check_warns_about_a_keyless_provider_off_loopback(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:
        result = await overbrainer(root, "config", "check", url=off_loopback(stub.url))
    assert result.code == 0, result.stderr
    assert (
        KEYLESS.format(state="is not set").replace(
            "roles.generator uses it", "roles.generator and roles.parent use it"
        )
        in result.stderr
    )


async def test_a_keyless_provider_on_loopback_is_used_without_a_warning(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_stub() as stub:
        result = await overbrainer(root, "subtopics", url=stub.url)
        requests = list(stub.requests)
    assert result.code == 0, result.stderr
    assert "api_key" not in result.stderr
    assert [r.headers.get("authorization") for r in requests] == [None] * len(requests)
