"""The split: the reference's eval count, allocation, ordering, classification and line."""

from __future__ import annotations

import random

import pytest
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from overbrainer.events.types import StageStats
from overbrainer.pipeline.split import (
    SplitPlan,
    SplitReport,
    _round_half_up,
    allocate,
    eval_count,
    plan_split,
    stratify,
)
from overbrainer.storage.history import SplitCounts
from overbrainer.storage.ids import object_id
from overbrainer.storage.records import (
    Example,
    Exclusion,
    FinishReason,
    Message,
    Meta,
    ReasoningKind,
)


def example(subtopic: str, n: int, topic: str = "t", excluded: Exclusion | None = None) -> Example:
    """The reference's test example: ID = Id.of([subtopic, n])."""
    return Example(
        id=object_id(subtopic, str(n)),
        topic=topic,
        subtopic=subtopic,
        messages=(Message("user", "q"), Message("assistant", "a")),
        meta=Meta("m", 0, 0, FinishReason.STOP, ReasoningKind.RAW, excluded),
    )


def uniform(groups: int, size: int, topic: str = "t") -> list[Example]:
    return [example(f"s{g}", n, topic) for g in range(groups) for n in range(size)]


def dataset() -> list[Example]:
    return [example("a", n) for n in range(20)] + [example("b", n) for n in range(10)]


def _count(examples: list[Example], subtopic: str) -> int:
    return sum(e.subtopic == subtopic for e in examples)


def test_each_subtopic_contributes_its_share_to_eval() -> None:
    train, evaluation = stratify(dataset(), 0.1, 42)
    assert len(train) + len(evaluation) == 30
    assert (_count(evaluation, "a"), _count(evaluation, "b")) == (2, 1)


def test_many_small_subtopics_still_give_an_eval_set() -> None:
    train, evaluation = stratify(uniform(20, 1), 0.1, 42)
    assert (len(train), len(evaluation)) == (18, 2)
    assert stratify(uniform(20, 1), 0.1, 42) == (train, evaluation)


def test_the_ratio_holds_on_the_whole_set() -> None:
    train, evaluation = stratify(uniform(7, 15), 0.1, 42)
    assert (len(train), len(evaluation)) == (94, 11)
    assert all(1 <= _count(evaluation, f"s{g}") <= 2 for g in range(7))


@pytest.mark.parametrize(
    ("n", "ratio", "sizes"),
    [(0, 0.1, (0, 0)), (1, 0.1, (1, 0)), (2, 0.1, (1, 1)), (10, 0.99, (1, 9))],
)
def test_small_sets(n: int, ratio: float, sizes: tuple[int, int]) -> None:
    train, evaluation = stratify(uniform(n, 1), ratio, 42)
    assert (len(train), len(evaluation)) == sizes


def test_four_topics_each_give_their_share() -> None:
    examples = [e for t in range(4) for e in uniform(10, 5, topic=f"topic{t}")]
    train, evaluation = stratify(examples, 0.1, 42)
    assert (len(train), len(evaluation)) == (180, 20)
    assert [sum(e.topic == f"topic{t}" for e in evaluation) for t in range(4)] == [5, 5, 5, 5]


def test_a_different_seed_picks_different_small_subtopics() -> None:
    first = {e.subtopic for e in stratify(uniform(20, 1), 0.1, 1)[1]}
    second = {e.subtopic for e in stratify(uniform(20, 1), 0.1, 2)[1]}
    assert len(first) == len(second) == 2
    assert first != second


def test_the_split_does_not_depend_on_input_order() -> None:
    examples = [e for t in range(3) for e in uniform(5, 7, topic=f"t{t}")]
    expected = stratify(examples, 0.2, 7)
    shuffled = list(examples)
    random.Random(3).shuffle(shuffled)
    assert stratify(shuffled, 0.2, 7) == expected
    assert stratify(reversed(examples), 0.2, 7) == expected


