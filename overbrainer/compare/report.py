"""The report: `compare.json` and `compare.md` (§A.12), with the interval, both-orders and
under-load figures added after the reference's own lines."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import attrs

from overbrainer.compare.answers import ChildAnswer, LoadFigures
from overbrainer.compare.base_report import BaseReport, base_json, base_row, base_section
from overbrainer.compare.figures import interval as _interval
from overbrainer.compare.figures import pct as _pct
from overbrainer.compare.figures import rate as _rate
from overbrainer.compare.figures import secs as _secs
from overbrainer.compare.figures import usd as _usd
from overbrainer.compare.hardware import Hardware
from overbrainer.compare.reasoning import strip_reasoning
from overbrainer.compare.setup import CompareSetup
from overbrainer.compare.stats import Costs, Summary
from overbrainer.compare.verdicts import Verdict, VerdictLine

SMALL_SAMPLE = 100


@attrs.frozen
class JudgeUsage:
    """The tokens and cost of the judge requests of the command that wrote the report.

    A rejudge that resumed counts only its own requests, not those of the judging it resumed.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    """None when the judge's price is unknown."""
    estimated: bool = False
    """Some reply had no usage: its tokens (and cost) are estimated from its text."""
    earlier_verdicts: int = 0
    """Verdicts an earlier command wrote (a resumed rejudge): their cost is not in these."""

    def describe(self) -> str:
        """`300 in, 50 out; $0.0004` with ` (estimated)` or `cost unknown` (never estimated)."""
        cost = "cost unknown" if self.cost is None else f"${self.cost:.4f}"
        line = f"{self.input_tokens} in, {self.output_tokens} out; {cost}"
        return line + (" (estimated)" if self.estimated and self.cost is not None else "")


@attrs.frozen
class Report:
    """Everything the two report files show."""

    setup: CompareSetup
    hardware: Hardware | None
    judge: str
    judge_is_parent: bool
    verdicts_file: str
    summary: Summary
    costs: Costs
    child_price_from_pod: bool
    verdicts: tuple[VerdictLine, ...]
    answers: dict[str, ChildAnswer]
    judge_both_orders: bool = False
    load: LoadFigures | None = None
    judge_usage: JudgeUsage = JudgeUsage()
    base: BaseReport | None = None
    """The child against its base model (`compare --base`); None: no base was asked."""


def _question_entries(report: Report) -> list[dict[str, Any]]:
    by_id = {q.id: q for q in report.setup.questions}
    entries = []
    for line in report.verdicts:
        question = by_id[line.id]
        answer = report.answers.get(line.id)
        usable = answer is not None and not answer.is_error
        entries.append(
            {
                "id": line.id,
                "topic": question.topic,
                "question": question.question,
                "child": strip_reasoning(answer.answer or "") if usable and answer else None,
                "parent": question.parent,
                "verdict": line.verdict.value,
                "reason": line.reason,
                "seconds": answer.seconds if answer else None,
                "first_token_seconds": answer.first_token_seconds if answer else None,
                "tokens_per_second": answer.tokens_per_second if answer else None,
                "error": answer.error if answer else None,
            }
        )
    return entries


def report_json(report: Report) -> str:
    """`compare.json`: pretty, trailing newline, the reference's fields then ours."""
    setup, summary, costs = report.setup, report.summary, report.costs
    fields: dict[str, Any] = {
        "run": setup.run,
        "compare": setup.compare,
        "base_model": setup.base_model,
        "quantize": setup.quantize,
        "gguf_sha256": setup.gguf_sha256,
        "llama_cpp": setup.llama_cpp,
        "hardware": None if report.hardware is None else report.hardware.to_dict(),
        "judge": report.judge,
        "judge_is_parent": report.judge_is_parent,
        "verdicts_file": report.verdicts_file,
        "created": setup.created,
        "seed": setup.seed,
        "summary": attrs.asdict(summary),
        "costs": attrs.asdict(costs),
        "child_price_from_pod": report.child_price_from_pod,
        "judge_both_orders": report.judge_both_orders,
        "under_load": None if report.load is None else report.load.to_dict(),
        "judge_usage": attrs.asdict(report.judge_usage),
        "questions_file": None
        if setup.questions_file is None
        else {"path": setup.questions_file, "sha256": setup.questions_sha256},
        "questions": _question_entries(report),
        "base": None if report.base is None else base_json(report.base, setup),
    }
    return json.dumps(fields, indent=2, ensure_ascii=False) + "\n"


def _heading(question: str) -> str:
    one_line = re.sub(r"\s+", " ", question).strip()
    return one_line[:77] + "..." if len(one_line) > 80 else one_line


def _quote(text: str) -> list[str]:
    return [f"> {line}" if line else ">" for line in text.split("\n")] if text else []


def _child_quote(answer: ChildAnswer | None) -> list[str]:
    if answer is None:
        return ["> (no answer)"]
    if answer.error is not None:
        return [f"> (no answer: {answer.error})"]
    if answer.answer is None:
        return ["> (no answer)"]
    return _quote(strip_reasoning(answer.answer))


def _examples(report: Report, title: str, lines: Sequence[VerdictLine]) -> list[str]:
    if not lines:
        return []
    by_id = {q.id: q for q in report.setup.questions}
    shown = lines[:5]
    out = [f"## {title} (first {len(shown)} of {len(lines)})", ""]
    for line in shown:
        question = by_id[line.id]
        out += [f"### {line.id}: {_heading(question.question)}", "", "Child:", ""]
        out += _child_quote(report.answers.get(line.id))
        out += ["", "Parent:", "", *_quote(question.parent), ""]
        if line.reason:
            out += [f"Judge: {line.reason}", ""]
    return out


