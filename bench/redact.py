"""Redactor figures: `redact` on typical `--events` lines with 5 secrets registered.

Each secret as configured: an OpenRouter key, an Anthropic key, a Runpod key, an HF token and
a base URL's userinfo (its password, the pair and its Basic form). Lines: an `item_done`
(nothing to mask, the hot path) and an `item_failed` quoting a key (one to mask).
"""

from __future__ import annotations

import time

from overbrainer.events.codec import event_to_json
from overbrainer.events.types import ItemDone, ItemFailed, Stage
from overbrainer.model import redact
from overbrainer.model.usage import Usage

CALLS = 200_000
ROUNDS = 5
KEY = "sk-or-v1-5f0c3a9e8b7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a3928170"


def _median_us(line: str) -> float:
    best = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(CALLS):
            redact.redact(line)
        best.append((time.perf_counter() - start) / CALLS * 1e6)
    return sorted(best)[len(best) // 2]


def main() -> None:
    """Print the median time per `redact` call for each line."""
    redact.register(KEY)
    redact.register("sk-ant-api03-Hn2sX9kq1R7uVw3yZ0aB4cD6eF8gH0iJ2kL4mN6oP8qR0sT2uV4wX6yZ8")
    redact.register("rpa_Q8W7E6R5T4Y3U2I1O0P9A8S7D6F5G4H3J2K1L0")
    redact.register("hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789")
    redact.register_url("https://proxy-user:pr0xy-pa55word-2024@llm.example.com/v1")
    done = ItemDone(
        Stage.ANSWERS,
        "0f3c9a1e2b7d4c5a8e6f1b2c3d4e5f60",
        usage=Usage(input_tokens=41, output_tokens=812),
        cost=0.0016658,
    )
    failed = ItemFailed(
        Stage.ANSWERS,
        "0f3c9a1e2b7d4c5a8e6f1b2c3d4e5f60",
        f"HTTP 500: upstream rejected the request with headers authorization: Bearer {KEY}; "
        "retrying in 1.4s",
        retryable=True,
    )
    print(f"{redact.registered()} strings registered for 5 secrets")
    for name, event in (("item_done", done), ("item_failed quoting a key", failed)):
        line = event_to_json(event)
        print(f"redact, {name} ({len(line)} chars): {_median_us(line):.2f} µs per line")
    baseline = event_to_json(done)
    start = time.perf_counter()
    for _ in range(CALLS // 10):
        event_to_json(done)
    encode = (time.perf_counter() - start) / (CALLS // 10) * 1e6
    print(f"for scale, event_to_json of the item_done: {encode:.2f} µs ({len(baseline)} chars)")


if __name__ == "__main__":
    main()