def test_output_order_is_topic_subtopic_then_seeded_hash_of_id() -> None:
    examples = uniform(3, 4, topic="b") + uniform(2, 3, topic="a")
    train, evaluation = stratify(examples, 0.25, 9)

    def key(e: Example) -> tuple[str, str, int, str]:
        return (e.topic, e.subtopic, xxhash.xxh3_64_intdigest(e.id.encode(), seed=9), e.id)

    assert train == sorted(train, key=key)
    assert evaluation == sorted(evaluation, key=key)
    # Within each subtopic eval takes the lowest hashes.
    for e in evaluation:
        rest = [t for t in train if (t.topic, t.subtopic) == (e.topic, e.subtopic)]
        assert all(key(e) < key(t) for t in rest)


@pytest.mark.parametrize(
    ("n", "ratio", "expected"),
    [
        (0, 0.5, 0),
        (1, 0.9, 0),
        (2, 0.01, 1),
        (2, 0.99, 1),
        (5, 0.5, 3),  # 2.5 rounds half away from zero, not to even
        (3, 0.5, 2),  # 1.5
        (10, 0.05, 1),  # 0.5
        (10, 0.04, 1),  # 0.4 rounds to 0, clamped to 1
        (100, 0.1, 10),
        (105, 0.1, 11),  # 10.5
        (10, 0.99, 9),  # 9.9 rounds to 10, clamped to n - 1
    ],
)
def test_eval_count(n: int, ratio: float, expected: int) -> None:
    assert eval_count(n, ratio) == expected


def test_eval_count_rounds_exactly_just_below_a_half() -> None:
    just_below = 0.49999999999999994
    assert just_below + 0.5 == 1.0  # why floor(x + 0.5) is not used as is
    assert _round_half_up(just_below) == 0
    assert _round_half_up(0.5) == 1
    assert _round_half_up(10.499999999999998) == 10
    assert _round_half_up(10.5) == 11


def test_allocate_gives_floors_then_largest_remainders() -> None:
    # Shares 3.5, 1.0, 0.5 of 5: floors 3, 1, 0; one unit left, tie between a and c.
    groups = [("a", 7), ("b", 2), ("c", 1)]
    a, c = (xxhash.xxh3_64_intdigest(name.encode(), seed=5) for name in ("a", "c"))
    expected = [4, 1, 0] if a < c else [3, 1, 1]
    assert allocate(groups, 5, 5) == expected
    # Shares 2.25 and 0.75 of 3: remainders 1 and 3 (of 4), so y gets the unit left.
    assert allocate([("x", 3), ("y", 1)], 3, 0) == [2, 1]
    assert allocate([("x", 0), ("y", 0)], 3, 0) == [0, 0]
    assert allocate([], 0, 0) == []


def test_allocate_breaks_remainder_ties_by_seeded_name_hash() -> None:
    names = [f"n{i}" for i in range(10)]
    for seed in (0, 1, 42, 2**64 - 1):
        quotas = allocate([(name, 1) for name in names], 3, seed)
        by_hash = sorted(names, key=lambda n: xxhash.xxh3_64_intdigest(n.encode(), seed=seed))
        assert [name for name, q in zip(names, quotas, strict=True) if q] == sorted(by_hash[:3])


@given(
    st.lists(st.tuples(st.text(max_size=3), st.integers(0, 50)), max_size=8),
    st.integers(0, 60),
    st.integers(0, 2**64 - 1),
)
def test_allocate_sums_to_the_total_and_stays_near_the_share(
    groups: list[tuple[str, int]], total: int, seed: int
) -> None:
    quotas = allocate(groups, total, seed)
    whole = sum(size for _, size in groups)
    if whole == 0:
        assert quotas == [0] * len(groups)
        return
    assert sum(quotas) == total
    for (_, size), quota in zip(groups, quotas, strict=True):
        assert size * total // whole <= quota <= size * total // whole + 1


