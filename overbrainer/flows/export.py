"""The order of work of `overbrainer export`."""

from __future__ import annotations

from overbrainer.events.frontend import Frontend
from overbrainer.export.job import export_on_machine
from overbrainer.export.plan import (
    ExportRequest,
    check_base_ollama,
    check_ollama_name,
    check_quantize,
    plan_export,
)
from overbrainer.flows.pod_needs import export_floor
from overbrainer.flows.setup import CommandOptions, open_command
from overbrainer.flows.train import training_session


async def export_flow(
    options: CommandOptions,
    front: Frontend,
    run_id: str,
    *,
    quantize: str | None = None,
    ollama_name: str | None = None,
    keep_pod: bool = False,
    base: bool = False,
) -> None:
    """`overbrainer export RUN_ID`: a GGUF of the run's model, its Modelfile, and the lines;
    with `base`, a GGUF of the run's base model (no Modelfile, `[export] ollama_name` unused)."""
    front.result("export", None)  # `--json`: null until the GGUF is delivered
    async with open_command(options, front) as command:
        settings = command.settings.export
        check_base_ollama(base, ollama_name)
        request = ExportRequest(
            run_id,
            check_quantize(quantize or settings.quantize),
            None if base else check_ollama_name(ollama_name or settings.ollama_name),
            keep_pod,
            base,
        )
        session = training_session(command)
        plan = await plan_export(session, request)
        floor = await export_floor(session, request, plan)
        delivered = await export_on_machine(session, request, plan, floor)
        for line in delivered.lines:
            front.line(line)
        front.result("export", delivered.result)
