"""The child against its base model (`compare --base`): its part of `compare.json` and
`compare.md`, judged and measured as the child against the parent is."""

from __future__ import annotations

from typing import Any

import attrs

from overbrainer.compare.answers import ChildAnswer
from overbrainer.compare.figures import interval, pct, rate, secs
from overbrainer.compare.reasoning import strip_reasoning
from overbrainer.compare.setup import CompareSetup
from overbrainer.compare.stats import Summary
from overbrainer.compare.verdicts import VerdictLine

SECTION = "The child against its base"


@attrs.frozen
class BaseReport:
    """The verdicts of the child against the base model's answers, and their figures.

    `summary` counts them as the parent's are (a child error is a loss); its timings are the
    base model's answers'.
    """

    verdicts_file: str
    summary: Summary
    verdicts: tuple[VerdictLine, ...]
    answers: dict[str, ChildAnswer]
    """The base model's answers, by question ID."""

    @property
    def base_errors(self) -> int:
        """Questions the base model did not answer (each a win of the child's)."""
        ids = {v.id for v in self.verdicts}
        return sum(1 for i, a in self.answers.items() if i in ids and a.is_error)

    @property
    def counted(self) -> int:
        """The verdicts in the rate: unparsed and position-inconsistent ones left out."""
        s = self.summary
        return s.questions - s.unparsed - s.inconsistent


def base_row(setup: CompareSetup) -> list[str]:
    """The header row naming the base model's GGUF; none without a base."""
    if setup.base_gguf is None:
        return []
    digest = (setup.base_gguf_sha256 or "")[:12]
    return [f"| Base GGUF | {setup.base_quantize or '-'}, SHA-256 {digest} |"]


def reading(base: BaseReport) -> str:
    """The section's one line: how often the child won or tied, and the interval."""
    s = base.summary
    if base.counted <= 0:
        return "No verdict of the child against its base could be counted."
    good = s.wins + s.ties
    return (
        f"The child won or tied {good} of {base.counted} against its base; interval "
        f"{interval(s.win_or_tie_low, s.win_or_tie_high)} (Wilson, 95%)."
    )


def base_section(base: BaseReport, both_orders: bool) -> list[str]:
    """`## The child against its base`: the reading line, then the measures' table."""
    s = base.summary
    rows = [
        ("Win or tie", pct(s.win_or_tie)),
        ("Wins / ties / losses", f"{s.wins} / {s.ties} / {s.losses + s.errors}"),
        ("Unparsed verdicts (not counted)", str(s.unparsed)),
        ("Win or tie, 95% interval (Wilson)", interval(s.win_or_tie_low, s.win_or_tie_high)),
    ]
    if both_orders:
        rows.append(("Position-inconsistent verdicts (not counted)", str(s.inconsistent)))
    rows += [
        ("Base errors (counted as child wins)", str(base.base_errors)),
        ("Base latency p50 / p95", f"{secs(s.latency_p50)} / {secs(s.latency_p95)}"),
        ("Base output tokens per second", rate(s.tokens_per_second)),
    ]
    return [
        f"## {SECTION}",
        "",
        reading(base),
        "",
        "| Measure | Value |",
        "|---|---|",
        *[f"| {name} | {value} |" for name, value in rows],
        "",
    ]


def base_json(base: BaseReport, setup: CompareSetup) -> dict[str, Any]:
    """`compare.json`'s `base`: the GGUF, the verdict file, the summary, each question."""
    questions = []
    for line in base.verdicts:
        answer = base.answers.get(line.id)
        usable = answer is not None and not answer.is_error
        questions.append(
            {
                "id": line.id,
                "verdict": line.verdict.value,
                "reason": line.reason,
                "base": strip_reasoning(answer.answer or "") if usable and answer else None,
                "seconds": answer.seconds if answer else None,
                "tokens_per_second": answer.tokens_per_second if answer else None,
                "error": answer.error if answer else None,
            }
        )
    return {
        "gguf": setup.base_gguf,
        "gguf_sha256": setup.base_gguf_sha256,
        "quantize": setup.base_quantize,
        "verdicts_file": base.verdicts_file,
        "summary": attrs.asdict(base.summary),
        "base_errors": base.base_errors,
        "questions": questions,
    }
