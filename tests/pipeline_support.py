"""Helpers for the pipeline's end-to-end tests: a project on disk, the real command, the stub."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
import trio

from overbrainer.devtools.stub_provider import StubProvider
from overbrainer.devtools.stub_script import Json
from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.storage.history import HistoryRecord, read_history
from overbrainer.storage.ids import question_id, subtopic_id
from overbrainer.storage.records import Example, Exclusion, Message, Meta, Question, Subtopic

CONFIG = """\
[project]
name = "demo"

[[topics]]
name = "ownership"
description = "Rust ownership and borrowing"
subtopics = 2
questions_per_subtopic = 2

[[topics]]
name = "async"
subtopics = 2
questions_per_subtopic = 2

[providers.stub]
protocol = "openai"

[roles.generator]
provider = "stub"
model = "gen-model"

[roles.parent]
provider = "stub"
model = "parent-model"
reasoning = true

[pipeline]
concurrency = {concurrency}
max_retries = 2
{pipeline}
"""

TRAINING = """
[training]
target = "local"
base_model = "Qwen/Qwen3-4B"
adapter = "qlora"

[targets.local]
kind = "local"
runtime = "native"
"""
"""`[training]` on a native local target, appended to a project that must train."""

PRICES: Json = {
    "data": [
        {"id": "parent-model", "pricing": {"prompt": "0.001", "completion": "0.002"}},
        {"id": "gen-model", "pricing": {"prompt": "0.000001", "completion": "0.000002"}},
    ]
}
"""Prices the stub lists: $0.20 for a (100 in, 50 out) answer of the parent."""


FIXED_CONCURRENCY = "adaptive = false"
"""`[pipeline]` text for tests that count which requests are in flight at once: the adaptive
limiter's first request probes alone, which would change that set."""


def make_project(root: Path, *, concurrency: int = 4, pipeline: str = "") -> Path:
    """A two-topic project (ownership, async) on the `stub` provider."""
    root.mkdir(parents=True, exist_ok=True)
    config = CONFIG.format(concurrency=concurrency, pipeline=pipeline)
    (root / "overbrainer.toml").write_text(config, encoding="utf-8")
    (root / ".overbrainer").mkdir(exist_ok=True)
    (root / ".overbrainer" / "version").write_text("1\n", encoding="utf-8")
    return root


def write_questions(
    root: Path, per_topic: int, topics: Sequence[str] = ("ownership",)
) -> list[Question]:
    """`per_topic` questions in each topic (one subtopic each), written to questions.jsonl."""
    questions = []
    subtopics = []
    for topic in topics:
        sub = Subtopic(subtopic_id(topic, "Basics"), topic, "Basics")
        subtopics.append(sub)
        for n in range(per_topic):
            text = f"Question {n} about {topic}?"
            questions.append(Question(question_id(sub.id, text), topic, sub.id, sub.name, text))
    data = root / "data"
    data.mkdir(exist_ok=True)
    (data / "subtopics.jsonl").write_text("".join(s.to_json() + "\n" for s in subtopics))
    (data / "questions.jsonl").write_text("".join(q.to_json() + "\n" for q in questions))
    return questions


