"""Accepted word-bigram sets, indexed so that a new set is compared with a bounded few of them.

Prefix filtering (Bayardo et al., "Scaling up all pairs similarity search", WWW 2007): with
the bigrams in one global order, rarest first, two sets with Jaccard ≥ t share a bigram among
the first `|A| − ⌈t·|A|⌉ + 1` of each. Only those prefixes are indexed and probed, and each
set met there is checked with the exact Jaccard. A question's rarest bigrams are in few other
questions (common openings such as "how does" come last in its order), so a probe meets a
handful of sets however large the topic is.

The order is set when the index is ranked: the bigrams held once (or not at all) come first,
by hash, then the repeated ones by their count. Any fixed order gives the same answers, only
the work depends on it, so the index is ranked again (its prefixes rebuilt) only once it has
doubled since: an amortised constant cost per set.

A probe compares at most `MAX_CANDIDATES` sets, those behind its rarest bigrams first (where a
near-duplicate is most likely: it shares most of them); past that the set counts as new. On
questions shaped like generated ones the cap is never reached (bench/dedup.py counts it); it
bounds the work on a topic of templated questions that all share their rarest bigrams.

Memory is what bounds a big topic, so nothing is held per set but numbers in flat arrays: a
bigram stands for itself by its string's 64-bit hash (two bigrams' hashes collide as rarely as
1 in 2^64 per pair), every set's hashes one after the other with an array of where each ends
(8 bytes a bigram and 8 a set, no object per set), and the postings of the last ranking as
two arrays sorted by key (a prefix bigram's key and its set's position: 12 bytes a posting),
looked up by bisection, as the ranking's repeated bigrams are (16 bytes each). A key fits in
64 bits: a bigram held once is keyed by its hash halved, a repeated one past every such key.
Only the sets added since the ranking are posted in a dict.
"""

from __future__ import annotations

import itertools
import math
import operator
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterator, Set

MAX_CANDIDATES = 1_000
"""Sets a probe compares at most (about a millisecond of work)."""

REPEATED = 1 << 62
"""The first key of a repeated bigram: past every other key (a hash halved, under 2^62)."""

RANK_AT_LEAST = 1_000
"""Sets held before the first ranking: below it the hash order costs nothing worth saving."""

CHECK_EVERY = 10_000
"""Sets ranked between two calls of the ranking's `checkpoint` (a few milliseconds)."""


def prefix_length(size: int, threshold: float) -> int:
    """How many of a set's first bigrams (rarest first) a near-duplicate must meet in its own."""
    # A hair under t·|A| errs towards a longer prefix: more candidates, never a missed pair.
    return max(0, size - math.ceil(threshold * size - 1e-9) + 1)


def _nothing() -> None:
    pass


