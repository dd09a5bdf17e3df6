"""The order of work of `overbrainer bench`: plan, a compare-kind job on the run's target that
runs lm-evaluation-harness against the served child and its base, then the report."""

from __future__ import annotations

import logging
from pathlib import Path

import attrs
import trio

from overbrainer.compare.bench_job import (
    BENCH_MD,
    BenchPlan,
    as_compare_setup,
    bench_served,
    benches_of,
    create_bench,
    find_bench,
    plan_bench,
    write_bench_report,
)
from overbrainer.compare.bench_report import BENCH_JSON, bench_result
from overbrainer.compare.bench_setup import BenchSetup
from overbrainer.compare.compare_job import compare_on_machine
from overbrainer.events.frontend import Frontend
from overbrainer.flows.compare import check_target
from overbrainer.flows.setup import Command, CommandOptions, open_command
from overbrainer.model.errors import UsageError
from overbrainer.targets import resolve_pin
from overbrainer.training import Runs, RunState, warn_missing_engine

log = logging.getLogger(__name__)


def _tasks(command: Command, tasks: tuple[str, ...] | None) -> tuple[str, ...]:
    chosen = command.settings.bench.tasks if tasks is None else tasks
    if not chosen:
        raise UsageError(
            "no lm-eval task to run: set `[bench] tasks` in overbrainer.toml or pass --tasks"
        )
    return chosen


async def _new_bench(
    command: Command,
    runs: Runs,
    run_id: str | None,
    tasks: tuple[str, ...] | None,
    limit: int | None,
) -> tuple[Path, BenchSetup]:
    """Plan and create a bench: its directory and setup (`limit` over `[bench] limit`)."""
    chosen = _tasks(command, tasks)
    plan: BenchPlan = await trio.to_thread.run_sync(plan_bench, runs, run_id)
    run = plan.record
    check_target(command.settings, run.id, run.target, False)
    target = command.settings.targets.get(run.target)
    assert target is not None
    warn_missing_engine(run.target, target)
    if plan.base is None:
        log.warning(
            "bench: run %s has no GGUF of its base model (`overbrainer export %s --base` makes "
            "one): benching the child alone",
            run.id,
            run.id,
        )
    settings = command.settings.bench
    if limit is not None:
        settings = attrs.evolve(settings, limit=limit)
    include = command.project.root / settings.include_path
    setup = await trio.to_thread.run_sync(
        lambda: create_bench(
            runs,
            plan,
            settings,
            chosen,
            llama_cpp=resolve_pin().tag,
            include=include,
        )
    )
    models = " and its base" if plan.base is not None else ""
    log.info(
        "bench: run %s (%s) on %s: the child%s, on target `%s`",
        run.id,
        plan.child.quantize,
        f"{len(chosen)} task" + ("s" if len(chosen) != 1 else ""),
        models,
        run.target,
    )
    return benches_of(runs.dir_of(run.id)).dir_of(setup.bench), setup


async def _resumed(command: Command, runs: Runs, bench_id: str) -> tuple[Path, BenchSetup]:
    """An earlier bench's directory and setup, to run its job again where it stopped."""
    folder, setup = await trio.to_thread.run_sync(find_bench, runs, bench_id)
    record = await trio.to_thread.run_sync(benches_of(runs.dir_of(setup.run)).load, bench_id)
    check_target(command.settings, setup.run, record.target, False)
    log.info("bench: resuming %s (%s)", bench_id, record.state.value)
    return folder, setup


async def bench_flow(
    options: CommandOptions,
    front: Frontend,
    *,
    run_id: str | None = None,
    tasks: tuple[str, ...] | None = None,
    limit: int | None = None,
    resume: str | None = None,
) -> None:
    """`overbrainer bench`: lm-eval tasks on the child and its base, the report's path."""
    front.result("bench", None)  # `--json`: null until the report is written
    async with open_command(options, front) as command:
        runs = Runs(command.project.runs)
        if resume is not None:
            folder, setup = await _resumed(command, runs, resume)
        else:
            folder, setup = await _new_bench(command, runs, run_id, tasks, limit)
        shown = folder.relative_to(command.project.root)
        log.info("bench: %s: %s", setup.bench, shown)
        record = await trio.to_thread.run_sync(benches_of(runs.dir_of(setup.run)).load, setup.bench)
        if record.state is not RunState.SUCCEEDED:
            await compare_on_machine(
                command.settings,
                runs,
                as_compare_setup(setup),
                setup.context,
                command.bus,
                command.interrupt,
                served=bench_served(runs, setup),
            )
        report = await trio.to_thread.run_sync(write_bench_report, folder, setup)
        front.line(str(shown / BENCH_MD))
        front.result("bench", bench_result(report, str(shown / BENCH_MD), str(shown / BENCH_JSON)))
