"""`overbrainer push`: the Hub calls in order, uploads abandonable, one shielded commit (§C)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import trio

from overbrainer import __version__
from overbrainer.config.secrets import resolve_secret
from overbrainer.config.settings import Settings
from overbrainer.events.bus import EventBus
from overbrainer.events.interrupt import Interrupt
from overbrainer.hub.card import MARKER, CardInputs, render_card
from overbrainer.hub.client import Committed, CountingReader, HubClient
from overbrainer.hub.commit import blocking as _blocking
from overbrainer.hub.commit import operations, upload_and_commit
from overbrainer.hub.dataset_record import pushed_dataset
from overbrainer.hub.errors import TOKEN_MISSING, PushCancelled, PushRefused
from overbrainer.hub.plan import PUSH_DIR, PUSH_FILE, PushPlan
from overbrainer.hub.push_record import PushRecord
from overbrainer.hub.push_summary import PushedFile, PushSummary, pushed_files
from overbrainer.hub.repo import RepoId, default_name
from overbrainer.hub.selection import CARD
from overbrainer.model.sizes import format_size
from overbrainer.project.directory import STATE_DIR
from overbrainer.storage import write_atomic
from overbrainer.training import rfc3339

if TYPE_CHECKING:
    from huggingface_hub import CommitOperationAdd

log = logging.getLogger(__name__)

KEPT_CARD = "kept the repo's own README.md (use --overwrite-card to replace it)"
PLACEHOLDER_NAMESPACE = "<you>"


@attrs.frozen
class PushResult:
    """What a push did: its lines (stdout), its summary, and the commit (None for a dry run)."""

    lines: tuple[str, ...]
    summary: PushSummary
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


def _card_text(plan: PushPlan, settings: Settings, repo: RepoId, license_: str | None) -> str:
    files = [item.repo_path for item in plan.files]
    # `runs/<id>` sits in the project's root, beside `.overbrainer/`.
    dataset = pushed_dataset(plan.run_dir.parents[1] / STATE_DIR)
    inputs = CardInputs(
        plan.run_dir, settings, str(repo), files, license_, dataset, settings.hub.url
    )
    return render_card(inputs)


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
    files = tuple(PushedFile(item.repo_path, item.size) for item in plan.files)
    summary = PushSummary(
        str(repo), "model", run_id, plan.private, True, None, None, files, plan.bytes
    )
    return PushResult(tuple(lines), summary)


async def hub_token(settings: Settings) -> str:
    """OVERBRAINER_HF_TOKEN (literal or `vault:`), resolved now; PushRefused when unset."""
    if settings.hf_token is None:
        raise PushRefused(TOKEN_MISSING)
    return await resolve_secret(settings.hf_token, "OVERBRAINER_HF_TOKEN")


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
    repo, adds, readers, private = prepared
    run_id = plan.record.id
    sizes = {item.repo_path: item.size for item in plan.files}
    message = f"Upload run {run_id} with overbrainer {__version__}"
    committed = await upload_and_commit(
        client,
        repo,
        adds,
        readers,
        sizes,
        label=run_id,
        message=message,
        bus=bus,
        interrupt=interrupt,
    )
    pushed = [op.path_in_repo for op in adds]
    record = PushRecord(str(repo), committed.oid, committed.url, tuple(pushed), private, rfc3339())
    text = record.to_json()
    await trio.to_thread.run_sync(_write_record, plan.run_dir, text)
    total = sum(sizes.values())
    lines.append(f"push: {committed.url} ({files_word(len(pushed))}, {format_size(total)})")
    summary = PushSummary(
        str(repo),
        "model",
        run_id,
        private,
        False,
        committed.oid,
        committed.url,
        pushed_files(adds, sizes),
        total,
    )
    return PushResult(tuple(lines), summary, committed)


def _write_record(run_dir: Path, text: str) -> None:
    path = run_dir / PUSH_DIR / PUSH_FILE
    path.parent.mkdir(exist_ok=True)
    write_atomic(path, text)


async def open_repo(
    client: HubClient,
    repo: RepoId | None,
    default: str,
    private: bool,
    lines: list[str],
) -> tuple[RepoId, bool, str | None]:
    """The repo (whoami/`default` when unnamed), created when missing, its visibility and card.

    PushRefused for a private push into a public repo, before anything else.
    """
    if repo is None:
        name = await _blocking(client.whoami)
        repo = RepoId(name, default)
    existing = await _blocking(lambda: client.visibility(repo))
    line = refuse_visibility(repo, private, existing)
    if line is not None:
        lines.append(line)
    if existing is None:
        await _blocking(lambda: client.create(repo, private))
    kept = private if existing is None else existing
    remote = None if existing is None else await _blocking(lambda: client.remote_card(repo))
    return repo, kept, remote


def replaces_card(remote: str | None, overwrite_card: bool, lines: list[str]) -> bool:
    """Whether our card replaces the repo's: absent, ours (the marker), or `--overwrite-card`."""
    if remote is None or MARKER in remote or overwrite_card:
        return True
    lines.append(KEPT_CARD)
    return False


async def _prepare(
    client: HubClient,
    plan: PushPlan,
    settings: Settings,
    lines: list[str],
    overwrite_card: bool,
) -> tuple[RepoId, list[CommitOperationAdd], list[CountingReader], bool]:
    """Repo, visibility, card decision and the operations, before any upload."""
    default = default_name(settings.project.name)
    repo, private, remote = await open_repo(client, plan.repo, default, plan.private, lines)
    card: str | None = None
    if replaces_card(remote, overwrite_card, lines):
        base = _hub_base(settings)
        license_ = None if base is None else await _blocking(lambda: client.base_license(base))
        card = _card_text(plan, settings, repo, license_)
    files = [(item.local, item.repo_path) for item in plan.files]
    adds, readers = await _blocking(lambda: operations(client, files, card))
    return repo, adds, readers, private


def _hub_base(settings: Settings) -> str | None:
    training = settings.training
    if training is None:
        return None
    base = training.base_model
    if base.startswith(("/", ".", "~")) or base.count("/") != 1:
        return None
    return base
