"""The bench as a compare-kind job (`Served`): its plan, its directory under the run
(`benches/bench_<time>/`), its variables, how its end and Ctrl-C are recorded, and its report."""

from __future__ import annotations

import shutil
from pathlib import Path

import attrs

from overbrainer.compare.bench_report import (
    BENCH_JSON,
    BENCHES_DIR,
    BenchReport,
    bench_markdown,
    build_rows,
    regressions,
)
from overbrainer.compare.bench_report import Z as BOUND_Z
from overbrainer.compare.bench_results import BadResults, Score, read_scores
from overbrainer.compare.bench_setup import BENCH_SETUP_FILE, BenchModel, BenchSetup
from overbrainer.compare.job import CompareInterrupted, job_message
from overbrainer.compare.job_script import BENCH_SCRIPT, bench_script
from overbrainer.compare.plan import axolotl_facts, pick_run
from overbrainer.compare.served import Served
from overbrainer.compare.setup import CompareSetup
from overbrainer.config.settings import Bench
from overbrainer.export.record import BASE, CHILD, ExportRecord, latest_export
from overbrainer.model.errors import UsageError, WorkFailed
from overbrainer.model.job_kind import JobKind
from overbrainer.model.job_status import Exited, JobStatus
from overbrainer.model.train_metric import JobStage
from overbrainer.storage import write_atomic
from overbrainer.targets import Command
from overbrainer.training import RunRecord, Runs, RunState, is_valid_run_id

TASKS_DIR = "tasks"
RESULTS_DIR = "results"
BENCH_MD = "bench.md"
BENCH_COMMAND = Command(JobStage.COMPARE, "sh", (BENCH_SCRIPT,), from_venv=False)
BENCH_ARTIFACTS = (
    RESULTS_DIR,
    "out",
    "server-child.log",
    "server-base.log",
    "lm_eval-child.log",
    "lm_eval-base.log",
    "metrics.jsonl",
    "job.log",
)


@attrs.frozen
class BenchPlan:
    """The run to bench, its child's GGUF, its base's (None: not exported) and its context."""

    record: RunRecord
    child: ExportRecord
    base: ExportRecord | None
    context: int


def benches_of(run_dir: Path) -> Runs:
    """The benches of a run, kept with the same record machinery as runs."""
    return Runs(run_dir / BENCHES_DIR)


def plan_bench(runs: Runs, run_id: str | None) -> BenchPlan:
    """The run (`run_id`, else the newest with a GGUF), its GGUFs and context (blocking)."""
    record, child = pick_run(runs, run_id, "bench")
    run_dir = runs.dir_of(record.id)
    context, _ = axolotl_facts(run_dir)
    return BenchPlan(record, child, latest_export(run_dir, BASE), context)


def _model(name: str, export: ExportRecord) -> BenchModel:
    return BenchModel(name, export.file, export.sha256, export.quantize)


def create_bench(
    runs: Runs,
    plan: BenchPlan,
    settings: Bench,
    tasks: tuple[str, ...],
    *,
    llama_cpp: str,
    include: Path,
) -> BenchSetup:
    """Claim `benches/bench_<time>`, copy the custom task files of `include` into `tasks/`,
    write `setup.json`, `bench.sh` and the `preparing` record (blocking)."""
    run = plan.record
    benches = benches_of(runs.dir_of(run.id))
    remote_run = run.remote_dir.rstrip("/")
    record = benches.create(
        "bench", run.target, lambda bench_id: f"{remote_run}/{BENCHES_DIR}/{bench_id}"
    )
    models = [_model(CHILD, plan.child)]
    if plan.base is not None:
        models.append(_model(BASE, plan.base))
    setup = BenchSetup(
        run=run.id,
        bench=record.id,
        llama_cpp=llama_cpp,
        created=record.created,
        models=tuple(models),
        tasks=tasks,
        limit=settings.limit,
        num_fewshot=settings.num_fewshot,
        lm_eval=settings.lm_eval,
        model_type=settings.model,
        max_tokens=settings.max_tokens,
        log_samples=settings.log_samples,
        context=plan.context,
    )
    folder = benches.dir_of(record.id)
    if include.is_dir():
        shutil.copytree(include, folder / TASKS_DIR)
    write_atomic(folder / BENCH_SETUP_FILE, setup.to_json())
    write_atomic(folder / BENCH_SCRIPT, bench_script())
    return setup


def find_bench(runs: Runs, bench_id: str) -> tuple[Path, BenchSetup]:
    """An earlier bench's directory and setup, in any run (blocking)."""
    if is_valid_run_id(bench_id):
        for folder in sorted(runs.root.glob(f"*/{BENCHES_DIR}/{bench_id}")):
            if (folder / "run.json").is_file() and (folder / BENCH_SETUP_FILE).is_file():
                path = folder / BENCH_SETUP_FILE
                try:
                    return folder, BenchSetup.from_json(path.read_bytes(), str(path))
                except ValueError as error:
                    raise UsageError(str(error)) from None
    raise UsageError(f"no bench {bench_id} in runs/")


