"""The train/eval split: the reference's stratified, seeded, order-independent algorithm.

Pure functions over records (`plan_split`) or over compact rows (`plan_rows`, what the stage
keeps of each answer); the stage that reads and writes the files lives elsewhere.
The eval set takes `round(n·ratio)` (half away from zero, at least 1 and at most n−1) of the
`n` usable examples. That total is spread over topics, then over each topic's subtopics, in
proportion to their sizes by largest remainder (ties broken by a seeded hash of the name,
then the name). Within a subtopic the examples are ordered by a seeded hash of their ID and
the first ones go to eval. The same examples, ratio and seed always give the same split.

Ours, given the question texts: answers whose question overlaps a benchmark question are left
out (`decontaminate`), and near-duplicate questions are kept on one side (`near_duplicates`).
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Generic, Protocol, TypeVar, cast

import attrs
import xxhash

from overbrainer.events.types import StageStats
from overbrainer.pipeline.decontaminate import BenchmarkIndex, Contamination
from overbrainer.pipeline.near_duplicates import Signatures, cluster, keep_together
from overbrainer.storage import Exclusion, Meta, SplitCounts

EMPTIED_EVAL_WARNING = (
    "eval is empty: each of its {n} questions has a near-duplicate in train"
    " ([pipeline] dedup_threshold), so they all joined train"
)
ORPHANED_WARNING = (
    "all {n} usable answers are orphaned (topic no longer configured or question no longer"
    " in data/questions.jsonl): train and eval will be empty"
)


class Splittable(Protocol):
    """What the split reads of an answer: an `Example`, or a lighter record with its fields."""

    @property
    def id(self) -> str:
        """The answer's (and its question's) ID."""
        ...

    @property
    def topic(self) -> str:
        """The answer's topic."""
        ...

    @property
    def subtopic(self) -> str:
        """The answer's subtopic name."""
        ...

    @property
    def meta(self) -> Meta:
        """How the answer was produced; `meta.excluded` keeps it out of the split."""
        ...


S = TypeVar("S", bound=Splittable)
T = TypeVar("T")


def _round_half_up(value: float) -> int:
    """Round half away from zero for value >= 0, exactly (`floor(x + 0.5)` can round up
    0.49999999999999994, whose sum with 0.5 is inexact)."""
    whole = math.floor(value)
    return whole + 1 if value - whole >= 0.5 else whole


def eval_count(n: int, ratio: float) -> int:
    """How many of `n` usable examples go to eval: 0 below 2, else round(n·ratio) in [1, n−1]."""
    if n < 2:
        return 0
    return min(max(_round_half_up(n * ratio), 1), n - 1)


def _hash(text: str, seed: int) -> int:
    return int(xxhash.xxh3_64_intdigest(text.encode("utf-8"), seed=seed))


