"""`connect_roles`: shared connections, lazy keys and the setup errors of the reference."""

from __future__ import annotations

import logging

import attrs
import pytest
import trio
import trio.testing

from overbrainer.config.secrets import Secret
from overbrainer.config.settings import Pipeline, Project, Protocol, Provider, Role, Roles, Settings
from overbrainer.devtools.stub_script import Reply
from overbrainer.llm.connect import SetupError, connect_roles
from overbrainer.llm.pricing import PriceBook
from overbrainer.llm.types import CompletionRequest, Json
from overbrainer.model.usage import Price
from tests.llm_helpers import open_routed

URL = "http://127.0.0.1:9/v1/"
VAULT_KEY = Secret("vault:secret/llm#key")


def settings(
    providers: dict[str, Provider],
    generator: str = "main",
    parent: str = "main",
    embedder: str | None = None,
) -> Settings:
    return Settings(
        project=Project("demo"),
        roles=Roles(
            generator=Role(provider=generator, model="gen"),
            parent=Role(provider=parent, model="par", reasoning=True),
            embedder=None if embedder is None else Role(provider=embedder, model="emb"),
        ),
        providers=providers,
        pipeline=Pipeline(request_timeout_secs=7, max_retries=2),
    )


async def test_roles_of_one_provider_share_one_connection() -> None:
    cfg = settings(
        {
            "main": Provider(Protocol.OPENAI, URL, Secret("sk-test")),
            "other": Provider(Protocol.OPENAI, URL),
        },
        embedder="other",
    )
    with trio.fail_after(5):
        async with connect_roles(cfg, ("generator", "parent", "embedder"), env={}) as roles:
            assert list(roles) == ["generator", "parent", "embedder"]
            gen, par, emb = roles["generator"], roles["parent"], roles["embedder"]
            assert gen.client.http is par.client.http
            assert emb.client.http is not gen.client.http
            assert (gen.client.model, par.client.model, emb.client.model) == ("gen", "par", "emb")
            assert (gen.provider, emb.provider) == ("main", "other")
            assert gen.client.http.base_url == "http://127.0.0.1:9/v1"
            assert gen.client.http.request_timeout == 7.0
            assert gen.client.retry.max_retries == 2
            assert gen.price is None
            assert "sk-test" not in repr(gen) + repr(gen.client) + repr(gen.client.http)


async def test_an_unset_optional_role_is_left_out() -> None:
    cfg = settings({"main": Provider(Protocol.OPENAI, URL)})
    with trio.fail_after(5):
        async with connect_roles(cfg, ("parent", "embedder", "judge"), env={}) as roles:
            assert list(roles) == ["parent"]


async def test_keys_are_resolved_only_for_the_roles_connected() -> None:
    cfg = settings(
        {
            "main": Provider(Protocol.OPENAI, URL),
            "vaulted": Provider(Protocol.OPENAI, URL, VAULT_KEY),
        },
        parent="vaulted",
    )
    with trio.fail_after(5):
        async with connect_roles(cfg, ("generator",), env={}) as roles:
            assert list(roles) == ["generator"]
        with pytest.raises(SetupError) as caught:
            async with connect_roles(cfg, ("generator", "parent"), env={}):
                pass
    assert caught.value.message == (
        "cannot resolve providers.vaulted.api_key: "
        "a vault: reference was found but VAULT_ADDR is not set"
    )
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(
    ("providers", "message"),
    [
        ({}, "unknown provider `main`"),
        (
            {"main": Provider(Protocol.OPENAI)},
            "providers.main.base_url is not set (set OVERBRAINER_PROVIDERS__MAIN__BASE_URL)",
        ),
        (
            {"main": Provider(Protocol.OPENAI, URL, Secret("vault:nope"))},
            "cannot resolve providers.main.api_key: "
            "invalid secret reference: expected vault:<mount>/<path>#<field>",
        ),
        (
            {"main": Provider(Protocol.ANTHROPIC, URL, Secret("sk-\nsecret"))},
            "cannot build the client for provider `main`: "
            "the API key is not a valid HTTP header value",
        ),
    ],
)
async def test_setup_errors(providers: dict[str, Provider], message: str) -> None:
    with trio.fail_after(5), pytest.raises(SetupError) as caught:
        async with connect_roles(settings(providers), ("generator", "parent"), env={}):
            pass
    assert caught.value.message == message
    assert "secret" not in caught.value.message.replace("invalid secret reference", "")


