"""The deduplicator: shingles, Jaccard and cosine at their thresholds, the embedding layer."""

from __future__ import annotations

import math

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from overbrainer.llm.errors import InvalidResponse
from overbrainer.pipeline.dedup import (
    EMBED_CHUNK,
    Deduplicator,
    cosine,
    jaccard,
    shingles,
)
from tests.dedup_support import definition


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", set()),
        ("?!", set()),
        ("Rust", {"rust"}),
        ("What is Rust?", {"what is", "is rust"}),
        ("a_b-c", {"a b", "b c"}),
        ("x x x", {"x x"}),
        ("ΟΔΟΣ ΣΟΦΟΣ", {"οδοσ σοφοσ"}),
        ("İstanbul is big", {"istanbul is", "is big"}),
        ("Ünïcode 42", {"ünïcode 42"}),
    ],
)
def test_shingles(text: str, expected: set[str]) -> None:
    assert shingles(text) == expected


def test_jaccard() -> None:
    assert jaccard(frozenset(), frozenset()) == 1.0
    assert jaccard(frozenset({"a"}), frozenset()) == 0.0
    assert jaccard(frozenset({"a", "b"}), frozenset({"b", "c"})) == 1 / 3
    assert jaccard(frozenset({"a"}), frozenset({"a"})) == 1.0


def test_cosine_in_float64_and_zero_for_a_zero_vector() -> None:
    assert cosine([3.0, 4.0], [4.0, 3.0]) == 0.96
    assert cosine([1.0, 0.0], [0.0, 1.0]) == 0.0
    assert cosine([0.0, 0.0], [1.0, 1.0]) == 0.0
    assert cosine([1.0, 1.0], [0.0, 0.0]) == 0.0
    assert cosine([1e-200, 0.0], [1e-200, 0.0]) == 0.0  # underflows to a zero norm
    assert cosine([1.0, 2.0], [-1.0, -2.0]) == pytest.approx(-1.0)


# "a b c d" and "a b c e" share 2 of 4 bigrams: Jaccard exactly 0.5.
FIRST, SECOND = "a b c d", "a b c e"


async def test_lexical_similarity_at_the_threshold_is_a_duplicate() -> None:
    dedup = Deduplicator(0.5, 0.9)
    await dedup.record([FIRST])
    assert await dedup.admit([SECOND]) == []
    above = Deduplicator(math.nextafter(0.5, 1.0), 0.9)
    await above.record([FIRST])
    assert await above.admit([SECOND]) == [SECOND]


async def test_a_batch_is_compared_with_its_own_earlier_candidates() -> None:
    dedup = Deduplicator(0.5, 0.9)
    assert await dedup.admit([FIRST, SECOND, "something else entirely"]) == [
        FIRST,
        "something else entirely",
    ]
    # What was admitted is now accepted.
    assert await dedup.admit(["A B C D!", "fresh words here"]) == ["fresh words here"]


async def test_case_punctuation_and_spacing_variants_are_always_duplicates() -> None:
    dedup = Deduplicator(1.0, 0.9)
    await dedup.record(["What is a borrow in Rust?"])
    assert await dedup.admit(["what IS a   borrow, in rust", "WHAT is a borrow in Rust!!"]) == []
    assert await dedup.admit(["What is a move in Rust?"]) == ["What is a move in Rust?"]


async def test_rejected_questions_behave_like_accepted_ones() -> None:
    dedup = Deduplicator(0.8, 0.9)
    stored, rejected = ["How do lifetimes work?"], ["Why is the borrow checker strict?"]
    await dedup.record(stored + rejected)
    assert await dedup.admit(["Why is the borrow checker strict?", "How do lifetimes work?"]) == []


async def test_texts_without_words_duplicate_each_other() -> None:
    dedup = Deduplicator(0.5, 0.9)
    assert await dedup.admit(["???", "!!!", "a"]) == ["???", "a"]


async def test_threshold_zero_makes_everything_after_the_first_a_duplicate() -> None:
    dedup = Deduplicator(0.0, 0.9)
    assert await dedup.admit(["one two", "three four"]) == ["one two"]


