"""Delivery of an exported GGUF into `runs/<run>/output/gguf/` (§B.5): record, Modelfile, lines."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from pathlib import Path

import attrs
import yaml

from overbrainer.config.settings import QUANTIZE_TYPES
from overbrainer.export.record import (
    CHILD,
    EXPORT_FILE,
    ExportRecord,
    read_export_record,
    write_export_record,
)
from overbrainer.model.errors import WorkFailed
from overbrainer.model.sizes import format_size
from overbrainer.storage import write_atomic
from overbrainer.training import CONFIG_FILE, OUTPUT_DIR, rfc3339

GGUF_DIR = f"{OUTPUT_DIR}/gguf"
MODELFILE = "Modelfile"
STAGED = (OUTPUT_DIR, CONFIG_FILE)
"""What an upload stages in a job directory, removed again after the job."""


@attrs.frozen
class Delivered:
    """One delivered GGUF: its record and the run it belongs to."""

    run_id: str
    record: ExportRecord

    @property
    def name(self) -> str:
        """The GGUF's file name."""
        return Path(self.record.file).name

    @property
    def folder(self) -> str:
        """`runs/<run>/output/gguf`, as the lines show it."""
        return f"runs/{self.run_id}/{GGUF_DIR}"

    def line(self) -> str:
        """`export: GGUF in runs/<run>/output/gguf/<file> (<QUANT>, <size>), Modelfile …`; the
        base model's: `export: the base model's GGUF in … (<QUANT>, <size>)`."""
        size = format_size(self.record.size)
        facts = f"{self.folder}/{self.name} ({self.record.quantize}, {size})"
        if self.record.model != CHILD:
            return f"export: the base model's GGUF in {facts}"
        return f"export: GGUF in {facts}, Modelfile beside it"


def sha256_file(path: Path) -> str:
    """The SHA-256 of `path`, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def sequence_len(run_dir: Path) -> int | None:
    """`sequence_len` of the run's `axolotl.yaml`, when it has one."""
    try:
        config = yaml.safe_load((run_dir / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    value = config.get("sequence_len") if isinstance(config, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def modelfile_text(file: str, num_ctx: int | None) -> str:
    """The Modelfile: `FROM ./<file>`, and `num_ctx` when the run's config has `sequence_len`."""
    lines = [f"FROM ./{file}"]
    if num_ctx is not None:
        lines.append(f"PARAMETER num_ctx {num_ctx}")
    return "\n".join(lines) + "\n"


def find_gguf(job_dir: Path, name: str) -> Path:
    """The job's `output/gguf/<name>`; WorkFailed when the export left no GGUF there."""
    folder = job_dir / GGUF_DIR
    path = folder / name
    if not path.is_file():
        raise WorkFailed(f"the export left no GGUF file in {folder}")
    return path


def _record(path: Path, quantize: str, tag: str, model: str = CHILD) -> ExportRecord:
    return ExportRecord(
        quantize=quantize,
        llama_cpp=tag,
        file=f"{GGUF_DIR}/{path.name}",
        sha256=sha256_file(path),
        size=path.stat().st_size,
        created=rfc3339(),
        model=model,
    )


def _finish(run_id: str, run_dir: Path, record_dir: Path, record: ExportRecord) -> Delivered:
    """Write the record; the child's Modelfile too (the base's GGUF gets none: the Modelfile
    beside the GGUFs is the child's)."""
    write_export_record(record_dir / EXPORT_FILE, record)
    if record.model == CHILD:
        text = modelfile_text(Path(record.file).name, sequence_len(run_dir))
        write_atomic(run_dir / GGUF_DIR / MODELFILE, text)
    return Delivered(run_id, record)


def _move(source: Path, target: Path) -> None:
    """Rename `source` to `target`; where its folder is not ours to change (a rootful container
    job wrote it), copy it through `<target>.part` instead and leave the source."""
    try:
        os.replace(source, target)
    except PermissionError:
        part = target.with_name(target.name + ".part")
        try:
            shutil.copyfile(source, part)
            os.replace(part, target)
        finally:
            part.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            source.unlink()


def deliver(
    run_id: str,
    run_dir: Path,
    job_dir: Path,
    name: str,
    quantize: str,
    tag: str,
    model: str = CHILD,
) -> Delivered:
    """Move the job's GGUF into the run's `output/gguf/`, then write export.json (of `model`)
    and, for the child, the Modelfile.

    Blocking: call it in a worker thread.
    """
    source = find_gguf(job_dir, name)
    target = run_dir / GGUF_DIR / name
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _move(source, target)
        record = _record(target, quantize, tag, model)
        return _finish(run_id, run_dir, job_dir, record)
    except OSError as error:
        raise WorkFailed(f"cannot deliver {target}: {error.strerror or error}") from None


def remove_staged(job_dir: Path) -> None:
    """Remove the model and config staged into a job directory (blocking; errors ignored)."""
    shutil.rmtree(job_dir / OUTPUT_DIR, ignore_errors=True)
    (job_dir / CONFIG_FILE).unlink(missing_ok=True)


def newest_gguf(run_dir: Path, run_id: str) -> Path | None:
    """The newest `<run>-<TYPE>.gguf` by mtime in `output/gguf/` (an in-job export's file;
    never the base model's `<run>-base-<TYPE>.gguf`)."""
    folder = run_dir / GGUF_DIR
    names = {f"{run_id}-{quantize}.gguf" for quantize in QUANTIZE_TYPES}
    try:
        found = [p for p in folder.glob(f"{run_id}-*.gguf") if p.name in names and p.is_file()]
    except OSError:
        return None
    return max(found, key=lambda p: p.stat().st_mtime, default=None)


def deliver_in_job(run_id: str, run_dir: Path, tag: str) -> Delivered | None:
    """Deliver what a training job's export wrote, once (§B.5 in-job rules); None if nothing new.

    The job directory is the run directory. Skipped when `export.json` already records that file
    at its current size. Blocking: call it in a worker thread.
    """
    path = newest_gguf(run_dir, run_id)
    if path is None:
        return None
    size = path.stat().st_size
    try:
        known = read_export_record(run_dir / EXPORT_FILE)
    except (OSError, ValueError):
        known = None
    if known is not None and known.file == f"{GGUF_DIR}/{path.name}" and known.size == size:
        return None
    quantize = path.name[len(run_id) + 1 : -len(".gguf")]
    return _finish(run_id, run_dir, run_dir, _record(path, quantize, tag))
