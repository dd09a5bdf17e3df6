"""`overbrainer export RUN_ID [--base] [--quantize TYPE] [--ollama NAME] [--keep-pod]`."""

from __future__ import annotations

import click

from overbrainer.cli.completion import complete_run_ids
from overbrainer.cli.context import cli_frontend
from overbrainer.cli.group import cli
from overbrainer.cli.options import command_options, json_option
from overbrainer.cli.running import run_flow


@cli.command()
@click.argument("run_id", shell_complete=complete_run_ids)
@click.option("--quantize", metavar="TYPE", help="GGUF type (default [export] quantize, Q4_K_M).")
@click.option("--ollama", "ollama_name", metavar="NAME", help="Create this Ollama model.")
@click.option("--keep-pod", is_flag=True, help="Runpod targets only: keep the pod after.")
@click.option("--base", is_flag=True, help="Export the run's base model instead (for compare).")
@json_option
def export(
    run_id: str, quantize: str | None, ollama_name: str | None, keep_pod: bool, base: bool
) -> None:
    """Convert a run's model to GGUF with llama.cpp, with an Ollama Modelfile beside it."""
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.flows.export import export_flow

    options = command_options()
    run_flow(
        lambda: export_flow(
            options,
            cli_frontend(),
            run_id,
            quantize=quantize,
            ollama_name=ollama_name,
            keep_pod=keep_pod,
            base=base,
        )
    )
