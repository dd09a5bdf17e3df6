"""Near-duplicate filtering of generated questions: word bigrams first, then embeddings.

A topic's deduplicator holds every question accepted (or rejected by the user) so far.
Candidates are compared lexically (Jaccard of word-bigram sets) against all of them and
against the batch's earlier novel candidates, through an index that meets only a bounded few
(`lexical_index`); only the survivors are embedded, when an embedder is configured, and
compared by cosine. Similarity at or above a threshold is a duplicate. The lexical work runs
in a worker thread: seeding a topic of 100,000 questions is seconds of CPU.
"""

from __future__ import annotations

import itertools
import math
import operator
import re
from collections.abc import Awaitable, Callable, Hashable, Sequence
from collections.abc import Set as AbstractSet

import trio

from overbrainer.llm import InvalidResponse
from overbrainer.pipeline.lexical_index import LexicalIndex

Embed = Callable[[list[str]], Awaitable[list[list[float]]]]
"""Embeds texts, one vector per text, in order (retries are its own business)."""

EMBED_CHUNK = 256
"""Texts per embedding request."""

REMEMBER_SLICE = 1_000
"""Texts seeded between two looks for a cancel (a few milliseconds)."""

_NOT_ALNUM = re.compile(r"[\W_]+")
# Lowercase char by char as the reference does: only the first char of İ's mapping, and
# no final-sigma rule (which `str.lower` applies to whole words).
_CHAR_LOWER = str.maketrans({"\u0130": "i", "\u03a3": "\u03c3"})


# In ASCII, `[\W_]` is exactly what is not a letter or a digit: one table (3x the regex's speed).
_ASCII_SPACED = str.maketrans(
    {chr(c): " " for c in range(128) if not (chr(c).isascii() and chr(c).isalnum())}
)


def words(text: str) -> list[str]:
    """The words of `text`, lowercased, with every non-alphanumeric char as a space."""
    if text.isascii():  # neither İ nor Σ either: no lowercase translation
        return text.translate(_ASCII_SPACED).lower().split()
    return _NOT_ALNUM.sub(" ", text).translate(_CHAR_LOWER).lower().split()


def shingles(text: str) -> frozenset[str]:
    """The word bigrams of `text` (lowercased, non-alphanumerics as spaces); the word if fewer."""
    split = words(text)
    if len(split) < 2:
        return frozenset(split)
    return frozenset([f"{first} {second}" for first, second in itertools.pairwise(split)])


def jaccard(first: AbstractSet[Hashable], second: AbstractSet[Hashable]) -> float:
    """|A∩B| / |A∪B|, and 1.0 when both sets are empty."""
    if not first and not second:
        return 1.0
    common = len(first & second)
    return common / (len(first) + len(second) - common)


def cosine(first: Sequence[float], second: Sequence[float]) -> float:
    """Cosine similarity in float64; 0.0 when either vector is all zeros."""
    return _cosine(first, second, _norm(first) * _norm(second))


def _cosine(first: Sequence[float], second: Sequence[float], norms: float) -> float:
    """`cosine`, given the product of the vectors' norms (kept for accepted vectors)."""
    return 0.0 if norms == 0.0 else sum(map(operator.mul, first, second)) / norms


def _norm(vector: Sequence[float]) -> float:
    return math.sqrt(sum(map(operator.mul, vector, vector)))


