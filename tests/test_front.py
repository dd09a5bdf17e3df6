"""Front ends: real SIGINT against shield and race, the TUI's detach, buses and flags."""

from __future__ import annotations

import logging
import os
import signal

import pytest
import trio
import trio.lowlevel
import trio.testing

from overbrainer.events.frontend import Frontend, Line, Report, RunCreated, RunStopped
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.types import ItemDone, Stage, StageStarted
from overbrainer.ui.front import CliFrontend, TuiFrontend
from tests.tasks import live_tasks


def send_sigint() -> None:
    os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.sigint
async def test_after_a_caught_sigint_later_ones_are_ignored_to_the_end() -> None:
    async with CliFrontend().interrupt() as interrupt:
        send_sigint()
        await until_caught(interrupt)
    # The orderly exit has begun: nothing may cut it short (tests/test_repeated_interrupt.py).
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN


async def test_without_a_sigint_the_handlers_come_back() -> None:
    before = signal.getsignal(signal.SIGINT)
    async with CliFrontend().interrupt():
        assert signal.getsignal(signal.SIGINT) != before
    assert signal.getsignal(signal.SIGINT) == before


async def until_caught(interrupt: Interrupt) -> None:
    with trio.fail_after(5):
        await interrupt.wait_caught()


@pytest.mark.sigint
async def test_real_sigint_never_stops_a_shielded_flow() -> None:
    async with CliFrontend().interrupt() as interrupt:

        async def flow() -> str:
            send_sigint()
            with trio.fail_after(5):
                await interrupt.wait_caught()
            await trio.sleep(0.05)
            return "finished"

        assert await interrupt.shield(flow) == "finished"
        assert interrupt.caught
        assert interrupt.count == 1


@pytest.mark.sigint
async def test_real_sigint_stops_a_raced_flow_and_later_races_do_not_start() -> None:
    started: list[str] = []
    async with CliFrontend().interrupt() as interrupt:

        async def flow() -> str:
            started.append("first")
            send_sigint()
            await trio.sleep_forever()
            return "never"

        with trio.fail_after(5):
            assert await interrupt.race(flow) is None
        assert interrupt.caught

        async def second() -> str:
            started.append("second")
            return "ran"

        assert await interrupt.race(second) is None
    assert started == ["first"]


@pytest.mark.sigint
async def test_race_returns_the_result_when_no_sigint_comes() -> None:
    async with CliFrontend().interrupt() as interrupt:

        async def flow() -> int:
            await trio.lowlevel.checkpoint()
            return 42

        assert await interrupt.race(flow) == 42
        assert not interrupt.caught


@pytest.mark.sigint
async def test_wait_counts_each_sigint_for_a_second_ctrl_c() -> None:
    send, receive = trio.open_memory_channel[int](2)
    async with CliFrontend().interrupt() as interrupt, trio.open_nursery() as nursery:

        async def watch() -> None:
            await send.send(await interrupt.wait())
            await send.send(await interrupt.wait())

        nursery.start_soon(watch)
        await trio.testing.wait_all_tasks_blocked()  # the watcher waits for the first one
        with trio.fail_after(5):
            send_sigint()
            assert await receive.receive() == 1
            send_sigint()
            assert await receive.receive() == 2


async def test_interrupt_outside_the_main_thread_is_off_and_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def in_thread() -> tuple[bool, int]:
        async with CliFrontend().interrupt() as interrupt:

            async def flow() -> int:
                return 5

            return interrupt.off, await interrupt.race(flow) or 0

    def run_in_thread() -> tuple[bool, int]:
        return trio.run(in_thread)

    with caplog.at_level(logging.WARNING):
        off, result = await trio.to_thread.run_sync(run_in_thread)
    assert off
    assert result == 5
    assert any(r.getMessage().startswith("cannot catch Ctrl-C: ") for r in caplog.records)


def tui(bus_events: list[Report] | None = None) -> tuple[trio.Event, list[Report]]:
    return trio.Event(), bus_events if bus_events is not None else []


