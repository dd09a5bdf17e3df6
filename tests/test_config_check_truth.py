"""`config check` tells the truth: a refused key is `key refused` whatever status says it, a
provider without a model list gets a one-token probe, `--online` prints its lines whatever else
fails, and a dataset-only project needs no Axolotl. All through the real command."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from overbrainer.devtools.stub_provider import StubProvider, serving
from overbrainer.devtools.stub_script import Json, Recorded, Reply
from overbrainer.devtools.stub_wire import JSON_HEADERS
from overbrainer.llm.errors import StatusError
from overbrainer.net.http_server import Request, Response
from tests.pipeline_support import PRICES, TRAINING, make_project, overbrainer

KEY = "sk-test-SECRET-4242"
WRONG = "sk-wrong-SECRET-1"
NO_AXOLOTL = "/usr/bin:/bin"
"""A PATH without Axolotl (as tests/test_init.py has it)."""
LITELLM_NO_DB: Json = {
    "error": {
        "message": "No connected db.",
        "type": "no_db_connection",
        "param": None,
        "code": "400",
    }
}
"""What LiteLLM's proxy without a database answers a key that is not its master key."""
TRAINING_PROBLEM = (
    "target `local` cannot train: axolotl is not on PATH (set targets.local.venv to Axolotl's "
    "virtual environment); `config check --no-train` checks a dataset-only run (`run --no-train`)"
)


class ListingStub(StubProvider):
    """The stub, with `GET /models` answered `listing` (a status and a JSON body) when set."""

    def __init__(self) -> None:
        super().__init__()
        self.listing: tuple[int, Json] | None = None

    async def handle(self, request: Request) -> Response:
        """`/models` as scripted; everything else as the stub answers it."""
        if self.listing is not None and request.path.endswith("/models"):
            status, body = self.listing
            return Response(status, json.dumps(body).encode(), JSON_HEADERS)
        return await super().handle(request)


@contextlib.asynccontextmanager
async def open_listing_stub() -> AsyncIterator[ListingStub]:
    """A `ListingStub` on 127.0.0.1 for the block."""
    async with serving(ListingStub()) as stub:
        yield stub


async def check(
    root: Path,
    stub: StubProvider,
    *args: str,
    key: str = KEY,
    path: str | None = None,
    more: dict[str, str] | None = None,
) -> tuple[int, list[str], str]:
    """`config check ARGS` with `key` (and `more` variables): exit code, stdout lines, stderr
    (never a key in them)."""
    env = {"OVERBRAINER_PROVIDERS__STUB__API_KEY": key, **(more or {})}
    if path is not None:
        env["PATH"] = path
    result = await overbrainer(root, "config", "check", *args, url=stub.url, env=env, limit=60)
    assert KEY not in result.stdout + result.stderr
    assert key not in result.stdout + result.stderr
    return result.code, result.out_lines, result.stderr


