"""Training runs on disk: run IDs, `runs/<id>/` directories and their `run.json` records.

The API (reference-training.md §2):

- `project_slug(name)`: the ID prefix of a project name (`Malware Development` ->
  `malware_development`, `模型` -> `run`).
- `base_run_id(slug, now)`: `<slug>_<YYYYMMDD>-<HHMMSS>` in UTC; `run_ids(base)` gives `base`,
  `base_2` ... `base_99`. `is_valid_run_id(id)`: 1-64 chars of `[A-Za-z0-9_-]`, first
  alphanumeric (legacy `YYYYMMDD-HHMMSS-xxxx` IDs pass too).
- `rfc3339(now)` / `parse_rfc3339(text)`: the `created` form, `2026-09-22T14:30:05Z`.
- `RunState`: `preparing running succeeded failed cancelled stopped` (`ENDED` are the last four).
- Values: `Container(engine, name)`, `Job(dir, pid, container=None)`,
  `Snapshot(checkpoint, step, reason)`, and `RunRecord(id, target, created, remote_dir, job,
  state, message=None, snapshot=None, resumed_from=None, snapshots=False)` with
  `to_json()` (the exact bytes of `run.json`: pretty JSON, reference field order, then `\\n`),
  `RunRecord.from_json(text, source)` (tolerant: unknown fields ignored, optional fields may be
  missing; `InvalidRecord` names line/column of a JSON error, never content) and
  `attrs.evolve(record, state=..., ...)` for updates.
- `Runs(project.runs)`: `dir_of(id)` (refuses invalid IDs), `create(name, target, remote_dir,
  now=None, accept=None)` claims `runs/<id>` with an exclusive `mkdir` (skipping numbers whose
  directory exists, and numbers `accept(id, path)` turns down, e.g. a target-side claim that
  is taken; the empty directory is then released) and saves its `preparing` record;
  `save(record)` writes `run.json` atomically (`storage.atomic.write_atomic`) under the run
  directory's lock; `update(id, change)` re-reads the record and saves `change(record)` under
  that same lock (a compare-and-set for processes that share a run, e.g. `train cancel` beside
  a follower);
  `load(id)` (`RunNotFound`: `no run X in runs/`, exit 2; `InvalidRecord`);
  `list()` every readable run, ordered by `created` then ID, unreadable ones skipped with a
  warning; `ids()` the IDs of `list()`.
- `claim_dir(path, owner)`: the target-side `R/.claim` (O_EXCL, holding `owner`); True when
  created or already held by `owner`, False when another owner holds it. `new_owner()` makes a
  random 16-hex owner token.
"""

from __future__ import annotations

import builtins
import contextlib
import datetime as dt
import fcntl
import logging
import os
import re
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs

from overbrainer.model.utc import parse_rfc3339, rfc3339, utc
from overbrainer.storage import write_atomic
from overbrainer.targets import CLAIM_FILE, Engine, JobRef, claim_dir
from overbrainer.training.run_record import (
    ENDED,
    RECORD_FILE,
    SNAPSHOT_REASONS,
    Container,
    InvalidRecord,
    Job,
    RunNotFound,
    RunRecord,
    RunsError,
    RunState,
    Snapshot,
)

log = logging.getLogger(__name__)

__all__ = [
    "CLAIM_FILE",
    "ENDED",
    "MAX_NUMBER",
    "RECORD_FILE",
    "SNAPSHOT_REASONS",
    "Container",
    "InvalidRecord",
    "Job",
    "RunNotFound",
    "RunRecord",
    "RunState",
    "Runs",
    "RunsError",
    "Snapshot",
    "base_run_id",
    "claim_dir",
    "is_valid_run_id",
    "new_owner",
    "parse_rfc3339",
    "project_slug",
    "rfc3339",
    "run_ids",
]

MAX_NUMBER = 99
"""The last collision suffix: `base_99`."""
SLUG_MAX = 40

_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def project_slug(name: str) -> str:
    """The run ID prefix of a project: ASCII letters/digits lowercased, other runs as one `_`."""
    out: list[str] = []
    for char in name:
        if char.isascii() and char.isalnum():
            out.append(char.lower())
        elif out and out[-1] != "_":
            out.append("_")
    slug = "".join(out)[:SLUG_MAX].rstrip("_")
    return slug or "run"


def base_run_id(slug: str, now: dt.datetime | None = None) -> str:
    """`<slug>_<YYYYMMDD>-<HHMMSS>` at `now` (default: the current time), UTC."""
    return f"{slug}_{utc(now).strftime('%Y%m%d-%H%M%S')}"


def run_ids(base: str) -> Iterator[str]:
    """The IDs tried in order: `base`, then `base_2` ... `base_99`."""
    yield base
    for number in range(2, MAX_NUMBER + 1):
        yield f"{base}_{number}"


def is_valid_run_id(run_id: str) -> bool:
    """Whether `run_id` can name a run (or job) directory: it never leaves `runs/`."""
    return _RUN_ID.fullmatch(run_id) is not None


def new_owner() -> str:
    """A random owner token for a target-side claim: 16 hex digits."""
    return secrets.token_hex(8)


Accept = Callable[[str, Path], bool]
"""Called with a freshly claimed ID and its directory; False gives the ID up (taken elsewhere)."""


