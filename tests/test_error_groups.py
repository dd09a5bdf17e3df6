"""The one error a group stands for: ours first, bugs beside it logged, bugs alone propagate."""

from __future__ import annotations

import logging
from typing import TypeVar

import pytest
import trio

from overbrainer.model.error_groups import error_leaves, meaningful_error
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
