"""What a push hands its front end (`--json`'s `"push"`): the repo, the commit, the files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from huggingface_hub import CommitOperationAdd


@attrs.frozen
class PushedFile:
    """One file of a push: its path in the repo and its size."""

    path: str
    size_bytes: int


@attrs.frozen
class PushSummary:
    """A push (or what a dry run would push): where to, which commit, which files."""

    repo: str
    """`namespace/name`; `<you>/name` in a dry run without a token."""
    repo_type: str
    """`model` (a run) or `dataset` (`push --dataset`)."""
    run_id: str | None
    """The run pushed; None for the dataset."""
    private: bool
    """The visibility asked for a new repo (a dry run), or the repo's (a push)."""
    dry_run: bool
    commit: str | None
    """The commit's OID; None in a dry run."""
    url: str | None
    """The commit's URL; None in a dry run."""
    files: tuple[PushedFile, ...]
    """The files uploaded (the card `README.md` last when it was replaced), or those a dry run
    would upload (without the card)."""
    total_bytes: int
    """The selected files' bytes, the card aside (as the text's last line counts them)."""


def pushed_files(
    adds: Sequence[CommitOperationAdd], sizes: Mapping[str, int]
) -> tuple[PushedFile, ...]:
    """The files of a commit: the planned sizes, the card's from its bytes."""
    return tuple(
        PushedFile(add.path_in_repo, sizes.get(add.path_in_repo, add.upload_info.size))
        for add in adds
    )