def allocate(groups: Sequence[tuple[str, int]], total: int, seed: int) -> list[int]:
    """Spread `total` over `(name, size)` groups in proportion to size, by largest remainder.

    Each group gets `floor(size·total/S)`; the units left go one each to the groups with the
    largest remainder `size·total mod S`, ties to the lower `xxh3_64(name, seed)`, then name.
    """
    whole = sum(size for _, size in groups)
    if whole == 0:
        return [0] * len(groups)
    quotas = [size * total // whole for _, size in groups]
    left = total - sum(quotas)
    if left > 0:
        order = sorted(
            range(len(groups)),
            key=lambda i: (
                -(groups[i][1] * total % whole),
                _hash(groups[i][0], seed),
                groups[i][0],
            ),
        )
        for index in order[:left]:
            quotas[index] += 1
    return quotas


def stratify(examples: Iterable[S], ratio: float, seed: int) -> tuple[list[S], list[S]]:
    """Split `examples` into `(train, eval)`, stratified by topic then subtopic name."""
    items = list(examples)
    train, evaluation = _stratify_rows(
        [e.id for e in items],
        [e.topic for e in items],
        [e.subtopic for e in items],
        range(len(items)),
        ratio,
        seed,
    )
    return [items[row] for row in train], [items[row] for row in evaluation]


def _stratify_rows(
    ids: Sequence[str],
    topics: Sequence[str],
    subtopics: Sequence[str],
    usable: Iterable[int],
    ratio: float,
    seed: int,
) -> tuple[list[int], list[int]]:
    """`stratify` over row numbers: each row's ID, topic and subtopic are given by column."""
    by_topic: dict[str, dict[str, list[int]]] = {}
    n = 0
    for row in usable:
        by_topic.setdefault(topics[row], {}).setdefault(subtopics[row], []).append(row)
        n += 1
    names_of_topics = sorted(by_topic)
    topic_quotas = allocate(
        [(topic, sum(map(len, by_topic[topic].values()))) for topic in names_of_topics],
        eval_count(n, ratio),
        seed,
    )
    train: list[int] = []
    evaluation: list[int] = []
    for topic, topic_quota in zip(names_of_topics, topic_quotas, strict=True):
        subtopic_rows = by_topic.pop(topic)
        names = sorted(subtopic_rows)
        quotas = allocate([(name, len(subtopic_rows[name])) for name in names], topic_quota, seed)
        for name, quota in zip(names, quotas, strict=True):
            ordered = sorted(subtopic_rows.pop(name), key=lambda r: (_hash(ids[r], seed), ids[r]))
            evaluation.extend(ordered[:quota])
            train.extend(ordered[quota:])
    return train, evaluation


@attrs.define
class Rows:
    """The split's compact state of the answers: one row each, in parallel columns.

    No record is held: a row is an ID, shared topic and subtopic strings, the exclusion, and a
    few bytes; `split` keeps where each line is beside it, and copies the chosen lines later.
    """

    ids: list[str] = attrs.field(factory=list)
    topics: list[str] = attrs.field(factory=list)
    subtopics: list[str] = attrs.field(factory=list)
    excluded: list[Exclusion | None] = attrs.field(factory=list)
    low: bytearray = attrs.field(factory=bytearray)
    """1: the quality judge scored this very answer under `[quality] min_score`."""
    question: array[int] = attrs.field(factory=lambda: array("q"))
    """≥ 0 once the answer's question is read: the `Signatures` slot of its bigrams for an
    answer that may join the split (any when there are none); −1 while the question is gone
    (the answer is orphaned)."""
    live: bytearray = attrs.field(factory=bytearray)
    """0: a later row of the same ID replaced this one."""

    def append(
        self, id_: str, topic: str, subtopic: str, excluded: Exclusion | None, low: bool
    ) -> int:
        """Add a live row whose question is not known yet; its number."""
        self.ids.append(id_)
        self.topics.append(topic)
        self.subtopics.append(subtopic)
        self.excluded.append(excluded)
        self.low.append(low)
        self.question.append(-1)
        self.live.append(1)
        return len(self.ids) - 1


@attrs.frozen
class SplitReport:
    """What `split` reports for the counted topic(s): train, eval, exclusions, orphans."""

    train: int = 0
    eval: int = 0
    excluded: tuple[tuple[Exclusion, int], ...] = ()
    """Non-zero counts by reason, in the fixed order of `Exclusion`."""
    orphaned: int = 0
    quality: int = 0
    """Ours: answers the quality judge scored under `[quality] min_score`."""
    contaminated: int = 0
    """Ours: usable answers left out because their question overlaps a benchmark's."""
    moved: int = 0
    """Ours: answers moved to the other side to keep near-duplicate questions together."""

    @property
    def excluded_total(self) -> int:
        """Every excluded answer counted, whatever its reason."""
        return sum(count for _, count in self.excluded) + self.quality + self.contaminated

    def line(self) -> str:
        """The summary line on stdout, e.g. `split: 90 train, 10 eval, 3 excluded (truncated 1,
        quality 2), 2 orphaned`; ours are shown only when non-zero."""
        moved = f", {self.moved} moved to keep near-duplicates together" if self.moved else ""
        return (
            f"split: {self.train} train, {self.eval} eval, "
            f"{self.excluded_total} excluded{self._reasons()}, {self.orphaned} orphaned{moved}"
        )

    def _reasons(self) -> str:
        """` (truncated 1, quality 2)`: the exclusions by reason; "" when there are none."""
        shown = [(reason.value, count) for reason, count in self.excluded]
        if self.quality:
            shown.append(("quality", self.quality))
        if self.contaminated:
            shown.append(("contaminated", self.contaminated))
        reasons = ", ".join(f"{reason} {count}" for reason, count in shown)
        return f" ({reasons})" if reasons else ""

    def no_train_reason(self) -> str:
        """Why a split left no train example, from these counts: `split: 0 train examples:
        all 10 answers were excluded (no_raw_reasoning 10)`."""
        answers = self.eval + self.excluded_total + self.orphaned
        if answers == 0:
            why = "there are no answers yet (run `overbrainer answers`)"
        elif answers == self.excluded_total:
            why = f"all {answers} answers were excluded{self._reasons()}"
        else:
            why = (
                f"of {answers} answers, {self.eval} went to eval, {self.excluded_total} were "
                f"excluded{self._reasons()} and {self.orphaned} are orphaned"
            )
        return f"split: 0 train examples: {why}"

    def stats(self) -> StageStats:
        """The stage's stats: done = train + eval, skipped = orphaned, excluded = all reasons."""
        return StageStats(
            done=self.train + self.eval, skipped=self.orphaned, excluded=self.excluded_total
        )

    def counts(self) -> SplitCounts:
        """What the history records of this split."""
        return SplitCounts(self.train, self.eval, self.orphaned, self.moved)


@attrs.frozen
class SplitPlan(Generic[T]):
    """The files to write (every topic's usable examples) and the report (counted ones)."""

    train: list[T]
    eval: list[T]
    report: SplitReport
    orphaned_usable: int
    """Usable answers left out as orphans, whatever their topic."""
    counted: int = 0
    """Answers of the counted topic(s): the stage's total."""
    contaminated: list[tuple[T, Contamination]] = attrs.field(factory=list)
    """Every topic's usable answers the benchmarks left out, with what they overlap."""
    moved: int = 0
    """Every topic's answers moved from eval to train beside a near-duplicate."""

    def orphan_warning(self) -> str | None:
        """The warning to log when every usable answer is orphaned, else None."""
        if self.orphaned_usable > 0 and not self.train and not self.eval:
            return ORPHANED_WARNING.format(n=self.orphaned_usable)
        return None

    def emptied_eval_warning(self) -> str | None:
        """The warning to log when moving near-duplicates to train left eval empty, else None."""
        if self.moved and not self.eval:
            return EMPTIED_EVAL_WARNING.format(n=self.moved)
        return None


def plan_split(
    answers: Iterable[S],
    question_ids: Collection[str],
    configured_topics: Collection[str],
    topic: str | None,
    ratio: float,
    seed: int,
    low_scored: Collection[str] = frozenset(),
    *,
    texts: Mapping[str, str] | None = None,
    dedup_threshold: float = 0.8,
    benchmark: BenchmarkIndex | None = None,
) -> SplitPlan[S]:
    """Classify each answer (orphaned, excluded, usable), split the usable ones, and report.

    An answer is orphaned when its topic is not configured (any topic, not only the selected
    one) or its question is gone; it stays in answers.jsonl but joins no split. An otherwise
    usable answer whose ID is in `low_scored` (scored under `[quality] min_score`) is excluded
    as `quality`. Only answers of `topic` (all when None) are counted in the report; every
    topic's usable ones are split.

    With `texts` (question text by ID), a usable answer whose question `benchmark` matches is
    left out, and near-duplicate questions (`dedup_threshold`) never straddle train and eval.
    """
    items = list(answers)
    rows = Rows()
    signatures = None if texts is None else Signatures()
    contamination: dict[int, Contamination] = {}
    check = texts is not None and benchmark is not None and len(benchmark) > 0
    for answer in items:
        id_ = answer.id
        excluded, low = answer.meta.excluded, id_ in low_scored
        row = rows.append(id_, answer.topic, answer.subtopic, excluded, low)
        if id_ not in question_ids:
            continue
        rows.question[row] = 0
        if texts is None or excluded is not None or low or answer.topic not in configured_topics:
            continue  # only a usable answer's question text is read
        text = texts[id_]
        rows.question[row] = cast(Signatures, signatures).add(text)
        found = benchmark.match(text) if check and benchmark is not None else None
        if found is not None:
            contamination[row] = found
    plan = plan_rows(
        rows,
        configured_topics,
        topic,
        ratio,
        seed,
        signatures=signatures,
        dedup_threshold=dedup_threshold,
        contamination=contamination,
    )
    return SplitPlan(
        [items[row] for row in plan.train],
        [items[row] for row in plan.eval],
        plan.report,
        plan.orphaned_usable,
        plan.counted,
        [(items[row], found) for row, found in plan.contaminated],
        plan.moved,
    )


def plan_rows(
    rows: Rows,
    configured_topics: Collection[str],
    topic: str | None,
    ratio: float,
    seed: int,
    *,
    signatures: Signatures | None = None,
    dedup_threshold: float = 0.8,
    contamination: Mapping[int, Contamination] | None = None,
    check: Callable[[], None] = lambda: None,
) -> SplitPlan[int]:
    """`plan_split` over `rows`, answering with row numbers: `contamination` is what the
    benchmarks match of each row's question, and with `signatures` (the questions' bigrams,
    by `rows.question`) near-duplicates never straddle train and eval. `check` is called
    between the steps and as the clustering goes (it raises to stop: a cancellation)."""
    usable: list[int] = []
    excluded: Counter[Exclusion] = Counter()
    orphaned = orphaned_usable = counted_total = quality = 0
    topics, question, low, live = rows.topics, rows.question, rows.low, rows.live
    for row, reason in enumerate(rows.excluded):
        if not live[row]:
            continue
        row_topic = topics[row]
        counted = topic is None or row_topic == topic
        counted_total += counted
        if row_topic not in configured_topics or question[row] < 0:
            orphaned += counted
            orphaned_usable += reason is None
        elif reason is not None:
            if counted:
                excluded[reason] += 1
        elif low[row]:
            quality += counted
        else:
            usable.append(row)
    contaminated: list[tuple[int, Contamination]] = []
    if contamination:
        found_in = contamination.get
        contaminated = [(row, found) for row in usable if (found := found_in(row)) is not None]
        usable = [row for row in usable if row not in contamination]
    check()
    train, evaluation = _stratify_rows(rows.ids, topics, rows.subtopics, usable, ratio, seed)
    del usable
    check()
    moved: list[int] = []
    if signatures is not None:
        ordered = train + evaluation
        slots = array("q", map(question.__getitem__, ordered))
        labels = cluster(signatures, slots, dedup_threshold, check=check)
        del slots
        check()
        label = array("q", bytes(8 * len(topics)))
        for row, first in zip(ordered, labels, strict=True):
            label[row] = first
        del ordered, labels
        train, evaluation, moved = keep_together(train, evaluation, label.__getitem__)

    def count(chosen: Iterable[int]) -> int:
        return sum(topic is None or topics[row] == topic for row in chosen)

    report = SplitReport(
        train=count(train),
        eval=count(evaluation),
        excluded=tuple((reason, excluded[reason]) for reason in Exclusion if excluded[reason]),
        orphaned=orphaned,
        quality=quality,
        contaminated=count(row for row, _ in contaminated),
        moved=count(moved),
    )
    return SplitPlan(
        train, evaluation, report, orphaned_usable, counted_total, contaminated, len(moved)
    )
