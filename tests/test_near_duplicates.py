"""Near-duplicate clusters and the split keeping each cluster on one side."""

from __future__ import annotations

import itertools
import logging
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overbrainer.pipeline.dedup import _CHAR_LOWER, jaccard, shingles, words
from overbrainer.pipeline.near_duplicates import (
    CHECK_EVERY,
    Signatures,
    cluster,
    cluster_labels,
    keep_together,
)
from overbrainer.pipeline.split import plan_split, stratify
from overbrainer.storage.ids import object_id
from overbrainer.storage.records import Example, FinishReason, Message, Meta, ReasoningKind


def _brute_labels(texts: list[str], threshold: float) -> list[int]:
    """Every pair compared: what the index must find."""
    parent = list(range(len(texts)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    sets = [shingles(text) for text in texts]
    for i in range(len(texts)):
        for j in range(i):
            if jaccard(sets[i], sets[j]) >= threshold:
                a, b = root(i), root(j)
                parent[max(a, b)] = min(a, b)
    return [root(i) for i in range(len(texts))]


def test_near_duplicates_join_transitively_and_others_stay_alone() -> None:
    texts = [
        "How does a borrow end in Rust today?",  # 0
        "How does a borrow end in Rust now?",  # 1: 6 of 8 bigrams shared with 0 → 0.75
        "how does a BORROW end in rust, today!",  # 2: same bigrams as 0 → 1.0
        "What is a lifetime?",  # 3
        "How does a borrow end in Rust now, really?",  # 4: 7 of 8 with 1 → 0.875
    ]
    assert cluster_labels(texts, 0.8) == [0, 1, 0, 3, 1]
    assert cluster_labels(texts, 0.75) == [0, 0, 0, 3, 0]
    assert cluster_labels(texts, 1.0) == [0, 1, 0, 3, 4]


def test_texts_without_words_form_one_cluster() -> None:
    assert cluster_labels(["?", "a b", "!!", "a b"], 0.8) == [0, 1, 0, 1]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("abcdefg"), max_size=7).map(" ".join), max_size=30),
    st.sampled_from([0.3, 0.5, 2 / 3, 0.8, 1.0]),
)
def test_the_index_finds_every_pair_the_brute_force_finds(texts: list[str], t: float) -> None:
    assert cluster_labels(texts, t) == _brute_labels(texts, t)


def _example(n: int, topic: str, text: str) -> tuple[Example, str]:
    e = Example(
        id=object_id(topic, str(n)),
        topic=topic,
        subtopic=f"s{n % 3}",
        messages=(Message("user", text), Message("assistant", "a")),
        meta=Meta("m", 0, 0, FinishReason.STOP, ReasoningKind.RAW),
    )
    return e, text


def _dataset(copies: int) -> tuple[list[Example], dict[str, str]]:
    """40 distinct questions per topic in two topics, plus `copies` rewordings of each of
    the first questions of topic `a`, filed under topic `b`."""
    pairs = [
        _example(n, topic, f"Question {n} of {topic}: {n * 7919 % 10007} {n * 104729 % 65537}?")
        for topic in ("a", "b")
        for n in range(40)
    ]
    pairs += [
        _example(100 + n, "b", f"question {n} OF a, {n * 7919 % 10007} {n * 104729 % 65537}!")
        for n in range(copies)
    ]
    return [e for e, _ in pairs], {e.id: text for e, text in pairs}


def test_signatures_hold_each_texts_distinct_bigrams_and_a_lone_word() -> None:
    signatures = Signatures()
    slots = [signatures.add(t) for t in ("a b a b", "?", "Word", "x, y z")]
    assert slots == [0, 1, 2, 3]
    assert [len(signatures.bigrams(slot)) for slot in slots] == [2, 0, 1, 2]
    # Case, punctuation and spacing make no bigram new, as in the questions stage.
    assert set(signatures.bigrams(3)) == set(signatures.bigrams(signatures.add("X y  Z!")))


