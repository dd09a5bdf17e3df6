"""Benchmark decontamination: word n-gram overlap between a question and benchmark questions.

As in GPT-3 (Brown et al. 2020, appendix C) and Llama 2 (Touvron et al. 2023, appendix A.6),
texts are compared by word n-grams after lowercasing and dropping punctuation (the words of
`dedup.words`). A stored question is contaminated when at least `overlap` of its distinct
n-grams appear in one benchmark question. A text shorter than `n` words has a single "gram",
its whole normalized text, so a short question matches only a short benchmark question with
the same words. The benchmark's n-grams live in one hash index, so a question costs one
lookup per n-gram, whatever the benchmark's size.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import attrs

from overbrainer.pipeline.dedup import words


def grams(text: str, n: int) -> frozenset[str]:
    """The distinct word `n`-grams of `text`; its whole normalized text when it is shorter."""
    split = words(text)
    if not split:
        return frozenset()
    if len(split) < n:
        return frozenset([" ".join(split)])
    return frozenset(" ".join(split[start : start + n]) for start in range(len(split) - n + 1))


def overlap(text: str, benchmark: str, n: int) -> float:
    """The share of `text`'s n-grams that `benchmark` also has (0.0 for a text without words)."""
    mine = grams(text, n)
    return len(mine & grams(benchmark, n)) / len(mine) if mine else 0.0


@attrs.frozen
class Source:
    """Where a benchmark question is: the file as configured and its line number (from 1)."""

    file: str
    line: int


@attrs.frozen
class Contamination:
    """The benchmark question a stored question overlaps most, and the share it overlaps."""

    source: Source
    overlap: float


class BenchmarkIndex:
    """Every benchmark question's n-grams, by n-gram hash, to match stored questions fast."""

    def __init__(self, n: int, threshold: float) -> None:
        self.n = n
        self.threshold = threshold
        self._sources: list[Source] = []
        # Most n-grams belong to one question: an int then, a list only when shared.
        self._postings: dict[int, int | list[int]] = {}

    def __len__(self) -> int:
        return len(self._sources)

    def add(self, text: str, source: Source) -> None:
        """Index one benchmark question."""
        number = len(self._sources)
        self._sources.append(source)
        for gram in grams(text, self.n):
            key = hash(gram)
            held = self._postings.get(key)
            if held is None:
                self._postings[key] = number
            elif isinstance(held, int):
                if held != number:
                    self._postings[key] = [held, number]
            elif held[-1] != number:
                held.append(number)

    def add_all(self, questions: Iterable[tuple[str, Source]]) -> BenchmarkIndex:
        """Index every `(text, source)`; returns itself."""
        for text, source in questions:
            self.add(text, source)
        return self

    def match(self, text: str) -> Contamination | None:
        """The benchmark question sharing the largest share (≥ threshold) of `text`'s n-grams.

        Ties go to the earliest question (file order, then line); None when none reaches it.
        """
        mine = grams(text, self.n)
        if not mine:
            return None
        total = len(mine)
        found = [held for gram in mine if (held := self._postings.get(hash(gram))) is not None]
        # Sharing with all benchmark questions together bounds sharing with any one of them.
        if len(found) / total < self.threshold:
            return None
        counts: Counter[int] = Counter()
        for held in found:
            if isinstance(held, int):
                counts[held] += 1
            else:
                counts.update(held)
        best, shared = min(counts.items(), key=lambda item: (-item[1], item[0]))
        if shared / total < self.threshold:
            return None
        return Contamination(self._sources[best], shared / total)
