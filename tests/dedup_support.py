"""The deduplication tests' corpora and the spec's definition of a lexical admit."""

from __future__ import annotations

import itertools
import random

from overbrainer.pipeline.dedup import jaccard, shingles

OPENINGS = ("how does", "what is", "why does", "explain how", "when should i use")
VOCABULARY = [f"w{n}" for n in range(5_000)]
CUMULATIVE = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(VOCABULARY))))


def question(rng: random.Random) -> str:
    """A question shaped like generated ones: a common opening, Zipf-drawn words."""
    words = rng.choices(VOCABULARY, cum_weights=CUMULATIVE, k=rng.randint(4, 24))
    return f"{rng.choice(OPENINGS).capitalize()} {' '.join(words)}?"


def near_copy(text: str, rng: random.Random) -> str:
    """`text` with a word dropped, replaced or none, in other case and punctuation."""
    words = text.rstrip("?").split()
    change = rng.randrange(3)
    if change == 0 and len(words) > 3:
        del words[rng.randrange(len(words))]
    elif change == 1:
        words[rng.randrange(len(words))] = rng.choice(VOCABULARY)
    return " ".join(words).upper() + " !"


def corpus(count: int, seed: int) -> list[str]:
    """`count` questions, a quarter of them near-copies of earlier ones."""
    rng = random.Random(seed)
    texts: list[str] = []
    for _ in range(count):
        texts.append(
            near_copy(rng.choice(texts), rng) if texts and rng.random() < 0.25 else question(rng)
        )
    return texts


def definition(accepted: list[str], candidates: list[str], threshold: float) -> list[str]:
    """The spec's lexical admit, one candidate at a time: novel when its Jaccard with every
    accepted set is under the threshold."""
    sets = [shingles(text) for text in accepted]
    kept = []
    for candidate in candidates:
        own = shingles(candidate)
        if all(jaccard(own, other) < threshold for other in sets):
            sets.append(own)
            kept.append(candidate)
    return kept