class LexicalIndex:
    """Bigram sets, each found again by any set whose Jaccard with it reaches `threshold`."""

    def __init__(self, threshold: float, cap: int = MAX_CANDIDATES) -> None:
        self.threshold = threshold
        self.cap = cap
        self.compared = 0
        """Sets the last probe compared (a bound the tests check, not a timing)."""
        self.capped = 0
        """Probes that stopped at the cap."""
        self._hashes = array("q")
        self._ends = array("q")
        self._empty = 0
        self._ranked = 0
        # The last ranking: its repeated bigrams' hashes (sorted) with their ranks, and its
        # postings: prefix keys, sorted, with the positions of their sets.
        self._repeated = array("q")
        self._ranks = array("q")
        self._posted = array("q")
        self._positions = array("I")
        # Sets added since: most keys start one set's prefix only, so an entry is that set's
        # position, and a list only from the second one on.
        self._recent: dict[int, int | list[int]] = {}
        # The last probe's set and prefix, which `add` takes again when the set is admitted.
        self._probed: tuple[Set[str], int, array[int], list[int]] | None = None

    def __len__(self) -> int:
        return len(self._ends)

    def add(self, shingled: Set[str]) -> None:
        """Hold one accepted set."""
        probed = self._probed
        if probed is not None and probed[0] is shingled and probed[1] == self._ranked:
            hashes, prefix = probed[2], probed[3]
        else:
            hashes, prefix = array("q", map(hash, shingled)), None
        position = len(self._ends)
        self._hashes.extend(hashes)
        self._ends.append(len(self._hashes))
        if not hashes:
            self._empty += 1
        elif not self._rank_due():
            # When a ranking is due it rebuilds every prefix: posting this one now is waste.
            for key in self._prefix(hashes) if prefix is None else prefix:
                held = self._recent.get(key)
                if held is None:
                    self._recent[key] = position
                elif isinstance(held, int):
                    self._recent[key] = [held, position]
                else:
                    held.append(position)

    def prepare(self, checkpoint: Callable[[], None] = _nothing) -> None:
        """Rank the bigrams again if the index has doubled since (blocking CPU work).

        `checkpoint` is called every `CHECK_EVERY` sets; what it raises stops the ranking and
        leaves the index as it was (a cancel: the ranking is still due next time).
        """
        if not self._rank_due():
            return
        hashes, ends = self._hashes, self._ends
        counts = Counter(hashes)
        checkpoint()
        order = sorted(
            [token for token, count in counts.items() if count > 1], key=counts.__getitem__
        )
        del counts
        # A bigram held once is keyed by its hash halved (two halves meet as rarely as 1 in
        # 2^63: a shared key only adds candidates), a repeated one past every such key, larger
        # the more common it is.
        keys = dict(zip(order, itertools.count(REPEATED), strict=False))
        checkpoint()
        threshold, start, ones = self.threshold, 0, itertools.repeat(1)
        key_of: Callable[[int, int], int] = keys.get
        prefixes, owners = array("q"), array("I")
        for position, end in enumerate(ends):
            if position % CHECK_EVERY == 0:
                checkpoint()
            if end == start:
                continue
            own = hashes[start:end]
            start = end
            halves = map(operator.rshift, own, ones)
            prefix = sorted(map(key_of, own, halves))[: prefix_length(len(own), threshold)]
            prefixes.extend(prefix)
            owners.extend(itertools.repeat(position, len(prefix)))
        del keys
        checkpoint()
        # Sorted by key; a stable sort keeps each key's sets in the order they came.
        by_key = sorted(range(len(prefixes)), key=prefixes.__getitem__)
        posted = array("q", map(prefixes.__getitem__, by_key))
        positions = array("I", map(owners.__getitem__, by_key))
        del by_key, prefixes, owners
        by_hash = sorted(range(len(order)), key=order.__getitem__)
        self._repeated = array("q", map(order.__getitem__, by_hash))
        self._ranks = array("q", by_hash)
        del order, by_hash
        self._posted, self._positions, self._recent = posted, positions, {}
        self._ranked = len(ends)

    def has_near(self, shingled: Set[str]) -> bool:
        """Whether a held set's Jaccard with `shingled` reaches the threshold."""
        self.compared = 0
        if self.threshold <= 0.0:
            # Every similarity (0 included) reaches the threshold.
            return bool(self._ends)
        if not shingled:
            return self._empty > 0 and self.threshold <= 1.0
        self.prepare()
        hashes = array("q", map(hash, shingled))
        prefix = self._prefix(hashes)
        self._probed = (shingled, self._ranked, hashes, prefix)
        own = frozenset(hashes)
        size, threshold = len(own), self.threshold
        seen: set[int] = set()
        for key in prefix:
            for position in self._postings(key):
                if position in seen:
                    continue
                seen.add(position)
                other = self._set(position)
                common = len(own.intersection(other))
                self.compared += 1
                if common / (size + len(other) - common) >= threshold:
                    return True
                if self.compared >= self.cap:
                    self.capped += 1
                    return False
        return False

    def _set(self, position: int) -> array[int]:
        start = self._ends[position - 1] if position else 0
        return self._hashes[start : self._ends[position]]

    def _postings(self, key: int) -> Iterator[int]:
        """The positions of the sets whose prefix holds `key`, in the order they came."""
        posted, index = self._posted, bisect_left(self._posted, key)
        while index < len(posted) and posted[index] == key:
            yield self._positions[index]
            index += 1
        held = self._recent.get(key)
        if held is not None:
            yield from (held,) if isinstance(held, int) else held

    def _key(self, bigram: int) -> int:
        """The bigram's key in the last ranking's order."""
        index = bisect_left(self._repeated, bigram)
        if index < len(self._repeated) and self._repeated[index] == bigram:
            return REPEATED + self._ranks[index]
        return bigram >> 1

    def _rank_due(self) -> bool:
        return len(self._ends) >= max(RANK_AT_LEAST, 2 * self._ranked)

    def _prefix(self, hashes: array[int]) -> list[int]:
        """The keys of the set's first bigrams in the index's order (rarest first)."""
        return sorted(map(self._key, hashes))[: prefix_length(len(hashes), self.threshold)]
