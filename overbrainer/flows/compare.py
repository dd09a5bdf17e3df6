"""The order of work of `overbrainer compare`: plan, job on the run's target, judge, report."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import trio

from overbrainer.compare.compare_job import compare_on_machine
from overbrainer.compare.finish import REPORT_MD, judge_and_report
from overbrainer.compare.job import (
    COMPARES_DIR,
    CompareInterrupted,
    compares_of,
    create_compare,
)
from overbrainer.compare.judge import Judge, resume_hint
from overbrainer.compare.judge_cost import JudgeSpend, record_judging
from overbrainer.compare.plan import plan_compare
from overbrainer.compare.report import Report
from overbrainer.compare.result import compare_result
from overbrainer.compare.setup import CompareSetup
from overbrainer.config.settings import Settings
from overbrainer.events.frontend import Frontend
from overbrainer.events.types import Stage
from overbrainer.flows.setup import Command, CommandOptions, open_command
from overbrainer.llm import PriceBook, connect_roles
from overbrainer.model.error_groups import meaningful_error
from overbrainer.model.errors import EXIT_INTERRUPTED, OverbrainerError, UsageError
from overbrainer.pipeline.spend import SpendCap, SpendCapReached, UnknownPrices
from overbrainer.pipeline.stage_run import summary_line
from overbrainer.project.templates import parse_template, template_source
from overbrainer.storage import HistoryStatus
from overbrainer.targets import JobNeeds, kind_of, resolve_pin
from overbrainer.training import (
    Runs,
    is_valid_run_id,
    warn_missing_engine,
)

log = logging.getLogger(__name__)

JUDGE_TEMPLATE = "judge.txt"


def find_compare(runs: Runs, compare_id: str, run_id: str | None) -> Path:
    """The directory of an earlier compare: in `run_id`'s compares, else in any run's."""
    if is_valid_run_id(compare_id):
        if run_id is not None:
            folder = runs.dir_of(run_id) / COMPARES_DIR / compare_id
            if (folder / "run.json").is_file():
                return folder
        else:
            for folder in sorted(runs.root.glob(f"*/{COMPARES_DIR}/{compare_id}")):
                if (folder / "run.json").is_file():
                    return folder
    raise UsageError(f"no compare {compare_id} in runs/")


@contextlib.asynccontextmanager
async def open_judge(command: Command) -> AsyncIterator[Judge]:
    """The judge role (the parent when `[roles] judge` is unset), its price and its prompt."""
    settings = command.settings
    name = "judge" if settings.roles.judge is not None else "parent"
    source = template_source(command.project.prompts, JUDGE_TEMPLATE)
    template = parse_template(JUDGE_TEMPLATE, source)
    # The judge's waits for its provider's rate limit are announced as the pipeline's are.
    async with connect_roles(
        settings, [name], command.config.env, PriceBook(), on_wait=command.bus.publish
    ) as roles:
        role = roles[name]
        yield Judge(
            role.provider, role.role, role.client, template, source, name == "parent", role.price
        )


async def run_job(
    command: Command, setup: CompareSetup, context: int, *, keep_pod: bool = False
) -> None:
    """Start the compare job on the run's target, follow it, and record how it ended."""
    runs = Runs(command.project.runs)
    await compare_on_machine(
        command.settings, runs, setup, context, command.bus, command.interrupt, keep=keep_pod
    )


async def judge_draining(
    command: Command, folder: Path, judge: Judge, spend: JudgeSpend
) -> Report | None:
    """Judge and report; the first Ctrl-C takes no new question and gives the requests in
    flight `[pipeline] drain_secs` to finish (their verdicts kept); a second one, or the end
    of that grace, cancels them. None when interrupted."""
    interrupt = command.interrupt
    settings = command.settings
    report: Report | None = None
    async with trio.open_nursery() as nursery:

        async def cancel_after_grace() -> None:
            await interrupt.wait_caught()
            with trio.move_on_after(settings.pipeline.drain_secs):
                await interrupt.wait()
            nursery.cancel_scope.cancel()

        if not interrupt.off:
            nursery.start_soon(cancel_after_grace)
        report = await judge_and_report(
            folder,
            judge,
            settings.compare,
            concurrency=settings.pipeline.concurrency,
            bus=command.bus,
            admitting=lambda: not interrupt.caught,
            spend=spend,
        )
        nursery.cancel_scope.cancel()
    return None if interrupt.caught else report