def write_answered(
    root: Path,
    count: int,
    topics: Sequence[str] = ("ownership",),
    text_of: Callable[[int], str] | None = None,
) -> None:
    """`count` questions spread over `topics` (ten subtopics each), every one answered, written
    straight to subtopics, questions and answers (one excluded answer in fifty); no two are
    near-duplicates unless `text_of` (question `i`'s text) makes them so."""
    meta = Meta("parent-model", 41, 812, FinishReason.STOP, ReasoningKind.RAW)
    truncated = attrs.evolve(meta, finish_reason=FinishReason.LENGTH, excluded=Exclusion.TRUNCATED)
    subtopics = [
        Subtopic(subtopic_id(topic, f"Part {n}"), topic, f"Part {n}")
        for topic in topics
        for n in range(10)
    ]
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    with (
        (data / "questions.jsonl").open("w") as questions,
        (data / "answers.jsonl").open("w") as answers,
    ):
        for i in range(count):
            sub = subtopics[i % len(subtopics)]
            # Two numbers of their own keep the questions apart (bigram Jaccard under 0.8):
            # with only `{i}` they would all be near-duplicates, one cluster for the split.
            text = (
                f"What happens to a borrowed value when its owner moves, in case {i}"
                f" ({i * 7919 % 10007} {i * 104729 % 65537})?"
                if text_of is None
                else text_of(i)
            )
            question = Question(question_id(sub.id, text), sub.topic, sub.id, sub.name, text)
            messages = (
                Message("user", text),
                Message("assistant", f"An answer to: {text}", f"Reasoning about: {text}"),
            )
            example = Example(
                question.id, sub.topic, sub.id, messages, truncated if i % 50 == 0 else meta
            )
            questions.write(question.to_json() + "\n")
            answers.write(example.to_json() + "\n")
    (data / "subtopics.jsonl").write_text("".join(s.to_json() + "\n" for s in subtopics))


def read_examples(root: Path, name: str = "answers") -> list[Example]:
    """Every record of `data/<name>.jsonl`; fails on any line that is not a whole Example."""
    path = root / "data" / f"{name}.jsonl"
    if not path.exists():
        return []
    return [Example.from_json(line) for line in path.read_text().splitlines()]


def history(root: Path) -> list[HistoryRecord]:
    """The project's history records."""
    return read_history(root / ".overbrainer" / "history.jsonl")


def command_env(url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without OVERBRAINER_* keys, pointed at the stub."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVERBRAINER_")}
    env["OVERBRAINER_PROVIDERS__STUB__BASE_URL"] = url
    env["NO_COLOR"] = "1"
    env.update(extra or {})
    return env


def command(root: Path, *args: str) -> list[str]:
    """The `overbrainer -C root ARGS` command line."""
    return [sys.executable, "-m", "overbrainer", "-C", str(root), *args]


@attrs.frozen
class Result:
    """A finished command: exit code and output."""

    code: int
    stdout: str
    stderr: str

    @property
    def out_lines(self) -> list[str]:
        """The lines on stdout."""
        return self.stdout.splitlines()


async def overbrainer(
    root: Path, *args: str, url: str, env: dict[str, str] | None = None, limit: float = 60
) -> Result:
    """Run `overbrainer -C root ARGS` to its end against the stub at `url`."""
    with trio.fail_after(limit):
        done = await trio.run_process(
            command(root, *args),
            env=command_env(url, env),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    return Result(done.returncode, done.stdout.decode(), done.stderr.decode())


async def start(
    nursery: trio.Nursery, root: Path, *args: str, url: str, env: dict[str, str] | None = None
) -> trio.Process:
    """Start `overbrainer -C root ARGS` in the background; output goes to files in `root`."""
    # The child holds its own copies of these descriptors once started: ours can close.
    with (root / "stdout.txt").open("wb") as out, (root / "stderr.txt").open("wb") as err:
        process: trio.Process = await nursery.start(
            functools.partial(
                trio.run_process,
                command(root, *args),
                env=command_env(url, env),
                stdout=out,
                stderr=err,
                check=False,
            )
        )
    return process


async def wait_until(predicate: object, limit: float = 60, every: float = 0.01) -> None:
    """Poll `predicate()` until it is true, failing after `limit` s (a bound for a loaded machine,
    never an ordering: a busy CI machine takes seconds to start a command)."""
    assert callable(predicate)
    with trio.fail_after(limit):
        # Files and another process's state have no event to wait on: poll them.
        while not predicate():  # noqa: ASYNC110
            await trio.sleep(every)


def completion_prompts(stub: StubProvider) -> list[str]:
    """The user prompts of the completions the stub received, in order."""
    return [r.prompt or "" for r in stub.completions]


def events(path: Path) -> list[dict[str, object]]:
    """The lines of an events file, decoded."""
    return [json.loads(line) for line in path.read_text().splitlines()]
