"""What a training job is doing beyond its step count (phases), and its pace for an ETA."""

from __future__ import annotations

import attrs

from overbrainer.model.train_metric import EndMark, EvalMark, JobStage, Mark, StageMark, TrainMetric


@attrs.frozen
class Training:
    """The trainer is taking optimizer steps."""

    def name(self) -> str:
        """The phase's short name."""
        return "training"

    def label(self) -> str:
        """The words the progress line shows."""
        return "training"


@attrs.frozen
class Evaluating:
    """An evaluation is under way; `last` when it is the final one after training."""

    step: int
    total: int | None = None
    last: bool = False

    def name(self) -> str:
        """The phase's short name."""
        return "evaluating"

    def label(self) -> str:
        """The words the progress line shows."""
        progress = f"{self.step}/{self.total}" if self.total is not None else f"{self.step}"
        if self.last:
            return f"finalizing (evaluation {progress})"
        return f"evaluating {progress}"


@attrs.frozen
class Finalizing:
    """The training loop ended; the trainer saves the model."""

    def name(self) -> str:
        """The phase's short name."""
        return "finalizing"

    def label(self) -> str:
        """The words the progress line shows."""
        return "finalizing (saving model)"


@attrs.frozen
class Merging:
    """The adapter is being merged into the base model."""

    def name(self) -> str:
        """The phase's short name."""
        return "merging"

    def label(self) -> str:
        """The words the progress line shows."""
        return "merging adapter"


@attrs.frozen
class Exporting:
    """The model is being exported to GGUF."""

    def name(self) -> str:
        """The phase's short name."""
        return "exporting"

    def label(self) -> str:
        """The words the progress line shows."""
        return "exporting GGUF"


@attrs.frozen
class Comparing:
    """The child answers the eval questions; `total` unknown while llama-server starts."""

    step: int = 0
    total: int | None = None

    def name(self) -> str:
        """The phase's short name."""
        return "comparing"

    def label(self) -> str:
        """The words the progress line shows."""
        if self.total is None:
            return "starting llama-server"
        return f"answering {self.step}/{self.total}"


@attrs.frozen
class Retrieving:
    """The job exited; its results are being fetched."""

    def name(self) -> str:
        """The phase's short name."""
        return "retrieving"

    def label(self) -> str:
        """The words the progress line shows."""
        return "retrieving results"


Phase = Training | Evaluating | Finalizing | Merging | Exporting | Comparing | Retrieving

PHASE_NAMES: tuple[str, ...] = (
    "training",
    "evaluating",
    "finalizing",
    "merging",
    "exporting",
    "comparing",
    "retrieving",
)
"""The seven phase names, in the reference's order."""


@attrs.define
class Phases:
    """What the job's lines told so far, from which its current phase follows."""

    stage: JobStage | None = None
    eval: tuple[int, int | None] | None = None
    ended: bool = False
    step: int = 0
    max_steps: int | None = None

    def begin(self, max_steps: int | None) -> None:
        """The plugin loaded (a `begin` line)."""
        if max_steps is not None:
            self.max_steps = max_steps

    def metric(self, metric: TrainMetric) -> None:
        """A training or eval log line; it ends any evaluation told before."""
        self.step = max(self.step, metric.step)
        if metric.max_steps is not None:
            self.max_steps = metric.max_steps
        self.eval = None

    def mark(self, mark: Mark) -> None:
        """A stage, eval-progress or end line."""
        match mark:
            case StageMark(stage=stage):
                self.stage = stage
            case EvalMark(step=step, total=total):
                self.eval = (step, total)
            case EndMark(step=step):
                self.ended = True
                self.step = max(self.step, step)

    def phase(self, exited: bool) -> Phase:
        """The job's current phase; `exited` when its process has ended."""
        if exited:
            return Retrieving()
        if self.stage is JobStage.MERGE:
            return Merging()
        if self.stage is JobStage.EXPORT:
            return Exporting()
        if self.stage is JobStage.COMPARE:
            step, total = self.eval if self.eval is not None else (0, None)
            return Comparing(step, total)
        last = self.ended or (
            self.max_steps is not None and self.max_steps > 0 and self.step >= self.max_steps
        )
        if self.eval is not None:
            return Evaluating(self.eval[0], self.eval[1], last)
        return Finalizing() if last else Training()


@attrs.define
class Pace:
    """Steps per second between the first and the latest log with a loss, for an ETA."""

    first: tuple[int, float] | None = None
    latest: tuple[int, float] | None = None
    max_steps: int | None = None

    def metric(self, metric: TrainMetric) -> None:
        """Take a log line into account (only lines with a loss set the pace)."""
        if metric.max_steps is not None:
            self.max_steps = metric.max_steps
        if metric.loss is None:
            return
        point = (metric.step, metric.time)
        if self.first is None:
            self.first = point
        self.latest = point

    def rate(self) -> float | None:
        """Steps per second, once two logs with a loss differ in both step and time."""
        if self.first is None or self.latest is None:
            return None
        steps = self.latest[0] - self.first[0]
        seconds = self.latest[1] - self.first[1]
        if steps <= 0 or seconds <= 0:
            return None
        return steps / seconds

    def eta(self) -> float | None:
        """Seconds until `max_steps`, when both the rate and `max_steps` are known."""
        rate = self.rate()
        if rate is None or self.max_steps is None or self.latest is None:
            return None
        return max(0, self.max_steps - self.latest[0]) / rate
