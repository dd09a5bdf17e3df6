"""Benchmark connection-pool shard sizes: client CPU per request as concurrency grows.

httpcore2's pool scans every pooled connection on each request and each release, so one pool
of C connections costs O(C) per request. This sends the same chat requests as
`bench/pipeline.py`'s bare loop through `ClientShards` with one unbounded client (as
overbrainer did before) and with clients of k connections each, at several concurrencies,
each run in its own process against its own stub (200 ms per reply); the figure is the
client process's CPU (user + system, `os.wait4`) per request, start-up included.

Run: `python bench/pool.py [--requests 4000] [--concurrency 64,256,1024] [--shards 0,8,16,32]
[--rounds 2]` (shard size 0: one unbounded client). Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

import httpx2
import trio

from overbrainer.llm.shards import open_shards

BODY = {
    "model": "parent-model",
    "messages": [
        {"role": "system", "content": "You are an expert in ownership."},
        {"role": "user", "content": "Question number 1: how does Part 1 work?"},
    ],
    "max_tokens": 16384,
}


async def send_all(url: str, requests: int, concurrency: int, per_shard: int | None) -> None:
    """`requests` chat requests, `concurrency` at once, through shards of `per_shard`."""
    tls = httpx2.create_ssl_context()

    def make(connections: int | None) -> httpx2.AsyncClient:
        limits = httpx2.Limits(
            max_connections=connections, max_keepalive_connections=connections or 1024
        )
        return httpx2.AsyncClient(timeout=600, verify=tls, limits=limits)

    slots = trio.Semaphore(concurrency)
    content = json.dumps(BODY).encode()
    async with open_shards(make, per_shard=per_shard) as shards:

        async def one() -> None:
            try:
                response = await shards.request("POST", f"{url}/chat/completions", content)
                json.loads(response.content)
            finally:
                slots.release()

        async with trio.open_nursery() as nursery:
            for _ in range(requests):
                await slots.acquire()
                nursery.start_soon(one)


def run_once(requests: int, concurrency: int, per_shard: int, delay: float) -> tuple[float, float]:
    """Wall seconds and client CPU seconds of one run against a fresh stub."""
    stub = subprocess.Popen(
        [sys.executable, "-m", "overbrainer.devtools.stub_provider", "--delay", str(delay)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert stub.stdout is not None
    url = stub.stdout.readline().strip()
    try:
        args = [__file__, "--send", url, str(requests), str(concurrency), str(per_shard)]
        begun = time.perf_counter()
        client = subprocess.Popen([sys.executable, *args])
        _, status, usage = os.wait4(client.pid, 0)
        wall = time.perf_counter() - begun
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"the client exited with {status}")
        return wall, usage.ru_utime + usage.ru_stime
    finally:
        stub.terminate()
        stub.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", default="64,256,1024")
    parser.add_argument("--shards", default="0,8,16,32,64")
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--send", nargs=4, metavar=("URL", "N", "C", "K"))
    args = parser.parse_args()
    if args.send:
        url, n, c, k = args.send
        trio.run(send_all, url, int(n), int(c), int(k) or None)
        return
    n = args.requests
    sizes = [int(k) for k in args.shards.split(",")]
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    for c in (int(c) for c in args.concurrency.split(",")):
        ideal = math.ceil(n / c) * args.delay
        for round_ in range(args.rounds):
            order = sizes if round_ % 2 == 0 else sizes[::-1]
            for k in order:
                wall, cpu = run_once(n, c, k, args.delay)
                name = "one pool" if k == 0 else f"{k}/client"
                print(
                    f"C={c:<5} {name:<10} wall {wall:6.2f}s  ideal/wall {ideal / wall:.2f}  "
                    f"CPU {cpu / n * 1000:.3f} ms/request",
                    flush=True,
                )
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
