"""`overbrainer push`: the Hub calls in order, uploads abandonable, one shielded commit (§C)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import attrs
import trio

from overbrainer import __version__
from overbrainer.config.secrets import resolve_secret
from overbrainer.config.settings import Settings
from overbrainer.events.bus import EventBus
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.types import Push
from overbrainer.hub.card import MARKER, CardInputs, render_card
from overbrainer.hub.client import Committed, CountingReader, HubClient, xet_in_use
from overbrainer.hub.errors import TOKEN_MISSING, HubFailed, PushCancelled, PushRefused
from overbrainer.hub.plan import PUSH_DIR, PUSH_FILE, PushPlan
from overbrainer.hub.push_record import PushRecord
from overbrainer.hub.repo import RepoId, default_name
from overbrainer.hub.selection import CARD
from overbrainer.model.error_groups import unwrapped
from overbrainer.model.sizes import format_size
from overbrainer.storage import write_atomic
from overbrainer.training import rfc3339

if TYPE_CHECKING:
    from huggingface_hub import CommitOperationAdd

log = logging.getLogger(__name__)

T = TypeVar("T")
COMMIT_LIMIT_S = 300.0
"""How long the shielded commit may take before the push gives up waiting for it."""
KEPT_CARD = "kept the repo's own README.md (use --overwrite-card to replace it)"
PLACEHOLDER_NAMESPACE = "<you>"


@attrs.frozen
class PushResult:
    """What a push did: its lines (stdout), and the commit (None for a dry run)."""

    lines: tuple[str, ...]
    committed: Committed | None = None


def files_word(count: int) -> str:
    """`1 file` / `N files`."""
    return f"{count} file" if count == 1 else f"{count} files"


def refuse_visibility(repo: RepoId, private: bool, existing: bool | None) -> str | None:
    """The line for an existing repo of another visibility; PushRefused when private into public."""
    if existing is None or existing == private:
        return None
    if private:
        raise PushRefused(
            f"repo {repo} is public and this push is private: push with --public or set "
            "[hub] private = false"
        )
    return f"repo {repo} exists and stays private"


async def _blocking(work: Callable[[], T]) -> T:
    # A Hub call or a hash: left to finish in its thread on Ctrl-C; nothing depends on it then.
    return await trio.to_thread.run_sync(work, abandon_on_cancel=True)


def _card_text(plan: PushPlan, settings: Settings, repo: RepoId, license_: str | None) -> str:
    files = [item.repo_path for item in plan.files]
    return render_card(CardInputs(plan.run_dir, settings, str(repo), files, license_))


def write_card(run_dir: Path, text: str) -> Path:
    """The card at `runs/<run>/hub/README.md` (atomic; blocking)."""
    path = run_dir / PUSH_DIR / CARD
    path.parent.mkdir(exist_ok=True)
    write_atomic(path, text)
    return path


async def dry_run(plan: PushPlan, settings: Settings, token: str | None) -> PushResult:
    """`--dry-run`: what would be sent, and the card written locally; no network without a token."""
    repo = plan.repo
    if repo is None:
        namespace = PLACEHOLDER_NAMESPACE
        if token is not None:
            client = HubClient(settings.hub.url, token)
            namespace = await _blocking(client.whoami)
        repo = RepoId(namespace, default_name(settings.project.name))
    visibility = "private" if plan.private else "public"
    lines = [f"push: {repo}, {visibility} when created; nothing is sent (--dry-run)"]
    lines += [f"{item.repo_path}  {format_size(item.size)}" for item in plan.files]
    text = _card_text(plan, settings, repo, None)
    await trio.to_thread.run_sync(write_card, plan.run_dir, text)
    run_id = plan.record.id
    lines.append(
        f"push: {files_word(len(plan.files))}, {format_size(plan.bytes)}; "
        f"card written to runs/{run_id}/hub/README.md"
    )
    return PushResult(tuple(lines))


async def hub_token(settings: Settings) -> str:
    """OVERBRAINER_HF_TOKEN (literal or `vault:`), resolved now; PushRefused when unset."""
    if settings.hf_token is None:
        raise PushRefused(TOKEN_MISSING)
    return await resolve_secret(settings.hf_token, "OVERBRAINER_HF_TOKEN")


async def publish_progress(bus: EventBus, run_id: str, total: int, done: Callable[[], int]) -> None:
    """Publish `Push` once a second when `done()` moved (capped at `total`) until cancelled."""
    last = -1
    while True:
        value = min(done(), total)
        if value != last:
            bus.publish(Push(run_id=run_id, done=value, total=total))
            last = value
        await trio.sleep(1)


async def push(
    plan: PushPlan,
    settings: Settings,
    bus: EventBus,
    interrupt: Interrupt,
    *,
    overwrite_card: bool = False,
) -> PushResult:
    """Push a planned run: every upload, then one commit; PushCancelled on Ctrl-C before it."""
    token = await hub_token(settings)
    client = HubClient(settings.hub.url, token)
    lines: list[str] = []
    prepared = await interrupt.race(lambda: _prepare(client, plan, settings, lines, overwrite_card))
    if prepared is None:
        raise PushCancelled()
    repo, operations, readers, private = prepared
    run_id = plan.record.id
    sizes = {item.repo_path: item.size for item in plan.files}
    total = sum(sizes.values())
    per_file = not readers
    finished: list[int] = []

    def done() -> int:
        return sum(finished) + sum(reader.read_bytes for reader in readers)

    async def upload_all() -> bool:
        async with unwrapped(), trio.open_nursery() as nursery:
            nursery.start_soon(publish_progress, bus, run_id, total, done)
            for operation in operations:
                await _blocking(functools.partial(client.preupload, repo, operation))
                if per_file:
                    finished.append(sizes.get(operation.path_in_repo, 0))
            nursery.cancel_scope.cancel()
        return True

    try:
        if not await interrupt.race(upload_all):
            raise PushCancelled()
        bus.publish(Push(run_id=run_id, done=total, total=total))
        message = f"Upload run {run_id} with overbrainer {__version__}"
        committed = await interrupt.shield(lambda: _commit(client, repo, operations, message))
        if interrupt.caught:
            log.warning("push: Ctrl-C came during the commit, which was let finish: it is made")
    finally:
        for reader in readers:
            reader.close()
    pushed = [op.path_in_repo for op in operations]
    record = PushRecord(str(repo), committed.oid, committed.url, tuple(pushed), private, rfc3339())
    text = record.to_json()
    await trio.to_thread.run_sync(_write_record, plan.run_dir, text)
    lines.append(f"push: {committed.url} ({files_word(len(pushed))}, {format_size(total)})")
    return PushResult(tuple(lines), committed)


def _write_record(run_dir: Path, text: str) -> None:
    path = run_dir / PUSH_DIR / PUSH_FILE
    path.parent.mkdir(exist_ok=True)
    write_atomic(path, text)


async def _commit(
    client: HubClient, repo: RepoId, operations: list[CommitOperationAdd], message: str
) -> Committed:
    with trio.move_on_after(COMMIT_LIMIT_S, shield=True):
        return await _blocking(lambda: client.commit(repo, operations, message))
    raise HubFailed(
        f"the Hub did not answer the commit within {COMMIT_LIMIT_S:.0f} s: check {repo} "
        "on the Hub, then run the push again"
    )


async def _prepare(
    client: HubClient,
    plan: PushPlan,
    settings: Settings,
    lines: list[str],
    overwrite_card: bool,
) -> tuple[RepoId, list[CommitOperationAdd], list[CountingReader], bool]:
    """Repo, visibility, card decision and the operations, before any upload."""
    repo = plan.repo
    if repo is None:
        name = await _blocking(client.whoami)
        repo = RepoId(name, default_name(settings.project.name))
    existing = await _blocking(lambda: client.visibility(repo))
    line = refuse_visibility(repo, plan.private, existing)
    if line is not None:
        lines.append(line)
    if existing is None:
        await _blocking(lambda: client.create(repo, plan.private))
    private = plan.private if existing is None else existing
    remote = None if existing is None else await _blocking(lambda: client.remote_card(repo))
    card: str | None = None
    if remote is None or MARKER in remote or overwrite_card:
        base = _hub_base(settings)
        license_ = None if base is None else await _blocking(lambda: client.base_license(base))
        card = _card_text(plan, settings, repo, license_)
    else:
        lines.append(KEPT_CARD)
    operations, readers = await _blocking(lambda: _operations(client, plan, card))
    return repo, operations, readers, private


def _hub_base(settings: Settings) -> str | None:
    training = settings.training
    if training is None:
        return None
    base = training.base_model
    if base.startswith(("/", ".", "~")) or base.count("/") != 1:
        return None
    return base


def _operations(
    client: HubClient, plan: PushPlan, card: str | None
) -> tuple[list[CommitOperationAdd], list[CountingReader]]:
    """One add per file (a counting reader when uploads go through LFS), then the card."""
    operations: list[CommitOperationAdd] = []
    readers: list[CountingReader] = []
    count_bytes = not xet_in_use()
    for item in plan.files:
        if count_bytes:
            reader = CountingReader(item.local)
            readers.append(reader)
            operations.append(client.operation(reader, item.repo_path))
            reader.counting = True
        else:
            operations.append(client.operation(item.local, item.repo_path))
    if card is not None:
        from huggingface_hub import CommitOperationAdd

        operations.append(CommitOperationAdd(path_in_repo=CARD, path_or_fileobj=card.encode()))
    return operations, readers