async def test_embedder_failures_are_wrapped() -> None:
    cfg = settings(
        {"main": Provider(Protocol.OPENAI, URL), "emb": Provider(Protocol.OPENAI)}, embedder="emb"
    )
    with trio.fail_after(5), pytest.raises(SetupError) as caught:
        async with connect_roles(cfg, ("generator", "parent", "embedder"), env={}):
            pass
    assert caught.value.message == (
        "cannot set up the embedder: providers.emb.base_url is not set "
        "(set OVERBRAINER_PROVIDERS__EMB__BASE_URL)"
    )


async def test_unknown_role_name_is_a_bug() -> None:
    cfg = settings({"main": Provider(Protocol.OPENAI, URL)})
    with pytest.raises(ValueError, match="no role named 'critic'"):
        async with connect_roles(cfg, ("critic",), env={}):
            pass


def priced_listing(*models: str) -> Json:
    return {
        "data": [
            {"id": m, "pricing": {"prompt": "0.000001", "completion": "0.000004"}} for m in models
        ]
    }


@pytest.mark.parametrize("embedder", ["main", "other"])
async def test_prices_are_looked_up_once_per_provider_and_never_for_the_embedder(
    embedder: str,
) -> None:
    # "other" serves only the embedder: its listing (which prices "emb") must not be read.
    with trio.fail_after(10):
        async with open_routed() as first, open_routed() as second:
            first.models = priced_listing("gen", "par", "emb")
            second.models = [
                {
                    "id": "emb",
                    "pricing": {"prompt": 1, "completion": 2, "unit": "per_million_tokens"},
                }
            ]
            cfg = settings(
                {
                    "main": Provider(Protocol.OPENAI, first.url, Secret("sk-test")),
                    "other": Provider(Protocol.OPENAI, second.url),
                },
                parent="main",
                embedder=embedder,
            )
            book = PriceBook()
            async with connect_roles(cfg, ("generator", "parent", "embedder"), {}, book) as roles:
                prices = {name: role.price for name, role in roles.items()}
    assert prices == {
        "generator": Price(1.0, 4.0),
        "parent": Price(1.0, 4.0),
        "embedder": None,
    }
    assert first.targets == ["/v1/models?detailed=true"]
    assert second.targets == []
    assert first.requests[0].headers["authorization"] == "Bearer sk-test"


async def test_a_slow_listing_costs_at_most_10s_and_the_command_goes_on(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    start = trio.current_time()
    with trio.fail_after(100):
        async with open_routed() as stub:
            stub.models = priced_listing("gen", "par")
            stub.models_delay = 60.0
            cfg = attrs.evolve(
                settings({"main": Provider(Protocol.OPENAI, stub.url)}), pipeline=Pipeline()
            )
            async with connect_roles(cfg, ("generator", "parent"), {}, PriceBook()) as roles:
                assert roles["generator"].price is None and roles["parent"].price is None
                assert trio.current_time() - start == pytest.approx(10.0, abs=0.01)
                stub.queue(Reply(content="still works"))
                answer = await roles["parent"].client.complete(CompletionRequest("q"))
    assert answer.content == "still works"
    assert [r.getMessage() for r in caplog.records if r.name.startswith("overbrainer")] == [
        "model prices not received within 10s; showing tokens only"
    ]


async def test_a_failing_listing_is_logged_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    with trio.fail_after(10):
        async with open_routed() as stub:
            stub.models_status = 500
            cfg = settings({"main": Provider(Protocol.OPENAI, stub.url)})
            async with connect_roles(cfg, ("generator", "parent"), {}, PriceBook()) as roles:
                assert roles["parent"].price is None
    assert stub.targets == ["/v1/models?detailed=true"]
    assert [r.getMessage() for r in caplog.records if r.name.startswith("overbrainer")] == [
        "cannot read model prices (HTTP 500: listing broke); showing tokens only"
    ]


async def test_a_model_missing_from_the_listing_uses_the_role_price(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="overbrainer")
    with trio.fail_after(10):
        async with open_routed() as stub:
            stub.models = priced_listing("gen")
            base = settings({"main": Provider(Protocol.OPENAI, stub.url)})
            parent = attrs.evolve(base.roles.parent, price_in=2.0, price_out=8.0)
            cfg = attrs.evolve(base, roles=attrs.evolve(base.roles, parent=parent))
            generator_only = attrs.evolve(
                base, roles=attrs.evolve(base.roles, generator=Role("main", "absent"))
            )
            async with connect_roles(cfg, ("generator", "parent"), {}, PriceBook()) as roles:
                assert roles["generator"].price == Price(1.0, 4.0)
                assert roles["parent"].price == Price(2.0, 8.0)
            async with connect_roles(generator_only, ("generator",), {}, PriceBook()) as roles:
                assert roles["generator"].price is None
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] == [
        "no price listed for model absent; showing tokens only"
    ]
