"""A finished compare's `compare.json`, written by compare/report.py's own writer."""

from __future__ import annotations

import json
from pathlib import Path

from overbrainer.compare.answers import ChildAnswer
from overbrainer.compare.base_report import BaseReport
from overbrainer.compare.questions import eval_questions
from overbrainer.compare.report import Report, report_json
from overbrainer.compare.setup import CompareSetup
from overbrainer.compare.stats import Prices, costs, summarize
from overbrainer.compare.verdicts import Verdict, VerdictLine
from overbrainer.storage.records import Example

VERDICTS = (Verdict.WIN, Verdict.TIE, Verdict.LOSS, Verdict.ERROR, Verdict.UNPARSED)
"""One question of each mark: `✓ = ✗ ! ?`."""


def _example(n: int) -> Example:
    return Example.from_json(
        json.dumps(
            {
                "id": f"q{n}",
                "topic": "rust",
                "subtopic": "ownership",
                "messages": [
                    {"role": "user", "content": f"Question {n}: what does a borrow do?"},
                    {"role": "assistant", "content": f"Parent answer {n}: it lends a value."},
                ],
                "meta": {
                    "model": "m",
                    "input_tokens": 10,
                    "output_tokens": 20,
                    "finish_reason": "stop",
                    "reasoning_kind": "none",
                },
            }
        )
    )


def write_compare(
    run_dir: Path,
    compare_id: str,
    created: str,
    verdicts: tuple[Verdict, ...] = VERDICTS,
    base: tuple[Verdict, ...] | None = None,
) -> Path:
    """Write `run_dir/compares/<compare_id>/compare.json` as `overbrainer compare` would;
    with `base`, the child's verdicts against its base model too (`compare --base`)."""
    setup = CompareSetup(
        run=run_dir.name,
        compare=compare_id,
        gguf="output/gguf/model-Q4_K_M.gguf",
        gguf_sha256="0123456789abcdef" * 4,
        quantize="Q4_K_M",
        llama_cpp="b0test",
        base_model="Qwen/Qwen3-0.6B",
        seed=42,
        created=created,
        questions=tuple(eval_questions([_example(n) for n in range(len(verdicts))])),
        base_gguf=None if base is None else "output/gguf/base-Q4_K_M.gguf",
        base_gguf_sha256=None if base is None else "fedcba9876543210" * 4,
        base_quantize=None if base is None else "Q4_K_M",
    )
    lines = tuple(
        VerdictLine(f"q{n}", v, f"reason {n}: {v.value}", n % 2 == 0)
        for n, v in enumerate(verdicts)
    )
    answers = {
        f"q{n}": (
            ChildAnswer(f"q{n}", error="timed out")
            if v is Verdict.ERROR
            else ChildAnswer(f"q{n}", f"Child answer {n}.", "stop", 5, 8, 1.0, 0.1, 8.0)
        )
        for n, v in enumerate(verdicts)
    }
    summary = summarize(list(verdicts), list(answers.values()))
    report = Report(
        setup=setup,
        hardware=None,
        judge="stub/judge-model",
        judge_is_parent=False,
        verdicts_file="verdicts-0.jsonl",
        summary=summary,
        costs=costs(Prices(None, None, None), [], summary.mean_seconds),
        child_price_from_pod=False,
        verdicts=lines,
        answers=answers,
        base=None if base is None else _base_report(base),
    )
    folder = run_dir / "compares" / compare_id
    folder.mkdir(parents=True)
    path = folder / "compare.json"
    path.write_text(report_json(report), encoding="utf-8")
    return path


def _base_report(verdicts: tuple[Verdict, ...]) -> BaseReport:
    lines = tuple(
        VerdictLine(f"q{n}", v, f"base reason {n}", n % 2 == 0) for n, v in enumerate(verdicts)
    )
    answers = {
        f"q{n}": ChildAnswer(f"q{n}", f"Base answer {n}.", "stop", 5, 8, 2.0, 0.2, 4.0)
        for n in range(len(verdicts))
    }
    summary = summarize(list(verdicts), list(answers.values()))
    return BaseReport("verdicts-base-0.jsonl", summary, lines, answers)
