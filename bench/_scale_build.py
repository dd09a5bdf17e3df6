"""Finished synthetic projects of 10k, 100k, 1M (or 10M) answers for the scale benchmarks.

`python bench/_scale_build.py 100k` builds the project once (or finds it built) and prints
its path. Each is shaped like a finished real project: 10 topics x 100 subtopics, a question
per answer (`_synthetic.question`), answers with ~600 characters of answer and ~1,200 of
reasoning (one in fifty excluded as truncated), a `[quality] judge` score for every usable
answer, written with the project's own record types and `init`, so `subtopics`, `questions`,
`answers` and `quality` all have nothing to do. `train`/`eval.jsonl` are not written (`split`
writes them). The embedded stub serves every role, so no command needs a network.

Cached under `$OVERBRAINER_BENCH_SCALE` (default `~/.cache/overbrainer/bench-scale`) as
`<BUILD_VERSION>-<size>/`: built in a temporary sibling directory, `COMPLETE` written last,
then renamed into place, so a killed build is never taken for a finished one. Records are
streamed to disk (memory stays flat at any size). A project is an input: copy it
(`cp -al`, then replace the files a command writes) before running a command that writes.

On disk and to build (CPU time, 2-core machine, 2026-12-07; peak RSS 44 MB at every size):
10k 25 MB in 0.9 s, 100k 244 MB in 5 s, 1M 2.4 GB in 50 s (88 s wall under load); 10M would
be ~24 GB in ~9 min. `bench/README.md`, section "Scale", has what the commands cost on them.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from _synthetic import VOCABULARY, question

from overbrainer.events.types import Stage
from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.pipeline.quality import TEMPLATE as QUALITY_TEMPLATE
from overbrainer.pipeline.quality_scores import QualityScore, answer_sha, prompt_sha
from overbrainer.project.directory import Project
from overbrainer.project.init import init_project
from overbrainer.project.templates import template_source
from overbrainer.storage.history import HistoryRecord, HistoryStatus, append_records, utc_now
from overbrainer.storage.ids import question_id, subtopic_id
from overbrainer.storage.records import Example, Exclusion, Message, Meta, Question, Subtopic

BUILD_VERSION = 1
"""Bump when the projects' shape changes, so stale caches are not reused."""

SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000, "10m": 10_000_000}
"""The sizes by name: answers in the project."""

TOPICS = 10
SUBTOPICS = 100
COMPLETE = "COMPLETE"
"""The marker file written last in a finished build."""

GENERATOR, PARENT, JUDGE = "stub-generator", "stub-parent", "stub-judge"
SCORES = (8, 9, 7, 8, 9, 6, 8, 7, 9, 10)
"""Scores given in turn: one in ten is under the default `min_score` (7)."""

CONFIG_HEAD = """\
# A synthetic finished project built by bench/_scale_build.py ({answers} answers).

[project]
name = "scale-{name}"
"""

TOPIC = """
[[topics]]
name = "{name}"
description = "Synthetic topic {n} of the scale benchmarks"
subtopics = {subtopics}
questions_per_subtopic = {questions}
"""

CONFIG_TAIL = f"""
[providers.stub]
protocol = "stub"

[roles.generator]
provider = "stub"
model = "{GENERATOR}"

[roles.parent]
provider = "stub"
model = "{PARENT}"
reasoning = true

[pipeline]
concurrency = 8
seed = 42

[quality]
judge = {{ provider = "stub", model = "{JUDGE}" }}
"""


def cache_root() -> Path:
    """Where finished projects are kept (outside any checkout)."""
    default = Path.home() / ".cache" / "overbrainer" / "bench-scale"
    return Path(os.environ.get("OVERBRAINER_BENCH_SCALE", default))


def parse_size(name: str) -> str:
    """The canonical size name (`10k`, `100k`, `1m`, `10m`); `ValueError` for another."""
    key = name.strip().lower()
    if key not in SIZES:
        raise ValueError(f"unknown size {name!r}: one of {', '.join(SIZES)}")
    return key


def project_path(size: str) -> Path:
    """The cached project's directory of `size` (it may not be built yet)."""
    return cache_root() / f"{BUILD_VERSION}-{parse_size(size)}"


def is_built(size: str) -> bool:
    """Whether the project of `size` is built and complete."""
    return (project_path(size) / COMPLETE).is_file()


def topic_names() -> list[str]:
    """The projects' topic names."""
    return [f"topic-{n}" for n in range(TOPICS)]


def ensure_project(size: str) -> Path:
    """The finished project of `size`, built first when the cache has none. Blocking."""
    final = project_path(size)
    if (final / COMPLETE).is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_dead_builds(final)
    building = final.parent / f".building-{final.name}-{os.getpid()}"
    try:
        started = time.process_time()
        _build(building, SIZES[parse_size(size)], parse_size(size))
        seconds = time.process_time() - started
        (building / COMPLETE).write_text(f"{BUILD_VERSION}\ncpu_s {seconds:.1f}\n")
        try:
            building.rename(final)
        except OSError:
            # Another build finished first (or a stale incomplete one is there): keep the
            # finished one, and never take an incomplete one.
            if not (final / COMPLETE).is_file():
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return final


