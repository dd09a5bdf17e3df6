"""`ClientShards`: a provider's connections split over small httpx2 clients.

httpcore2's pool looks at every pooled connection on each request and each release, so one
pool of C connections costs O(C) per request. Keeping at most `per_shard` connections in each
client bounds that work, however many requests are in flight.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable

import attrs
import httpx2

SHARD_CONNECTIONS = 16
"""Connections per client; see bench/README.md («Connection pool shards») for the measure."""

MakeClient = Callable[[int | None], httpx2.AsyncClient]
"""Builds one client that keeps at most that many connections (None: no limit)."""


class BodyBroken(Exception):
    """A reply's head came with `status`, then its body broke off (`__cause__` says how)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"the body of a {status} reply broke off")
        self.status = status


@attrs.define(eq=False)
class _Shard:
    client: httpx2.AsyncClient
    capacity: int
    busy: int = 0


class ClientShards:
    """Clients of at most `per_shard` connections; a request goes to one with room.

    Clients are made as the requests in flight need them, so the connections opened are the
    most requests ever in flight at once, never more than `max_connections` (None: no limit).
    When every client is full and no other may be made, a request waits in the least busy
    client's own pool, as it would in one big pool.
    """

    def __init__(
        self,
        make: MakeClient,
        stack: contextlib.AsyncExitStack,
        *,
        per_shard: int | None = SHARD_CONNECTIONS,
        max_connections: int | None = None,
    ) -> None:
        if (per_shard is not None and per_shard < 1) or (
            max_connections is not None and max_connections < 1
        ):
            raise ValueError("a shard needs room for one connection")
        self._make = make
        self._stack = stack
        self._per_shard = sys.maxsize if per_shard is None else per_shard
        self._unmade = sys.maxsize if max_connections is None else max_connections
        self._shards: list[_Shard] = []
        # Shards with room, as a stack: taking and giving back a slot are O(1).
        self._with_room: list[_Shard] = []

    @property
    def clients(self) -> int:
        """How many clients were made so far."""
        return len(self._shards)

    async def open_first(self) -> None:
        """Make the first client now, not on the first request."""
        if not self._shards:
            await self._new_shard()

    async def request(
        self,
        method: str,
        url: str,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx2.Response:
        """`client.request(...)` on a client with a free connection slot.

        BodyBroken when the head came but the body did not: a 2xx head means the provider
        may bill the reply, which a plain transport error would hide.
        """
        shard = await self._take()
        try:
            client = shard.client
            built = client.build_request(method, url, content=content, headers=headers)
            response = await client.send(built, stream=True)
            try:
                await response.aread()
            except httpx2.HTTPError as error:
                raise BodyBroken(response.status_code) from error
            finally:
                await response.aclose()
            return response
        finally:
            shard.busy -= 1
            if shard.busy == shard.capacity - 1:
                self._with_room.append(shard)

    async def _take(self) -> _Shard:
        """A shard with room (made if needed), its slot counted as taken."""
        if self._with_room:
            shard = self._with_room[-1]
        elif self._unmade > 0:
            shard = await self._new_shard()
        else:
            shard = min(self._shards, key=lambda s: s.busy)
            shard.busy += 1
            return shard
        shard.busy += 1
        if shard.busy == shard.capacity:
            if self._with_room[-1] is shard:
                self._with_room.pop()
            else:  # another task made a shard while this one was being made
                self._with_room.remove(shard)
        return shard

    async def _new_shard(self) -> _Shard:
        capacity = min(self._per_shard, self._unmade)
        self._unmade -= capacity  # before the await, so tasks making clients at once share it
        try:
            limit = None if capacity == sys.maxsize else capacity
            client = await self._stack.enter_async_context(self._make(limit))
        except BaseException:
            self._unmade += capacity  # a client that failed holds no connections
            raise
        shard = _Shard(client, capacity)
        self._shards.append(shard)
        self._with_room.append(shard)
        return shard


@contextlib.asynccontextmanager
async def open_shards(
    make: MakeClient,
    *,
    per_shard: int | None = SHARD_CONNECTIONS,
    max_connections: int | None = None,
) -> AsyncIterator[ClientShards]:
    """`ClientShards` whose clients all close on exit; `per_shard` None makes one client.

    The first client is made at once, so one that cannot be built fails here.
    """
    async with contextlib.AsyncExitStack() as stack:
        shards = ClientShards(make, stack, per_shard=per_shard, max_connections=max_connections)
        await shards.open_first()
        yield shards
