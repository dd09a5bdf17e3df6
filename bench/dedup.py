"""Duplicate checking figures: a topic of N stored questions, then M new ones checked.

As `import questions` does it (`record_lexically`, then `admit_lexically` per row), and as the
`questions` stage does (`record`, then `admit` in batches of 10, in a fresh deduplicator): the
CPU time of seeding and of checking, the peak RSS and the memory the index holds per stored
question once seeded and ranked (the resident memory's growth: the stored texts are made
first), and, for the index, the most sets a probe
compared and how many probes stopped at its cap. A tenth of the new questions are near-copies
of stored ones (a word dropped, case and punctuation changed), so the duplicate count is
checked against what it must be. Run `python bench/dedup.py [STORED NEW]` (default 100,000
and 10,000); under another checkout's code, with that checkout first on PYTHONPATH.
"""

from __future__ import annotations

import random
import resource
import sys
import time

import trio
from _synthetic import question

from overbrainer.pipeline.dedup import Deduplicator

THRESHOLD = 0.8


def near_copy(text: str, rng: random.Random) -> str:
    """`text` with one word of 14 or more dropped (Jaccard ≥ 0.8 stays likely), shouted."""
    words = text.rstrip("?").split()
    if len(words) >= 14:
        del words[rng.randrange(2, len(words))]
    return " ".join(words).upper() + "!"


def resident() -> int:
    """The process's resident memory now, in bytes (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def main(stored_count: int, new_count: int) -> None:
    rng = random.Random(41)
    stored = [question(rng) for _ in range(stored_count)]
    fresh = [
        near_copy(rng.choice(stored), rng) if n % 10 == 0 else question(rng)
        for n in range(new_count)
    ]
    dedup = Deduplicator(THRESHOLD, 0.9)
    before = resident()
    started = time.process_time()
    for start in range(0, len(stored), 1_000):
        dedup.record_lexically(stored[start : start + 1_000])
    index = getattr(dedup, "_lexical", None)
    prepare = getattr(index, "prepare", None)
    if prepare is not None:
        prepare()  # the ranking the first check would do: its own figure
    seeded = time.process_time()
    held = (resident() - before) / stored_count
    admitted, most = 0, 0
    for text in fresh:
        admitted += len(dedup.admit_lexically([text]))
        most = max(most, getattr(index, "compared", 0))
    checked = time.process_time()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"import: {stored_count:,} stored, {new_count:,} new: seed (and rank)"
        f" {seeded - started:.2f} s CPU,"
        f" check {checked - seeded:.2f} s CPU ({(checked - seeded) / new_count * 1e6:.0f} µs"
        f" per question), {new_count - admitted:,} duplicates, peak RSS {peak:.0f} MB,"
        f" {held:.0f} bytes held per stored question once ranked;"
        f" most sets compared by one probe {most}, probes capped {getattr(index, 'capped', '-')}"
    )


async def stage(stored: list[str], fresh: list[str]) -> None:
    """The `questions` stage's way: seed, then batches of 10."""
    dedup = Deduplicator(THRESHOLD, 0.9)
    started = time.process_time()
    await dedup.record(stored)
    seeded = time.process_time()
    admitted = 0
    for start in range(0, len(fresh), 10):
        admitted += len(await dedup.admit(fresh[start : start + 10]))
    checked = time.process_time()
    print(
        f"stage: {len(stored):,} stored, {len(fresh):,} new in batches of 10: seed"
        f" {seeded - started:.2f} s CPU, check {checked - seeded:.2f} s CPU,"
        f" {len(fresh) - admitted:,} duplicates"
    )


if __name__ == "__main__":
    arguments = [int(value) for value in sys.argv[1:3]]
    main(*(arguments or [100_000, 10_000]))
    rng = random.Random(42)
    count, new = arguments or [100_000, 10_000]
    trio.run(stage, [question(rng) for _ in range(count)], [question(rng) for _ in range(new)])
