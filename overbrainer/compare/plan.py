"""The plan of a compare before anything runs: which run, which GGUF, which questions (§A.3)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import attrs
import yaml

from overbrainer.compare.questions import ChatMessage, EvalQuestion, eval_questions
from overbrainer.compare.reasoning import strip_reasoning
from overbrainer.export.record import BASE, ExportRecord, latest_export
from overbrainer.model.errors import UsageError
from overbrainer.pipeline.imported import IMPORTED
from overbrainer.pipeline.question_file import parse_question_file, read_question_bytes
from overbrainer.storage import Example, question_id, read_records, subtopic_id
from overbrainer.training import RunRecord, Runs, RunState

EXPORTABLE = (RunState.SUCCEEDED, RunState.STOPPED)
"""The states export accepts (`export.plan.model_of`)."""


@attrs.frozen
class QuestionSource:
    """A user's own questions file (`compare --questions`): its path as given and SHA-256."""

    path: str
    sha256: str


@attrs.frozen
class ComparePlan:
    """The run to compare, its latest GGUF, the questions, and what axolotl.yaml says."""

    record: RunRecord
    export: ExportRecord
    questions: tuple[EvalQuestion, ...]
    context: int
    base_model: str | None
    source: QuestionSource | None = None
    base: ExportRecord | None = None
    """The latest GGUF of the run's base model (`compare --base`); None: the child alone."""


def base_export(runs: Runs, run_id: str) -> ExportRecord:
    """The run's latest GGUF of its base model; UsageError when it has none (blocking)."""
    export = latest_export(runs.dir_of(run_id), BASE)
    if export is None:
        raise UsageError(
            f"run {run_id} has no GGUF of its base model: run "
            f"`overbrainer export {run_id} --base` first"
        )
    return export


DONE_AFTER_EXPORT = {"compare": "compared", "bench": "benched"}
"""What comes after an export (`pick_run`'s `verb`), and its past participle."""


def pick_run(
    runs: Runs, run_id: str | None, verb: str = "compare"
) -> tuple[RunRecord, ExportRecord]:
    """`run_id`'s record and latest export, or the newest run with a GGUF (blocking); the
    refusals name what comes after the export (`verb`: compare, bench)."""
    if run_id is not None:
        record = runs.load(run_id)
        export = latest_export(runs.dir_of(run_id))
        if export is None and record.state not in EXPORTABLE:
            # Suggesting its export would only earn export's refusal: point at the runs instead.
            raise UsageError(
                f"run {run_id} is {record.state.value}: only a succeeded or stopped run can be "
                f"exported and {DONE_AFTER_EXPORT[verb]}; `overbrainer runs ls` lists the runs"
            )
        if export is None:
            raise UsageError(f"run {run_id} has no GGUF; run `overbrainer export {run_id}` first")
        return record, export
    for record in reversed(runs.list()):
        export = latest_export(runs.dir_of(record.id))
        if export is not None:
            return record, export
    raise UsageError(
        f"no run has a GGUF: export one with `overbrainer export <run-id>`, then {verb}"
    )


def read_questions(path: Path, shown: str, limit: int | None) -> tuple[EvalQuestion, ...]:
    """The first `limit` valid questions of `data/eval.jsonl` (blocking)."""
    examples = read_records(path, Example.from_json) if path.exists() else []
    questions = tuple(eval_questions(examples, limit))
    if not questions:
        raise UsageError(f"{shown} has no question with an answer: run `overbrainer split` first")
    return questions


def recorded_path(path: Path, root: Path) -> str:
    """How setup.json names a questions file: from the project root when inside it, else
    absolute, so that it means the same whatever directory the command ran in."""
    absolute = path.resolve()
    try:
        return str(absolute.relative_to(root.resolve()))
    except ValueError:
        return str(absolute)


def read_file_questions(
    path: Path, limit: int | None, root: Path
) -> tuple[tuple[EvalQuestion, ...], QuestionSource]:
    """The first `limit` questions of a user's file, each with its reference `answer`
    (blocking). The file is read once: its SHA-256 is of the bytes the questions came from."""
    shown = str(path)
    data = read_question_bytes(path, shown)
    rows = parse_question_file(data, path, shown)
    digest = hashlib.sha256(data).hexdigest()
    questions: list[EvalQuestion] = []
    lines: dict[str, int] = {}
    for row in rows[:limit]:
        if row.answer is None:
            raise UsageError(
                f"{shown}:{row.line}: no `answer`: compare --questions needs the parent's"
                " reference answer on every question"
            )
        topic = row.topic or ""
        qid = question_id(subtopic_id(topic, row.subtopic or IMPORTED), row.text)
        if qid in lines:
            raise UsageError(f"{shown}:{row.line}: the same question as line {lines[qid]}")
        lines[qid] = row.line
        messages = (ChatMessage("user", row.text),)
        questions.append(EvalQuestion(qid, topic, messages, strip_reasoning(row.answer), 0, 0))
    return tuple(questions), QuestionSource(recorded_path(path, root), digest)


def axolotl_facts(run_dir: Path) -> tuple[int, str | None]:
    """`sequence_len` (0: the model's own) and `base_model` of the run's axolotl.yaml."""
    try:
        raw: Any = yaml.safe_load((run_dir / "axolotl.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return 0, None
    if not isinstance(raw, dict):
        return 0, None
    context = raw.get("sequence_len")
    base = raw.get("base_model")
    return (
        context if type(context) is int and context > 0 else 0,
        base if isinstance(base, str) else None,
    )


def plan_compare(
    runs: Runs,
    eval_path: Path,
    run_id: str | None,
    limit: int | None,
    questions_file: Path | None = None,
    include_base: bool = False,
) -> ComparePlan:
    """The plan of §A.3 steps 1-4, on `questions_file` instead of eval.jsonl when given, with
    the run's base GGUF when `include_base` (blocking). `eval_path` is the project's
    `data/eval.jsonl`."""
    record, export = pick_run(runs, run_id)
    base = base_export(runs, record.id) if include_base else None
    source = None
    if questions_file is None:
        questions = read_questions(eval_path, "data/eval.jsonl", limit)
    else:
        questions, source = read_file_questions(questions_file, limit, eval_path.parent.parent)
    context, base_model = axolotl_facts(runs.dir_of(record.id))
    return ComparePlan(record, export, questions, context, base_model, source, base)
