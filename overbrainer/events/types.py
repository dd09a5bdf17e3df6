"""Progress events: what happened in a stage, a training job, a push or a compare."""

from __future__ import annotations

import enum

import attrs

from overbrainer.model.job_kind import JobKind
from overbrainer.model.job_status import JobStatus
from overbrainer.model.pod_status import PodStatus
from overbrainer.model.system_sample import SystemSample
from overbrainer.model.train_metric import Mark, TrainMetric
from overbrainer.model.usage import Price, Usage


class Stage(enum.Enum):
    """A stage of the history: the pipeline's in pipeline order, then `compare`'s judge."""

    SUBTOPICS = "subtopics"
    QUESTIONS = "questions"
    ANSWERS = "answers"
    QUALITY = "quality"
    """Ours: the `[quality] judge` scores the stored answers; `run` runs it when configured."""
    SPLIT = "split"
    JUDGE = "judge"

    def __str__(self) -> str:
        return self.value

    def __lt__(self, other: Stage) -> bool:
        return _STAGE_ORDER[self] < _STAGE_ORDER[other]


_STAGE_ORDER = {stage: index for index, stage in enumerate(Stage)}

PIPELINE_STAGES = (Stage.SUBTOPICS, Stage.QUESTIONS, Stage.ANSWERS, Stage.SPLIT)
"""The stages `overbrainer run` always runs, in order (with `quality` after answers when
`[quality] judge` is set); `judge` is recorded by `compare` only."""


@attrs.frozen
class StageStats:
    """Counters of one stage: items done, skipped, failed, excluded; tokens; cost if known."""

    done: int = 0
    skipped: int = 0
    failed: int = 0
    excluded: int = 0
    usage: Usage = attrs.field(factory=Usage)
    cost: float | None = None

    def add_usage(self, usage: Usage, price: Price | None = None) -> StageStats:
        """These stats plus `usage`, and its cost when the price is known."""
        cost = self.cost
        if price is not None:
            cost = (cost or 0.0) + price.cost(usage)
        # Built directly: `attrs.evolve` looks the fields up on every call, once per answer.
        return StageStats(
            self.done, self.skipped, self.failed, self.excluded, self.usage + usage, cost
        )

    def one_done(self, excluded: bool = False) -> StageStats:
        """These stats with one more item done (or excluded, kept out of training)."""
        if excluded:
            return StageStats(
                self.done, self.skipped, self.failed, self.excluded + 1, self.usage, self.cost
            )
        return StageStats(
            self.done + 1, self.skipped, self.failed, self.excluded, self.usage, self.cost
        )

    def merge(self, other: StageStats) -> StageStats:
        """The sum of two stats; the cost stays unknown only if both are."""
        cost = self.cost
        if other.cost is not None:
            cost = (cost or 0.0) + other.cost
        return StageStats(
            done=self.done + other.done,
            skipped=self.skipped + other.skipped,
            failed=self.failed + other.failed,
            excluded=self.excluded + other.excluded,
            usage=self.usage + other.usage,
            cost=cost,
        )


@attrs.frozen
class StageStarted:
    """A stage started with `total` selected items."""

    stage: Stage
    total: int


@attrs.frozen
class ItemDone:
    """One item ended; `usage` None means it was already stored and skipped.

    `written` counts the records the item added where it makes several of another kind
    (subtopics of a topic, questions of a subtopic); None where the item is its own record.
    """

    stage: Stage
    id: str
    usage: Usage | None = None
    cost: float | None = None
    excluded: bool = False
    estimated: bool = False
    """The reply had no usage: `usage` and `cost` are estimated from its text."""
    written: int | None = None
    """Records of another kind the item added (subtopics, questions), for progress."""


@attrs.frozen
class ItemFailed:
    """An attempt (`retryable`) or an item failed; `error` never holds secrets."""

    stage: Stage
    id: str
    error: str
    retryable: bool = False


