"""Results of a remote run brought into `runs/<id>/` and verified against the target (§6.2)."""

from __future__ import annotations

from pathlib import Path

import trio

from overbrainer.targets import FAILED_FILE, Executor, local_manifest, verify
from overbrainer.training.axolotl_config import METRICS_FILE, OUTPUT_DIR

RESULTS = (OUTPUT_DIR, METRICS_FILE, "job.log", "snapshot.json", FAILED_FILE)
"""What the first pass brings back (the proof with it, so it can be read here, and the mark of
an export after training that failed)."""
CHECKPOINTS = ("checkpoint-*",)


async def fetch(
    executor: Executor, remote: str, local: Path, entries: tuple[str, ...], exclude: tuple[str, ...]
) -> None:
    """Manifest, download, then check every file against the target's SHA-256."""
    expected = await executor.manifest(remote, entries, exclude)
    await executor.download(remote, local, entries, exclude)
    found = await trio.to_thread.run_sync(local_manifest, local, entries, exclude)
    verify(expected, found)


async def retrieve_results(executor: Executor, remote: str, local: Path) -> None:
    """Pass 1: the output (checkpoints left out), metrics, job log and snapshot proof."""
    if not executor.local:
        await fetch(executor, remote, local, RESULTS, CHECKPOINTS)


async def retrieve_checkpoint(
    executor: Executor, remote: str, local: Path, checkpoint: str
) -> None:
    """Pass 2 for a stopped run: its snapshot's checkpoint, whole."""
    if not executor.local:
        await fetch(executor, remote, local, (checkpoint, "snapshot.json"), ())