class FakeEmbedder:
    """Vectors from a table (default: a distinct axis per text), counting each call."""

    def __init__(self, table: dict[str, list[float]] | None = None) -> None:
        self.table = table or {}
        self.calls: list[list[str]] = []

    async def __call__(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        await trio.lowlevel.checkpoint()
        return [
            self.table.get(text, [float(len(self.calls)), float(i), 1.0])
            for i, text in enumerate(texts)
        ]


async def test_cosine_at_the_threshold_is_a_duplicate() -> None:
    table = {"alpha one": [3.0, 4.0], "beta two": [4.0, 3.0]}
    embed = FakeEmbedder(table)
    dedup = Deduplicator(0.5, 0.96, embed)
    await dedup.record(["alpha one"])
    assert await dedup.admit(["beta two"]) == []
    above = Deduplicator(0.5, math.nextafter(0.96, 1.0), FakeEmbedder(table))
    await above.record(["alpha one"])
    assert await above.admit(["beta two"]) == ["beta two"]


async def test_only_lexically_novel_candidates_are_embedded() -> None:
    table = {
        "how to borrow": [1.0, 0.0],
        "the borrowing rules": [0.99, 0.1],  # close to the first: an embedding duplicate
        "what is ownership": [0.0, 1.0],
    }
    embed = FakeEmbedder(table)
    dedup = Deduplicator(0.5, 0.9, embed)
    admitted = await dedup.admit(
        ["how to borrow", "How to borrow?", "the borrowing rules", "what is ownership"]
    )
    assert admitted == ["how to borrow", "what is ownership"]
    assert embed.calls == [["how to borrow", "the borrowing rules", "what is ownership"]]
    # Only admitted texts entered the lexical memory: the embedding duplicate may come back
    # lexically but is still refused by its vector, which was not stored either.
    assert await dedup.admit(["the borrowing rules"]) == []
    assert embed.calls[-1] == ["the borrowing rules"]


async def test_embeddings_are_requested_in_chunks_of_256() -> None:
    embed = FakeEmbedder()
    dedup = Deduplicator(0.5, 2.0, embed)  # cosine never reaches 2: only chunking matters
    assert EMBED_CHUNK == 256
    await dedup.record([f"stored question {i}" for i in range(300)])
    assert [len(call) for call in embed.calls] == [256, 44]
    candidates = [f"new question {i}" for i in range(515)]
    assert await dedup.admit(candidates) == candidates
    assert [len(call) for call in embed.calls] == [256, 44, 256, 256, 3]
    assert embed.calls[2] + embed.calls[3] + embed.calls[4] == candidates


async def test_empty_input_makes_no_embedding_request() -> None:
    embed = FakeEmbedder()
    dedup = Deduplicator(0.5, 0.9, embed)
    await dedup.record([])
    assert await dedup.admit([]) == []
    await dedup.record(["same words here"])
    assert await dedup.admit(["Same words here!"]) == []  # lexical duplicate: nothing to embed
    assert embed.calls == [["same words here"]]


async def test_an_embedding_error_admits_nothing() -> None:
    async def failing(texts: list[str]) -> list[list[float]]:
        raise InvalidResponse("boom")

    dedup = Deduplicator(0.5, 0.9, failing)
    with pytest.raises(InvalidResponse):
        await dedup.admit(["one two three"])
    dedup._embed = FakeEmbedder()
    assert await dedup.admit(["one two three"]) == ["one two three"]


async def test_a_wrong_number_of_vectors_is_an_invalid_response() -> None:
    async def short(texts: list[str]) -> list[list[float]]:
        return [[1.0]] * (len(texts) - 1)

    dedup = Deduplicator(0.5, 0.9, short)
    with pytest.raises(InvalidResponse, match=r"^invalid response: 1 embeddings for 2 texts$"):
        await dedup.admit(["one two", "three four"])


words = st.lists(st.sampled_from(["a", "b", "c", "d", "e", "?"]), max_size=6).map(" ".join)


@given(
    st.lists(words, max_size=6),
    st.lists(words, max_size=6),
    st.sampled_from([0.0, 0.2, 1 / 3, 0.5, 0.8, 1.0, 1.5]),
)
async def test_the_index_agrees_with_the_definition(
    accepted: list[str], candidates: list[str], threshold: float
) -> None:
    dedup = Deduplicator(threshold, 0.9)
    await dedup.record(accepted)
    assert await dedup.admit(candidates) == definition(accepted, candidates, threshold)


async def test_seeding_a_large_topic_leaves_the_event_loop_free() -> None:
    # On the event loop, seeding 20,000 questions would let no other task run until it ended.
    dedup = Deduplicator(0.8, 0.9)
    texts = [f"how does w{n % 97} relate to w{n % 89} in case {n}" for n in range(20_000)]
    seeded = trio.Event()
    turns = 0

    async def seed() -> None:
        await dedup.record(texts)
        seeded.set()

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(seed)
            while not seeded.is_set():
                turns += 1
                await trio.lowlevel.checkpoint()
    assert turns > 10
    assert await dedup.admit(["How does w1 relate to w1 in case 1?", "a new one"]) == ["a new one"]
