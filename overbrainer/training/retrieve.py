"""What a remote run brings back into `runs/<id>/` (§6.2), and the verified fetch the pod
paths use through their executor (a machine's `fetch` does the same)."""

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
