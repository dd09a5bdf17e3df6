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

A bigram stands for itself by its string's 64-bit hash, in a flat array per set (a tenth of a
set of strings' memory): two bigrams' hashes collide as rarely as 1 in 2^64 per pair.
"""

from __future__ import annotations

import itertools
import math
from array import array
from collections import Counter
from collections.abc import Set

MAX_CANDIDATES = 1_000
"""Sets a probe compares at most (about a millisecond of work)."""

REPEATED = 1 << 63
"""The first key of a repeated bigram: past every hash (which is under 2^63)."""

RANK_AT_LEAST = 1_000
"""Sets held before the first ranking: below it the hash order costs nothing worth saving."""


def prefix_length(size: int, threshold: float) -> int:
    """How many of a set's first bigrams (rarest first) a near-duplicate must meet in its own."""
    # A hair under t·|A| errs towards a longer prefix: more candidates, never a missed pair.
    return max(0, size - math.ceil(threshold * size - 1e-9) + 1)


class LexicalIndex:
    """Bigram sets, each found again by any set whose Jaccard with it reaches `threshold`."""

    def __init__(self, threshold: float, cap: int = MAX_CANDIDATES) -> None:
        self.threshold = threshold
        self.cap = cap
        self.compared = 0
        """Sets the last probe compared (a bound the tests check, not a timing)."""
        self.capped = 0
        """Probes that stopped at the cap."""
        self._sets: list[array[int]] = []
        self._empty = 0
        self._keys: dict[int, int] = {}
        self._ranked = 0
        # Most keys start one set's prefix only: their entry is that set's position, and a
        # list only from the second one on (a list per key cost 60 MB at 200,000 sets).
        self._postings: dict[int, int | list[int]] = {}

    def __len__(self) -> int:
        return len(self._sets)

    def add(self, shingled: Set[str]) -> None:
        """Hold one accepted set."""
        hashes = array("q", map(hash, shingled))
        position = len(self._sets)
        self._sets.append(hashes)
        if not hashes:
            self._empty += 1
        elif not self._rank_due():
            # When a ranking is due it rebuilds every prefix: posting this one now is waste.
            for key in self._prefix(hashes):
                self._post(key, position)

    def prepare(self) -> None:
        """Rank the bigrams again if the index has doubled since (blocking CPU work)."""
        if not self._rank_due():
            return
        counts: Counter[int] = Counter()
        for hashes in self._sets:
            counts.update(hashes)
        # A bigram seen once keeps its hash as its key, as one never seen does; a repeated
        # one gets a key past every hash, larger the more common it is.
        repeated = {token: count for token, count in counts.items() if count > 1}
        del counts
        self._keys = dict(
            zip(sorted(repeated, key=repeated.__getitem__), itertools.count(REPEATED), strict=False)
        )
        del repeated
        self._ranked = len(self._sets)
        self._postings = {}
        for position, hashes in enumerate(self._sets):
            for key in self._prefix(hashes):
                self._post(key, position)

    def has_near(self, shingled: Set[str]) -> bool:
        """Whether a held set's Jaccard with `shingled` reaches the threshold."""
        self.compared = 0
        if self.threshold <= 0.0:
            # Every similarity (0 included) reaches the threshold.
            return bool(self._sets)
        if not shingled:
            return self._empty > 0 and self.threshold <= 1.0
        self.prepare()
        hashes = array("q", map(hash, shingled))
        own = frozenset(hashes)
        size, threshold, sets = len(own), self.threshold, self._sets
        seen: set[int] = set()
        for key in self._prefix(hashes):
            held = self._postings.get(key)
            if held is None:
                continue
            for position in (held,) if isinstance(held, int) else held:
                if position in seen:
                    continue
                seen.add(position)
                other = sets[position]
                common = len(own.intersection(other))
                self.compared += 1
                if common / (size + len(other) - common) >= threshold:
                    return True
                if self.compared >= self.cap:
                    self.capped += 1
                    return False
        return False

    def _post(self, key: int, position: int) -> None:
        held = self._postings.get(key)
        if held is None:
            self._postings[key] = position
        elif isinstance(held, int):
            self._postings[key] = [held, position]
        else:
            held.append(position)

    def _rank_due(self) -> bool:
        return len(self._sets) >= max(RANK_AT_LEAST, 2 * self._ranked)

    def _prefix(self, hashes: array[int]) -> list[int]:
        """The keys of the set's first bigrams in the index's order (rarest first)."""
        keys = sorted(map(self._keys.get, hashes, hashes))
        return keys[: prefix_length(len(hashes), self.threshold)]