def bench_env(setup: BenchSetup) -> dict[str, str]:
    """The `OVERBRAINER_BENCH_*` variables `bench.sh` reads (the GGUFs are the compare's
    `OVERBRAINER_COMPARE_MODEL` and `OVERBRAINER_COMPARE_BASE_MODEL`)."""
    env = {
        "OVERBRAINER_BENCH_MODELS": " ".join(model.model for model in setup.models),
        "OVERBRAINER_BENCH_TASKS": " ".join(setup.tasks),
        "OVERBRAINER_BENCH_LM_EVAL": setup.lm_eval,
        "OVERBRAINER_BENCH_MODEL_TYPE": setup.model_type,
        "OVERBRAINER_BENCH_MAX_TOKENS": str(setup.max_tokens),
        "OVERBRAINER_BENCH_LOG_SAMPLES": "1" if setup.log_samples else "",
    }
    if setup.limit is not None:
        env["OVERBRAINER_BENCH_LIMIT"] = str(setup.limit)
    if setup.num_fewshot is not None:
        env["OVERBRAINER_BENCH_FEWSHOT"] = str(setup.num_fewshot)
    return env


def pending(folder: Path, setup: BenchSetup) -> list[tuple[str, str]]:
    """The (model, task) pairs without their results file yet."""
    return [
        (model.model, task)
        for model in setup.models
        for task in setup.tasks
        if not (folder / RESULTS_DIR / model.model / f"{task}.json").is_file()
    ]


def conclude_bench(runs: Runs, setup: BenchSetup, record: RunRecord, status: JobStatus) -> None:
    """Record how the job ended; WorkFailed naming the job's last lines when it failed."""
    benches = benches_of(runs.dir_of(setup.run))
    folder = benches.dir_of(setup.bench)
    if isinstance(status, Exited) and status.code == 0 and not pending(folder, setup):
        benches.save(attrs.evolve(record, state=RunState.SUCCEEDED, message=None))
        return
    if isinstance(status, Exited):
        message = job_message(folder, "bench") or f"its job exited with code {status.code}"
    else:
        message = "its job ended without an exit code"
    benches.save(attrs.evolve(record, state=RunState.FAILED, message=message.splitlines()[0]))
    shown = f"runs/{setup.run}/{BENCHES_DIR}/{setup.bench}"
    raise WorkFailed(f"bench {setup.bench} of run {setup.run} failed ({shown}): {message}")


def resume_line(setup: BenchSetup) -> str:
    """What Ctrl-C ends the command with."""
    return (
        f"interrupted: bench {setup.bench} of run {setup.run} cancelled; resume with "
        f"`overbrainer bench --resume {setup.bench}`"
    )


def cancelled_bench(runs: Runs, setup: BenchSetup, record: RunRecord) -> CompareInterrupted:
    """Record the bench cancelled (blocking); the error Ctrl-C ends the command with."""
    benches = benches_of(runs.dir_of(setup.run))
    benches.save(attrs.evolve(record, state=RunState.CANCELLED, message="cancelled"))
    return CompareInterrupted(resume_line(setup))


def _count(number: int, word: str) -> str:
    return f"{number} {word}" + ("" if number == 1 else "s")


def bench_served(runs: Runs, setup: BenchSetup) -> Served:
    """The bench's parameters of the compare-kind job."""

    def conclude(record: RunRecord, status: JobStatus) -> None:
        conclude_bench(runs, setup, record, status)

    def cancelled(record: RunRecord) -> CompareInterrupted:
        return cancelled_bench(runs, setup, record)

    return Served(
        kind=JobKind.BENCH,
        word="bench",
        folder=BENCHES_DIR,
        command=BENCH_COMMAND,
        artifacts=BENCH_ARTIFACTS,
        env=bench_env(setup),
        conclude=conclude,
        cancelled=cancelled,
        what=f"{_count(len(setup.tasks), 'task')} on {_count(len(setup.models), 'model')}",
    )


def as_compare_setup(setup: BenchSetup) -> CompareSetup:
    """What the compare-kind job reads of its setup (the run, the job's ID, the child's GGUF and
    the base's, which it places as a compare's); a bench asks no question."""
    child = setup.child
    base = next((model for model in setup.models if model.model == BASE), None)
    return CompareSetup(
        run=setup.run,
        compare=setup.bench,
        gguf=child.gguf,
        gguf_sha256=child.gguf_sha256,
        quantize=child.quantize,
        llama_cpp=setup.llama_cpp,
        base_model=None,
        seed=0,
        created=setup.created,
        questions=(),
        base_gguf=None if base is None else base.gguf,
        base_gguf_sha256=None if base is None else base.gguf_sha256,
        base_quantize=None if base is None else base.quantize,
    )


def model_scores(folder: Path, setup: BenchSetup, model: str) -> list[Score]:
    """A model's scores over the bench's tasks, in their order (blocking); WorkFailed naming
    a results file that cannot be read."""
    scores: list[Score] = []
    for task in setup.tasks:
        path = folder / RESULTS_DIR / model / f"{task}.json"
        try:
            scores.extend(read_scores(path))
        except BadResults as error:
            raise WorkFailed(f"bench {setup.bench}: {error}") from None
        except (OSError, UnicodeDecodeError) as error:
            raise WorkFailed(f"bench {setup.bench}: cannot read {path}: {error}") from None
    return scores


def write_bench_report(folder: Path, setup: BenchSetup) -> BenchReport:
    """`bench.json` and `bench.md` from the results files (blocking)."""
    models = tuple(model.model for model in setup.models)
    child = model_scores(folder, setup, CHILD)
    base = model_scores(folder, setup, BASE) if BASE in models else None
    rows = build_rows(child, base)
    report = BenchReport(
        setup.run, setup.bench, models, setup.tasks, BOUND_Z, rows, regressions(rows)
    )
    write_atomic(folder / BENCH_JSON, report.to_json())
    write_atomic(folder / BENCH_MD, bench_markdown(report))
    return report
