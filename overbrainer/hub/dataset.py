"""`overbrainer push --dataset`: the project's train and eval files to a Hub dataset repo."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import trio

from overbrainer import __version__
from overbrainer.config.settings import Settings
from overbrainer.events.bus import EventBus
from overbrainer.events.interrupt import Interrupt
from overbrainer.events.types import Stage
from overbrainer.hub.client import CountingReader, HubClient
from overbrainer.hub.commit import blocking, operations, upload_and_commit
from overbrainer.hub.dataset_card import DatasetFiles, count_topics, render_dataset_card
from overbrainer.hub.dataset_record import RECORD
from overbrainer.hub.errors import PushCancelled, PushRefused
from overbrainer.hub.push import (
    PLACEHOLDER_NAMESPACE,
    PushResult,
    files_word,
    hub_token,
    open_repo,
    replaces_card,
)
from overbrainer.hub.push_record import PushRecord
from overbrainer.hub.push_summary import PushedFile, PushSummary, pushed_files
from overbrainer.hub.repo import RepoId, default_name, parse_repo
from overbrainer.model.sizes import format_size
from overbrainer.storage import HistoryRecord, read_history, write_atomic
from overbrainer.training import rfc3339

if TYPE_CHECKING:
    from huggingface_hub import CommitOperationAdd

SPLITS = ("train", "eval")
DRY_CARD = "hub-dataset-README.md"
"""In `.overbrainer/`: the card a dry run writes."""
LABEL = "dataset"
"""The name of a dataset push in its progress events."""


@attrs.frozen
class DatasetPlan:
    """What `push --dataset` sends: the files, their counts, the repo if named, the visibility."""

    files: tuple[tuple[Path, str, int], ...]
    """(local file, repo path, size) of each split's file."""
    counts: DatasetFiles
    split: HistoryRecord | None
    """The last split's history line (its exclusions and date), if any."""
    repo: RepoId | None
    private: bool
    state_dir: Path

    @property
    def bytes(self) -> int:
        """The size of every file together."""
        return sum(size for _, _, size in self.files)


def dataset_name(project_name: str) -> str:
    """The default dataset repo name: the model repo's name and `-data`."""
    return f"{default_name(project_name)}-data"


def plan_dataset(
    settings: Settings,
    data_dir: Path,
    state_dir: Path,
    history: Path,
    *,
    repo: str | None,
    public: bool,
) -> DatasetPlan:
    """Check the repo name and the split's files, count them (blocking: reads `data/`)."""
    named = repo if repo is not None else settings.hub.dataset_repo
    repo_id = parse_repo(named) if named is not None else None
    files: list[tuple[Path, str, int]] = []
    counts: dict[str, Counter[str]] = {}
    for split in SPLITS:
        path = data_dir / f"{split}.jsonl"
        if not path.is_file():
            raise PushRefused(f"data/{split}.jsonl is missing: run `overbrainer split` first")
        try:
            files.append((path, f"data/{split}.jsonl", path.stat().st_size))
            counts[split] = count_topics(path)
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or "not UTF-8 text"
            raise PushRefused(f"cannot read data/{split}.jsonl: {reason}") from None
    if not counts["train"]:
        raise PushRefused("data/train.jsonl holds no example: nothing to push")
    paths = tuple((split, f"data/{split}.jsonl") for split in SPLITS)
    splits = [r for r in read_history(history) if r.stage is Stage.SPLIT and r.split is not None]
    private = settings.hub.private and not public
    last = splits[-1] if splits else None
    return DatasetPlan(tuple(files), DatasetFiles(paths, counts), last, repo_id, private, state_dir)


def _card(plan: DatasetPlan, settings: Settings, repo: RepoId) -> str:
    return render_dataset_card(settings, str(repo), plan.counts, plan.split)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(exist_ok=True)
    write_atomic(path, text)


async def dry_run_dataset(plan: DatasetPlan, settings: Settings, token: str | None) -> PushResult:
    """`--dry-run`: what would be sent, and the card written locally; no network without a token."""
    repo = plan.repo
    if repo is None:
        namespace = PLACEHOLDER_NAMESPACE
        if token is not None:
            client = HubClient(settings.hub.url, token, "dataset")
            namespace = await blocking(client.whoami)
        repo = RepoId(namespace, dataset_name(settings.project.name))
    visibility = "private" if plan.private else "public"
    lines = [f"push: dataset {repo}, {visibility} when created; nothing is sent (--dry-run)"]
    lines += [f"{path}  {format_size(size)}" for _, path, size in plan.files]
    text = await trio.to_thread.run_sync(_card, plan, settings, repo)
    await trio.to_thread.run_sync(_write, plan.state_dir / DRY_CARD, text)
    lines.append(
        f"push: {files_word(len(plan.files))}, {format_size(plan.bytes)}; "
        f"card written to .overbrainer/{DRY_CARD}"
    )
    files = tuple(PushedFile(path, size) for _, path, size in plan.files)
    summary = PushSummary(
        str(repo), "dataset", None, plan.private, True, None, None, files, plan.bytes
    )
    return PushResult(tuple(lines), summary)


async def push_dataset(
    plan: DatasetPlan,
    settings: Settings,
    bus: EventBus,
    interrupt: Interrupt,
    *,
    overwrite_card: bool = False,
) -> PushResult:
    """Push the dataset: the repo, every upload, then one commit; PushCancelled before it."""
    token = await hub_token(settings)
    client = HubClient(settings.hub.url, token, "dataset")
    lines: list[str] = []
    default = dataset_name(settings.project.name)

    pairs = [(local, path) for local, path, _ in plan.files]

    async def prepare() -> tuple[RepoId, bool, list[CommitOperationAdd], list[CountingReader]]:
        repo, private, remote = await open_repo(client, plan.repo, default, plan.private, lines)
        card = None
        if replaces_card(remote, overwrite_card, lines):
            card = await trio.to_thread.run_sync(_card, plan, settings, repo)
        adds, readers = await blocking(lambda: operations(client, pairs, card))
        return repo, private, adds, readers

    prepared = await interrupt.race(prepare)
    if prepared is None:
        raise PushCancelled()
    repo, private, adds, readers = prepared
    sizes = {path: size for _, path, size in plan.files}
    message = f"Upload the dataset with overbrainer {__version__}"
    committed = await upload_and_commit(
        client,
        repo,
        adds,
        readers,
        sizes,
        label=LABEL,
        message=message,
        bus=bus,
        interrupt=interrupt,
    )
    pushed = tuple(add.path_in_repo for add in adds)
    record = PushRecord(str(repo), committed.oid, committed.url, pushed, private, rfc3339())
    await trio.to_thread.run_sync(_write, plan.state_dir / RECORD, record.to_json())
    lines.append(f"push: {committed.url} ({files_word(len(pushed))}, {format_size(plan.bytes)})")
    summary = PushSummary(
        str(repo),
        "dataset",
        None,
        private,
        False,
        committed.oid,
        committed.url,
        pushed_files(adds, sizes),
        plan.bytes,
    )
    return PushResult(tuple(lines), summary, committed)
