"""The export as a job kind (§B.2-§B.5): its record among the run's exports, the model staged
where the machine lacks it, the job nested in the run's directory; Ctrl-C cancels it; its GGUF
fetched and delivered."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import attrs
import trio

from overbrainer.export import ollama
from overbrainer.export.deliver import GGUF_DIR, MODELFILE, Delivered, deliver
from overbrainer.export.plan import ExportCancelled, ExportRequest
from overbrainer.export.record import BASE, CHILD, gguf_stem
from overbrainer.export.start import (
    end_export,
)
from overbrainer.model.errors import OverbrainerError, WorkFailed
from overbrainer.model.job_kind import JobKind as JobType
from overbrainer.model.job_status import Cancelled, Exited, JobStatus
from overbrainer.targets import (
    Machine,
    gguf_name,
    resolve_pin,
)
from overbrainer.training import (
    CANCEL_BOUND,
    CONFIG_FILE,
    METRICS_FILE,
    OUTPUT_DIR,
    FollowTimes,
    Interruption,
    MetricsSummary,
    RunRecord,
    Runs,
    RunState,
    Session,
    Started,
    record_failed,
)

log = logging.getLogger(__name__)

RESULTS = (GGUF_DIR, METRICS_FILE, "job.log")
PART = ("*.part",)


def last_message(job_dir: Path) -> str | None:
    """The last `export: ` line of the job's log, without its prefix."""
    try:
        lines = (job_dir / "job.log").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.startswith("export: "):
            return line.removeprefix("export: ").strip()
    return None


def _failure(status: JobStatus, job_dir: Path) -> str:
    """The export's last `export:` line; else how its job ended and where its log is (a
    container engine's own error, say)."""
    found = last_message(job_dir)
    if found is not None:
        return found
    log_file = "/".join(("runs", *job_dir.parts[-3:], "job.log"))
    if isinstance(status, Exited):
        return f"its job exited with code {status.code}; its log is {log_file}"
    return f"its job was lost; its log is {log_file}"


def _clear_work(job_dir: Path) -> None:
    """What a killed job could leave behind: its work directory and `.part` files."""
    shutil.rmtree(job_dir / "export-work", ignore_errors=True)
    for part in (job_dir / GGUF_DIR).glob("*.part"):
        part.unlink(missing_ok=True)


async def has_model(machine: Machine, remote_run: str, model: str) -> bool:
    """Whether the run's directory on the machine holds its config and model."""
    root = remote_run.rstrip("/")
    if not await machine.exists(f"{root}/{CONFIG_FILE}"):
        return False
    folder = f"{root}/{model}"
    return await machine.exists(f"{folder}/adapter_config.json") or await machine.exists(
        f"{folder}/config.json"
    )


