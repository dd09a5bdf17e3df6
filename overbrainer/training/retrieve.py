"""What a remote run brings back into `runs/<id>/` (§6.2): a machine's `fetch` brings it."""

from __future__ import annotations

from overbrainer.targets import FAILED_FILE
from overbrainer.training.axolotl_config import METRICS_FILE, OUTPUT_DIR

RESULTS = (OUTPUT_DIR, METRICS_FILE, "job.log", "snapshot.json", FAILED_FILE)
"""What the first pass brings back (the proof with it, so it can be read here, and the mark of
an export after training that failed)."""
CHECKPOINTS = ("checkpoint-*",)
