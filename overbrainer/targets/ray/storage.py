"""The storage a Ray cluster's jobs write to, read from here through fsspec: a local or NFS path,
or an object store URI (`s3://bucket/prefix`, `gs://…`, with that filesystem's package).

Every call blocks (fsspec's sync API), so each runs in a thread; the caller's trio code never
waits on the event loop.
"""

from __future__ import annotations

import fnmatch
import hashlib
import posixpath
from collections.abc import Sequence
from pathlib import Path

import fsspec
import trio
from fsspec.core import url_to_fs

from overbrainer.targets.claim import CLAIM_FILE
from overbrainer.targets.machine import Claim
from overbrainer.targets.ray.errors import RayError

READ_LIMIT = 1024 * 1024


class Storage:
    """One storage root (`[targets.NAME] storage`): run files under `<root>/<id>/`."""

    def __init__(self, root: str) -> None:
        try:
            fs, path = url_to_fs(root)
        except (ImportError, ValueError) as error:
            raise RayError(f"cannot use the storage {root}: {error}") from None
        self.fs: fsspec.AbstractFileSystem = fs
        self.root = root.rstrip("/")
        self._path = path.rstrip("/")

    def __repr__(self) -> str:
        return f"Storage({self.root!r})"

    def relative(self, location: str) -> str:
        """`location`, a place under the root (`root/…`), relative to the root."""
        if location != self.root and not location.startswith(self.root + "/"):
            raise RayError(f"{location} is not under the storage {self.root}")
        return location[len(self.root) :].lstrip("/")

    def path(self, location: str) -> str:
        """The filesystem's path of `location`, a place under the root."""
        relative = self.relative(location)
        return self.join(relative) if relative else self._path

    def join(self, *parts: str) -> str:
        """`root/part/…` as the filesystem's own path (no scheme)."""
        return posixpath.join(self._path, *parts)

    def _read(self, path: str, offset: int, limit: int) -> bytes:
        try:
            with self.fs.open(path, "rb") as handle:
                handle.seek(offset)
                data: bytes = handle.read(limit)
                return data
        except FileNotFoundError:
            return b""

    async def read_from(self, path: str, offset: int, limit: int = READ_LIMIT) -> bytes:
        """Bytes of file `path` from `offset` (empty when it does not exist)."""
        return await trio.to_thread.run_sync(self._read, path, offset, limit)

    async def exists(self, path: str) -> bool:
        """Whether `path` exists."""
        found: bool = await trio.to_thread.run_sync(self.fs.exists, path)
        return found

    def _write(self, path: str, data: bytes) -> None:
        self.fs.makedirs(posixpath.dirname(path), exist_ok=True)
        with self.fs.open(path, "wb") as handle:
            handle.write(data)

    async def write(self, path: str, data: bytes) -> None:
        """Write file `path` whole (its folder made first)."""
        await trio.to_thread.run_sync(self._write, path, data)

    def _files(self, remote: str, entries: Sequence[str]) -> list[str]:
        found: list[str] = []
        for entry in entries:
            source = posixpath.join(remote, entry)
            if not self.fs.exists(source):
                continue
            if self.fs.isdir(source):
                found.extend(f for f in self.fs.find(source) if not self.fs.isdir(f))
            else:
                found.append(source)
        return found

    def _digests(self, remote: str, entries: Sequence[str]) -> dict[str, str]:
        digests = {}
        for file in self._files(remote, entries):
            digest = hashlib.sha256()
            with self.fs.open(file, "rb") as handle:
                for block in iter(lambda: handle.read(1024 * 1024), b""):
                    digest.update(block)
            digests[posixpath.relpath(file, remote)] = digest.hexdigest()
        return digests

    async def digests(self, remote: str, entries: Sequence[str]) -> dict[str, str]:
        """SHA-256 of each file under the existing `entries` of `remote`, by relative path."""
        return await trio.to_thread.run_sync(self._digests, remote, entries)

    def _remove(self, remote: str, entries: Sequence[str]) -> None:
        for entry in entries:
            path = posixpath.join(remote, entry)
            if self.fs.exists(path):
                self.fs.rm(path, recursive=True)

    async def remove(self, remote: str, entries: Sequence[str]) -> None:
        """Remove `entries` (files or folders) of `remote`, those that exist."""
        await trio.to_thread.run_sync(self._remove, remote, entries)

    def _fetch(
        self, remote: str, local: Path, entries: Sequence[str], exclude: Sequence[str]
    ) -> None:
        for file in self._files(remote, entries):
            relative = posixpath.relpath(file, remote)
            parts = relative.split("/")
            if any(fnmatch.fnmatchcase(p, pattern) for p in parts for pattern in exclude):
                continue
            target = local / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".part")
            self.fs.get_file(file, str(partial))
            expected = self.fs.size(file)
            if partial.stat().st_size != expected:
                raise RayError(
                    f"fetching {relative} from {self.root}: {partial.stat().st_size} bytes "
                    f"came, {expected} expected"
                )
            partial.replace(target)

    async def fetch(
        self, remote: str, local: Path, entries: Sequence[str], exclude: Sequence[str] = ()
    ) -> None:
        """Copy `entries` (files or folders) of `remote` into `local`, each file checked for its
        size and moved into place whole; `exclude`: glob patterns of paths or their parts."""
        await trio.to_thread.run_sync(self._fetch, remote, local, entries, exclude)


def storage_claim(storage: Storage) -> Claim:
    """R on the storage, claimed by `R/.claim` holding the owner (not atomic on an object
    store: two runs choose the same ID only if they start at the same moment)."""

    async def claim(root: str, owner: str) -> bool:
        path = storage.path(f"{root.rstrip('/')}/{CLAIM_FILE}")
        held = await storage.read_from(path, 0, 4096)
        if held:
            return held.decode("utf-8", "replace").strip() == owner
        await storage.write(path, f"{owner}\n".encode())
        return True

    return claim
