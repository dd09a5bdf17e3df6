"""The child's answers (`child_answers.jsonl`) and throughput under load (`load.json`) (§A.6)."""

from __future__ import annotations

import attrs

from overbrainer.model import codec


# Written by the compare client on the target: unknown fields are ignored and a NaN figure
# reads as unknown.
@codec.record("child answer", strict=False, nan_as_null=True)
@attrs.frozen
class ChildAnswer(codec.JsonRecord):
    """One line of `child_answers.jsonl`: the child's answer and its timings, or an error."""

    id: str
    answer: str | None = None
    finish: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    seconds: float | None = None
    first_token_seconds: float | None = None
    tokens_per_second: float | None = None
    error: str | None = None

    @property
    def is_error(self) -> bool:
        """No usable answer: an error, or no answer at all (an empty answer is usable)."""
        return self.error is not None or self.answer is None


def parse_answers(text: str) -> list[ChildAnswer]:
    """Every answer line of `child_answers.jsonl`; a torn or foreign line is skipped."""
    found: list[ChildAnswer] = []
    for line in text.splitlines():
        if line.strip():
            try:
                found.append(ChildAnswer.from_json(line))
            except ValueError:
                continue
    return found


@codec.record("load figures", strict=False, nan_as_null=True)
@attrs.frozen
class LoadFigures(codec.JsonRecord):
    """Beyond the reference: the child under `concurrency` parallel requests (`load.json`)."""

    concurrency: int
    requests: int
    errors: int
    wall_seconds: float
    requests_per_second: float | None
    tokens_per_second: float | None
    latency_p50: float | None
    latency_p95: float | None
