"""`overbrainer system [--watch] [--json]`: this machine's disks, CPU, memory and GPUs."""

from __future__ import annotations

import json

import click

from overbrainer.cli.context import cli_frontend, project_dir
from overbrainer.cli.group import cli
from overbrainer.cli.running import run_flow
from overbrainer.model.errors import EXIT_INTERRUPTED


@cli.command()
@click.option("--watch", is_flag=True, help="Print a new sample every 10 s until Ctrl-C.")
@click.option("--json", "as_json", is_flag=True, help="Print each sample as one JSON line.")
def system(watch: bool, as_json: bool) -> None:
    """Show this machine (disks of the project directory and /, CPU, memory, GPUs)."""
    # Imported on use, so that the other commands, `--help` and completion do not pay for them.
    import trio

    from overbrainer.events.codec import converter
    from overbrainer.project.directory import find_root
    from overbrainer.system.rows import system_rows
    from overbrainer.system.sampler import SAMPLE_EVERY, LocalSampler

    async def flow() -> int:
        sampler = LocalSampler(find_root(project_dir()).resolve())
        await sampler.sample()  # the first sample has no CPU usage yet: take a short baseline
        await trio.sleep(0.2)

        async def show_forever() -> bool:
            while True:
                sample = await sampler.sample()
                if sample is None:  # an earlier read is still stuck: nothing new to show
                    pass
                elif as_json:
                    click.echo(json.dumps(converter.unstructure(sample), separators=(",", ":")))
                else:
                    click.echo("\n".join(system_rows(sample)))
                if not watch:
                    return True
                await trio.sleep(SAMPLE_EVERY)
                if not as_json:
                    click.echo()

        async with cli_frontend().interrupt() as interrupt:
            if await interrupt.race(show_forever) is None:
                return EXIT_INTERRUPTED
        return 0

    run_flow(flow)
