"""The SHA-256 manifest of transferred files (§4.5): the target's script, local hashing, checks."""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from overbrainer.targets.executor import TransferError
from overbrainer.targets.job_script import quote

_CHUNK = 1 << 20


def _excluded(name: str, exclude: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in exclude)


def manifest_script(remote: str, entries: Sequence[str], exclude: Sequence[str] = ()) -> str:
    """The sh script printing NUL-terminated `<64 hex> ./path` records of the entries' files."""
    prune = " -o ".join(f"-name {quote(pattern)}" for pattern in exclude)
    walk = f"\\( {prune} \\) -prune -o " if prune else ""
    listed = " ".join(quote(f"./{entry}") for entry in entries)
    return (
        f"cd -- {quote(remote)} 2>/dev/null || {{ echo {quote(remote + ' does not exist')} >&2;"
        " exit 1; }\n"
        "set --\n"
        f'for e in {listed}; do [ -e "$e" ] || [ -L "$e" ] && set -- "$@" "$e"; done\n'
        '[ "$#" -eq 0 ] && exit 0\n'
        f'find "$@" {walk}-type f -print | while IFS= read -r f; do\n'
        '  h=$(sha256sum < "$f") || exit 1\n'
        '  printf \'%s %s\\0\' "${h%% *}" "$f"\n'
        "done\n"
    )


def parse_manifest(output: bytes) -> dict[str, str]:
    """`path -> hex digest` from a manifest script's NUL-terminated records."""
    found: dict[str, str] = {}
    for record in output.split(b"\0"):
        if not record:
            continue
        text = record.decode("utf-8", "surrogateescape")
        digest, _, path = text.partition(" ")
        if len(digest) != 64 or not path.startswith("./"):
            raise TransferError("the target's manifest is not readable")
        found[path[2:]] = digest
    return found


def _hash(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def local_manifest(
    root: Path, entries: Sequence[str], exclude: Sequence[str] = ()
) -> dict[str, str]:
    """The same manifest of `root` on this machine (symlinks not followed; blocking)."""
    found: dict[str, str] = {}
    for entry in entries:
        top = root / entry
        if top.is_symlink() or not top.exists():
            continue
        if top.is_file():
            found[entry] = _hash(top)
            continue
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if not _excluded(d, exclude))
            for name in files:
                path = Path(folder) / name
                if _excluded(name, exclude) or path.is_symlink() or not path.is_file():
                    continue
                found[path.relative_to(root).as_posix()] = _hash(path)
    return found


def verify(expected: dict[str, str], local: dict[str, str]) -> None:
    """TransferError `verify failed: …` unless the local files are exactly the target's."""
    for path, digest in sorted(expected.items()):
        if path not in local:
            raise TransferError(f'verify failed: "{path}" is missing locally')
        if local[path] != digest:
            raise TransferError(
                f'verify failed: "{path}" differs from the target (SHA-256 mismatch)'
            )
    for path in sorted(local):
        if path not in expected:
            raise TransferError(f'verify failed: "{path}" is not on the target')
