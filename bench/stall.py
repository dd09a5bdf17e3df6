"""The longest event-loop stall while `answers` resumes and `split` runs on 100,000 answers.

A stall is the longest span between two of Trio's I/O checks (`LoopStalls`): how long a
Ctrl-C, a metrics scrape or a progress refresh waits. Each stage runs in-process under the
real engine against the stub provider (zero requests: every question is answered), and is
measured from its body's start to its end. "On the loop" runs the same blocking functions
directly on the event loop, as the stages did before they moved their file work to threads.

Run: `python bench/stall.py [--answers 100000] [--rounds 2]`. Figures are printed, never
asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import trio

from overbrainer.config.settings import Pipeline, Protocol, Provider, Role, Roles, Settings, Topic
from overbrainer.config.settings import Project as ProjectSection
from overbrainer.devtools.loop_stall import LoopStalls, measure_stalls
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.events.bus import open_event_bus
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.types import Stage
from overbrainer.llm.client import ProtocolClient, ProviderConnection, open_provider
from overbrainer.llm.connect import RoleClient
from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.pipeline import answers, split_stage
from overbrainer.pipeline.engine import Body, StageContext, StageRun, load_templates, run_stage
from overbrainer.pipeline.spend import SpendCap
from overbrainer.project.directory import Project
from overbrainer.storage.ids import question_id, subtopic_id
from overbrainer.storage.records import Example, Exclusion, Message, Meta, Question, Subtopic

TOPICS = 10
SUBTOPICS = 100  # per topic
PARENT = Role(provider="stub", model="parent-model")


def write_project(root: Path, count: int) -> None:
    """`count` questions over 10 topics x 100 subtopics, all answered (2% excluded)."""
    meta = Meta("parent-model", 41, 812, FinishReason.STOP, ReasoningKind.RAW)
    cut = attrs.evolve(meta, finish_reason=FinishReason.LENGTH, excluded=Exclusion.TRUNCATED)
    subtopics = [
        Subtopic(subtopic_id(f"topic {t}", f"subtopic {s}"), f"topic {t}", f"subtopic {s}")
        for t in range(TOPICS)
        for s in range(SUBTOPICS)
    ]
    data = root / "data"
    data.mkdir(parents=True)
    (root / ".overbrainer").mkdir()
    with (data / "questions.jsonl").open("w") as qs, (data / "answers.jsonl").open("w") as ans:
        for i in range(count):
            sub = subtopics[i % len(subtopics)]
            text = f"What happens to a borrowed value when its owner moves, in case {i}?"
            question = Question(question_id(sub.id, text), sub.topic, sub.id, sub.name, text)
            reply = Message("assistant", f"A careful answer to: {text}", f"Reasoning on: {text}")
            example = Example(
                question.id,
                sub.topic,
                sub.id,
                (Message("user", text), reply),
                cut if i % 50 == 0 else meta,
            )
            qs.write(question.to_json() + "\n")
            ans.write(example.to_json() + "\n")
    (data / "subtopics.jsonl").write_text("".join(s.to_json() + "\n" for s in subtopics))


@contextlib.asynccontextmanager
async def stage_context(root: Path, count: int) -> AsyncIterator[StageContext]:
    """A context over the project at `root`, its parent the stub provider."""
    per_subtopic = count // (TOPICS * SUBTOPICS)
    topics = tuple(
        Topic(f"topic {t}", subtopics=SUBTOPICS, questions_per_subtopic=per_subtopic)
        for t in range(TOPICS)
    )
    settings = Settings(
        project=ProjectSection("bench"),
        topics=topics,
        roles=Roles(generator=PARENT, parent=PARENT),
        providers={"stub": Provider(Protocol.OPENAI)},
        pipeline=Pipeline(),
    )
    project = Project(root)
    async with (
        open_stub() as stub,
        open_event_bus() as bus,
        open_provider(ProviderConnection(Protocol.OPENAI, stub.url)) as http,
    ):
        client = ProtocolClient(http, Protocol.OPENAI, PARENT.model)
        yield StageContext(
            project=project,
            settings=settings,
            topics=topics,
            bus=bus,
            interrupt=Interrupt(),
            spend=SpendCap(),
            templates=load_templates(project),
            roles={"parent": RoleClient("parent", PARENT, "stub", client, None)},
        )


async def old_answers(ctx: StageContext, run: StageRun) -> None:
    """The resume read as it was: the same blocking function, on the loop."""
    pending, skipped, _, _ = answers.pending_questions(ctx, set(), answers.read_stored(ctx))
    run.skipped(count=skipped)
    run.start(len(pending))
    await trio.lowlevel.checkpoint()


async def old_split(ctx: StageContext, run: StageRun) -> None:
    """Split as it was: the same blocking read and rewrites, on the loop."""
    plan, stamp = split_stage._plan(ctx)
    run.start(plan.counted)
    report = plan.report
    split_stage._write(ctx, [plan.train, plan.eval], stamp)
    del plan
    run.finish_split(report.counts(), report.excluded_total, report.line())
    await trio.lowlevel.checkpoint()


async def measure(root: Path, count: int, stage: Stage, body: Body) -> tuple[LoopStalls, float]:
    """The loop's stalls while `body` runs as `stage`, and the stage's wall time."""
    found: list[LoopStalls] = []

    async def measured(ctx: StageContext, run: StageRun) -> None:
        with measure_stalls() as stalls:
            await body(ctx, run)
        found.append(stalls)

    async with stage_context(root, count) as ctx:
        started = time.perf_counter()
        await run_stage(ctx, stage, measured)
        wall = time.perf_counter() - started
    return found[0], wall


async def run(count: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        write_project(root, count)
        print(f"{count:,} answers written in {time.perf_counter() - started:.1f} s")
        cases: list[tuple[str, Stage, Body]] = [
            ("answers resume, in threads", Stage.ANSWERS, answers.answers_stage),
            ("answers resume, on the loop (old path)", Stage.ANSWERS, old_answers),
            ("split, in threads", Stage.SPLIT, split_stage.split_stage),
            ("split, on the loop (old path)", Stage.SPLIT, old_split),
        ]
        for round_ in range(1, rounds + 1):
            for name, stage, body in cases:
                stalls, wall = await measure(root, count, stage, body)
                print(
                    f"round {round_}: {name}: longest stall {stalls.longest * 1e3:.1f} ms "
                    f"over {stalls.passes} passes; stage {wall:.2f} s"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    trio.run(run, args.answers, args.rounds)


if __name__ == "__main__":
    main()