async def judge_recorded(
    command: Command, folder: Path, compare_id: str, judge: Judge, spend: JudgeSpend
) -> Report:
    """Judge and report, the `judge` history line written on every exit path; the report."""
    history = command.project.history

    async def record(
        status: HistoryStatus, reason: str | None = None, *, cancelled: bool = False
    ) -> None:
        log.info("compare: %s", summary_line(Stage.JUDGE, spend.stats, estimated=spend.estimated))
        line = spend.history_record(judge.provider, judge.role.model, status, reason)
        await record_judging(history, line, cancelled=cancelled)

    try:
        report = await judge_draining(command, folder, judge, spend)
    except BaseException as caught:
        error: BaseException | None = caught
        if isinstance(caught, BaseExceptionGroup):
            error = meaningful_error(caught)
        if isinstance(error, SpendCapReached):
            await record(HistoryStatus.INTERRUPTED, error.reason)
        elif isinstance(error, OverbrainerError) and error.exit_code != EXIT_INTERRUPTED:
            await record(HistoryStatus.FAILED)
        else:
            # Cancelled, Ctrl-C, or a bug: the line still records what was done.
            await record(HistoryStatus.INTERRUPTED, cancelled=True)
        raise
    if report is None:
        await record(HistoryStatus.INTERRUPTED)
        raise CompareInterrupted(f"interrupted: {resume_hint(compare_id)}")
    await record(HistoryStatus.OK)
    return report


def check_target(settings: Settings, run_id: str, target_name: str, keep_pod: bool) -> None:
    """Refuse a compare whose target is gone, lacks its Runpod key or its SSH client."""
    target = settings.targets.get(target_name)
    if target is None:
        raise UsageError(f"target `{target_name}` of run {run_id} is no longer in overbrainer.toml")
    kind_of(target).check(target_name, target, JobNeeds(keep=keep_pod), settings)


async def compare_flow(
    options: CommandOptions,
    front: Frontend,
    *,
    run_id: str | None = None,
    limit: int | None = None,
    keep_pod: bool = False,
    rejudge: str | None = None,
    max_cost: float | None = None,
    questions_file: Path | None = None,
    base: bool | None = None,
) -> None:
    """`overbrainer compare`: the child's answers and timings, the judge, the report path.

    With `base` (None: `[compare] include_base`) the run's base model is asked and judged
    against the child too. The judge's requests are held to `max_cost` (default `[pipeline]
    max_cost_usd`) as the pipeline's are, and recorded as a `judge` line of the history.
    """
    front.result("compare", None)  # `--json`: null until the report is written
    async with open_command(options, front) as command, contextlib.AsyncExitStack() as stack:
        runs = Runs(command.project.runs)
        settings = command.settings
        cap = settings.pipeline.max_cost_usd if max_cost is None else max_cost
        plan = None
        if rejudge is not None:
            folder = await trio.to_thread.run_sync(find_compare, runs, rejudge, run_id)
        else:
            plan = await trio.to_thread.run_sync(
                plan_compare,
                runs,
                command.project.data / "eval.jsonl",
                run_id,
                limit,
                questions_file,
                settings.compare.include_base if base is None else base,
            )
            check_target(command.settings, plan.record.id, plan.record.target, keep_pod)
            target = command.settings.targets.get(plan.record.target)
            assert target is not None
            warn_missing_engine(plan.record.target, target)
        # The judge first: a cap without its price is refused before anything is written.
        judge = await command.interrupt.race(lambda: stack.enter_async_context(open_judge(command)))
        if judge is None:
            raise CompareInterrupted("interrupted: nothing was started")
        if cap is not None and judge.price is None:
            raise UnknownPrices()
        if rejudge is not None:
            compare_id = rejudge
        else:
            assert plan is not None
            run = plan.record
            log.info(
                "compare: run %s (%s) on %d questions, on target `%s`",
                run.id,
                plan.export.quantize,
                len(plan.questions),
                run.target,
            )
            if plan.base is not None:
                log.info("compare: with its base model (%s)", plan.base.file)
            setup = await trio.to_thread.run_sync(
                create_compare, runs, plan, resolve_pin(), command.settings.pipeline.seed
            )
            compare_id = setup.compare
            folder = compares_of(runs.dir_of(run.id)).dir_of(compare_id)
            log.info("compare: %s: runs/%s/%s/%s", compare_id, run.id, COMPARES_DIR, compare_id)
            await run_job(command, setup, plan.context, keep_pod=keep_pod)
        shown = folder.relative_to(command.project.root)
        log.info("compare: %s: judging with %s", compare_id, judge.label)
        spend = JudgeSpend(SpendCap(cap), judge.price)
        report = await judge_recorded(command, folder, compare_id, judge, spend)
        front.line(str(shown / REPORT_MD))
        front.result("compare", compare_result(report, shown))
