"""The one error an exception group stands for, with nothing else in it lost."""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import TracebackType
from typing import Literal

import trio

from overbrainer.model.errors import OverbrainerError

log = logging.getLogger(__name__)


def error_leaves(error: BaseException) -> list[BaseException]:
    """Every exception a (possibly nested) group holds, in order; `error` itself if no group."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in error_leaves(inner)]
    return [error]


def lone_error(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one error a (possibly nested) group holds beside `trio.Cancelled`s, else None."""
    leaves = [leaf for leaf in error_leaves(group) if not isinstance(leaf, trio.Cancelled)]
    return leaves[0] if len(leaves) == 1 else None


class Unwrapped:
    """Lets a lone error out of the block's exception group as itself (see `unwrapped`)."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> Literal[False]:
        if isinstance(error, BaseExceptionGroup):
            lone = lone_error(error)
            if lone is not None:
                # The group stays the cause: its traceback (where the nursery was) is kept.
                raise lone from error
        return False

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> Literal[False]:
        return self.__exit__(kind, error, traceback)


def unwrapped() -> Unwrapped:
    """A block (`with` or `async with`) whose lone error comes out unwrapped, as trio-websocket
    does: a nursery wraps even one error in an exception group, and an `except` around a
    helper that opens one would never fire. A group of several errors (beside the
    `trio.Cancelled`s) goes out whole: `except*` or `meaningful_error` handle those.

    `async with unwrapped(), trio.open_nursery() as nursery:` is the usual form.
    """
    return Unwrapped()


def meaningful_error(
    group: BaseExceptionGroup[BaseException],
    *,
    first: Callable[[OverbrainerError], bool] | None = None,
) -> KeyboardInterrupt | OverbrainerError | None:
    """The error to raise in place of `group`, or None when the group must propagate as a bug.

    A KeyboardInterrupt wins (the user asked to stop); then the first OverbrainerError for
    which `first` holds; then the first OverbrainerError. Every other leaf that is neither
    ours nor a `trio.Cancelled` is a bug the chosen error would hide: each is logged at error
    level with its traceback, so raising the chosen error loses nothing. A group with neither
    an interruption nor one of our errors gives None: the caller re-raises it whole.
    """
    leaves = [leaf for leaf in error_leaves(group) if not isinstance(leaf, trio.Cancelled)]
    chosen: KeyboardInterrupt | OverbrainerError | None = next(
        (leaf for leaf in leaves if isinstance(leaf, KeyboardInterrupt)), None
    )
    ours = [leaf for leaf in leaves if isinstance(leaf, OverbrainerError)]
    if chosen is None and first is not None:
        chosen = next((leaf for leaf in ours if first(leaf)), None)
    if chosen is None and ours:
        chosen = ours[0]
    if chosen is None:
        return None
    for leaf in leaves:
        if leaf is chosen or isinstance(leaf, KeyboardInterrupt):
            continue
        if isinstance(leaf, OverbrainerError):
            log.debug("also failed: %s", leaf.message)
        else:
            log.error("also failed, behind «%s»: %r", _describe(chosen), leaf, exc_info=leaf)
    return chosen


def _describe(error: KeyboardInterrupt | OverbrainerError) -> str:
    return "interrupted" if isinstance(error, KeyboardInterrupt) else error.message