def test_the_three_summary_lines_of_the_reference() -> None:
    assert (
        SplitReport(90, 10, ((Exclusion.TRUNCATED, 3),), 2).line()
        == "split: 90 train, 10 eval, 3 excluded (truncated 3), 2 orphaned"
    )
    assert SplitReport(3, 1, (), 0).line() == "split: 3 train, 1 eval, 0 excluded, 0 orphaned"
    report = SplitReport(9, 1, ((Exclusion.TRUNCATED, 2), (Exclusion.NO_RAW_REASONING, 1)), 4)
    assert report.line() == (
        "split: 9 train, 1 eval, 3 excluded (truncated 2, no_raw_reasoning 1), 4 orphaned"
    )
    assert report.stats() == StageStats(done=10, skipped=4, excluded=3)
    assert report.counts() == SplitCounts(9, 1, 4)


def _plan_inputs() -> tuple[list[Example], set[str]]:
    answers = (
        [example("a", n) for n in range(9)]
        + [example("x", n, topic="other") for n in range(4)]
        + [
            example("a", 100, excluded=Exclusion.NO_RAW_REASONING),
            example("a", 101, excluded=Exclusion.TRUNCATED),
            example("a", 102, excluded=Exclusion.TRUNCATED),
            example("a", 103, excluded=Exclusion.REFUSED),
            example("a", 104, excluded=Exclusion.EMPTY),
            example("x", 100, topic="other", excluded=Exclusion.TRUNCATED),
        ]
        + [example("gone", n, topic="removed") for n in range(2)]  # topic not configured
        + [example("a", 200), example("a", 201, excluded=Exclusion.EMPTY)]  # question deleted
        + [example("x", 200, topic="other")]  # question deleted, other topic
    )
    questions = {e.id for e in answers if e.topic != "removed"} - {
        object_id("a", "200"),
        object_id("a", "201"),
        object_id("x", "200"),
    }
    return answers, questions


def test_plan_split_classifies_orphaned_excluded_and_usable() -> None:
    answers, questions = _plan_inputs()
    plan = plan_split(answers, questions, ["t", "other"], None, 0.1, 42)
    assert plan.report.line() == (
        "split: 12 train, 1 eval, 6 excluded (truncated 3, empty 1, refused 1,"
        " no_raw_reasoning 1), 5 orphaned"
    )
    assert plan.orphaned_usable == 4
    assert plan.counted == len(answers)
    assert (plan.train, plan.eval) == stratify(answers[:13], 0.1, 42)
    assert plan.orphan_warning() is None


def test_topic_limits_the_report_but_not_the_files() -> None:
    answers, questions = _plan_inputs()
    plan = plan_split(answers, questions, ["t", "other"], "other", 0.1, 42)
    everything = plan_split(answers, questions, ["t", "other"], None, 0.1, 42)
    assert (plan.train, plan.eval) == (everything.train, everything.eval)
    in_train = sum(e.topic == "other" for e in plan.train)
    in_eval = sum(e.topic == "other" for e in plan.eval)
    assert (in_train, in_eval) == (plan.report.train, plan.report.eval)
    assert in_train + in_eval == 4
    assert plan.report.excluded == ((Exclusion.TRUNCATED, 1),)
    assert plan.report.orphaned == 1
    assert plan.orphaned_usable == 4  # counted or not
    assert plan.counted == 6


def test_every_usable_answer_orphaned_gives_the_warning() -> None:
    answers = [example("a", n) for n in range(3)] + [example("a", 9, excluded=Exclusion.EMPTY)]
    plan = plan_split(answers, set(), ["t"], None, 0.1, 42)
    assert (plan.train, plan.eval) == ([], [])
    assert plan.report.line() == "split: 0 train, 0 eval, 0 excluded, 4 orphaned"
    assert plan.orphan_warning() == (
        "all 3 usable answers are orphaned (topic no longer configured or question no longer"
        " in data/questions.jsonl): train and eval will be empty"
    )


def test_an_empty_project_splits_to_nothing() -> None:
    plan: SplitPlan[Example] = plan_split([], set(), [], None, 0.1, 42)
    assert plan.report.line() == "split: 0 train, 0 eval, 0 excluded, 0 orphaned"
    assert plan.orphan_warning() is None
