"""`overbrainer pod gpus|datacenters|volumes|templates`: Runpod's catalog, with only the API key."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from overbrainer.cli.context import cli_frontend, project_dir
from overbrainer.cli.group import cli
from overbrainer.cli.options import json_option
from overbrainer.cli.running import run_flow

if TYPE_CHECKING:
    from overbrainer.flows.pod_catalog import Listing
    from overbrainer.flows.pod_tables import Catalog


@cli.group()
def pod() -> None:
    """Runpod: this project's pods and strays; GPU types, data centers, volumes, templates."""


def _run(listing: Listing) -> None:
    # Imported on use, so that the other commands do not pay for them at start-up.
    from overbrainer.flows.pod_catalog import pod_catalog
    from overbrainer.flows.setup import CommandOptions

    options = CommandOptions(project_dir=project_dir())
    run_flow(lambda: pod_catalog(options, cli_frontend(), listing))


@pod.command("gpus")
@click.option("--min-vram", type=click.IntRange(min=1), metavar="GB", help="At least GB of VRAM.")
@click.option(
    "--max-price",
    type=click.FloatRange(min=0, min_open=True),
    metavar="USD",
    help="At most USD per hour for one GPU.",
)
@click.option(
    "--data-center",
    metavar="ID",
    help="Show the stock in data center ID (with --in-stock: only types in stock there).",
)
@click.option("--in-stock", is_flag=True, help="Only GPU types in stock.")
@json_option
def pod_gpus(
    min_vram: int | None, max_price: float | None, data_center: str | None, in_stock: bool
) -> None:
    """List Secure Cloud GPU types, one GPU per pod, cheapest first."""
    from overbrainer.flows.pod_tables import gpu_catalog
    from overbrainer.targets import RunpodApi

    async def listing(api: RunpodApi) -> Catalog:
        catalog = await api.gpu_types(1)
        return gpu_catalog(
            catalog,
            min_vram=min_vram,
            max_price=max_price,
            data_center=data_center,
            only_in_stock=in_stock,
        )

    _run(listing)


@pod.command("datacenters")
@json_option
def pod_datacenters() -> None:
    """List the data centers and the GPU types in stock in each."""
    from overbrainer.flows.pod_tables import data_center_catalog
    from overbrainer.targets import RunpodApi

    async def listing(api: RunpodApi) -> Catalog:
        return data_center_catalog(await api.data_centers())

    _run(listing)


@pod.command("volumes")
@json_option
def pod_volumes() -> None:
    """List the account's network volumes."""
    from overbrainer.flows.pod_tables import volume_catalog
    from overbrainer.targets import RunpodApi

    async def listing(api: RunpodApi) -> Catalog:
        return volume_catalog(await api.network_volumes())

    _run(listing)


@pod.command("templates")
@json_option
def pod_templates() -> None:
    """List the account's pod templates (serverless ones left out)."""
    from overbrainer.flows.pod_tables import template_catalog
    from overbrainer.targets import RunpodApi

    async def listing(api: RunpodApi) -> Catalog:
        return template_catalog(await api.templates())

    _run(listing)


@pod.command("ls")
@json_option
def pod_ls() -> None:
    """List the account's overbrainer pods: this project's, its strays, and others'."""
    from overbrainer.flows.pods import pod_ls as flow
    from overbrainer.flows.setup import CommandOptions

    options = CommandOptions(project_dir=project_dir())
    run_flow(lambda: flow(options, cli_frontend()))


@pod.command("rm")
@click.argument("run_id", metavar="RUN_ID")
@json_option
@click.option(
    "--force",
    is_flag=True,
    help="Also delete the pod of a run in progress (the run fails), or pods of a run not in runs/.",
)
def pod_rm(run_id: str, force: bool) -> None:
    """Delete the pods of run RUN_ID (its training pod only when it ended, or with --force)."""
    from overbrainer.flows.pods import pod_rm as flow
    from overbrainer.flows.setup import CommandOptions

    options = CommandOptions(project_dir=project_dir())
    run_flow(lambda: flow(options, cli_frontend(), run_id, force))
