"""The longest event-loop stall while `answers` resumes and `split` runs on 100,000 answers.

A stall is the longest span between two of Trio's I/O checks (`LoopStalls`): how long a
Ctrl-C, a metrics scrape or a progress refresh waits. It cannot see a worker thread holding
the GIL in one long C call (freeing a big list, a full cycle collection): the loop then waits
to wake up, outside its passes. So the bench also serves the real metrics endpoint and
scrapes it from another process every 10 ms while the stage runs; the longest scrape is what
Prometheus would see. Each stage runs in-process under the real engine against the stub
provider (zero requests: every question is answered), and is measured from its body's start
to its end. "On the loop" runs the same blocking functions directly on the event loop, as the
stages did before they moved their file work to threads.

Run: `python bench/stall.py [--answers 100000] [--rounds 2] [--only split]`. Figures are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import attrs
import trio
from _synthetic import question as synthetic_question

from overbrainer.config.settings import Pipeline, Protocol, Provider, Role, Roles, Settings, Topic
from overbrainer.config.settings import Project as ProjectSection
from overbrainer.devtools.loop_stall import LoopStalls, measure_stalls
from overbrainer.devtools.stub_provider import open_stub
from overbrainer.events.bus import open_event_bus
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.types import Stage
from overbrainer.llm.client import ProtocolClient, ProviderConnection, open_provider
from overbrainer.llm.connect import RoleClient
from overbrainer.metrics.endpoint import metrics_handler
from overbrainer.metrics.observer import MetricsObserver
from overbrainer.model.finish import FinishReason, ReasoningKind
from overbrainer.net.http_server import serve_http
from overbrainer.pipeline import answers, split_stage
from overbrainer.pipeline.engine import Body, StageContext, StageRun, load_templates, run_stage
from overbrainer.pipeline.spend import SpendCap
from overbrainer.project.directory import Project
from overbrainer.storage.ids import question_id, subtopic_id
from overbrainer.storage.records import Example, Exclusion, Message, Meta, Question, Subtopic

TOPICS = 10
SUBTOPICS = 100  # per topic
PARENT = Role(provider="stub", model="parent-model")
SCRAPER = """
import json, select, socket, sys, time
host, port = sys.argv[1], int(sys.argv[2])
request = b"GET /metrics HTTP/1.1\\r\\nHost: bench\\r\\nConnection: close\\r\\n\\r\\n"
scrapes = []
print("ready", flush=True)
while not select.select([sys.stdin], [], [], 0.01)[0]:  # every 10 ms until stdin closes
    start = time.monotonic()
    with socket.create_connection((host, port)) as connection:
        connection.sendall(request)
        while connection.recv(65536):
            pass
    scrapes.append((start, time.monotonic() - start))
