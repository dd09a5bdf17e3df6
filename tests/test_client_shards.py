"""Connection shards: small pools made as requests need them, each slot given back."""

from __future__ import annotations

import ssl

import httpx2
import pytest
import trio
import trio.testing

from overbrainer.config.settings import Protocol
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.llm.client import ProviderConnection, open_client
from overbrainer.llm.http import tls_context
from overbrainer.llm.shards import SHARD_CONNECTIONS, open_shards
from overbrainer.llm.types import CompletionRequest


class Held:
    """A transport whose replies wait for `release`, counting the requests in it."""

    def __init__(self) -> None:
        self.release = trio.Event()
        self.waiting = 0

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.waiting += 1
        try:
            await self.release.wait()
        finally:
            self.waiting -= 1
        return httpx2.Response(200, json={"ok": True})


class Maker:
    """Makes clients over one `Held` transport and notes each one's connection limit."""

    def __init__(self, held: Held) -> None:
        self.held = held
        self.limits: list[int | None] = []

    def __call__(self, connections: int | None) -> httpx2.AsyncClient:
        self.limits.append(connections)
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.held.handle))


async def test_clients_are_made_as_requests_in_flight_need_them() -> None:
    held = Held()
    make = Maker(held)
    with trio.fail_after(5):
        async with open_shards(make, per_shard=4) as shards:
            assert make.limits == [4]  # the first one at once
            async with trio.open_nursery() as nursery:
                for _ in range(10):
                    nursery.start_soon(shards.request, "GET", "http://x/")
                await trio.testing.wait_all_tasks_blocked()
                assert held.waiting == 10
                assert make.limits == [4, 4, 4]
                held.release.set()
            # Slots were given back: as many requests again need no new client.
            held.release = trio.Event()
            async with trio.open_nursery() as nursery:
                for _ in range(10):
                    nursery.start_soon(shards.request, "GET", "http://x/")
                await trio.testing.wait_all_tasks_blocked()
                held.release.set()
            assert shards.clients == 3


async def test_the_connection_limit_holds_over_all_clients_and_the_rest_wait() -> None:
    held = Held()
    make = Maker(held)
    with trio.fail_after(5):
        async with (
            open_shards(make, per_shard=4, max_connections=6) as shards,
            trio.open_nursery() as nursery,
        ):
            for _ in range(9):
                nursery.start_soon(shards.request, "GET", "http://x/")
            await trio.testing.wait_all_tasks_blocked()
            assert make.limits == [4, 2]
            held.release.set()


async def test_a_cancelled_request_gives_its_slot_back() -> None:
    held = Held()
    make = Maker(held)
    with trio.fail_after(5):
        async with open_shards(make, per_shard=2) as shards:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(shards.request, "GET", "http://x/")
                nursery.start_soon(shards.request, "GET", "http://x/")
                await trio.testing.wait_all_tasks_blocked()
                nursery.cancel_scope.cancel()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(shards.request, "GET", "http://x/")
                nursery.start_soon(shards.request, "GET", "http://x/")
                await trio.testing.wait_all_tasks_blocked()
                held.release.set()
            assert shards.clients == 1


async def test_no_shard_size_makes_one_client() -> None:
    held = Held()
    make = Maker(held)
    held.release.set()
    with trio.fail_after(5):
        async with open_shards(make, per_shard=None) as shards, trio.open_nursery() as nursery:
            for _ in range(50):
                nursery.start_soon(shards.request, "GET", "http://x/")
    assert make.limits == [None]


async def test_a_client_that_cannot_be_built_fails_on_open() -> None:
    def broken(connections: int | None) -> httpx2.AsyncClient:
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        async with open_shards(broken):
            pass


async def test_many_concurrent_answers_from_a_real_server_share_small_pools() -> None:
    count = 2 * SHARD_CONNECTIONS + 1
    with trio.fail_after(20):
        async with open_stub(delay=0.2) as stub:
            connection = ProviderConnection(Protocol.OPENAI, stub.url, "key")
            async with open_client(connection, "m", max_retries=0) as client:
                answers: list[str] = []

                async def ask(n: int) -> None:
                    completion = await client.complete(CompletionRequest(f"question {n}"))
                    answers.append(completion.content)

                async with trio.open_nursery() as nursery:
                    for n in range(count):
                        nursery.start_soon(ask, n)
                assert len(answers) == count
                assert client.http.shards.clients == 3


async def test_a_client_that_fails_to_open_later_leaves_its_connections_to_others() -> None:
    held = Held()
    made = Maker(held)
    failures = [RuntimeError("once")]

    def make(connections: int | None) -> httpx2.AsyncClient:
        if len(made.limits) == 1 and failures:
            raise failures.pop()
        return made(connections)

    with trio.fail_after(5):
        async with open_shards(make, per_shard=2, max_connections=4) as shards:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(shards.request, "GET", "http://x/")
                nursery.start_soon(shards.request, "GET", "http://x/")
                await trio.testing.wait_all_tasks_blocked()
                with pytest.raises(RuntimeError):
                    await shards.request("GET", "http://x/")
                nursery.start_soon(shards.request, "GET", "http://x/")
                await trio.testing.wait_all_tasks_blocked()
                held.release.set()
            assert made.limits == [2, 2]


def test_only_an_https_provider_loads_the_ca_store() -> None:
    secure = tls_context("https://api.example.com/v1", None)
    assert isinstance(secure, ssl.SSLContext)
    assert secure.cert_store_stats()["x509_ca"] > 0
    # A local server over plain HTTP: nothing loaded, and a TLS connection would fail closed.
    plain = tls_context("HTTP://127.0.0.1:8000/v1", None)
    assert isinstance(plain, ssl.SSLContext)
    assert plain.cert_store_stats()["x509_ca"] == 0
    assert plain.verify_mode == ssl.CERT_REQUIRED and plain.check_hostname
    transport = httpx2.MockTransport(lambda request: httpx2.Response(200))
    assert tls_context("http://127.0.0.1:8000/v1", transport) is True