def test_cluster_takes_only_the_slots_given() -> None:
    signatures = Signatures()
    for text in ("a b c d e", "x y z", "a b c d e f", "a b c d e"):
        signatures.add(text)
    # 0 and 3 are one text, 2 is near both (4 of 5 bigrams, 0.8): 1 stays out.
    assert list(cluster(signatures, [3, 1, 0, 2], 0.8)) == [0, 1, 0, 0]
    assert list(cluster(signatures, [1, 2], 0.8)) == [0, 1]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=9).map(" ".join), max_size=40),
    st.sampled_from([0.5, 0.8]),
)
def test_colliding_counters_still_find_every_pair(texts: list[str], t: float) -> None:
    """With one or two counters bigrams share them: the order is nearly arbitrary, yet whole."""
    signatures = Signatures()
    slots = [signatures.add(text) for text in texts]
    for cells in (1, 2):
        assert list(cluster(signatures, slots, t, cells)) == _brute_labels(texts, t)


def _unsigned_hash(first: str, second: str) -> int:
    """The key a bigram ranks by when every count ties: its hash, unsigned."""
    return hash((first, second)) & ((1 << 64) - 1)


def test_a_probe_visits_at_most_cap_indexed_texts(caplog: pytest.LogCaptureFixture) -> None:
    """Texts that share one bigram but are not alike: past the cap a probe stops, so a
    near-duplicate reachable only behind `cap` others is missed, and found without the cap."""
    # One counter: every count ties, so each prefix is ordered by hash; the shared bigram
    # is chosen with a hash under every other bigram's, so it opens every prefix.
    shared = min(((f"s{n}", f"t{n}") for n in range(1_000)), key=lambda p: _unsigned_hash(*p))
    floor = _unsigned_hash(*shared)
    texts: list[str] = []
    for n in range(10_000):
        words = [*shared, *(f"w{n}x{k}" for k in range(6))]
        if all(_unsigned_hash(a, b) > floor for a, b in itertools.pairwise(words[1:])):
            texts.append(" ".join(words))
        if len(texts) == 30:
            break
    texts.append(texts[-1])  # a copy of the last, met behind the 29 others
    signatures = Signatures()
    slots = [signatures.add(text) for text in texts]
    caplog.set_level(logging.INFO)
    unbounded = list(cluster(signatures, slots, 0.8, cells=1, cap=10_000))
    assert unbounded == _brute_labels(texts, 0.8)
    assert unbounded[-1] == 29
    assert not caplog.messages
    capped = list(cluster(signatures, slots, 0.8, cells=1, cap=5))
    assert capped == list(range(31))
    # Each text from the 6th on meets 5 earlier ones first.
    assert caplog.messages == [
        "split: 26 of 31 question(s) met 5 others sharing their rarest word pairs and were"
        " compared with those only (a near-duplicate further on is not looked for)"
    ]


def test_cluster_calls_check_and_stops_when_it_raises() -> None:
    signatures = Signatures()
    slots = [signatures.add(f"{n} x {n} y") for n in range(3 * CHECK_EVERY)]
    calls: list[int] = []

    def check() -> None:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # what trio.Cancelled is to a worker thread: not an Exception

    with pytest.raises(KeyboardInterrupt):
        cluster(signatures, slots, 0.8, check=check)
    assert len(calls) == 3
    assert len(list(cluster(signatures, slots, 0.8, check=lambda: None))) == len(slots)


