"""Split and resume-read figures: `plan_split` on 100,000 answers, and reading them back.

The reads run in a fresh child process each, so the peak RSS printed is the reader's own
(interpreter and imports included), as a resuming `answers` stage would see it.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from overbrainer.pipeline.split import plan_split
from overbrainer.storage.ids import question_id, subtopic_id
from overbrainer.storage.jsonl import read_records, rewrite
from overbrainer.storage.records import (
    Example,
    Exclusion,
    FinishReason,
    Message,
    Meta,
    Question,
    ReasoningKind,
    example_id,
)

ANSWERS = 100_000
TOPICS = 10
SUBTOPICS = 100  # per topic: 1,000 subtopics of 100 answers


def _questions() -> Iterator[Question]:
    for i in range(ANSWERS):
        topic = f"topic {i % TOPICS}"
        name = f"subtopic {i // TOPICS % SUBTOPICS}"
        sid = subtopic_id(topic, name)
        text = f"What happens to a borrowed value when its owner moves, in case {i}?"
        yield Question(question_id(sid, text), topic, sid, name, text)


def _answers(size: str) -> Iterator[Example]:
    for i, question in enumerate(_questions()):
        if size == "stub":  # what the stub provider's default responder writes
            content = f"Here is a careful answer to: {question.text}"
            reasoning = f"The user asks: {question.text} Let me reason about it step by step."
        else:  # a modest real answer: 600 chars of answer, 1,200 of reasoning
            content, reasoning = "A" * 600, "R" * 1_200
        excluded = Exclusion.TRUNCATED if i % 50 == 0 else None
        yield Example(
            question.id,
            question.topic,
            question.subtopic,
            (Message("user", question.text), Message("assistant", content, reasoning)),
            Meta("deepseek/deepseek-r1", 41, 812, FinishReason.STOP, ReasoningKind.RAW, excluded),
        )


def bench_plan_split() -> None:
    answers = list(_answers("stub"))
    ids = {answer.id for answer in answers}
    topics = [f"topic {t}" for t in range(TOPICS)]
    started, cpu = time.perf_counter(), time.process_time()
    plan = plan_split(answers, ids, topics, None, 0.1, 42)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(f"plan_split, {ANSWERS:,} answers: {elapsed:.2f} s wall, {cpu:.2f} s CPU")
    print(f"  {plan.report.line()}")


def child_read(mode: str, answers: Path, questions: Path) -> None:
    """Resume `answers` as the stage would: read the answers (whole, or only their IDs),
    then the questions, and find the pending ones. Prints wall, CPU and peak RSS."""
    parse: Callable[[str], object] = Example.from_json if mode == "records" else example_id
    started, cpu = time.perf_counter(), time.process_time()
    records = read_records(answers, parse)
    answers_s, answers_cpu = time.perf_counter() - started, time.process_time() - cpu
    asked = read_records(questions, Question.from_json)
    answered = {r.id if isinstance(r, Example) else r for r in records}
    pending = [question for question in asked if question.id not in answered]
    total_s, total_cpu = time.perf_counter() - started, time.process_time() - cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"  {mode:>7}: {len(records):,} answers {answers_s:.2f} s wall ({answers_cpu:.2f} s CPU);"
        f" with {len(asked):,} questions, {len(pending)} pending: {total_s:.2f} s wall"
        f" ({total_cpu:.2f} s CPU); peak RSS {peak_mb:.0f} MB"
    )


def bench_reads() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        questions = Path(tmp) / "questions.jsonl"
        rewrite(questions, (question.to_json() for question in _questions()))
        for size in ("stub", "realistic"):
            answers = Path(tmp) / f"answers-{size}.jsonl"
            rewrite(answers, (answer.to_json() for answer in _answers(size)))
            megabytes = answers.stat().st_size / 1e6
            print(f"read_records, {size} answers.jsonl ({megabytes:.0f} MB):")
            for mode in ("records", "ids"):
                command = [sys.executable, __file__, "--child", mode, str(answers), str(questions)]
                subprocess.run(command, check=True, timeout=300)


def _load() -> str:
    with open("/proc/loadavg") as file:
        return file.read().split()[0]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child_read(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
    else:
        print(f"load average before: {_load()}")
        bench_plan_split()
        bench_reads()
        print(f"load average after: {_load()}")
