"""Near-duplicate clusters of questions, and keeping each cluster on one side of the split.

Two questions are near-duplicates when the Jaccard similarity of their word bigrams
(`dedup.words`, paired) reaches the `questions` stage's `dedup_threshold`; a cluster is the
transitive closure of that relation. Pairs are found with a prefix-filter index (Bayardo et
al., "Scaling up all pairs similarity search", WWW 2007): under one global order of bigrams,
two sets with Jaccard ≥ t must share a bigram among the first `|A| − ⌈t·|A|⌉ + 1` of each, so
only those short prefixes are indexed and probed, and each candidate pair is then checked with
the exact Jaccard. Any global order finds every pair; rarest first keeps the candidates few.
Bigram counts come from a fixed-size table of saturating byte counters indexed by the bigram's
hash (collisions only ever raise a count), so the order costs one byte per cell however many
distinct bigrams there are, and a bigram counted once is in no other question: it is neither
indexed nor probed. A bigram's postings are grouped by the cluster their texts were in when
indexed: clusters only grow, so a group already in the probing text's cluster is skipped whole
(templated questions that all join one cluster then cost one step each, not one per text).

Two bounds keep the work linear in the texts however large the set grows. The counters are
16 bits wide (a count saturates at 65,535, so only bigrams that common tie in the order), and
their table has about two cells per bigram occurrence, up to `COUNTER_CELLS`. A probe visits
at most `MAX_CANDIDATES` indexed texts, those behind its rarest bigrams first (where a
near-duplicate is most likely: it shares most of them); past that it stops, and a
near-duplicate only reachable further on is missed. On questions shaped like generated ones
the bound is rarely reached (bench/README.md counts it at 1M and 10M).
"""

from __future__ import annotations

import itertools
import logging
from array import array
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from overbrainer.pipeline.dedup import words
from overbrainer.pipeline.lexical_index import MAX_CANDIDATES, prefix_length

log = logging.getLogger(__name__)

T = TypeVar("T")

COUNTER_CELLS = 1 << 28
"""The most 16-bit counters the bigram counts take (512 MiB), for ~130 M bigram occurrences."""

CHECK_EVERY = 256
"""Texts clustered between two calls of the caller's cancellation check."""

_SATURATED = (1 << 16) - 1

_UNSIGNED = (1 << 64) - 1


class Signatures:
    """Each text's word-bigram hashes in one flat array: what clustering keeps of a text.

    A bigram's 64-bit hash stands for it (a collision of two bigrams' hashes is as likely as 1
    in 2^64 per pair), so a text costs 8 bytes a bigram and no object; the texts themselves
    need not stay in memory.
    """

    def __init__(self) -> None:
        self._hashes = array("q")
        self._ends = array("q")

    def add(self, text: str) -> int:
        """Keep the bigram hashes of `text`; its slot (0, 1, …)."""
        split = words(text)
        # The bigram "a b" as the pair ("a", "b"): words have no space, so the two are one.
        pairs = itertools.pairwise(split)
        self._hashes.extend(set(map(hash, pairs)) if len(split) > 1 else map(hash, split))
        self._ends.append(len(self._hashes))
        return len(self._ends) - 1

    def __len__(self) -> int:
        return len(self._ends)

    @property
    def hashes(self) -> array[int]:
        """Every text's bigram hashes, one after the other."""
        return self._hashes

    def bigrams(self, slot: int) -> array[int]:
        """The distinct bigram hashes of the text in `slot`."""
        start = self._ends[slot - 1] if slot else 0
        return self._hashes[start : self._ends[slot]]


def _nothing() -> None:
    """A cancellation check that never cancels."""


def _counts(signatures: Signatures, most: int, check: Callable[[], None]) -> tuple[array[int], int]:
    """Saturating counts of every bigram in `signatures`, by hash cell; the cell mask.

    Counting texts that are not clustered too only raises counts: the order stays one global
    order, and a bigram counted once is still in one text at most.
    """
    hashes = signatures.hashes
    cells = 1
    while cells < 2 * len(hashes) and cells < most:
        cells *= 2
    mask = cells - 1
    counts = array("H", bytes(2 * cells))
    for start in range(0, len(hashes), CHECK_EVERY * 16):
        check()
        for bigram in hashes[start : start + CHECK_EVERY * 16]:
            cell = bigram & mask
            count = counts[cell]
            if count < _SATURATED:
                counts[cell] = count + 1
    return counts, mask


