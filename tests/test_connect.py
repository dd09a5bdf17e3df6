"""`connect_roles`: shared connections, lazy keys and the setup errors of the reference."""

from __future__ import annotations

import pytest
import trio

from overbrainer.config.settings import Pipeline, Project, Protocol, Provider, Role, Roles, Settings
from overbrainer.llm.connect import SetupError, connect_roles
from overbrainer.secrets import Secret

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
