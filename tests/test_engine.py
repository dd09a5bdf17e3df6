"""The stage engine in process: outcomes, summary lines, history, Ctrl-C drain, the cap."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing

from overbrainer.config.settings import Pipeline, Role, Roles, Settings
from overbrainer.config.settings import Project as ProjectSection
from overbrainer.events.bus import open_event_bus
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.types import (
    ItemDone,
    ItemFailed,
    Stage,
    StageFinished,
    StageModel,
    StageStarted,
    StageStats,
)
from overbrainer.llm.connect import RoleClient
from overbrainer.llm.errors import StatusError
from overbrainer.llm.retry import RetryPolicy, with_retry
from overbrainer.llm.types import Completion, CompletionRequest
from overbrainer.model.errors import EXIT_INTERRUPTED
from overbrainer.model.usage import Price, Usage
from overbrainer.pipeline.engine import (
    Body,
    StageContext,
    StageInterrupted,
    StageItemsFailed,
    StageRun,
    StageStopped,
    run_stage,
    select_topics,
    summary_line,
)
from overbrainer.pipeline.spend import SpendCap, SpendCapReached
from overbrainer.project.directory import Project
from overbrainer.storage.history import HistoryStatus, read_history
from tests.generator_harness import Recorder

ROLE = Role(provider="stub", model="parent-model")


@attrs.define
class Harness:
    root: Path
    lines: list[str] = attrs.Factory(list)
    recorder: Recorder = attrs.Factory(Recorder)
    interrupt: Interrupt = attrs.Factory(Interrupt)
    spend: SpendCap = attrs.Factory(SpendCap)
    price: Price | None = attrs.Factory(lambda: Price(1000.0, 2000.0))
    drain: float = 30.0
    client: object = None

    async def run(self, body: Body) -> StageStats:
        return await self._run(body)

    async def _run(self, body: Body) -> StageStats:
        settings = Settings(
            project=ProjectSection("demo"),
            roles=Roles(generator=ROLE, parent=ROLE),
            pipeline=Pipeline(concurrency=2, drain_secs=self.drain),
        )

        async with open_event_bus(observer=self.recorder) as bus:
            role = RoleClient("parent", ROLE, "stub", self.client, self.price)  # type: ignore[arg-type]
            ctx = StageContext(
                project=Project(self.root),
                settings=settings,
                topics=(),
                bus=bus,
                interrupt=self.interrupt,
                roles={"parent": role},
                spend=self.spend,
            )
            outcome = await run_stage(ctx, Stage.ANSWERS, body)
        self.lines.append(outcome.line)
        return outcome.check()

    def history(self) -> list[tuple[HistoryStatus, int, int, int, int]]:
        path = self.root / ".overbrainer" / "history.jsonl"
        return [(h.status, h.done, h.skipped, h.failed, h.excluded) for h in read_history(path)]


USAGE = Usage(100, 50)


async def finish_items(run: StageRun, ids: list[str], pause: float = 0.0) -> None:
    async def one(item: str) -> None:
        await trio.sleep(pause)
        cost = run.add_usage(USAGE)
        run.done(item, USAGE, cost, excluded=item.startswith("x"))

    await run.each(ids, one)


async def test_a_clean_stage_prints_its_line_and_records_ok(tmp_path: Path) -> None:
    h = Harness(tmp_path)

    async def body(ctx: StageContext, run: StageRun) -> None:
        run.skipped(count=3)
        run.start(3)
        await finish_items(run, ["a", "b", "x1"])

    stats = await h.run(body)
    assert (stats.done, stats.skipped, stats.excluded) == (2, 3, 1)
    assert h.lines == [
        "answers: 2 done, 3 skipped, 0 failed, 1 excluded; tokens 300 in, 150 out; cost $0.6000"
    ]
    assert h.history() == [(HistoryStatus.OK, 2, 3, 0, 1)]
    kinds = [type(e) for e in h.recorder.events]
    assert kinds[:2] == [StageStarted, StageModel]
    assert kinds[-1] is StageFinished
    assert sorted(e.id for e in h.recorder.events if isinstance(e, ItemDone)) == ["a", "b", "x1"]


def test_the_summary_line_without_a_price() -> None:
    assert summary_line(Stage.SUBTOPICS, StageStats(done=1)) == (
        "subtopics: 1 done, 0 skipped, 0 failed, 0 excluded; tokens 0 in, 0 out; cost unknown"
    )


async def test_failed_items_fail_the_stage_after_its_line(tmp_path: Path) -> None:
    h = Harness(tmp_path, price=None)

    async def body(ctx: StageContext, run: StageRun) -> None:
        run.start(2)
        await finish_items(run, ["a"])
        run.failed("b", StatusError(500, "boom"))

    with pytest.raises(StageItemsFailed) as caught:
        await h.run(body)
    assert caught.value.message == "1 answers item(s) failed; run the command again to retry them"
    assert caught.value.exit_code == 1
    assert h.lines == [
        "answers: 1 done, 0 skipped, 1 failed, 0 excluded; tokens 100 in, 50 out; cost unknown"
    ]
    assert h.history() == [(HistoryStatus.FAILED, 1, 0, 1, 0)]
    [failed] = [e for e in h.recorder.events if isinstance(e, ItemFailed)]
    assert failed == ItemFailed(Stage.ANSWERS, "b", "HTTP 500: boom", retryable=False)


async def test_a_fatal_error_stops_admission_and_keeps_what_was_in_flight(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    h = Harness(tmp_path)
    started: list[str] = []

    async def body(ctx: StageContext, run: StageRun) -> None:
        run.start(4)

        async def one(item: str) -> None:
            started.append(item)
            if item == "bad":
                await trio.sleep(0.1)
                run.failed(item, StatusError(403, "permission denied by the provider"))
                return
            await trio.sleep(10)  # in flight when the 403 comes: paid for, so kept
            run.done(item, USAGE, run.add_usage(USAGE))

        await run.each(["slow", "bad", "never", "nor"], one)

    begun = trio.current_time()
    with pytest.raises(StageStopped) as caught:
        await h.run(body)
    assert trio.current_time() - begun == pytest.approx(10)
    assert caught.value.message == ("answers stopped: HTTP 403: permission denied by the provider")
    assert started == ["slow", "bad"]
    # The spec: a fatal error stops the stage, and only a non-fatal one gives `failed += 1`.
    assert h.lines == [
        "answers: 1 done, 0 skipped, 0 failed, 0 excluded; tokens 100 in, 50 out; cost $0.2000"
    ]
    assert h.history() == [(HistoryStatus.FAILED, 1, 0, 0, 0)]


async def test_a_stop_gives_the_requests_in_flight_the_grace_then_cancels(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    h = Harness(tmp_path, drain=5.0)

    async def body(ctx: StageContext, run: StageRun) -> None:
        run.start(2)

        async def one(item: str) -> None:
            if item == "bad":
                run.failed(item, StatusError(401, "authentication failed"))
                return
            await trio.sleep(100)
            run.done(item, USAGE, run.add_usage(USAGE))

        await run.each(["slow", "bad"], one)

    begun = trio.current_time()
    with pytest.raises(StageStopped):
        await h.run(body)
    assert trio.current_time() - begun == pytest.approx(5)
    assert h.lines[0].startswith("answers: 0 done")


async def test_the_same_client_error_for_three_items_in_a_row_stops_the_stage(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    h = Harness(tmp_path)
    ended: list[str] = []

    async def body(ctx: StageContext, run: StageRun) -> None:
        run.start(9)

        async def one(item: tuple[int, str]) -> None:
            index, name = item
            await trio.sleep(1 + index * 0.1)  # items end in list order
            ended.append(name)
            if name == "ok":
                run.done(name, USAGE, run.add_usage(USAGE))
            else:
                run.failed(name, StatusError(400, "unknown model parent-model"))

        names = ["a", "b", "ok", "c", "d", "e", "f", "g", "h"]
        await run.each(list(enumerate(names)), one)

    with pytest.raises(StageStopped) as caught:
        await h.run(body)
    assert caught.value.message == (
        "answers stopped: HTTP 400: unknown model parent-model (the same for 3 items in a row)"
    )
    # The answer between a, b and c, d, e breaks the run of errors; e is the third in a row,
    # and f, in flight beside it (two at a time), still ends.
    assert ended == ["a", "b", "ok", "c", "d", "e", "f"]
    assert h.history() == [(HistoryStatus.FAILED, 1, 0, 6, 0)]


class Waiting(Exception):
    """A retryable error whose server asked for a long wait."""

    retryable = True
    retry_after = 20.0


async def test_the_first_interrupt_ends_a_retry_wait_and_starts_no_attempt(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    h = Harness(tmp_path)
    attempts: list[str] = []

    async def body(ctx: StageContext, run: StageRun) -> None:
        run.start(3)

        async def later() -> None:
            await trio.sleep(1)
            ctx.interrupt.fire()

        async def one(item: str) -> None:
            async def attempt() -> None:
                attempts.append(item)
                raise Waiting()

            await with_retry(RetryPolicy(max_retries=5), attempt, gate=run)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(later)
            await run.each(["a", "b", "c"], one)

    begun = trio.current_time()
    with pytest.raises(StageInterrupted):
        await h.run(body)
    assert trio.current_time() - begun == pytest.approx(1)
    assert sorted(attempts) == ["a", "b"]
    # Neither is failed: both are left for the next run.
    assert h.history() == [(HistoryStatus.INTERRUPTED, 0, 0, 0, 0)]


async def test_first_interrupt_lets_the_items_in_flight_finish(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    h = Harness(tmp_path)

    async def body(ctx: StageContext, run: StageRun) -> None:
        run.start(6)

        async def later() -> None:
            await trio.sleep(1.5)
            ctx.interrupt.fire()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(later)
            await finish_items(run, ["a", "b", "c", "d", "e", "f"], pause=1.0)

    with pytest.raises(StageInterrupted) as caught:
        await h.run(body)
    assert caught.value.exit_code == EXIT_INTERRUPTED
    assert caught.value.message == "interrupted: the stage resumes on its next run"
    # Two at a time: a and b by t=1, c and d (in flight at t=1.5) by t=2, nothing after.
    assert h.lines[0].startswith("answers: 4 done, 0 skipped")
    assert h.history() == [(HistoryStatus.INTERRUPTED, 4, 0, 0, 0)]


async def test_the_grace_ends_and_a_second_interrupt_cancels_at_once(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    for second, limit in ((False, 5.0), (True, 0.5)):
        h = Harness(tmp_path / str(second), drain=5.0)

        async def body(ctx: StageContext, run: StageRun, second: bool = second) -> None:
            run.start(2)

            async def press() -> None:
                await trio.sleep(0.5)
                ctx.interrupt.fire()
                if second:
                    await trio.sleep(0.5)
                    ctx.interrupt.fire()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(press)
                await finish_items(run, ["a", "b"], pause=100.0)

        begun = trio.current_time()
        with pytest.raises(StageInterrupted):
            await h.run(body)
        assert trio.current_time() - begun == pytest.approx(0.5 + limit)
        assert h.lines[0].startswith("answers: 0 done")
        assert h.history() == [(HistoryStatus.INTERRUPTED, 0, 0, 0, 0)]


class SlowModel:
    """A model answering every request after a second, with `USAGE` ($0.20 at the price)."""

    async def complete(
        self, request: CompletionRequest, on_retry: object = None, gate: object = None
    ) -> Completion:
        await trio.sleep(1.0)
        return Completion("ok", usage=USAGE)


async def test_the_spend_cap_stops_admission_and_fails_the_command(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    h = Harness(tmp_path, spend=SpendCap(0.5), client=SlowModel())

    async def body(ctx: StageContext, run: StageRun) -> None:
        run.start(10)

        async def one(item: str) -> None:
            paid = await run.complete(run.request("q", max_tokens=100), item)
            if paid is not None:
                run.done(item, paid.usage, paid.cost)

        await run.each([str(n) for n in range(10)], one)

    with pytest.raises(SpendCapReached) as caught:
        await h.run(body)
    # Each request reserves (1 + 16) in at $1000/M and 100 out at $2000/M: $0.217. Two fit
    # under $0.50 and the third waits; once they settle at $0.20 each, $0.40 + $0.217 does not
    # fit with nothing in flight, so the cap refuses it.
    assert h.spend.spent == Fraction(2, 5)
    assert h.spend.reserved == 0
    assert caught.value.message == (
        "spend cap reached: $0.4000 of $0.5000 (the next request could cost up to $0.2170); "
        "run the command again to continue"
    )
    assert h.lines == [
        "answers: 2 done, 0 skipped, 0 failed, 0 excluded; tokens 200 in, 100 out; cost $0.4000"
    ]
    [line] = read_history(tmp_path / ".overbrainer" / "history.jsonl")
    assert (line.status, line.done, line.reason) == (
        HistoryStatus.INTERRUPTED,
        2,
        "spend cap reached: $0.4000 of $0.5000",
    )


def test_unknown_topics_are_refused_by_name() -> None:
    from overbrainer.config.settings import Topic
    from overbrainer.model.errors import UsageError

    settings = Settings(
        project=ProjectSection("demo"),
        roles=Roles(generator=ROLE, parent=ROLE),
        topics=(Topic("a", 1, 1), Topic("b", 1, 1), Topic("c", 1, 1)),
    )
    assert [t.name for t in select_topics(settings, ("c", "a"))] == ["a", "c"]
    assert len(select_topics(settings, ())) == 3
    with pytest.raises(UsageError, match=r"^unknown topic `z`$"):
        select_topics(settings, ("a", "z"))
