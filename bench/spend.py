"""Benchmark the spend path of one request: its worst case reserved, its real cost settled.

What `StageRun.complete` does around every paid request, without the request: the worst-case
cost of the request, a reservation under a cap, the reply's cost settled. "arithmetic" is the
two costs and one cap check alone (the worst-case usage counted beforehand), in integer `Money`
at the role's per-token rates (worked out once per stage); "fractions" is the same in exact
fractions of the decimals, as the ledger counted before (`exact_cost` and a check against the
cap's decimal). "ledger" adds the worst-case usage, the reservation (its fair lock) and the
settlement, one request at a time; "256 in flight" keeps 256 requests reserved at once, as a
stage at concurrency 256 does, and settles them in turn. Prices are OpenRouter-style per-token
decimal strings turned into per-million floats, as `llm/pricing.py` reads them, so they may
carry float noise (1e-7 × 1e6 is 0.09999999999999999). Best of 5 runs, in µs of this process's
CPU time per request (CPU, not wall, time: the machine is shared).

Run: `python bench/spend.py [--requests 20000]`. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Callable
from fractions import Fraction

import trio

from overbrainer.llm import CompletionRequest
from overbrainer.model.usage import Price, Usage
from overbrainer.pipeline.money import decimal, token_rates
from overbrainer.pipeline.spend import SpendCap, exact_cost, worst_usage

RUNS = 5
IN_FLIGHT = 256
PRICE = Price(float("0.0000001") * 1e6, float("0.0000025") * 1e6)
RATES = token_rates(PRICE)
CAP = 1_000_000.0
"""High enough that every request fits: the figures are the arithmetic, not the waiting."""


def requests(count: int) -> list[tuple[CompletionRequest, Usage]]:
    """`count` requests of answer-like size and the usage each reply reports."""
    rng = random.Random(27)
    made = []
    for _ in range(count):
        prompt = "q" * rng.randint(200, 2000)
        request = CompletionRequest(prompt, system="s" * 300, max_tokens=4096)
        made.append((request, Usage(rng.randint(100, 700), rng.randint(50, 4096))))
    return made


def best(measure: Callable[[], float]) -> float:
    """The fastest of `RUNS` measurements (the machine is shared)."""
    return min(measure() for _ in range(RUNS))


def arithmetic(work: list[tuple[CompletionRequest, Usage]]) -> float:
    """µs per request: the worst-case cost, the real cost and one cap check."""
    cap = SpendCap(CAP)
    worsts = [(worst_usage(request), usage) for request, usage in work]
    started = time.process_time()
    for worst, usage in worsts:
        cap.fits(RATES.cost(worst))
        RATES.cost(usage)
    return (time.process_time() - started) / len(work) * 1e6


def fractions(work: list[tuple[CompletionRequest, Usage]]) -> float:
    """µs per request: the same in exact fractions, as the ledger counted before."""
    spent = Fraction(0)
    worsts = [(worst_usage(request), usage) for request, usage in work]
    started = time.process_time()
    for worst, usage in worsts:
        _ = spent + exact_cost(worst, PRICE) <= decimal(CAP)
        exact_cost(usage, PRICE)
    return (time.process_time() - started) / len(work) * 1e6


def ledger(work: list[tuple[CompletionRequest, Usage]]) -> float:
    """µs per request: reserve the worst case, settle the real cost, one at a time."""

    async def main() -> float:
        cap = SpendCap(CAP)
        started = time.process_time()
        for request, usage in work:
            reservation = await cap.reserve(RATES.cost(worst_usage(request)))
            assert reservation is not None
            with reservation:
                reservation.settle(RATES.cost(usage))
        return (time.process_time() - started) / len(work) * 1e6

    return trio.run(main)


def in_flight(work: list[tuple[CompletionRequest, Usage]]) -> float:
    """µs per request with `IN_FLIGHT` reservations open: each settles once the next opens."""

    async def main() -> float:
        cap = SpendCap(CAP)
        window = []
        started = time.process_time()
        for request, usage in work:
            reservation = await cap.reserve(RATES.cost(worst_usage(request)))
            assert reservation is not None
            window.append((reservation, usage))
            if len(window) == IN_FLIGHT:
                oldest, counted = window.pop(0)
                oldest.settle(RATES.cost(counted))
        for reservation, usage in window:
            reservation.settle(RATES.cost(usage))
        return (time.process_time() - started) / len(work) * 1e6

    return trio.run(main)


def main() -> None:
    """Print every figure."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=20_000)
    args = parser.parse_args()
    work = requests(args.requests)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(f"arithmetic (2 costs + 1 cap check): {best(lambda: arithmetic(work)):.2f} us/request")
    print(f"fractions (the same, as before): {best(lambda: fractions(work)):.2f} us/request")
    print(f"ledger (reserve + settle): {best(lambda: ledger(work)):.2f} us/request")
    print(f"{IN_FLIGHT} in flight: {best(lambda: in_flight(work)):.2f} us/request")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
