"""The files of `runs/<run>/output/` a push sends, and the repo path of each (spec §C.2)."""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from overbrainer.export.record import is_base_gguf
from overbrainer.hub.errors import PushRefused

CARD = "README.md"


@attrs.frozen
class Selected:
    """One file to push: where it is here, its path in the repo and its size in bytes."""

    local: Path
    repo_path: str
    size: int


def repo_path(relative: str) -> str:
    """The repo path of a file given by its `/` path under `output/`: a leading `gguf/` goes."""
    parts = relative.split("/")
    if len(parts) > 1 and parts[0] == "gguf":
        parts = parts[1:]
    return "/".join(parts)


def _skipped(parts: tuple[str, ...], is_dir: bool, run_id: str = "") -> bool:
    if parts[-1].startswith("."):
        return True
    if len(parts) == 2 and not is_dir and parts[0] == "gguf" and is_base_gguf(run_id, parts[1]):
        return True  # the base model's GGUF (`export --base`): not the child's to push
    if len(parts) == 1 and is_dir and parts[0].startswith("checkpoint-"):
        return True
    return len(parts) == 1 and not is_dir and parts[0] == "debug.log"


def select_files(output: Path) -> list[Selected]:
    """Walk `output` (blocking): the files to push, sorted by repo path.

    Hidden entries (any depth), top-level `checkpoint-*` directories, a top-level `debug.log`,
    the base model's GGUF (`gguf/<run>-base-<TYPE>.gguf`, the run being `output`'s folder),
    symlinks and anything mapping to `README.md` are left out. Two files mapping to one repo
    path, or a name that is not UTF-8, is a PushRefused.
    """
    found: dict[str, Selected] = {}
    run_id = output.parent.name
    for directory, dirs, files in os.walk(output, followlinks=False):
        base = Path(directory)
        rel_dir = base.relative_to(output).parts
        dirs[:] = sorted(
            d
            for d in dirs
            if not (base / d).is_symlink() and not _skipped((*rel_dir, d), is_dir=True)
        )
        for name in sorted(files):
            path = base / name
            parts = (*rel_dir, name)
            if path.is_symlink() or _skipped(parts, is_dir=False, run_id=run_id):
                continue
            relative = "/".join(parts)
            try:
                relative.encode("utf-8")
            except UnicodeEncodeError:
                raise PushRefused(
                    f"{output / relative!s} has a name that is not UTF-8: rename it to push it"
                ) from None
            target = repo_path(relative)
            if target == CARD:
                continue
            if target in found:
                first = found[target].local.relative_to(output).as_posix()
                raise PushRefused(f"{first} and {relative} both map to {target} in the repo")
            found[target] = Selected(path, target, path.stat().st_size)
    return [found[key] for key in sorted(found)]
