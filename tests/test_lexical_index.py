"""The deduplicator's bigram index: the definition's decisions, a bounded probe at any size."""

from __future__ import annotations

import random

import pytest

from overbrainer.pipeline import lexical_index
from overbrainer.pipeline.dedup import Deduplicator, shingles
from overbrainer.pipeline.lexical_index import (
    MAX_CANDIDATES,
    RANK_AT_LEAST,
    LexicalIndex,
    prefix_length,
)
from tests.dedup_support import corpus, definition, question


@pytest.mark.parametrize(
    ("stored", "new", "threshold"),
    [(2_000, 500, 0.8), (600, 1_800, 0.8), (1_200, 400, 0.5), (1_200, 400, 1.0)],
    ids=["ranked-once", "ranked-again-while-admitting", "loose", "exact-only"],
)
def test_the_index_decides_as_the_definition_on_near_duplicates(
    stored: int, new: int, threshold: float
) -> None:
    texts = corpus(stored + new, seed=stored + new)
    accepted, candidates = texts[:stored], texts[stored:]
    dedup = Deduplicator(threshold, 0.9)
    dedup.record_lexically(accepted)
    admitted = [text for text in candidates if dedup.admit_lexically([text])]
    expected = definition(accepted, candidates, threshold)
    assert admitted == expected
    # The corpus tests something: near-copies were refused, and across a ranking.
    assert len(candidates) // 20 < len(candidates) - len(expected) < len(candidates)
    assert stored + new > RANK_AT_LEAST


def test_a_probe_into_200000_stored_questions_compares_a_handful() -> None:
    rng = random.Random(41)
    index = LexicalIndex(0.8)
    for _ in range(200_000):
        index.add(shingles(question(rng)))
    index.prepare()
    most = 0
    for _ in range(300):
        assert not index.has_near(shingles(question(rng)) | {"unseen bigram"})
        most = max(most, index.compared)
    assert most <= 50
    assert index.capped == 0


def test_a_templated_topic_stops_each_probe_at_the_cap() -> None:
    # Every set shares its rarest bigrams with all the others: no prefix keeps them apart.
    index = LexicalIndex(0.8, cap=40)
    for n in range(2_000):
        index.add(shingles(f"what is the capital of the country number {n}"))
    assert not index.has_near(shingles("what is the capital of the country number x"))
    assert index.compared == 40
    assert index.capped == 1
    assert MAX_CANDIDATES == 1_000


@pytest.mark.parametrize(
    ("size", "threshold", "length"),
    [(10, 0.8, 3), (5, 0.8, 2), (1, 0.8, 1), (3, 0.7, 1), (10, 0.5, 6), (10, 1.0, 1), (10, 1.5, 0)],
)
def test_the_prefix_holds_a_bigram_of_every_near_duplicate(
    size: int, threshold: float, length: int
) -> None:
    # Sets reaching the threshold share ⌈t·|A|⌉ of |A|'s bigrams: one is in its first
    # |A| − ⌈t·|A|⌉ + 1. A threshold above 1 has no near-duplicate to find.
    assert prefix_length(size, threshold) == length


class Stop(Exception):
    """A checkpoint's way out, as a cancel's `Cancelled` is."""


def test_a_ranking_stopped_by_its_checkpoint_leaves_the_index_deciding_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lexical_index, "CHECK_EVERY", 500)
    texts = corpus(3_000, seed=7)
    accepted, candidates = texts[:2_000], texts[2_000:]
    index = LexicalIndex(0.8)
    for text in accepted:
        index.add(shingles(text))
    calls = 0

    def checkpoint() -> None:
        nonlocal calls
        calls += 1
        if calls == 4:  # mid-ranking, once some prefixes are built
            raise Stop

    with pytest.raises(Stop):
        index.prepare(checkpoint)
    assert len(index) == 2_000
    index.prepare(checkpoint)
    kept = []
    for text in candidates:
        shingled = shingles(text)
        if not index.has_near(shingled):
            index.add(shingled)
            kept.append(text)
    assert calls > 4  # ranked again, in full
    assert kept == definition(accepted, candidates, 0.8)
