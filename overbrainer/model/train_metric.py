"""Training metric lines and marks, as the job's plugin and shell write them."""

from __future__ import annotations

import enum

import attrs


class JobStage(enum.Enum):
    """A command of a job's script, told by a `stage` line."""

    TRAIN = "train"
    MERGE = "merge"
    EXPORT = "export"
    COMPARE = "compare"


@attrs.frozen
class TrainMetric:
    """One training or evaluation log of the running job."""

    time: float
    step: int
    epoch: float | None = None
    max_steps: int | None = None
    loss: float | None = None
    eval_loss: float | None = None
    learning_rate: float | None = None
    grad_norm: float | None = None


@attrs.frozen
class StageMark:
    """The job's shell started a command."""

    stage: JobStage


@attrs.frozen
class EvalMark:
    """An evaluation is under way: prediction step `step` of `total`."""

    step: int
    total: int | None = None


@attrs.frozen
class EndMark:
    """The training loop ended at `step`; the trainer's final work follows."""

    step: int


Mark = StageMark | EvalMark | EndMark
