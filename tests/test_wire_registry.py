"""The provider seam: every configurable protocol has one `WireProtocol`, found in one registry."""

from __future__ import annotations

import httpx2
import pytest
import trio

from overbrainer.config.secrets import Secret
from overbrainer.config.settings import Project, Protocol, Provider, Role, Roles, Settings
from overbrainer.llm.client import ProviderConnection, open_provider
from overbrainer.llm.connect import connect_roles
from overbrainer.llm.pricing import PriceBook
from overbrainer.llm.protocols import WIRES, wire_of
from overbrainer.llm.types import CompletionRequest


def stub_settings() -> Settings:
    return Settings(
        project=Project("demo"),
        roles=Roles(
            generator=Role(provider="local", model="gen"),
            parent=Role(provider="remote", model="par"),
            embedder=Role(provider="local", model="emb"),
        ),
        providers={
            # A key on a stub provider is never resolved: the vault is not there.
            "local": Provider(Protocol.STUB, api_key=Secret("vault:secret/llm#key")),
            "remote": Provider(Protocol.OPENAI, "http://127.0.0.1:9/v1"),
        },
    )


def test_every_protocol_a_config_can_name_has_one_wire() -> None:
    assert set(WIRES) == set(Protocol)
    assert [p for p in Protocol if wire_of(p).embedded] == [Protocol.STUB]
    assert [p for p in Protocol if not wire_of(p).raw_reasoning] == [Protocol.ANTHROPIC]
    assert [p for p in Protocol if not wire_of(p).embeddings] == [Protocol.ANTHROPIC]


async def test_the_stub_transport_lists_the_models_of_its_providers_roles() -> None:
    transport = wire_of(Protocol.STUB).transport(stub_settings(), "local")
    assert transport is not None
    with trio.fail_after(10):
        async with httpx2.AsyncClient(transport=transport) as client:
            listing = (await client.get("http://stub.invalid/v1/models")).json()
    assert [model["id"] for model in listing["data"]] == ["gen", "emb"]


async def test_network_protocols_have_no_transport_and_an_embedded_one_needs_its_own() -> None:
    assert wire_of(Protocol.OPENAI).transport(stub_settings(), "remote") is None
    assert wire_of(Protocol.ANTHROPIC).transport(stub_settings(), "remote") is None
    with pytest.raises(ValueError, match="a stub provider needs its transport"):
        async with open_provider(ProviderConnection(Protocol.STUB, "http://stub.invalid/v1")):
            pass


async def test_a_stub_role_connects_in_process_without_a_base_url_or_key() -> None:
    with trio.fail_after(10):
        async with connect_roles(stub_settings(), ("generator",), {}, PriceBook()) as roles:
            generator = roles["generator"]
            answer = await generator.client.complete(CompletionRequest("say something"))
    assert answer.content
    price = generator.price
    assert price is not None
    assert (price.input_per_million, price.output_per_million) == pytest.approx((0.1, 0.4))


def test_a_connections_repr_never_shows_its_key() -> None:
    key = "sk-or-v1-SECRET-0123456789abcdef"
    shown = repr(ProviderConnection(Protocol.OPENAI, "https://openrouter.ai/api/v1", key))
    assert key not in shown and "openrouter.ai" in shown