def _similar(own: set[int], size: int, other: array[int], threshold: float) -> bool:
    """Whether `jaccard(own, set(other)) >= threshold`, `other` being distinct hashes; sizes
    too far apart (Jaccard ≤ smaller/larger) are told without looking at the hashes."""
    smaller, larger = sorted((size, len(other)))
    # A hair under t errs towards the exact check: never a missed pair.
    if smaller < threshold * larger - 1e-9:
        return False
    common = len(own.intersection(other))
    return common / (size + len(other) - common) >= threshold


def cluster(
    signatures: Signatures,
    slots: Sequence[int],
    threshold: float,
    cells: int = COUNTER_CELLS,
    check: Callable[[], None] = _nothing,
    cap: int = MAX_CANDIDATES,
) -> array[int]:
    """For each of `slots` (texts in `signatures`), the position in `slots` of the first text
    of its near-duplicate cluster; `cells` (a power of 2) bounds the bigram counters, `cap`
    the indexed texts one probe visits, and `check` is called every `CHECK_EVERY` texts (it
    raises to stop the work: a cancellation)."""
    counts, mask = _counts(signatures, cells, check)
    parent = array("q", range(len(slots)))

    def root(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    def join(first: int, second: int) -> None:
        a, b = root(first), root(second)
        if a != b:
            parent[max(a, b)] = min(a, b)

    capped = 0
    empty = -1  # jaccard(∅, ∅) is 1: every text without a word is one cluster
    # Most shared bigrams start one text's prefix only: their entry is that text's position,
    # and a dict of groups (cluster when indexed → positions) only from the second one on.
    index: dict[int, int | dict[int, list[int]]] = {}
    for position, slot in enumerate(slots):
        if not position % CHECK_EVERY:
            check()
        bigrams = signatures.bigrams(slot)
        if not bigrams:
            if empty < 0:
                empty = position
            else:
                join(empty, position)
            continue
        found = [counts[bigram & mask] for bigram in bigrams]
        # A bigram counted once is this text's alone (no pair can share it), and it ranks
        # first: the prefix's other bigrams are the rarest of the rest, and a prefix of only
        # such bigrams (most texts') leaves nothing to do.
        shared = prefix_length(len(found), threshold) - found.count(1)
        if shared <= 0:
            continue
        # Rarest first, ties by hash: one key per bigram, its count above its hash's 64 bits.
        ranked = sorted(
            [c << 64 | b & _UNSIGNED for c, b in zip(found, bigrams, strict=True) if c > 1]
        )
        prefix = [key & _UNSIGNED for key in ranked[:shared]]
        own: set[int] | None = None
        size = len(bigrams)
        seen: set[int] = set()
        visits = cap
        for token in prefix:
            held = index.get(token)
            if held is None:
                continue
            groups = held.items() if isinstance(held, dict) else ((held, [held]),)
            for group, members in groups:
                if root(group) == root(position):
                    continue
                for other in members:
                    visits -= 1
                    if other not in seen:
                        seen.add(other)
                        own = set(bigrams) if own is None else own
                        if _similar(own, size, signatures.bigrams(slots[other]), threshold):
                            join(other, position)
                            break  # the rest of this group is in the same cluster now
                    if visits <= 0:
                        break
                if visits <= 0:
                    break
            if visits <= 0:
                capped += 1
                break
        cluster_root = root(position)
        for token in prefix:
            held = index.get(token)
            if held is None:
                index[token] = position
                continue
            if not isinstance(held, dict):
                held = index[token] = {held: [held]}
            held.setdefault(cluster_root, []).append(position)
    if capped:
        log.info(
            "split: %d of %d question(s) met %d others sharing their rarest word pairs and were"
            " compared with those only (a near-duplicate further on is not looked for)",
            capped,
            len(slots),
            cap,
        )
    return array("q", map(root, range(len(slots))))


def cluster_labels(texts: Iterable[str], threshold: float) -> list[int]:
    """For each text, the index of the first text of its near-duplicate cluster."""
    signatures = Signatures()
    slots = [signatures.add(text) for text in texts]
    return list(cluster(signatures, slots, threshold))


def keep_together(
    train: list[T], evaluation: list[T], label: Callable[[T], int]
) -> tuple[list[T], list[T], list[T]]:
    """`(train, eval, moved)`: the eval examples with a near-duplicate in train join train.

    Moving towards train, never away from it, only shrinks eval: a large cluster (templated
    questions) sent to eval could otherwise take most of the training set with it. Train keeps
    its order and the moved examples follow it, in their eval order, so the result depends
    only on the seeded split, not on the input order.
    """
    in_train = set(map(label, train))
    moved = [example for example in evaluation if label(example) in in_train]
    kept = [example for example in evaluation if label(example) not in in_train]
    return train + moved, kept, moved