async def test_a_401_listing_is_a_refused_key(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_listing_stub() as stub:
        stub.models, stub.api_key = PRICES, KEY
        code, lines, stderr = await check(root, stub, "--online", key=WRONG)
    assert code == 2
    assert lines[-2:] == [
        "roles.generator (stub, gen-model): reachable, key refused (HTTP 401)",
        "roles.parent (stub, parent-model): reachable, key refused (HTTP 401)",
    ]
    assert stderr == "error: roles.generator and roles.parent cannot work (see above)\n"
    assert stub.completions == []


async def test_litellm_no_connected_db_is_a_refused_key_without_a_probe(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    async with open_listing_stub() as stub:
        stub.listing = (400, LITELLM_NO_DB)
        code, lines, stderr = await check(root, stub, "--online", key=WRONG)
    assert code == 2
    assert lines[-2:] == [
        "roles.generator (stub, gen-model): reachable, key refused (HTTP 400)",
        "roles.parent (stub, parent-model): reachable, key refused (HTTP 400)",
    ]
    assert stderr == "error: roles.generator and roles.parent cannot work (see above)\n"
    assert stub.completions == []


async def test_no_list_and_a_refused_probe_is_a_refused_key(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    listings: list[tuple[int, Json]] = [
        (404, {"error": {"message": "not found"}}),
        (400, {"error": "bad request"}),
    ]
    for listing in listings:
        async with open_listing_stub() as stub:
            stub.listing, stub.api_key = listing, KEY
            code, lines, stderr = await check(root, stub, "--online", key=WRONG)
        status = listing[0]
        assert code == 2
        assert lines[-2:] == [
            f"roles.generator (stub, gen-model): reachable, no model list (HTTP {status}); "
            "key refused (one-token probe: HTTP 401)",
            f"roles.parent (stub, parent-model): reachable, no model list (HTTP {status}); "
            "key refused (one-token probe: HTTP 401)",
        ]
        assert stderr == "error: roles.generator and roles.parent cannot work (see above)\n"
        # One probe per model, of at most one output token, sent once (no retries).
        bodies = [r.body_json for r in stub.completions if isinstance(r.body_json, dict)]
        assert sorted(str(body["model"]) for body in bodies) == ["gen-model", "parent-model"]
        assert [body["max_tokens"] for body in bodies] == [1, 1]


async def test_no_list_and_an_answered_probe_is_an_accepted_key(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    # Both roles on one model: one probe stands for both, and its tokens are counted once.
    env_model = {"OVERBRAINER_ROLES__PARENT__MODEL": "gen-model"}
    async with open_listing_stub() as stub:
        stub.listing, stub.api_key = (503, {"error": {"message": "overloaded"}}), KEY
        stub.queue(Reply(content="OK", usage=(14, 1)))
        result = await overbrainer(
            root,
            "config",
            "check",
            "--online",
            url=stub.url,
            env={"OVERBRAINER_PROVIDERS__STUB__API_KEY": KEY, **env_model},
            limit=60,
        )
    assert (result.code, result.stderr) == (0, "")
    assert result.out_lines[-2:] == [
        "roles.generator (stub, gen-model): reachable, no model list (HTTP 503); key accepted, "
        "model answered a one-token probe (14 tokens in, 1 out), price unknown",
        "roles.parent (stub, gen-model): reachable, no model list (HTTP 503); key accepted, "
        "model answered a one-token probe (the probe of roles.generator), price unknown",
    ]
    assert len(stub.completions) == 1
    assert KEY not in result.stdout + result.stderr


def unknown_generator(request: Recorded) -> Reply:
    """404 for the generator's model, 429 for any other, each quoting the request's key."""
    body = request.body_json if isinstance(request.body_json, dict) else {}
    return Reply(status=404 if body.get("model") == "gen-model" else 429, echo_auth=True)


async def test_a_probe_the_model_is_not_found_for_fails_without_quoting_the_provider(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p")
    async with open_listing_stub() as stub:
        stub.listing = (404, {"error": {"message": "not found"}})
        # A careless upstream quotes the credentials it got: none of it reaches the lines.
        stub.responder = unknown_generator
        code, lines, stderr = await check(root, stub, "--online")
    assert code == 2
    assert lines[-2:] == [
        "roles.generator (stub, gen-model): reachable, no model list (HTTP 404); "
        "one-token probe: HTTP 404, the model or the base URL is wrong",
        "roles.parent (stub, parent-model): reachable, no model list (HTTP 404); "
        "one-token probe: HTTP 429: key and model not checked",
    ]
    assert stderr == "error: roles.generator cannot work (see above)\n"
    assert len(stub.completions) == 2  # once each: a 429 is not retried


async def test_provider_lines_are_printed_when_a_training_target_is_broken(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "p", pipeline=TRAINING)
    async with open_listing_stub() as stub:
        stub.models, stub.api_key = PRICES, KEY
        code, lines, stderr = await check(root, stub, "--online", path=NO_AXOLOTL)
        assert code == 2
        assert lines[-2:] == [
            "roles.generator (stub, gen-model): reachable, key accepted, model listed, "
            "price known ($1.00 in, $2.00 out per million tokens)",
            "roles.parent (stub, parent-model): reachable, key accepted, model listed, "
            "price known ($1000.00 in, $2000.00 out per million tokens)",
        ]
        assert "targets.local = local, native, no axolotl on PATH" in lines
        assert stderr == f"error: {TRAINING_PROBLEM}\n"
        # Every problem at the end: the hub token's, the target's, the provider's.
        hub = {"OVERBRAINER_HF_TOKEN": "vault:secret/overbrainer#hf"}
        code, lines, stderr = await check(
            root, stub, "--online", "--resolve", key=WRONG, path=NO_AXOLOTL, more=hub
        )
    assert code == 2
    assert lines[-3:] == [
        "providers.stub.api_key: resolved",
        "roles.generator (stub, gen-model): reachable, key refused (HTTP 401)",
        "roles.parent (stub, parent-model): reachable, key refused (HTTP 401)",
    ]
    assert stderr == (
        "error: the configuration cannot work:\n"
        "  cannot resolve hf_token: a vault: reference was found but VAULT_ADDR is not set\n"
        f"  {TRAINING_PROBLEM}\n"
        "  roles.generator and roles.parent cannot work (see above)\n"
    )


async def test_a_dataset_only_project_needs_no_axolotl(tmp_path: Path) -> None:
    # A native target but no [training]: nothing trains, so no Axolotl is needed.
    target = '[targets.local]\nkind = "local"\nruntime = "native"\n'
    dataset_only = make_project(tmp_path / "data-only", pipeline="\n" + target)
    trains = make_project(tmp_path / "trains", pipeline=TRAINING)
    async with open_listing_stub() as stub:
        stub.models, stub.api_key = PRICES, KEY
        code, lines, stderr = await check(dataset_only, stub, "--online", path=NO_AXOLOTL)
        assert (code, stderr) == (0, "")
        assert "targets.local = local, native, no axolotl on PATH" in lines
        # With [training]: an error that names the way out, which then passes.
        code, _, stderr = await check(trains, stub, path=NO_AXOLOTL)
        assert (code, stderr) == (2, f"error: {TRAINING_PROBLEM}\n")
        code, lines, stderr = await check(trains, stub, "--no-train", "--online", path=NO_AXOLOTL)
    assert (code, stderr) == (0, "")
    assert "targets.local = local, native, no axolotl on PATH" in lines


@pytest.mark.parametrize(
    ("status", "message", "refused"),
    [
        (401, "anything", True),
        (403, "anything", True),
        (400, "No connected db.", True),  # LiteLLM without a database, any key but the master
        (400, "API key not valid. Please pass a valid API key.", True),  # Google's endpoint
        (400, "Authentication Error, Invalid proxy server token passed.", True),
        (400, "Unsupported parameter: 'max_tokens' is not supported with this model.", False),
        (400, "x is not a valid model ID", False),
        # LiteLLM's own database outage names authentication, but refuses no key.
        (503, "Service Unavailable, the authentication database is unreachable.", False),
        (404, "Invalid API key route", False),
    ],
)
def test_which_answers_refuse_the_key(status: int, message: str, refused: bool) -> None:
    assert StatusError(status, message).refuses_key is refused


async def test_the_quality_judge_is_checked_online_under_its_own_key(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    with (root / "overbrainer.toml").open("a", encoding="utf-8") as config:
        config.write('\n[quality.judge]\nprovider = "stub"\nmodel = "judge-model"\n')
    async with open_listing_stub() as stub:
        stub.models, stub.api_key = PRICES, KEY
        code, lines, stderr = await check(root, stub, "--online", key=WRONG)
    assert code == 2
    assert lines[-1] == "quality.judge (stub, judge-model): reachable, key refused (HTTP 401)"
    assert stderr == (
        "error: roles.generator and roles.parent and quality.judge cannot work (see above)\n"
    )
