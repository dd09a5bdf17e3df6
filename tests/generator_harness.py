"""In-process runs of the generator stages against the stub provider over real HTTP."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import trio

from overbrainer.config.settings import Pipeline, Provider, Role, Roles, Settings, Topic
from overbrainer.config.settings import Project as ProjectSection
from overbrainer.devtools.stub_provider import StubProvider, open_stub
from overbrainer.events.bus import open_event_bus
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.types import Event, ItemDone, ItemFailed, Stage, StageStats
from overbrainer.llm.client import ProtocolClient, ProviderConnection, open_provider
from overbrainer.llm.connect import RoleClient
from overbrainer.llm.retry import RetryPolicy
from overbrainer.llm.types import Protocol
from overbrainer.model.usage import Price
from overbrainer.pipeline.engine import Body, StageContext, load_templates, run_stage
from overbrainer.pipeline.spend import SpendCap
from overbrainer.project.directory import Project
from overbrainer.storage.records import Question, Subtopic

GENERATOR = Role(provider="stub", model="gen-model", max_tokens=1000)
EMBEDDER = Role(provider="stub", model="embed-model")
PRICE = Price(1.0, 2.0)


class Recorder:
    """Every event published, in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def event(self, bus: int, event: Event) -> None:
        self.events.append(event)

    def closed(self, bus: int) -> None:
        pass


@attrs.define
class Harness:
    """A project directory, the stub, and what a stage run printed and published."""

    root: Path
    stub: StubProvider
    topics: tuple[Topic, ...]
    pipeline: Pipeline = attrs.Factory(lambda: Pipeline(concurrency=2, max_retries=2))
    embedder: bool = False
    lines: list[str] = attrs.Factory(list)
    recorder: Recorder = attrs.Factory(Recorder)

    @property
    def project(self) -> Project:
        return Project(self.root)

    def write(self, name: str, records: list[Subtopic] | list[Question]) -> None:
        data = self.root / "data"
        data.mkdir(parents=True, exist_ok=True)
        (data / f"{name}.jsonl").write_text("".join(r.to_json() + "\n" for r in records))

    def write_lines(self, name: str, lines: list[str]) -> None:
        data = self.root / "data"
        data.mkdir(parents=True, exist_ok=True)
        (data / f"{name}.jsonl").write_text("".join(line + "\n" for line in lines))

    def subtopics(self) -> list[Subtopic]:
        path = self.root / "data" / "subtopics.jsonl"
        return [Subtopic.from_json(line) for line in path.read_text().splitlines()]

    def questions(self) -> list[Question]:
        path = self.root / "data" / "questions.jsonl"
        if not path.exists():
            return []
        return [Question.from_json(line) for line in path.read_text().splitlines()]

    def failures(self) -> list[tuple[str, str, bool]]:
        return [
            (e.id, e.error, e.retryable) for e in self.recorder.events if isinstance(e, ItemFailed)
        ]

    def done_events(self) -> list[ItemDone]:
        return [e for e in self.recorder.events if isinstance(e, ItemDone)]

    async def run(
        self, stage: Stage, body: Body, *, force: bool = False, only: tuple[str, ...] = ()
    ) -> StageStats:
        """Run `body` as `stage` under the real engine; the error it ends with is raised."""
        self.lines.clear()
        self.recorder.events.clear()
        with trio.fail_after(20):
            return await self._run(stage, body, force, only)

    async def _run(
        self, stage: Stage, body: Body, force: bool, only: tuple[str, ...]
    ) -> StageStats:
        roles = Roles(
            generator=GENERATOR, parent=GENERATOR, embedder=EMBEDDER if self.embedder else None
        )
        settings = Settings(
            project=ProjectSection("demo"),
            topics=self.topics,
            roles=roles,
            pipeline=self.pipeline,
            providers={"stub": Provider(Protocol.OPENAI)},
        )
        topics = tuple(t for t in self.topics if not only or t.name in only)

        async with (
            open_event_bus(observer=self.recorder) as bus,
            open_provider(ProviderConnection(Protocol.OPENAI, self.stub.url)) as http,
        ):
            # No HTTP retries: each test scripts every attempt ask_list makes.
            client = ProtocolClient(http, Protocol.OPENAI, "gen-model", retry=RetryPolicy(0))
            roles_map = {
                "generator": RoleClient("generator", GENERATOR, "stub", client, PRICE),
                "parent": RoleClient("parent", GENERATOR, "stub", client, PRICE),
            }
            if self.embedder:
                embed = ProtocolClient(http, Protocol.OPENAI, "embed-model", retry=RetryPolicy(0))
                roles_map["embedder"] = RoleClient("embedder", EMBEDDER, "stub", embed, None)
            ctx = StageContext(
                project=self.project,
                settings=settings,
                topics=topics,
                bus=bus,
                interrupt=Interrupt(),
                spend=SpendCap(),
                force=force,
                topic_filter=only or None,
                templates=load_templates(self.project),
                roles=roles_map,
            )
            outcome = await run_stage(ctx, stage, body)
        self.lines.append(outcome.line)
        return outcome.check()


@contextlib.asynccontextmanager
async def harness(
    root: Path, *topics: Topic, pipeline: Pipeline | None = None, embedder: bool = False
) -> AsyncIterator[Harness]:
    """A harness over a fresh project directory with its own stub."""
    (root / ".overbrainer").mkdir(parents=True, exist_ok=True)
    async with open_stub() as stub:
        h = Harness(root, stub, topics, embedder=embedder)
        if pipeline is not None:
            h.pipeline = pipeline
        yield h
