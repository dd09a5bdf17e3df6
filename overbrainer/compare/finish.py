"""Judge a compare's answers and write its report (§A.8, §A.12, §A.13)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import attrs
import trio

from overbrainer.compare.answers import ChildAnswer, LoadFigures, parse_answers
from overbrainer.compare.base_report import BaseReport
from overbrainer.compare.hardware import Hardware
from overbrainer.compare.job import ANSWERS_FILE, BASE_ANSWERS_FILE
from overbrainer.compare.judge import Judge, Judging, judge_all, read_verdicts
from overbrainer.compare.judge_cost import JudgeSpend
from overbrainer.compare.report import Report, report_json, report_markdown
from overbrainer.compare.setup import SETUP_FILE, CompareSetup
from overbrainer.compare.stats import Prices, costs, summarize
from overbrainer.compare.verdicts import VerdictLine, verdicts_file_name, verdicts_key
from overbrainer.config.settings import Compare
from overbrainer.events.bus import EventBus
from overbrainer.model.errors import UsageError, WorkFailed
from overbrainer.storage import write_atomic

REPORT_JSON = "compare.json"
REPORT_MD = "compare.md"


def load_setup(folder: Path) -> CompareSetup:
    """The compare's `setup.json` (blocking)."""
    path = folder / SETUP_FILE
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None
    try:
        return CompareSetup.from_json(data, str(path))
    except ValueError as error:
        raise UsageError(str(error)) from None


def load_answers(folder: Path, setup: CompareSetup, base: bool = False) -> list[ChildAnswer]:
    """The child's answers, or the base model's; the spec's error when there are none
    (blocking)."""
    try:
        name = BASE_ANSWERS_FILE if base else ANSWERS_FILE
        text = (folder / name).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    answers = parse_answers(text)
    if not answers:
        whose, flag = ("the base model", " --base") if base else ("the child", "")
        raise WorkFailed(
            f"compare {setup.compare} has no answers of {whose}: run "
            f"`overbrainer compare --run {setup.run}{flag}` again"
        )
    return answers


def _optional(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def load_hardware(folder: Path) -> Hardware | None:
    """`hardware.json`, or None when missing or unreadable (blocking)."""
    text = _optional(folder / "hardware.json")
    try:
        return None if text is None else Hardware.from_json(text)
    except ValueError:
        return None


def load_load(folder: Path) -> LoadFigures | None:
    """`load.json` (throughput under load), or None (blocking)."""
    text = _optional(folder / "load.json")
    try:
        return None if text is None else LoadFigures.from_json(text)
    except ValueError:
        return None


def pod_price(folder: Path) -> float | None:
    """The hourly price in the compare's pod record, if it ran on a pod (blocking)."""
    text = _optional(folder / "pod.json")
    if text is None:
        return None
    try:
        value = json.loads(text).get("cost_per_hour")
    except (ValueError, AttributeError):
        return None
    return float(value) if isinstance(value, int | float) else None


def verdicts_path(folder: Path, judge: Judge, both_orders: bool, base: bool = False) -> Path:
    """`verdicts-<key>.jsonl` of this judge and prompt (`verdicts-base-<key>.jsonl`: the
    child against the base model)."""
    key = verdicts_key(judge.provider, judge.role.model, judge.template_source, both_orders)
    return folder / verdicts_file_name(key, base)


def judged_count(path: Path, setup: CompareSetup) -> int:
    """How many of the setup's questions `path` holds a verdict on (blocking)."""
    ids = {q.id for q in setup.questions}
    return sum(1 for i in read_verdicts(path) if i in ids)


async def judge_both(
    judging: Judging, folder: Path, setup: CompareSetup, answers: list[ChildAnswer]
) -> tuple[list[VerdictLine], BaseReport | None] | None:
    """The child against the parent, then (a compare with the base) against the base model,
    both judgings under the one `judging` (its spend, its admission); None when it stopped
    admitting first. The `Judged` events count both: `total` is twice the questions then."""
    both = judging.both_orders
    path = verdicts_path(folder, judging.judge, both)
    if setup.base_gguf is None:
        alone = await judge_all(judging, setup, answers, path)
        return None if alone is None else (alone, None)
    base_answers = await trio.to_thread.run_sync(load_answers, folder, setup, True)
    base_path = verdicts_path(folder, judging.judge, both, base=True)
    total = 2 * len(setup.questions)
    earlier = await trio.to_thread.run_sync(judged_count, base_path, setup)
    first = attrs.evolve(judging, done_elsewhere=earlier, total=total)
    verdicts = await judge_all(first, setup, answers, path)
    if verdicts is None:
        return None
    by_id = {a.id: a for a in base_answers}
    second = attrs.evolve(judging, base=by_id, done_elsewhere=len(verdicts), total=total)
    base_verdicts = await judge_all(second, setup, answers, base_path)
    if base_verdicts is None:
        return None
    summary = summarize([v.verdict for v in base_verdicts], base_answers)
    return verdicts, BaseReport(base_path.name, summary, tuple(base_verdicts), by_id)


async def judge_and_report(
    folder: Path,
    judge: Judge,
    settings: Compare,
    *,
    concurrency: int,
    bus: EventBus,
    spend: JudgeSpend,
    admitting: Callable[[], bool] = lambda: True,
) -> Report | None:
    """Judge what is not judged yet, then write `compare.json` and `compare.md`; the report.

    None, and no report, when `admitting()` turned false before every question was judged.
    Every judge request goes through `spend`; the report carries what it counted.
    """
    setup = await trio.to_thread.run_sync(load_setup, folder)
    answers = await trio.to_thread.run_sync(load_answers, folder, setup)
    path = verdicts_path(folder, judge, settings.judge_both_orders)
    judging = Judging(judge, spend, bus, concurrency, settings.judge_both_orders, admitting)
    judged = await judge_both(judging, folder, setup, answers)
    if judged is None:
        return None
    verdicts, base = judged
    hardware = await trio.to_thread.run_sync(load_hardware, folder)
    load = await trio.to_thread.run_sync(load_load, folder)
    from_pod = await trio.to_thread.run_sync(pod_price, folder)
    per_hour = settings.child_price_per_hour
    prices = Prices(
        settings.parent_price_in,
        settings.parent_price_out,
        per_hour if per_hour is not None else from_pod,
        per_hour is None and from_pod is not None,
    )
    summary = summarize([v.verdict for v in verdicts], answers)
    # A user's file gives the parent's answers but not what they cost: that stays unknown.
    parent_tokens = (
        []
        if setup.questions_file is not None
        else [(q.parent_input_tokens, q.parent_output_tokens) for q in setup.questions]
    )
    report = Report(
        setup=setup,
        hardware=hardware,
        judge=judge.label,
        judge_is_parent=judge.is_parent,
        verdicts_file=path.name,
        summary=summary,
        costs=costs(prices, parent_tokens, summary.mean_seconds, load),
        child_price_from_pod=prices.child_from_pod,
        verdicts=tuple(verdicts),
        answers={a.id: a for a in answers},
        judge_both_orders=settings.judge_both_orders,
        load=load,
        judge_usage=spend.usage(),
        base=base,
    )

    def write() -> None:
        write_atomic(folder / REPORT_JSON, report_json(report))
        write_atomic(folder / REPORT_MD, report_markdown(report))

    await trio.to_thread.run_sync(write)
    return report