def _remove_dead_builds(final: Path) -> None:
    """Remove what a killed build of `final` left (its process is gone); a live one stays."""
    for left in final.parent.glob(f".building-{final.name}-*"):
        pid = int(left.name.rsplit("-", 1)[1])
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(left, ignore_errors=True)
        except PermissionError:
            pass


def _build(root: Path, answers: int, name: str) -> None:
    """Write the whole project of `answers` answers into `root`."""
    init_project(root, demo=True)
    per_subtopic = answers // (TOPICS * SUBTOPICS)
    config = CONFIG_HEAD.format(answers=answers, name=name)
    for n, topic in enumerate(topic_names()):
        config += TOPIC.format(name=topic, n=n, subtopics=SUBTOPICS, questions=per_subtopic)
    project = Project(root)
    project.config.write_text(config + CONFIG_TAIL, encoding="utf-8")
    prompt = prompt_sha(template_source(project.prompts, QUALITY_TEMPLATE))
    project.data.mkdir()
    buffer = 1 << 20
    with (
        project.data_file("subtopics").open("w", encoding="utf-8", buffering=buffer) as subs,
        project.data_file("questions").open("w", encoding="utf-8", buffering=buffer) as qs,
        project.data_file("answers").open("w", encoding="utf-8", buffering=buffer) as ans,
        project.data_file("quality").open("w", encoding="utf-8", buffering=buffer) as scores,
    ):
        _write_records(per_subtopic, prompt, subs, qs, ans, scores)
    _write_history(project, answers)


def _write_records(
    per_subtopic: int, prompt: str, subs: TextIO, qs: TextIO, ans: TextIO, scores: TextIO
) -> None:
    """Stream every subtopic, question, answer and score to its file, one at a time."""
    rng = random.Random(41)
    sentences = _sentences(rng)
    count = 0
    for topic in topic_names():
        for s in range(SUBTOPICS):
            name = f"Subtopic {s} of {topic}"
            sub = Subtopic(subtopic_id(topic, name), topic, name)
            subs.write(sub.to_json() + "\n")
            for text in _questions(rng, per_subtopic):
                q = Question(question_id(sub.id, text), topic, sub.id, sub.name, text)
                qs.write(q.to_json() + "\n")
                answer, reasoning = _answer(sentences, count)
                excluded = count % 50 == 0
                example = Example(
                    q.id,
                    topic,
                    sub.name,
                    (Message("user", text), Message("assistant", answer, reasoning)),
                    Meta(
                        PARENT,
                        40 + len(text) // 4,
                        (len(answer) + len(reasoning)) // 4,
                        FinishReason.LENGTH if excluded else FinishReason.STOP,
                        ReasoningKind.RAW,
                        Exclusion.TRUNCATED if excluded else None,
                    ),
                )
                line = example.to_json()
                ans.write(line + "\n")
                if not excluded:
                    score = SCORES[count % len(SCORES)]
                    reason = f"A {'sound' if score >= 7 else 'weak'} answer."
                    record = QualityScore(q.id, answer_sha(line), score, reason, JUDGE, prompt)
                    scores.write(record.to_json() + "\n")
                count += 1


def _write_history(project: Project, answers: int) -> None:
    """One finished run of each stage, as a real project's history has."""
    usable = answers - (answers + 49) // 50
    done = {
        Stage.SUBTOPICS: (GENERATOR, TOPICS),
        Stage.QUESTIONS: (GENERATOR, TOPICS * SUBTOPICS),
        Stage.ANSWERS: (PARENT, answers),
        Stage.QUALITY: (JUDGE, usable),
    }
    now = utc_now()
    records = [
        HistoryRecord(stage, now, now, HistoryStatus.OK, "stub", model, done=count)
        for stage, (model, count) in done.items()
    ]
    append_records(project.history, records)


def _questions(rng: random.Random, count: int) -> Iterator[str]:
    """`count` distinct synthetic questions (distinct IDs within their subtopic)."""
    seen: set[str] = set()
    while len(seen) < count:
        text = question(rng)
        if text not in seen:
            seen.add(text)
            yield text


def _sentences(rng: random.Random) -> list[str]:
    """A pool of synthetic sentences answers are made of (about 75 characters each)."""
    pool = []
    for _ in range(4096):
        words = rng.choices(VOCABULARY[:5000], k=rng.randint(9, 15))
        pool.append(" ".join(words).capitalize() + ".")
    return pool


def _answer(sentences: list[str], n: int) -> tuple[str, str]:
    """The answer (~600 characters) and reasoning (~1,200) of answer `n`, each its own mix."""
    size = len(sentences)
    answer = " ".join(sentences[(n * 7 + k * 613) % size] for k in range(8))
    reasoning = " ".join(sentences[(n * 13 + k * 419 + 1) % size] for k in range(16))
    return f"Answer {n}: {answer}", f"Reasoning {n}: {reasoning}"


def main() -> None:
    """Build (or find) the project of each size named and print its path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="+", help=f"one or more of {', '.join(SIZES)}")
    args = parser.parse_args()
    try:
        sizes = [parse_size(size) for size in args.sizes]
    except ValueError as error:
        sys.exit(f"error: {error}")
    for size in sizes:
        print(ensure_project(size), flush=True)


if __name__ == "__main__":
    main()
