"""The mechanism every push shares: uploads abandonable on Ctrl-C, then one shielded commit."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import trio

from overbrainer.events.bus import EventBus
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.types import Push
from overbrainer.hub.client import Committed, CountingReader, HubClient, xet_in_use
from overbrainer.hub.errors import HubFailed, PushCancelled
from overbrainer.hub.repo import RepoId
from overbrainer.hub.selection import CARD
from overbrainer.model.error_groups import unwrapped

if TYPE_CHECKING:
    from huggingface_hub import CommitOperationAdd

log = logging.getLogger(__name__)

T = TypeVar("T")
COMMIT_LIMIT_S = 300.0
"""How long the shielded commit may take before the push gives up waiting for it."""


async def blocking(work: Callable[[], T]) -> T:
    """Run a Hub call or a hash in a thread, abandoned on Ctrl-C."""
    # Left to finish in its thread on Ctrl-C; nothing depends on it then.
    return await trio.to_thread.run_sync(work, abandon_on_cancel=True)


async def publish_progress(bus: EventBus, run_id: str, total: int, done: Callable[[], int]) -> None:
    """Publish `Push` once a second when `done()` moved (capped at `total`) until cancelled."""
    last = -1
    while True:
        value = min(done(), total)
        if value != last:
            bus.publish(Push(run_id=run_id, done=value, total=total))
            last = value
        await trio.sleep(1)


def operations(
    client: HubClient, files: Sequence[tuple[Path, str]], card: str | None
) -> tuple[list[CommitOperationAdd], list[CountingReader]]:
    """One add per (local, repo path) (a counting reader through LFS), then the card (blocking)."""
    adds: list[CommitOperationAdd] = []
    readers: list[CountingReader] = []
    count_bytes = not xet_in_use()
    for local, repo_path in files:
        if count_bytes:
            reader = CountingReader(local)
            readers.append(reader)
            adds.append(client.operation(reader, repo_path))
            reader.counting = True
        else:
            adds.append(client.operation(local, repo_path))
    if card is not None:
        from huggingface_hub import CommitOperationAdd

        adds.append(CommitOperationAdd(path_in_repo=CARD, path_or_fileobj=card.encode()))
    return adds, readers


async def upload_and_commit(
    client: HubClient,
    repo: RepoId,
    adds: list[CommitOperationAdd],
    readers: list[CountingReader],
    sizes: dict[str, int],
    *,
    label: str,
    message: str,
    bus: EventBus,
    interrupt: Interrupt,
) -> Committed:
    """Upload each file (PushCancelled on Ctrl-C), then make one commit, shielded and bounded.

    `label` names the push in its `Push` events; `sizes` maps repo paths to bytes.
    """
    total = sum(sizes.values())
    per_file = not readers
    finished: list[int] = []

    def done() -> int:
        return sum(finished) + sum(reader.read_bytes for reader in readers)

    async def upload_all() -> bool:
        async with unwrapped(), trio.open_nursery() as nursery:
            nursery.start_soon(publish_progress, bus, label, total, done)
            for add in adds:
                await blocking(functools.partial(client.preupload, repo, add))
                if per_file:
                    finished.append(sizes.get(add.path_in_repo, 0))
            nursery.cancel_scope.cancel()
        return True

    try:
        if not await interrupt.race(upload_all):
            raise PushCancelled()
        bus.publish(Push(run_id=label, done=total, total=total))
        committed = await interrupt.shield(lambda: _commit(client, repo, adds, message))
        if interrupt.caught:
            log.warning("push: Ctrl-C came during the commit, which was let finish: it is made")
    finally:
        for reader in readers:
            reader.close()
    return committed


async def _commit(
    client: HubClient, repo: RepoId, adds: list[CommitOperationAdd], message: str
) -> Committed:
    with trio.move_on_after(COMMIT_LIMIT_S, shield=True):
        return await blocking(lambda: client.commit(repo, adds, message))
    raise HubFailed(
        f"the Hub did not answer the commit within {COMMIT_LIMIT_S:.0f} s: check {repo} "
        "on the Hub, then run the push again"
    )
