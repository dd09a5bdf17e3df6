"""The one error a group stands for: ours first, bugs beside it logged, bugs alone propagate."""

from __future__ import annotations

import logging
from typing import TypeVar

import pytest
import trio

from overbrainer.events.interrupt import Interrupt
from overbrainer.model.error_groups import error_leaves, meaningful_error, unwrapped
from overbrainer.model.errors import OverbrainerError, UsageError

LOGGER = "overbrainer.model.error_groups"


E = TypeVar("E", bound=BaseException)


def raised(error: E) -> E:
    """`error` with a traceback, as a task would have raised it."""
    try:
        raise error
    except BaseException as caught:
        assert caught is error
        return error


async def _cancelled_in_scope() -> None:
    with trio.CancelScope() as scope:
        scope.cancel()
        try:
            await trio.lowlevel.checkpoint()
        except trio.Cancelled as error:
            raise _Escape(error) from None
    raise AssertionError("not cancelled")  # pragma: no cover


class _Escape(Exception):
    def __init__(self, error: trio.Cancelled) -> None:
        super().__init__()
        self.error = error


def a_cancelled() -> trio.Cancelled:
    """A real `trio.Cancelled` (it has no public constructor)."""
    try:
        trio.run(_cancelled_in_scope)
    except _Escape as escape:
        return escape.error
    raise AssertionError("not cancelled")


def test_leaves_of_nested_groups_keep_their_order() -> None:
    a, b, c = ValueError("a"), TypeError("b"), OverbrainerError("c")
    group = BaseExceptionGroup(
        "outer", [a, BaseExceptionGroup("inner", [b, ExceptionGroup("x", [c])])]
    )
    assert error_leaves(group) == [a, b, c]
    assert error_leaves(a) == [a]


def test_only_our_errors_gives_the_first_and_logs_nothing_at_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, second = OverbrainerError("first"), UsageError("second")
    group = ExceptionGroup("tasks", [ExceptionGroup("inner", [first]), second])
    with caplog.at_level(logging.DEBUG, LOGGER):
        assert meaningful_error(group) is first
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    assert "second" in caplog.records[0].getMessage()


def test_first_prefers_the_error_it_picks() -> None:
    plain, stop = OverbrainerError("plain"), OverbrainerError("stop")
    group = ExceptionGroup("tasks", [plain, ExceptionGroup("inner", [stop])])
    assert meaningful_error(group, first=lambda e: e.message == "stop") is stop
    assert meaningful_error(group, first=lambda e: False) is plain


def test_only_bugs_gives_none_and_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    group = ExceptionGroup("tasks", [raised(TypeError("bug")), ValueError("other")])
    with caplog.at_level(logging.DEBUG, LOGGER):
        assert meaningful_error(group) is None
    assert caplog.records == []


def test_a_bug_beside_our_error_is_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ours = OverbrainerError("answers stopped: HTTP 403")
    bug = raised(TypeError("unsupported operand"))
    group = BaseExceptionGroup(
        "outer", [ExceptionGroup("inner", [bug]), a_cancelled(), ExceptionGroup("x", [ours])]
    )
    with caplog.at_level(logging.ERROR, LOGGER):
        assert meaningful_error(group) is ours
    [record] = caplog.records
    assert record.levelno == logging.ERROR
    assert "answers stopped: HTTP 403" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[1] is bug
    assert "raise error" in caplog.text  # the bug's own traceback
    assert "TypeError: unsupported operand" in caplog.text


def test_cancelled_alone_is_not_an_error(caplog: pytest.LogCaptureFixture) -> None:
    group = BaseExceptionGroup("tasks", [a_cancelled(), a_cancelled()])
    with caplog.at_level(logging.DEBUG, LOGGER):
        assert meaningful_error(group) is None
    assert caplog.records == []


def test_keyboard_interrupt_wins_and_what_it_hides_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    interrupt = KeyboardInterrupt()
    ours, bug = OverbrainerError("ours"), raised(RuntimeError("bug"))
    group = BaseExceptionGroup(
        "outer", [ours, BaseExceptionGroup("inner", [bug, interrupt, KeyboardInterrupt()])]
    )
    with caplog.at_level(logging.ERROR, LOGGER):
        assert meaningful_error(group) is interrupt
    assert [r.exc_info[1] if r.exc_info else None for r in caplog.records] == [bug]
    assert "interrupted" in caplog.records[0].getMessage()


# unwrapped(): a lone error out of a nursery as itself


async def _fail(error: BaseException) -> None:
    await trio.lowlevel.checkpoint()
    raise error


async def test_a_lone_error_of_a_nursery_comes_out_unwrapped() -> None:
    error = UsageError("alone")
    with pytest.raises(UsageError) as caught:
        async with unwrapped(), trio.open_nursery() as nursery:
            nursery.start_soon(_fail, error)
            await trio.sleep_forever()
    assert caught.value is error
    # The group stays its cause, so the nursery's traceback is not lost.
    assert isinstance(error.__cause__, BaseExceptionGroup)
    assert error_leaves(error.__cause__) == [error]


async def test_a_nested_lone_error_comes_out_unwrapped() -> None:
    error = ValueError("deep")
    with pytest.raises(ValueError) as caught:
        async with unwrapped(), trio.open_nursery() as outer:

            async def inner() -> None:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_fail, error)

            outer.start_soon(inner)
    assert caught.value is error


async def test_an_error_of_the_block_itself_comes_out_unwrapped() -> None:
    async def helper() -> None:
        async with unwrapped(), trio.open_nursery() as nursery:
            nursery.start_soon(trio.sleep_forever)
            raise UsageError("in the body")

    # What a caller of such a helper writes: a plain `except` fires.
    try:
        await helper()
    except UsageError as error:
        assert error.message == "in the body"
    else:  # pragma: no cover
        raise AssertionError("not raised")


async def _fail_at_once(error: BaseException) -> None:
    raise error  # no checkpoint first: a sibling's failure cannot cancel this one


async def test_two_errors_stay_a_group() -> None:
    first, second = ValueError("one"), KeyError("two")
    with pytest.raises(BaseExceptionGroup) as caught:
        async with unwrapped(), trio.open_nursery() as nursery:
            nursery.start_soon(_fail_at_once, first)
            nursery.start_soon(_fail_at_once, second)
    assert sorted(map(repr, error_leaves(caught.value))) == sorted([repr(first), repr(second)])


def test_cancelled_beside_a_lone_error_is_ignored() -> None:
    error = UsageError("ours")
    group = BaseExceptionGroup("tasks", [a_cancelled(), ExceptionGroup("inner", [error])])
    with pytest.raises(UsageError) as caught, unwrapped():
        raise group
    assert caught.value is error
    assert error.__cause__ is group


def test_cancelled_alone_stays_a_group() -> None:
    group = BaseExceptionGroup("tasks", [a_cancelled(), a_cancelled()])
    with pytest.raises(BaseExceptionGroup) as caught, unwrapped():
        raise group
    assert caught.value is group


def test_a_plain_error_and_no_error_pass_as_they_are() -> None:
    error = ValueError("plain")
    with pytest.raises(ValueError) as caught, unwrapped():
        raise error
    assert caught.value is error and error.__cause__ is None
    with unwrapped():
        pass


async def test_an_error_of_a_raced_flow_comes_out_as_itself() -> None:
    async def flow() -> None:
        raise UsageError("the flow failed")

    with pytest.raises(UsageError):
        await Interrupt().race(flow)
