"""LLM client figures: 2,000 requests at concurrency 64 to a stub answering in 200 ms.

The stub runs in its own process
(`python -m overbrainer.devtools.stub_provider --delay 0.2`), so the CPU measured here is the
client's alone. Our client (retry policy, JSON body building, answer parsing) runs the same
requests as a bare httpx2 loop (no retries, no parsing), the floor.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import resource
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator

import attrs
import httpx2
import trio

from overbrainer.llm.client import ProviderConnection, open_client
from overbrainer.llm.types import CompletionRequest, Protocol

REQUESTS = 2000
CONCURRENCY = 64
DELAY = 0.2


@attrs.frozen
class Figures:
    """What one run measured."""

    name: str
    wall: float
    cpu: float
    requests: int

    @property
    def ideal(self) -> float:
        """The wall time if every request took exactly the stub's delay."""
        return math.ceil(self.requests / CONCURRENCY) * DELAY

    @property
    def ratio(self) -> float:
        """Ideal over measured wall time (1.0 is the ideal)."""
        return self.ideal / self.wall

    @property
    def cpu_ms(self) -> float:
        """Client CPU (user + system) per request, in ms."""
        return self.cpu / self.requests * 1000

    def line(self) -> str:
        """One printed line."""
        return (
            f"{self.name:<12} wall {self.wall:6.2f} s  ideal {self.ideal:5.2f} s  "
            f"ratio to ideal {self.ratio:4.2f}  client CPU {self.cpu_ms:5.2f} ms/request"
        )


def cpu_seconds() -> float:
    """User plus system CPU of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def run_pool(requests: int, one: Callable[[int], Awaitable[None]]) -> None:
    """Run `one(i)` for every i with CONCURRENCY workers pulling the next index."""
    counter = iter(range(requests))

    async def worker() -> None:
        for index in counter:
            await one(index)

    async with trio.open_nursery() as nursery:
        for _ in range(CONCURRENCY):
            nursery.start_soon(worker)


async def measure(name: str, requests: int, one: Callable[[int], Awaitable[None]]) -> Figures:
    """Wall and CPU time of `requests` calls of `one`."""
    cpu = cpu_seconds()
    start = time.perf_counter()
    await run_pool(requests, one)
    return Figures(name, time.perf_counter() - start, cpu_seconds() - cpu, requests)


async def ours(url: str, requests: int) -> Figures:
    """Requests through `ProtocolClient.complete` (bodies, retries policy, parsing)."""
    connection = ProviderConnection(Protocol.OPENAI, url, "sk-bench")
    async with open_client(connection, "bench-model") as client:
        await client.complete(CompletionRequest("warm up"))

        async def one(index: int) -> None:
            completion = await client.complete(CompletionRequest(f"Question number {index}?"))
            assert completion.content

        return await measure("overbrainer", requests, one)


async def bare(url: str, requests: int) -> Figures:
    """The same requests from a bare httpx2 loop: one POST each, the body read, not parsed."""
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=1024)
    headers = {"authorization": "Bearer sk-bench", "content-type": "application/json"}
    async with httpx2.AsyncClient(headers=headers, timeout=600, limits=limits) as client:
        target = f"{url}/chat/completions"

        def body(index: int) -> bytes:
            messages = [{"role": "user", "content": f"Question number {index}?"}]
            return json.dumps({"model": "bench-model", "messages": messages}).encode()

        await client.post(target, content=body(0))

        async def one(index: int) -> None:
            response = await client.post(target, content=body(index))
            assert response.status_code == 200 and response.content

        return await measure("bare httpx2", requests, one)


@contextlib.contextmanager
def stub_process(delay: float) -> Iterator[str]:
    """The stub provider in its own process; yields its base URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "overbrainer.devtools.stub_provider", "--delay", str(delay)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        process.terminate()
        process.wait(timeout=10)


def main() -> None:
    """Run both clients `--rounds` times, alternating, and print each run's figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=REQUESTS)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    print(f"{args.requests} requests, concurrency {CONCURRENCY}, {DELAY * 1000:.0f} ms per reply")
    with stub_process(DELAY) as url:
        for _ in range(args.rounds):
            mine = trio.run(ours, url, args.requests)
            floor = trio.run(bare, url, args.requests)
            print(mine.line())
            print(floor.line())
            print(
                f"{'ours/bare':<12} ratio {mine.ratio / floor.ratio:4.2f} (target >= 0.95)  "
                f"CPU {mine.cpu_ms / floor.cpu_ms:4.2f}x (target <= 1.5)"
            )


if __name__ == "__main__":
    main()