class _Vectors:
    """Accepted embedding vectors with their norms, compared by cosine."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self._vectors: list[tuple[list[float], float]] = []

    def add(self, vector: list[float]) -> None:
        self._vectors.append((vector, _norm(vector)))

    def is_duplicate(self, vector: list[float]) -> bool:
        norm = _norm(vector)
        return any(
            _cosine(vector, other, norm * other_norm) >= self.threshold
            for other, other_norm in self._vectors
        )


class Deduplicator:
    """One topic's memory of accepted questions; admits only candidates new to it."""

    def __init__(
        self, dedup_threshold: float, embedding_threshold: float, embed: Embed | None = None
    ) -> None:
        self._lexical = LexicalIndex(dedup_threshold)
        self._vectors = _Vectors(embedding_threshold)
        self._embed = embed

    async def _embed_all(self, texts: list[str]) -> list[list[float]]:
        assert self._embed is not None
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBED_CHUNK):
            chunk = texts[start : start + EMBED_CHUNK]
            got = await self._embed(chunk)
            if len(got) != len(chunk):
                raise InvalidResponse(f"{len(got)} embeddings for {len(chunk)} texts")
            vectors.extend([float(x) for x in vector] for vector in got)
        return vectors

    async def admit(self, candidates: list[str]) -> list[str]:
        """The candidates that duplicate nothing accepted nor an earlier one, now accepted.

        On an embedding error nothing is accepted and the error propagates.
        """
        # Not abandoned on a cancel: another slot of the topic may admit next, and must not
        # meet a ranking still under way (a probe is milliseconds, a ranking at most seconds).
        novel = await trio.to_thread.run_sync(self._lexically_novel, candidates)
        if self._embed is not None and novel:
            vectors = await self._embed_all([candidate for candidate, _ in novel])
            kept = []
            for item, vector in zip(novel, vectors, strict=True):
                if not self._vectors.is_duplicate(vector):
                    self._vectors.add(vector)
                    kept.append(item)
            novel = kept
        for _, shingled in novel:
            self._lexical.add(shingled)
        return [candidate for candidate, _ in novel]

    def _lexically_novel(self, candidates: list[str]) -> list[tuple[str, frozenset[str]]]:
        """The candidates, with their bigrams, that duplicate nothing lexically."""
        batch = LexicalIndex(self._lexical.threshold)
        novel: list[tuple[str, frozenset[str]]] = []
        for candidate in candidates:
            shingled = shingles(candidate)
            if self._lexical.has_near(shingled) or batch.has_near(shingled):
                continue
            batch.add(shingled)
            novel.append((candidate, shingled))
        return novel

    def admit_lexically(self, candidates: list[str]) -> list[str]:
        """`admit` for a deduplicator without an embedder, as plain (blocking) work: the import
        runs it in a worker thread."""
        assert self._embed is None, "an embedder is asked only through `admit`"
        novel = self._lexically_novel(candidates)
        for _, shingled in novel:
            self._lexical.add(shingled)
        return [candidate for candidate, _ in novel]

    def prepare_lexically(self, checkpoint: Callable[[], None]) -> None:
        """Rank the lexical index now if it is due (blocking CPU work), calling `checkpoint`
        as it goes (`LexicalIndex.prepare`)."""
        self._lexical.prepare(checkpoint)

    def record_lexically(self, texts: Sequence[str]) -> None:
        """`record` for a deduplicator without an embedder, as plain (blocking) work."""
        assert self._embed is None, "an embedder is asked only through `record`"
        for text in texts:
            self._lexical.add(shingles(text))

    def _remember(self, texts: Sequence[str], checkpoint: Callable[[], None]) -> None:
        """Hold the texts and rank the index now, so that no admit on the event loop's
        behalf has to (blocking CPU work); `checkpoint` is called as it goes."""
        for start in range(0, len(texts), REMEMBER_SLICE):
            checkpoint()
            for text in texts[start : start + REMEMBER_SLICE]:
                self._lexical.add(shingles(text))
        self._lexical.prepare(checkpoint)

    async def record(self, texts: Sequence[str]) -> None:
        """Remember texts accepted earlier (stored or rejected questions) without filtering."""
        # A cancel stops the thread at its next checkpoint (the stage then drops this
        # deduplicator unused), and it is waited for: nothing keeps running.
        await trio.to_thread.run_sync(self._remember, texts, trio.from_thread.check_cancelled)
        if self._embed is not None and texts:
            for vector in await self._embed_all(list(texts)):
                self._vectors.add(vector)