@attrs.frozen
class Runs:
    """The `runs/` directory of a project."""

    root: Path

    def dir_of(self, run_id: str) -> Path:
        """`runs/<run_id>`; RunNotFound for an ID that cannot name a run."""
        if not is_valid_run_id(run_id):
            raise RunNotFound(f"no run {run_id} in runs/")
        return self.root / run_id

    def record_path(self, run_id: str) -> Path:
        """`runs/<run_id>/run.json`."""
        return self.dir_of(run_id) / RECORD_FILE

    def claim(
        self, project_name: str, now: dt.datetime | None = None, accept: Accept | None = None
    ) -> str:
        """Create `runs/<id>` exclusively for a new run of `project_name` and return the ID."""
        base = base_run_id(project_slug(project_name), now)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RunsError(f"cannot create {self.root}: {error.strerror}") from None
        for run_id in run_ids(base):
            path = self.root / run_id
            try:
                path.mkdir()
            except FileExistsError:
                continue
            except OSError as error:
                raise RunsError(f"cannot create {path}: {error.strerror}") from None
            try:
                accepted = accept is None or accept(run_id, path)
            except BaseException:
                _release(path)
                raise
            if accepted:
                return run_id
            _release(path)
        raise RunsError(f"runs {base} to {base}_{MAX_NUMBER} all exist")

    def create(
        self,
        project_name: str,
        target: str,
        remote_dir: Callable[[str], str],
        now: dt.datetime | None = None,
        accept: Accept | None = None,
        resumed_from: str | None = None,
    ) -> RunRecord:
        """Claim a new run and save its `preparing` record; `remote_dir(id)` gives R."""
        moment = utc(now)
        run_id = self.claim(project_name, moment, accept)
        record = RunRecord(
            id=run_id,
            target=target,
            created=rfc3339(moment),
            remote_dir=remote_dir(run_id),
            job=None,
            state=RunState.PREPARING,
            resumed_from=resumed_from,
        )
        self.save(record)
        return record

    def save(self, record: RunRecord) -> None:
        """Write `record` to its `run.json` atomically (`write_atomic`), under the run's lock."""
        folder = self.dir_of(record.id)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RunsError(f"cannot write {folder / RECORD_FILE}: {error.strerror}") from None
        with self._locked(record.id):
            self._write(record)

    def update(self, run_id: str, change: Callable[[RunRecord], RunRecord | None]) -> RunRecord:
        """Save `change(record on disk)` unless it is None; the record as it now stands.

        Read and write happen under the run's lock, so no other process's save falls between.
        """
        with self._locked(run_id):
            current = self.load(run_id)
            changed = change(current)
            if changed is None or changed == current:
                return current
            self._write(changed)
            return changed

    def _write(self, record: RunRecord) -> None:
        path = self.record_path(record.id)
        try:
            write_atomic(path, record.to_json())
        except OSError as error:
            raise RunsError(f"cannot write {path}: {error.strerror}") from None

    @contextlib.contextmanager
    def _locked(self, run_id: str) -> Iterator[None]:
        """Hold an exclusive `flock` on `runs/<id>/` itself (no lock file to leave behind)."""
        folder = self.dir_of(run_id)
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise RunNotFound(f"no run {run_id} in runs/") from None
        except OSError as error:
            raise RunsError(f"cannot lock {folder}: {error.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the only descriptor releases the lock

    def load(self, run_id: str) -> RunRecord:
        """The record of run `run_id`: RunNotFound when there is none, InvalidRecord if broken."""
        path = self.record_path(run_id)
        try:
            raw = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            raise RunNotFound(f"no run {run_id} in runs/") from None
        except OSError as error:
            raise RunsError(f"cannot read {path}: {error.strerror}") from None
        return RunRecord.from_json(raw, f"runs/{run_id}/{RECORD_FILE}")

    def list(self) -> list[RunRecord]:
        """Every readable run, by `created` then ID; unreadable records are warned about."""
        return self.scan()[0]

    def scan(self) -> tuple[builtins.list[RunRecord], builtins.list[str]]:
        """`list()`, and the IDs of the runs it skipped as unreadable (each warned about)."""
        try:
            names = sorted(entry.name for entry in os.scandir(self.root))
        except FileNotFoundError:
            return [], []
        except OSError as error:
            raise RunsError(f"cannot read {self.root}: {error.strerror}") from None
        records: list[RunRecord] = []
        skipped: builtins.list[str] = []
        for name in names:
            if not is_valid_run_id(name) or not (self.root / name / RECORD_FILE).is_file():
                continue
            try:
                records.append(self.load(name))
            except (RunsError, RunNotFound) as error:
                log.warning("skipping the unreadable record of run %s: %s", name, error.message)
                skipped.append(name)
        records.sort(key=lambda record: (record.created, record.id))
        return records, skipped

    def ids(self) -> builtins.list[str]:
        """The IDs of `list()`, in its order."""
        return [record.id for record in self.list()]


def _release(path: Path) -> None:
    """Remove a just-claimed, still empty run directory again (left alone if not empty)."""
    try:
        path.rmdir()
    except OSError as error:
        log.debug("keeping %s: %s", path, error.strerror)


def job_ref(record: RunRecord) -> JobRef:
    """The recorded job of a run, as its machine finds it."""
    assert record.job is not None
    container = record.job.container
    box = None if container is None else (Engine(container.engine), container.name)
    return JobRef(record.job.dir, record.job.pid, box, record.job.ref)
