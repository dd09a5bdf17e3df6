"""Synthetic questions shaped like generated ones, for the benches that split or cluster.

8 to 30 words drawn from a Zipf-like vocabulary of 20,000 words behind one of a few common
openings ("how does", "what is", …), so frequent bigrams are as common as in real generated
questions and two questions are rarely near-duplicates by chance.
"""

from __future__ import annotations

import itertools
import random

OPENINGS = ("how does", "what is", "why does", "explain how", "when should i use", "what if")
VOCABULARY = [f"w{n}" for n in range(20_000)]
CUMULATIVE = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(VOCABULARY))))


def question(rng: random.Random) -> str:
    """One synthetic question."""
    words = rng.choices(VOCABULARY, cum_weights=CUMULATIVE, k=rng.randint(8, 30))
    return f"{rng.choice(OPENINGS).capitalize()} {' '.join(words)}?"