@attrs.define
class ExportFollow:
    """Following an export to its delivery: cancelled by Ctrl-C, its GGUF fetched, checked and
    delivered next to the run's model. `staged`: the model was staged into its directory."""

    session: Session
    exports: Runs
    run: RunRecord
    request: ExportRequest
    staged: bool = False
    type: JobType | None = JobType.EXPORT
    on_interrupt: Interruption = Interruption.CANCEL
    sampled: bool = False
    end_fails: bool = False

    async def fail(self, job_id: str, message: str) -> None:
        """Record the export failed."""
        await record_failed(self.exports, job_id, message)

    @property
    def times(self) -> FollowTimes:
        """The follow clocks with the run's target's reconnect budget."""
        return self.session.follow_times(self.run.target)

    def _subject(self, started: Started) -> str:
        return f"export {started.record.id} of run {self.run.id}"

    async def _end(
        self, machine: Machine, started: Started, state: RunState, message: str | None
    ) -> None:
        """Record how the export ended; remove what was staged, here and on the machine."""
        with trio.move_on_after(CANCEL_BOUND, shield=True):
            if machine.here and state is RunState.CANCELLED:
                await trio.to_thread.run_sync(_clear_work, started.job_dir)
            await end_export(self.exports, started.record, state, message, started.job_dir)
            if self.staged:
                try:
                    await machine.remove(started.job.dir, (OUTPUT_DIR, CONFIG_FILE))
                except (OSError, OverbrainerError) as error:
                    log.debug("cannot remove the staged files on the target: %s", error)

    async def interrupted(self, machine: Machine, started: Started) -> OverbrainerError:
        """Record the export cancelled; the error Ctrl-C ends the command with."""
        await self._end(machine, started, RunState.CANCELLED, "cancelled")
        return ExportCancelled(f"{self._subject(started)} was cancelled")

    async def fetch(self, machine: Machine, started: Started, status: JobStatus) -> str | None:
        """Bring the GGUF, metrics and log here (nothing here); a failure is recorded and
        raised."""
        if machine.here:
            return None
        try:
            await machine.fetch(started.job, started.job_dir, RESULTS, PART)
        except (OSError, OverbrainerError) as error:
            message = error.message if isinstance(error, OverbrainerError) else str(error)
            await self._end(machine, started, RunState.FAILED, message)
            problem = f"its results cannot be retrieved: {message}"
            raise WorkFailed(f"{self._subject(started)} failed: {problem}") from None
        return None

    async def conclude(
        self,
        machine: Machine,
        started: Started,
        status: JobStatus,
        summary: MetricsSummary,
        problem: str | None,
    ) -> Delivery:
        """Deliver the GGUF and record the export; its lines (§B.5) and result (or the failure)."""
        subject = self._subject(started)
        if isinstance(status, Cancelled):
            await self._end(machine, started, RunState.CANCELLED, "cancelled")
            raise WorkFailed(f"{subject} was cancelled")
        if status != Exited(0):
            message = await trio.to_thread.run_sync(_failure, status, started.job_dir)
            await self._end(machine, started, RunState.FAILED, message)
            raise WorkFailed(f"{subject} failed: {message}")
        run, request = self.run, self.request
        run_dir = self.exports.root.parent
        which = BASE if request.base else CHILD
        name = gguf_name(gguf_stem(run.id, which), request.quantize)
        job_dir, quantize, tag = started.job_dir, request.quantize, resolve_pin().tag
        try:
            delivered = await trio.to_thread.run_sync(
                deliver, run.id, run_dir, job_dir, name, quantize, tag, which
            )
        except WorkFailed as error:
            await self._end(machine, started, RunState.FAILED, error.message)
            raise WorkFailed(f"{subject} failed: {error.message}") from None
        await self._end(machine, started, RunState.SUCCEEDED, None)
        return await delivery(run_dir, delivered, request.ollama_name)


@attrs.frozen
class ExportResult:
    """What an export wrote where: the GGUF (paths relative to the project, as the lines
    show them), its Modelfile, and the Ollama model made from it."""

    run_id: str
    model: str
    """Which model the GGUF holds: `child` (the trained one) or `base` (`--base`)."""
    gguf: Path
    size_bytes: int
    sha256: str
    quantize: str
    llama_cpp: str
    modelfile: Path | None
    """The child's Modelfile; None for the base model's GGUF (it gets none)."""
    ollama_name: str | None
    """The name asked for (`--ollama-name`, `[export] ollama_name`); None when none was."""
    ollama_created: bool
    """`ollama create` made the model (false without a name, or when it failed: a warning)."""


@attrs.frozen
class Delivery:
    """A delivered GGUF: its result lines (§B.5) and what it wrote."""

    lines: tuple[str, ...]
    result: ExportResult


async def delivery(run_dir: Path, delivered: Delivered, name: str | None) -> Delivery:
    """The lines and result of a delivered GGUF, running `ollama create` when a name is given
    (the base model's GGUF: its one line; it has no Modelfile, so `name` is None)."""
    folder = Path(delivered.folder)
    record = delivered.record
    child = record.model == CHILD
    lines = [delivered.line()]
    created = None
    if child and name is None:
        lines.append(ollama.hint(delivered.folder, delivered.run_id))
    elif name is not None:
        created = await ollama.create(run_dir / GGUF_DIR, name)
        if created is not None:
            lines.append(created)
    result = ExportResult(
        run_id=delivered.run_id,
        model=record.model,
        gguf=folder / delivered.name,
        size_bytes=record.size,
        sha256=record.sha256,
        quantize=record.quantize,
        llama_cpp=record.llama_cpp,
        modelfile=folder / MODELFILE if child else None,
        ollama_name=name,
        ollama_created=created is not None,
    )
    return Delivery(tuple(lines), result)


async def delivery_lines(run_dir: Path, delivered: Delivered, name: str | None) -> list[str]:
    """The §B.5 lines of a delivered GGUF, running `ollama create` when a name is given."""
    return list((await delivery(run_dir, delivered, name)).lines)