def test_keep_together_moves_eval_members_of_a_train_cluster_to_train() -> None:
    examples, texts = _dataset(copies=40)
    labels = dict(zip(texts, cluster_labels(list(texts.values()), 0.8), strict=True))
    for seed in (1, 2, 42):
        train, evaluation = stratify(examples, 0.25, seed)
        kept_train, kept_eval, moved = keep_together(train, evaluation, lambda e: labels[e.id])
        in_train = {labels[e.id] for e in kept_train}
        assert not any(labels[e.id] in in_train for e in kept_eval)
        assert kept_train == train + moved
        assert kept_eval == [e for e in evaluation if e not in moved]
        assert moved  # 40 pairs straddle with these seeds
        # The same seed gives the same result whatever the input order.
        again = keep_together(*stratify(examples[::-1], 0.25, seed), lambda e: labels[e.id])
        assert again == (kept_train, kept_eval, moved)


def test_plan_split_keeps_clusters_across_topics_on_one_side_and_counts_the_moves() -> None:
    examples, texts = _dataset(copies=40)
    topics = {"a", "b"}
    plain = plan_split(examples, texts, topics, None, 0.25, 42)
    plan = plan_split(examples, texts, topics, None, 0.25, 42, texts=texts)
    label = dict(zip(texts, cluster_labels(list(texts.values()), 0.8), strict=True))
    assert {label[e.id] for e in plan.train}.isdisjoint(label[e.id] for e in plan.eval)
    moved = plan.report.moved
    assert moved > 0
    assert (plan.report.train, plan.report.eval) == (
        plain.report.train + moved,
        plain.report.eval - moved,
    )
    assert plan.report.line() == (
        f"split: {90 + moved} train, {30 - moved} eval, 0 excluded, 0 orphaned,"
        f" {moved} moved to keep near-duplicates together"
    )
    assert plan.report.counts().moved == moved
    # Counted for the selected topic only, as train and eval are.
    only_b = plan_split(examples, texts, topics, "b", 0.25, 42, texts=texts)
    assert only_b.report.moved == sum(e.topic == "b" for e in plan.train if e in plain.eval)


def test_without_near_duplicates_the_split_is_the_reference_split() -> None:
    examples, texts = _dataset(copies=0)
    topics = {"a", "b"}
    plain = plan_split(examples, texts, topics, None, 0.1, 42)
    plan = plan_split(examples, texts, topics, None, 0.1, 42, texts=texts)
    assert (plan.train, plan.eval, plan.report) == (plain.train, plain.eval, plain.report)
    assert plan.report.line() == "split: 72 train, 8 eval, 0 excluded, 0 orphaned"


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.lists(st.sampled_from("pqrstu"), min_size=1, max_size=5).map(" ".join),
        ),
        max_size=40,
    ),
    st.integers(0, 2**64 - 1),
    st.sampled_from([0.1, 0.3, 0.5]),
)
def test_no_cluster_ever_straddles_and_no_example_is_lost(
    items: list[tuple[str, str]], seed: int, ratio: float
) -> None:
    pairs = [_example(n, topic, text) for n, (topic, text) in enumerate(items)]
    examples = [e for e, _ in pairs]
    texts = {e.id: text for e, text in pairs}
    plan = plan_split(examples, texts, {"a", "b", "c"}, None, ratio, seed, texts=texts)
    label = dict(zip(texts, cluster_labels(list(texts.values()), 0.8), strict=True))
    assert {label[e.id] for e in plan.train}.isdisjoint(label[e.id] for e in plan.eval)
    assert sorted(e.id for e in plan.train + plan.eval) == sorted(texts)
    plain = plan_split(examples, texts, {"a", "b", "c"}, None, ratio, seed)
    assert plan.report.eval == plain.report.eval - plan.report.moved
    assert plan.train[: len(plain.train)] == plain.train


@given(st.text(st.characters(max_codepoint=127)) | st.text())
def test_words_of_ascii_text_are_the_regex_words(text: str) -> None:
    """The ASCII table splits exactly where `[\\W_]+` does (what every text got before)."""
    spaced = re.sub(r"[\W_]+", " ", text)
    lowered = spaced if spaced.isascii() else spaced.translate(_CHAR_LOWER)
    assert words(text) == lowered.lower().split()