def _summary_rows(report: Report) -> list[str]:
    s, c = report.summary, report.costs
    priced = c.parent_per_1k is not None or c.child_per_1k is not None
    unset = "not computed: set [compare] prices"
    rows = [
        ("Win or tie", _pct(s.win_or_tie)),
        ("Wins / ties / losses", f"{s.wins} / {s.ties} / {s.losses + s.errors}"),
        ("Unparsed verdicts (not counted)", str(s.unparsed)),
        ("Child errors (counted as losses)", str(s.errors)),
        ("Child answers cut at the token limit", str(s.truncated)),
        ("Latency p50 / p95", f"{_secs(s.latency_p50)} / {_secs(s.latency_p95)}"),
        ("Time to first token p50", _secs(s.first_token_p50)),
        ("Output tokens per second", _rate(s.tokens_per_second)),
        ("Parent cost per 1,000 requests", _usd(c.parent_per_1k) if priced else unset),
        (
            "Child cost per 1,000 requests",
            f"{_usd(c.child_per_1k)} (upper bound)" if priced else unset,
        ),
        ("Child cost / parent cost", _pct(c.ratio)),
    ]
    rows.append(
        ("Win or tie, 95% interval (Wilson)", _interval(s.win_or_tie_low, s.win_or_tie_high))
    )
    if report.judge_both_orders:
        rows.append(("Position-inconsistent verdicts (not counted)", str(s.inconsistent)))
    load = report.load
    if load is not None:
        n = load.concurrency
        rows += [
            (f"Under load ({n} parallel): requests per second", _rate2(load.requests_per_second)),
            (f"Under load ({n} parallel): output tokens per second", _rate(load.tokens_per_second)),
            (
                f"Under load ({n} parallel): latency p50 / p95",
                f"{_secs(load.latency_p50)} / {_secs(load.latency_p95)}",
            ),
            (
                f"Under load ({n} parallel): child cost per 1,000 requests",
                _usd(c.child_under_load_per_1k) if priced else unset,
            ),
            (f"Under load ({n} parallel): child cost / parent cost", _pct(c.ratio_under_load)),
        ]
    rows.append(("Judge tokens and cost (this command)", report.judge_usage.describe()))
    return [f"| {name} | {value} |" for name, value in rows]


def _rate2(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _limits(report: Report) -> list[str]:
    s = report.summary
    bullets = []
    if report.judge_is_parent:
        bullets.append(
            "The judge is the parent model: it may favor its own answers. Set `roles.judge` to"
            " another model and run `overbrainer compare --rejudge <compare-id>`."
        )
    if s.questions < SMALL_SAMPLE:
        bullets.append(
            f"{s.questions} questions: a small sample, the rates move by several points from"
            " one set to another."
        )
    bullets.append(
        "Requests were sent one at a time: the latency is that of one user, and the child cost"
        " is an upper bound (a server under load answers several requests at once)."
    )
    if report.setup.questions_file is not None:
        bullets.append(
            f"The questions and the parent's answers came from `{report.setup.questions_file}`,"
            " not data/eval.jsonl: the parent's cost per 1,000 requests is unknown."
        )
    if report.child_price_from_pod:
        bullets.append("The child's hourly price is the Runpod pod's.")
    if report.base is not None and report.load is not None:
        bullets.append(
            "The under-load figures are the child's alone: the base model was asked one"
            " request at a time."
        )
    if s.truncated > 0:
        noun = "child answer" if s.truncated == 1 else "child answers"
        bullets.append(
            f"{s.truncated} {noun} hit the token limit; raise [compare] max_tokens or the context."
        )
    if report.hardware is not None and not report.hardware.has_gpu:
        bullets.append("The child ran on a CPU.")
    earlier = report.judge_usage.earlier_verdicts
    if earlier > 0:
        bullets.append(
            f"The judge cost counts this command's requests only: {earlier} verdict(s) came from"
            " an earlier judging (see `overbrainer history --all`)."
        )
    return [f"- {b}" for b in bullets]


def _questions_cell(report: Report) -> str:
    setup = report.setup
    count = report.summary.questions
    if setup.questions_file is None:
        return str(count)
    digest = (setup.questions_sha256 or "")[:12]
    return f"{count}, from `{setup.questions_file}` (SHA-256 {digest})"


def report_markdown(report: Report) -> str:
    """`compare.md`, the reference's layout, our rows at the end of the summary table."""
    setup = report.setup
    judge = report.judge + (" (the parent)" if report.judge_is_parent else "")
    gguf = f"{setup.quantize}, llama.cpp {setup.llama_cpp}, SHA-256 {setup.gguf_sha256[:12]}"
    hardware = "unknown" if report.hardware is None else report.hardware.describe()
    lines = [
        f"# Compare of run {setup.run}",
        "",
        "| | |",
        "|---|---|",
        f"| Compare | {setup.compare} |",
        f"| Base model | {setup.base_model or 'unknown'} |",
        f"| GGUF | {gguf} |",
        *base_row(setup),
        f"| Hardware | {hardware} |",
        f"| Judge | {judge} |",
        f"| Questions | {_questions_cell(report)} |",
        f"| Date | {setup.created} |",
        "",
        "## Summary",
        "",
        "| Measure | Value |",
        "|---|---|",
        *_summary_rows(report),
        "",
    ]
    if report.base is not None:
        lines += base_section(report.base, report.judge_both_orders)
    errors = [v for v in report.verdicts if v.verdict == Verdict.ERROR]
    losses = errors + [v for v in report.verdicts if v.verdict == Verdict.LOSS]
    wins = [v for v in report.verdicts if v.verdict == Verdict.WIN]
    lines += _examples(report, "Losses", losses)
    lines += _examples(report, "Wins", wins)
    lines += ["## Limits", "", *_limits(report)]
    return "\n".join(lines) + "\n"
