"""The target-side claim of a run directory: `R/.claim` created exclusively, holding an owner."""

from __future__ import annotations

import os
from pathlib import Path

from overbrainer.model.errors import WorkFailed

CLAIM_FILE = ".claim"


class ClaimError(WorkFailed):
    """A run directory cannot be claimed (it cannot be created or its claim read)."""


def claim_dir(path: Path, owner: str) -> bool:
    """Claim run directory `path` with `.claim` holding `owner` (created with O_EXCL).

    True when this call created the claim or it already holds `owner`; False when another
    owner holds it. The directory is created if missing.
    """
    claim = path / CLAIM_FILE
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd = os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        try:
            held = claim.read_text(encoding="utf-8", errors="replace").strip()
        except OSError as error:
            raise ClaimError(f"cannot read {claim}: {error.strerror}") from None
        return held == owner
    except OSError as error:
        raise ClaimError(f"cannot claim {path}: {error.strerror}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(owner + "\n")
        file.flush()
        os.fsync(file.fileno())
    return True
