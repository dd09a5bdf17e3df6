"""`export.json`: what one export delivered (§B.5); the latest export of a run (§A.3)."""

from __future__ import annotations

from pathlib import Path

import attrs

from overbrainer.config.settings import QUANTIZE_TYPES
from overbrainer.model import codec
from overbrainer.storage import NotJson, load_document, write_atomic
from overbrainer.training import parse_rfc3339

EXPORT_FILE = "export.json"
EXPORTS_DIR = "exports"
CHILD = "child"
"""`ExportRecord.model` of the trained model's GGUF (also what a record without the key holds)."""
BASE = "base"
"""`ExportRecord.model` of the run's base model's GGUF (`overbrainer export --base`)."""


def gguf_stem(run_id: str, model: str = CHILD) -> str:
    """What an export's GGUF name starts with: `<run>` for the child, `<run>-base` for its base
    (the file is `<stem>-<QUANT>.gguf`)."""
    return run_id if model == CHILD else f"{run_id}-{BASE}"


def is_base_gguf(run_id: str, name: str) -> bool:
    """Whether file `name` is one `overbrainer export --base` writes for the run (a push or an
    in-job delivery must never take it for the child's)."""
    stem = gguf_stem(run_id, BASE)
    return any(name == f"{stem}-{quantize}.gguf" for quantize in QUANTIZE_TYPES)


@codec.record("export record", style=codec.Style.PRETTY, strict=False, omit=("model",))
@attrs.frozen
class ExportRecord(codec.JsonRecord):
    """One delivered GGUF: `file` is relative to the run directory (`output/gguf/<name>`)."""

    quantize: str
    llama_cpp: str
    file: str
    sha256: str
    size: int
    created: str
    model: str = CHILD
    """Which model the GGUF holds: `child` (written only when it is not) or `base`."""


class BadExportRecord(ValueError):
    """An `export.json` that is not a valid record; the message names the file and the problem."""


def write_export_record(path: Path, record: ExportRecord) -> None:
    """Write `export.json` atomically (blocking: call it in a thread from async code)."""
    write_atomic(path, record.to_json())


def read_export_record(path: Path) -> ExportRecord:
    """The record in `path`; `BadExportRecord` naming the file when it is not one."""
    try:
        data = load_document(path.read_bytes())
    except NotJson as error:
        raise BadExportRecord(f"{path} is not JSON ({error.where})") from None
    try:
        return codec.decode(ExportRecord, data)
    except ValueError as error:
        raise BadExportRecord(f"{path}: {error}") from None


def export_record_paths(run_dir: Path) -> list[Path]:
    """Every `export.json` of a run: the in-job one, then `exports/*/export.json`."""
    paths = [run_dir / EXPORT_FILE]
    exports = run_dir / EXPORTS_DIR
    if exports.is_dir():
        paths.extend(sorted(exports.glob(f"*/{EXPORT_FILE}")))
    return [path for path in paths if path.is_file()]


def latest_export(run_dir: Path, model: str = CHILD) -> ExportRecord | None:
    """The newest (`created`) readable record of `model` (the child, or its base) whose GGUF
    still exists under the run (blocking)."""
    best: tuple[float, ExportRecord] | None = None
    for path in export_record_paths(run_dir):
        try:
            record = read_export_record(path)
        except (BadExportRecord, OSError):
            continue
        if record.model != model:
            continue
        created = parse_rfc3339(record.created)
        if created is None or not (run_dir / record.file).is_file():
            continue
        key = created.timestamp()
        if best is None or key >= best[0]:
            best = (key, record)
    return None if best is None else best[1]
