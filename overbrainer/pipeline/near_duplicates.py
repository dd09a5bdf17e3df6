"""Near-duplicate clusters of questions, and keeping each cluster on one side of the split.

Two questions are near-duplicates when the Jaccard similarity of their word bigrams
(`dedup.shingles`) reaches the `questions` stage's `dedup_threshold`; a cluster is the
transitive closure of that relation. Pairs are found with a prefix-filter index (Bayardo et
al., "Scaling up all pairs similarity search", WWW 2007): bigrams are ranked rarest first,
and two sets with Jaccard ≥ t must share a bigram among the first `|A| − ⌈t·|A|⌉ + 1` of each,
so only those short prefixes are indexed and probed, and each candidate pair is then checked
with the exact Jaccard. A bigram's postings are grouped by the cluster their texts were in when
indexed: clusters only grow, so a group already in the probing text's cluster is skipped whole
(templated questions that all join one cluster then cost one step each, not one per text).
"""

from __future__ import annotations

import itertools
import math
from array import array
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Protocol, TypeVar, cast

from overbrainer.pipeline.dedup import jaccard, shingles
from overbrainer.storage import free_gradually

RANK_SLICE = 10_000
"""Bigrams ranked per C call: a fraction of a millisecond each."""


class _Identified(Protocol):
    @property
    def id(self) -> str:
        """The example's ID."""
        ...


E = TypeVar("E", bound=_Identified)


def _prefix_length(size: int, threshold: float) -> int:
    # A hair under t·|A| errs towards a longer prefix: more candidates, never a missed pair.
    return size - math.ceil(threshold * size - 1e-9) + 1


def _rarest_first(frequency: Counter[int]) -> dict[int, int]:
    """Each bigram's rank, rarest first, ties in first-seen order (one global order).

    A counting sort in small steps rather than one `sorted(…, key=…)`: over the ~900,000
    distinct bigrams of 100,000 questions that single C call held the GIL for 250 ms, and
    the clusters do not depend on the order, only the work does.
    """
    by_count: dict[int, list[int]] = {}
    for bigram, count in frequency.items():
        by_count.setdefault(count, []).append(bigram)
    rank: dict[int, int] = {}
    for count in sorted(by_count):
        bigrams = by_count.pop(count)
        for start in range(0, len(bigrams), RANK_SLICE):
            rank.update(zip(bigrams[start : start + RANK_SLICE], itertools.count(len(rank))))
    return rank


def cluster_labels(texts: Sequence[str], threshold: float) -> list[int]:
    """For each text, the index of the first text of its near-duplicate cluster."""
    # A bigram's 64-bit hash stands for it, in a flat array: no text's bigram strings outlive
    # its turn (100,000 questions' strings held at once cost about 200 MB), and an array is
    # no container for the cycle collector, whose count of new containers `split` keeps low
    # (tuples, through their free list, leave it 2,000 higher per 20,000 texts). A collision
    # of two bigrams' hashes is as likely as 1 in 2^64 per pair.
    words: list[Collection[int]] = [array("q", map(hash, shingles(text))) for text in texts]
    frequency: Counter[int] = Counter()
    for bigrams in words:
        frequency.update(bigrams)
    rank = _rarest_first(frequency)
    frequency.clear()
    # Ranks stand for the bigrams from here on, replaced in place so that one copy lives.
    for number, bigrams in enumerate(words):
        words[number] = frozenset([rank[bigram] for bigram in bigrams])
    sets = cast(list[frozenset[int]], words)
    del words, rank
    parent = list(range(len(sets)))

    def root(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    def join(first: int, second: int) -> None:
        a, b = root(first), root(second)
        if a != b:
            parent[max(a, b)] = min(a, b)

    empty = -1  # jaccard(∅, ∅) is 1: every text without a word is one cluster
    # Most bigrams start one text's prefix only: their entry is that text's position, and
    # a dict of groups (cluster when indexed → positions) only from the second one on.
    index: dict[int, int | dict[int, list[int]]] = {}
    for position, ranks in enumerate(sets):
        if not ranks:
            if empty < 0:
                empty = position
            else:
                join(empty, position)
            continue
        ranked = sorted(ranks)
        prefix = ranked[: _prefix_length(len(ranked), threshold)]
        seen: set[int] = set()
        for token in prefix:
            held = index.get(token)
            if held is None:
                continue
            groups = held.items() if isinstance(held, dict) else ((held, [held]),)
            for group, members in groups:
                for other in members:
                    if root(group) == root(position):
                        break
                    if other not in seen:
                        seen.add(other)
                        if jaccard(ranks, sets[other]) >= threshold:
                            join(other, position)
        cluster = root(position)
        for token in prefix:
            held = index.get(token)
            if held is None:
                index[token] = position
                continue
            if not isinstance(held, dict):
                held = index[token] = {held: [held]}
            held.setdefault(cluster, []).append(position)
    labels = [root(position) for position in range(len(sets))]
    # Freed here a slice at a time: 100,000 sets freed at once when this returns held the
    # GIL for about 70 ms, and `split` runs this in a worker thread beside the event loop.
    free_gradually(sets)
    return labels


def keep_together(
    train: list[E], evaluation: list[E], label: dict[str, int]
) -> tuple[list[E], list[E], list[E]]:
    """`(train, eval, moved)`: the eval examples with a near-duplicate in train join train.

    Moving towards train, never away from it, only shrinks eval: a large cluster (templated
    questions) sent to eval could otherwise take most of the training set with it. Train keeps
    its order and the moved examples follow it, in their eval order, so the result depends
    only on the seeded split, not on the input order.
    """
    in_train = {label[example.id] for example in train}
    moved = [example for example in evaluation if label[example.id] in in_train]
    kept = [example for example in evaluation if label[example.id] not in in_train]
    return train + moved, kept, moved
