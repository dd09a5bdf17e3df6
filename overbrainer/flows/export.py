"""The order of work of `overbrainer export`, and the delivery of an in-job export."""

from __future__ import annotations

import logging

import trio

from overbrainer.events.frontend import Frontend, ResultSink
from overbrainer.export.deliver import deliver_in_job
from overbrainer.export.job import ExportRequest, delivery_lines, run_export
from overbrainer.export.plan import check_ollama_name, check_quantize
from overbrainer.flows.setup import CommandOptions, open_command
from overbrainer.flows.train import training_session
from overbrainer.targets.llama_cpp import resolve_pin
from overbrainer.training.lifecycle import Session
from overbrainer.training.run_store import RunRecord, RunState

log = logging.getLogger(__name__)


async def export_flow(
    options: CommandOptions,
    front: Frontend,
    run_id: str,
    *,
    quantize: str | None = None,
    ollama_name: str | None = None,
    keep_pod: bool = False,
) -> None:
    """`overbrainer export RUN_ID`: a GGUF of the run's model, its Modelfile, and the lines."""
    async with open_command(options, front) as command:
        settings = command.settings.export
        request = ExportRequest(
            run_id,
            check_quantize(quantize or settings.quantize),
            check_ollama_name(ollama_name or settings.ollama_name),
            keep_pod,
        )
        for line in await run_export(training_session(command), request):
            front.line(line)


async def deliver_after_training(session: Session, sink: ResultSink, record: RunRecord) -> None:
    """After a run came back: deliver what its in-job export wrote, once; never fails the run."""
    settings = session.settings.export
    if not settings.after_training or record.state is not RunState.SUCCEEDED:
        return
    run_dir = session.runs.dir_of(record.id)
    try:
        delivered = await trio.to_thread.run_sync(
            deliver_in_job, record.id, run_dir, resolve_pin().tag
        )
    except OSError as error:
        log.warning("export: cannot deliver the GGUF of run %s: %s", record.id, error)
        return
    if delivered is None:
        log.warning(
            "export: the job of run %s wrote no GGUF: see runs/%s/job.log", record.id, record.id
        )
        return
    for line in await delivery_lines(run_dir, delivered, settings.ollama_name):
        sink.line(line)
