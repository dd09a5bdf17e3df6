"""What makes a compare-kind job (llama-server on the run's target) a compare or a bench: its
word, its folder under the run, its script, what it brings back, its extra variables,
and how its end is recorded. `CompareJob` runs either; the compare's is the default."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from overbrainer.compare.job import ARTIFACTS, COMPARE_COMMAND, COMPARES_DIR
from overbrainer.model.errors import OverbrainerError
from overbrainer.model.job_kind import JobKind
from overbrainer.model.job_status import JobStatus
from overbrainer.targets import Command
from overbrainer.training import RunRecord

Conclude = Callable[[RunRecord, JobStatus], None]
"""Record how the job ended (blocking); raise `WorkFailed` when it failed."""
Cancelled = Callable[[RunRecord], OverbrainerError]
"""Record the job cancelled (blocking); the error Ctrl-C ends the command with."""


@attrs.frozen
class Served:
    """The parameters of a compare-kind job; `Served()` is the compare itself."""

    kind: JobKind = JobKind.COMPARE
    """The job's kind: its progress lines' subject and its events' `job`."""
    word: str = "compare"
    folder: str = COMPARES_DIR
    command: Command = COMPARE_COMMAND
    artifacts: tuple[str, ...] = ARTIFACTS
    env: Mapping[str, str] = attrs.field(factory=dict)
    """The variables the job reads besides the compare's own (which name the GGUFs)."""
    conclude: Conclude | None = None
    """None: the compare's own end (`job.conclude`)."""
    cancelled: Cancelled | None = None
    """None: the compare's own cancel (`job.cancelled`)."""
    what: str | None = None
    """What the job does, for the line that prices its machine; None: the compare's questions."""