json.dump(scrapes, sys.stdout)
"""
"""A Prometheus stand-in: `[start, seconds]` of each scrape (monotonic clock, shared by
the processes of one machine), printed when its stdin closes."""


Finish = Callable[[float], Awaitable["Scrapes"]]
"""Ends the scraping and tells the figures of the scrapes started since the given time."""


@attrs.frozen
class Scrapes:
    """The scrapes of one stage: the longest wait, when it started, and how many there were."""

    longest: float
    at: float
    """Seconds from the stage's start to the longest scrape's start."""
    count: int
    over_50_ms: int


def write_project(root: Path, count: int) -> None:
    """`count` questions over 10 topics x 100 subtopics, all answered (2% excluded).

    The texts are varied (`_synthetic.question`), as generated ones are: with one template
    for all, `split` would find them all near-duplicates and leave eval empty.
    """
    rng = random.Random(count)
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
            text = synthetic_question(rng)
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


async def _read_all(stream: trio.abc.ReceiveStream, until: bytes | None = None) -> bytes:
    data = b""
    while until is None or until not in data:
        chunk = await stream.receive_some()
        if not chunk:
            break
        data += chunk
    return data


@contextlib.asynccontextmanager
async def scraped(observer: MetricsObserver) -> AsyncIterator[Finish]:
    """Serve `observer` on a loopback port and scrape it from a child process meanwhile;
    the block gets a function that ends the scraping and tells its figures."""
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(serve_http, metrics_handler(observer))
        scraper = await trio.lowlevel.open_process(
            [sys.executable, "-c", SCRAPER, host, str(port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert scraper.stdin is not None and scraper.stdout is not None
        await _read_all(scraper.stdout, b"ready\n")

        async def finish(since: float) -> Scrapes:
            assert scraper.stdin is not None and scraper.stdout is not None
            await scraper.stdin.aclose()
            out = await _read_all(scraper.stdout)
            await scraper.wait()
            scrapes = [(start, wait) for start, wait in json.loads(out) if start >= since]
            start, wait = max(scrapes, key=lambda scrape: scrape[1], default=(since, 0.0))
            slow = sum(wait > 0.05 for _, wait in scrapes)
            return Scrapes(wait, start - since, len(scrapes), slow)

        try:
            yield finish
        finally:
            if scraper.returncode is None:
                scraper.kill()
                await scraper.wait()
            nursery.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def stage_context(
    root: Path, count: int, observer: MetricsObserver | None = None
) -> AsyncIterator[StageContext]:
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
        open_event_bus(observer=observer) as bus,
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


async def idle(ctx: StageContext, run: StageRun) -> None:
    """Nothing for 2 s: the scrapes' floor on this machine (its load, the scraper's start)."""
    run.start(0)
    await trio.sleep(2.0)


async def old_answers(ctx: StageContext, run: StageRun) -> None:
    """The resume read as it was: the same blocking function, on the loop."""
    pending, skipped, _, _ = answers.pending_questions(ctx, set(), answers.read_stored(ctx))
    run.skipped(count=skipped)
    run.start(len(pending))
    await trio.lowlevel.checkpoint()


async def old_split(ctx: StageContext, run: StageRun) -> None:
    """Split as it was: the same blocking read and rewrites, on the loop."""
    plan, kept, stamp = split_stage._plan(ctx)
    run.start(plan.counted)
    report = plan.report
    split_stage._write(ctx, plan, kept, stamp)
    del plan, kept
    run.finish_split(report.counts(), report.excluded_total, report.line())
    await trio.lowlevel.checkpoint()


async def measure(
    root: Path, count: int, stage: Stage, body: Body
) -> tuple[LoopStalls, Scrapes, float]:
    """The loop's stalls and the scrapes while `body` runs as `stage`, and its wall time."""
    found: list[tuple[LoopStalls, Scrapes]] = []
    observer = MetricsObserver()

    async def measured(ctx: StageContext, run: StageRun) -> None:
        async with scraped(observer) as scrapes_since:
            since = time.monotonic()
            with measure_stalls() as stalls:
                await body(ctx, run)
            scrapes = await scrapes_since(since)
        found.append((stalls, scrapes))

    async with stage_context(root, count, observer) as ctx:
        started = time.perf_counter()
        await run_stage(ctx, stage, measured)
        wall = time.perf_counter() - started
    stalls, scrapes = found[0]
    return stalls, scrapes, wall


async def run(count: int, rounds: int, only: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        write_project(root, count)
        print(f"{count:,} answers written in {time.perf_counter() - started:.1f} s")
        cases: list[tuple[str, Stage, Body]] = [
            ("nothing, the loop idle", Stage.ANSWERS, idle),
            ("answers resume, in threads", Stage.ANSWERS, answers.answers_stage),
            ("answers resume, on the loop (old path)", Stage.ANSWERS, old_answers),
            ("split, in threads", Stage.SPLIT, split_stage.split_stage),
            ("split, on the loop (old path)", Stage.SPLIT, old_split),
        ]
        for round_ in range(1, rounds + 1):
            for name, stage, body in (case for case in cases if only in case[0]):
                stalls, scrapes, wall = await measure(root, count, stage, body)
                print(
                    f"round {round_}: {name}: longest stall {stalls.longest * 1e3:.1f} ms "
                    f"over {stalls.passes} passes; longest scrape {scrapes.longest * 1e3:.1f} ms "
                    f"at {scrapes.at:.2f} s, {scrapes.over_50_ms} of {scrapes.count} over 50 ms; "
                    f"stage {wall:.2f} s"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", default="", help="only the cases whose name has this text")
    args = parser.parse_args()
    trio.run(run, args.answers, args.rounds, args.only)


if __name__ == "__main__":
    main()