async def test_tui_detach_never_stops_a_shielded_flow_but_stops_a_raced_one() -> None:
    from overbrainer.events.bus import open_event_bus

    detach, reports = tui()
    async with open_event_bus() as bus:
        front = TuiFrontend(bus, detach, reports.append)
        async with front.interrupt() as interrupt:

            async def shielded() -> str:
                detach.set()
                await until_caught(interrupt)
                return "done"

            assert await interrupt.shield(shielded) == "done"

        async with front.interrupt() as interrupt:

            async def raced() -> str:
                await trio.sleep_forever()
                return "never"

            with trio.fail_after(5):
                assert await interrupt.race(raced) is None
            started: list[int] = []

            async def later() -> int:
                started.append(1)
                return 1

            assert await interrupt.race(later) is None
            assert started == []


async def test_tui_front_end_shares_its_bus_and_reports() -> None:
    from overbrainer.events.bus import open_event_bus

    detach, reports = tui()
    async with open_event_bus() as bus:
        front = TuiFrontend(bus, detach, reports.append)
        outside = bus.subscribe()
        async with front.open_bus() as shared:
            assert shared is bus
            shared.publish(StageStarted(Stage.ANSWERS, 1))
        front.line("answers: 1 done")
        front.run_created("r1")
        front.run_stopped("r1")
        assert await outside.receive() == StageStarted(Stage.ANSWERS, 1)
    assert reports == [Line("answers: 1 done"), RunCreated("r1"), RunStopped("r1")]


async def test_both_front_ends_satisfy_the_frontend_protocol() -> None:
    from overbrainer.events.bus import open_event_bus

    detach, reports = tui()
    async with open_event_bus() as bus:
        # mypy checks the assignment: each front end has every method flows call.
        fronts: list[Frontend] = [CliFrontend(), TuiFrontend(bus, detach, reports.append)]
        for front in fronts:
            front.line("x")
    assert reports == [Line("x")]


async def test_tui_bus_is_rendered_until_the_flow_ends(caplog: pytest.LogCaptureFixture) -> None:
    from overbrainer.events.bus import open_event_bus

    detach, reports = tui()
    with caplog.at_level(logging.INFO, logger="overbrainer"), trio.fail_after(5):
        async with open_event_bus() as bus:
            front = TuiFrontend(bus, detach, reports.append)
            async with front.open_bus() as shared:
                shared.publish(StageStarted(Stage.ANSWERS, 2))
                shared.publish(ItemDone(Stage.ANSWERS, "a"))
    messages = [r.getMessage() for r in caplog.records]
    assert messages[:2] == ["answers: 2 to process", "answers: 1/2"]


async def test_cli_bus_is_rendered_until_closed(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="overbrainer"), trio.fail_after(5):
        async with CliFrontend().open_bus() as bus:
            bus.publish(StageStarted(Stage.QUESTIONS, 3))
            for n in range(3):
                bus.publish(ItemDone(Stage.QUESTIONS, str(n)))
    assert [r.getMessage() for r in caplog.records] == [
        "questions: 3 to process",
        "questions: 1/3",
        "questions: 2/3",
        "questions: 3/3",
    ]


@pytest.mark.sigint
async def test_cancelled_guards_leave_no_task_running() -> None:
    before = live_tasks()
    front = CliFrontend()
    with trio.CancelScope() as scope:
        async with front.open_bus(), front.interrupt():
            assert live_tasks() > before
            scope.cancel()
            await trio.sleep_forever()
    assert scope.cancelled_caught
    assert live_tasks() == before

    class Boom(Exception):
        pass

    # The lone error comes out as itself, not in a group (an `except Boom` around works).
    with pytest.raises(Boom):
        async with front.open_bus(), front.interrupt():
            raise Boom
    assert live_tasks() == before


async def test_cli_lines_are_logged_as_each_event_is_published(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # No task wakes per event (issue 41: two task switches per answer went): the line is
    # there before the publisher reaches its next checkpoint.
    with caplog.at_level(logging.INFO, logger="overbrainer"), trio.fail_after(5):
        async with CliFrontend().open_bus() as bus:
            bus.publish(StageStarted(Stage.ANSWERS, 1))
            assert [r.getMessage() for r in caplog.records] == ["answers: 1 to process"]
            bus.publish(ItemDone(Stage.ANSWERS, "a"))
            assert [r.getMessage() for r in caplog.records][-1] == "answers: 1/1"
