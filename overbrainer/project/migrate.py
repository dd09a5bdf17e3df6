"""`migrate`: bring a project without a format version (made before the project format of
the reference overbrainer 0.4.0) to format 1.

The changes are planned first, then made in order, the version file last, so a migration cut
short runs again from where it stopped. The core prints nothing: the command prints the lines.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from pathlib import Path

import attrs

from overbrainer.config.hub_move import HubMove, plan_hub_move
from overbrainer.events.types import Stage
from overbrainer.model.errors import OverbrainerError
from overbrainer.model.text import decode_utf8
from overbrainer.project.directory import FORMAT_VERSION, Project, ProjectError
from overbrainer.storage import (
    DataError,
    Example,
    HistoryRecord,
    HistoryStatus,
    append_records,
    current,
    read_history,
    read_records,
    write_atomic,
)

NOTHING = "nothing to migrate"

STATE_ENTRY = "/.overbrainer/"
STATE_ENTRIES = frozenset({".overbrainer", ".overbrainer/", "/.overbrainer", STATE_ENTRY})
"""`.gitignore` lines that already keep the state directory out of git."""


class MigrateError(OverbrainerError):
    """A file the migration reads or writes cannot be used."""


@attrs.frozen
class MoveHub:
    """Move `training.hub_model_id` to `[hub] repo`, or drop it when a repo is already set."""

    move: HubMove

    def line(self, dry_run: bool) -> str:
        """What was (or would be) done."""
        if self.move.kept_repo is not None:
            return f"{'would remove' if dry_run else 'removed'} training.hub_model_id"
        verb = "would move" if dry_run else "moved"
        return (
            f'{verb} training.hub_model_id to [hub] repo = "{self.move.value}" '
            "(private, after_training)"
        )

    def apply(self, project: Project) -> None:
        """Write the edited `overbrainer.toml` atomically."""
        _write(project.config, self.move.text)


@attrs.frozen
class IgnoreState:
    """Add `/.overbrainer/` to `.gitignore` (created when missing)."""

    existing: str | None

    def line(self, dry_run: bool) -> str:
        """What was (or would be) done."""
        return f"{'would add' if dry_run else 'added'} {STATE_ENTRY} to .gitignore"

    def apply(self, project: Project) -> None:
        """Append the entry, after a newline when the file lacks a final one."""
        text = self.existing or ""
        if text and not text.endswith("\n"):
            text += "\n"
        _write(project.root / ".gitignore", f"{text}{STATE_ENTRY}\n")


@attrs.frozen
class Backfill:
    """Append one backfilled `answers` record per model; `apply` writes them all at once."""

    records: tuple[HistoryRecord, ...]

    def lines(self, dry_run: bool) -> list[str]:
        """One line per model."""
        verb = "would backfill" if dry_run else "backfilled"
        return [
            f"{verb} the answers history of {r.model or '-'}: {r.done} answer(s), "
            f"{r.excluded} excluded; tokens {r.input_tokens} in, {r.output_tokens} out"
            for r in self.records
        ]

    def apply(self, project: Project) -> None:
        """All the records in one append to the history."""
        try:
            append_records(project.history, self.records)
        except DataError as error:
            raise MigrateError(f"cannot write {project.history}: {error.cause}") from None


@attrs.frozen
class WriteVersion:
    """Write `.overbrainer/version`, the migration's last step."""

    def line(self, dry_run: bool) -> str:
        """What was (or would be) done."""
        verb = "would write" if dry_run else "wrote"
        return f"{verb} .overbrainer/version: format {FORMAT_VERSION}"

    def apply(self, project: Project) -> None:
        """`1\\n`, atomically."""
        project.state.mkdir(exist_ok=True)
        _write(project.version_file, f"{FORMAT_VERSION}\n")


Change = MoveHub | IgnoreState | Backfill | WriteVersion


@attrs.frozen
class Plan:
    """Notes on steps left out, then the changes in the order they are made."""

    notes: tuple[str, ...]
    changes: tuple[Change, ...]


def change_lines(change: Change, dry_run: bool) -> list[str]:
    """The lines telling `change`."""
    return change.lines(dry_run) if isinstance(change, Backfill) else [change.line(dry_run)]


def _write(path: Path, text: str) -> None:
    try:
        write_atomic(path, text)
    except OSError as error:
        raise MigrateError(f"cannot write {path}: {error.strerror}") from None


def _read_text(path: Path) -> str | None:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise MigrateError(f"cannot read {path}: {error.strerror}") from None
    return decode_utf8(raw, str(path))


def plan_migration(project: Project) -> Plan:
    """What migrating `project` takes; refuses a format newer than this overbrainer's."""
    version = project.format_version()
    if version is not None and version > FORMAT_VERSION:
        raise ProjectError(
            f"this project uses format {version}, newer than the format {FORMAT_VERSION} "
            "this overbrainer knows: upgrade overbrainer"
        )
    notes: list[str] = []
    changes: list[Change] = []
    config = _read_text(project.config)
    move = None if config is None else plan_hub_move(config)
    if move is not None:
        if move.kept_repo is not None:
            notes.append(
                f'kept [hub] repo = "{move.kept_repo}"; '
                f'dropped training.hub_model_id = "{move.value}"'
            )
        changes.append(MoveHub(move))
    gitignore = _read_text(project.root / ".gitignore")
    lines = set() if gitignore is None else {line.strip() for line in gitignore.splitlines()}
    if not lines & STATE_ENTRIES:
        changes.append(IgnoreState(gitignore))
    if version is None:
        history = _history(project)
        if any(r.stage is Stage.ANSWERS and not r.backfilled for r in history):
            notes.append(
                f"not backfilling the answers history: {project.history} "
                "already has answers entries"
            )
        else:
            done = {r.model for r in history if r.stage is Stage.ANSWERS}
            records = [r for r in backfill_records(project) if r.model not in done]
            if records:
                changes.append(Backfill(tuple(records)))
        changes.append(WriteVersion())
    return Plan(tuple(notes), tuple(changes))


def _history(project: Project) -> list[HistoryRecord]:
    try:
        return read_history(project.history)
    except OSError as error:
        raise MigrateError(f"cannot read {project.history}: {error.strerror}") from None


def backfill_records(project: Project) -> list[HistoryRecord]:
    """One backfilled `answers` record per model of `answers.jsonl`, sorted by model, dated by
    the file's modification time (answers keep no time or provider of their own)."""
    path = project.data_file("answers")
    # A later record of an ID replaces an earlier one (an unfinished `--force`).
    answers: Sequence[Example] = current(
        read_records(path, Example.from_json), lambda answer: answer.id
    )
    if not answers:
        return []
    try:
        mtime = path.stat().st_mtime
    except OSError as error:
        raise DataError(f"cannot access {path}", error.strerror) from None
    at = datetime.datetime.fromtimestamp(mtime, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    counts: dict[str, list[int]] = {}
    for answer in answers:
        meta = answer.meta
        done, excluded, tokens_in, tokens_out = counts.setdefault(meta.model, [0, 0, 0, 0])
        kept = meta.excluded is None
        counts[meta.model] = [
            done + kept,
            excluded + (not kept),
            tokens_in + meta.input_tokens,
            tokens_out + meta.output_tokens,
        ]
    return [
        HistoryRecord(
            stage=Stage.ANSWERS,
            started_at=at,
            ended_at=at,
            status=HistoryStatus.OK,
            provider=None,
            model=model,
            done=done,
            excluded=excluded,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost=None,
            backfilled=True,
        )
        for model, (done, excluded, tokens_in, tokens_out) in sorted(counts.items())
    ]