@attrs.frozen
class StageModel:
    """The model of the stage's role, published right after `StageStarted`."""

    stage: Stage
    model: str


@attrs.frozen
class StageFinished:
    """Final counters of a stage."""

    stage: Stage
    stats: StageStats


@attrs.frozen
class RunWatched:
    """The flow now follows this run's job (`job` None for training)."""

    run_id: str
    job: JobKind | None = None


@attrs.frozen
class Metric:
    """A training or evaluation log line of the followed job."""

    metric: TrainMetric


@attrs.frozen
class MarkEvent:
    """A stage, eval-progress or end line of the followed job."""

    mark: Mark


@attrs.frozen
class JobStatusChanged:
    """The followed job is in a new state."""

    status: JobStatus


@attrs.frozen
class PodStatusChanged:
    """The run's Runpod pod changed."""

    status: PodStatus


@attrs.frozen
class System:
    """A machine sample of the followed job's target."""

    sample: SystemSample


@attrs.frozen
class Push:
    """Bytes uploaded to the Hugging Face Hub so far."""

    run_id: str
    done: int
    total: int


@attrs.frozen
class Judged:
    """Questions of a compare judged so far; `cost`: USD this command's judge requests cost so
    far (None when the judge's price is unknown)."""

    compare_id: str
    done: int
    total: int
    cost: float | None = None


@attrs.frozen
class ConcurrencyChanged:
    """The adaptive limit of one `provider/model` moved (`rate limited`, `grown`, `headers`)."""

    model: str
    old: int
    new: int
    reason: str


@attrs.frozen
class RateLimitWait:
    """Sending to one `provider/model` pauses about `seconds` for the provider's rate limit.

    `reason` is `window` (its `budget` — `requests`, `tokens`, `input tokens`, `output
    tokens` — has `remaining` of `limit` left; `limit` None when unstated) or `rate limited
    (429)`. Published when the pause begins, and again at least every minute while it lasts.
    """

    model: str
    seconds: float
    reason: str
    budget: str | None = None
    remaining: int | None = None
    limit: int | None = None


@attrs.frozen
class PodSpend:
    """The run's Runpod pod costs `cost_per_hour` USD and has cost about `spent` USD so far.

    Published while a job on the pod is followed, at once and then every few seconds, so a
    front end shows the spend without reading the pod record or doing the pod's arithmetic.
    """

    pod_id: str
    cost_per_hour: float
    spent: float


Event = (
    StageStarted
    | ItemDone
    | ItemFailed
    | StageModel
    | StageFinished
    | RunWatched
    | Metric
    | MarkEvent
    | JobStatusChanged
    | PodStatusChanged
    | System
    | Push
    | Judged
    | ConcurrencyChanged
    | PodSpend
    | RateLimitWait
)

EVENT_TYPES: tuple[type[Event], ...] = (
    StageStarted,
    ItemDone,
    ItemFailed,
    StageModel,
    StageFinished,
    RunWatched,
    Metric,
    MarkEvent,
    JobStatusChanged,
    PodStatusChanged,
    System,
    Push,
    Judged,
    ConcurrencyChanged,
    PodSpend,
    RateLimitWait,
)
"""Every event class, in the reference's declaration order (ours beyond it last)."""


class ItemResult(enum.Enum):
    """How an item ended."""

    DONE = "done"
    SKIPPED = "skipped"
    EXCLUDED = "excluded"
    FAILED = "failed"


def item_result(event: Event) -> tuple[Stage, ItemResult] | None:
    """The stage and result of an event that ends an item; None for every other event."""
    match event:
        case ItemDone(stage=stage, usage=None):
            return stage, ItemResult.SKIPPED
        case ItemDone(stage=stage, excluded=True):
            return stage, ItemResult.EXCLUDED
        case ItemDone(stage=stage):
            return stage, ItemResult.DONE
        case ItemFailed(stage=stage, retryable=False):
            return stage, ItemResult.FAILED
        case _:
            return None
