"""Intents: batches whose submit was never confirmed, looked up before their questions move on.

An intent is written before a batch is submitted; when the submit got no answer (a timeout,
Ctrl-C, a crash), the batch may exist and be billed. Before its questions are asked again, the
provider is asked for a batch with the intent's tag: found, it is recorded and collected like
any other; not found, or not listable, the intent is dropped with a warning, since kept it
would hold its questions back forever.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from overbrainer.llm import StatusError
from overbrainer.pipeline.blocking import write_in_thread
from overbrainer.storage import BatchRecord, remove_batch, submitted

if TYPE_CHECKING:
    from overbrainer.llm import BatchApi

log = logging.getLogger(__name__)

T = TypeVar("T")

Call = Callable[[str, Callable[[], Awaitable[T]]], Awaitable[T]]
"""How a lookup is made: `call(what, op)` runs `op` with the stage's retries and gate."""


def intent_dropped(record: BatchRecord, why: str) -> str:
    """The warning for an intent dropped so that its questions are asked again."""
    return (
        f"answers: a batch of {len(record.questions)} question(s) was being submitted at "
        f"{record.created} when the command stopped and {why}: its questions are asked again "
        "(if the provider's console shows it, cancel it there)"
    )


async def resolve_intent(
    api: BatchApi | None,
    call: Call[str | None],
    directory: Path,
    record: BatchRecord,
) -> BatchRecord | None:
    """The intent's batch recorded under its ID when the provider finds it; None when the
    intent was dropped (said in a warning). `api` None: the provider has no batch API now."""
    found: str | None = None
    if api is None:
        why = "the parent's provider has no batch API to look it up"
    else:
        try:
            found = await call("batch", functools.partial(api.find, record.tag))
        except StatusError as error:
            # The provider cannot list its batches (404 and the like): the intent can never
            # be resolved, so it must not hold its questions back.
            why = f"its batch cannot be looked up ({error.message})"
        else:
            why = "no batch with its tag was found"
    if found is None:
        log.warning("%s", intent_dropped(record, why))
        await write_in_thread(functools.partial(remove_batch, directory, record))
        return None
    return await write_in_thread(functools.partial(submitted, directory, record, found))
