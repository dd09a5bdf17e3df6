"""What `compare` hands its front end (`--json`'s `"compare"`): the report's figures and files."""

from __future__ import annotations

from pathlib import Path

import attrs

from overbrainer.compare.base_report import BaseReport
from overbrainer.compare.finish import REPORT_JSON, REPORT_MD
from overbrainer.compare.report import Report
from overbrainer.compare.stats import Summary


@attrs.frozen
class CompareLatency:
    """The child's timings over its usable answers, in seconds (None when none had one)."""

    p50_secs: float | None
    p95_secs: float | None
    first_token_p50_secs: float | None
    mean_secs: float | None
    tokens_per_second: float | None


@attrs.frozen
class CompareCosts:
    """USD per 1,000 requests, as the report's cost rows (`ratio`: child's over parent's)."""

    parent_per_1k_usd: float | None
    child_per_1k_usd: float | None
    ratio: float | None
    child_under_load_per_1k_usd: float | None
    ratio_under_load: float | None
    child_price_from_pod: bool
    """The child's hourly price is the pod's, not `[compare] child_price_per_hour`."""


@attrs.frozen
class JudgeSpending:
    """This command's judge requests (a resumed rejudge counts only its own)."""

    judge: str
    """The judge as the report names it (`provider/model`)."""
    is_parent: bool
    input_tokens: int
    output_tokens: int
    cost: float | None
    cost_estimated: bool
    earlier_verdicts: int


@attrs.frozen
class BaseResult:
    """The child against its base model (`compare --base`): the same counts and rate, the
    base model's timings, its GGUF and verdict file."""

    gguf: str | None
    quantize: str | None
    wins: int
    ties: int
    losses: int
    unparsed: int
    errors: int
    """The child's errors (counted as losses), as in the parent's counts."""
    base_errors: int
    """Questions the base model did not answer (counted as the child's wins)."""
    inconsistent: int
    win_or_tie: float | None
    win_or_tie_low: float | None
    win_or_tie_high: float | None
    latency: CompareLatency
    """The base model's timings."""
    verdicts_file: Path


@attrs.frozen
class CompareResult:
    """One compare's report: the verdict counts, the win-or-tie rate and its 95 % Wilson
    interval, the timings, the costs, the judge's spending, and where the files are."""

    compare_id: str
    run_id: str
    base_model: str | None
    quantize: str
    questions: int
    wins: int
    ties: int
    losses: int
    unparsed: int
    errors: int
    truncated: int
    inconsistent: int
    """Verdicts that changed with the answers' order (`judge_both_orders`)."""
    both_orders: bool
    win_or_tie: float | None
    """Wins and ties over the judged questions (unparsed and inconsistent left out)."""
    win_or_tie_low: float | None
    win_or_tie_high: float | None
    latency: CompareLatency
    costs: CompareCosts
    judge: JudgeSpending
    report_md: Path
    report_json: Path
    verdicts_file: Path
    base: BaseResult | None = None
    """The child against its base model; None when the compare did not ask it."""


def compare_result(report: Report, folder: Path) -> CompareResult:
    """The result of `report`, its files named under `folder` (as the command shows them)."""
    summary, costs, usage = report.summary, report.costs, report.judge_usage
    return CompareResult(
        compare_id=report.setup.compare,
        run_id=report.setup.run,
        base_model=report.setup.base_model,
        quantize=report.setup.quantize,
        questions=summary.questions,
        wins=summary.wins,
        ties=summary.ties,
        losses=summary.losses,
        unparsed=summary.unparsed,
        errors=summary.errors,
        truncated=summary.truncated,
        inconsistent=summary.inconsistent,
        both_orders=report.judge_both_orders,
        win_or_tie=summary.win_or_tie,
        win_or_tie_low=summary.win_or_tie_low,
        win_or_tie_high=summary.win_or_tie_high,
        latency=_latency(summary),
        costs=CompareCosts(
            costs.parent_per_1k,
            costs.child_per_1k,
            costs.ratio,
            costs.child_under_load_per_1k,
            costs.ratio_under_load,
            report.child_price_from_pod,
        ),
        judge=JudgeSpending(
            report.judge,
            report.judge_is_parent,
            usage.input_tokens,
            usage.output_tokens,
            usage.cost,
            usage.estimated,
            usage.earlier_verdicts,
        ),
        report_md=folder / REPORT_MD,
        report_json=folder / REPORT_JSON,
        verdicts_file=folder / report.verdicts_file,
        base=None if report.base is None else base_result(report.base, report, folder),
    )


def _latency(summary: Summary) -> CompareLatency:
    return CompareLatency(
        summary.latency_p50,
        summary.latency_p95,
        summary.first_token_p50,
        summary.mean_seconds,
        summary.tokens_per_second,
    )


def base_result(base: BaseReport, report: Report, folder: Path) -> BaseResult:
    """The base part of the result, its verdict file named under `folder`."""
    s = base.summary
    return BaseResult(
        gguf=report.setup.base_gguf,
        quantize=report.setup.base_quantize,
        wins=s.wins,
        ties=s.ties,
        losses=s.losses,
        unparsed=s.unparsed,
        errors=s.errors,
        base_errors=base.base_errors,
        inconsistent=s.inconsistent,
        win_or_tie=s.win_or_tie,
        win_or_tie_low=s.win_or_tie_low,
        win_or_tie_high=s.win_or_tie_high,
        latency=_latency(s),
        verdicts_file=folder / base.verdicts_file,
    )
