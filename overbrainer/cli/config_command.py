"""`overbrainer config check [--resolve]`: show the resolved configuration, or its problems."""

from __future__ import annotations

import os

import click

from overbrainer.cli.context import project_dir
from overbrainer.cli.group import cli
from overbrainer.cli.running import run_flow


@cli.group()
def config() -> None:
    """Inspect the project's configuration."""


@config.command()
@click.option("--resolve", is_flag=True, help="Resolve every secret to prove it works (masked).")
@click.option(
    "--online",
    is_flag=True,
    help="Ask each role's provider for its model list: reachable, key, model, price.",
)
def check(resolve: bool, online: bool) -> None:
    """Load and validate the configuration; print one fact per line (no lock is taken).

    It fails (exit 2) on what a run would surely fail on: an unset base URL, a missing key,
    a vault: reference without VAULT_ADDR or token, a local training target without Axolotl;
    with --online, on a role that cannot work.
    """
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.config import load_settings
    from overbrainer.config.env import SSH_CLIENT_ENV
    from overbrainer.config.preflight import PreflightError
    from overbrainer.config.report import deprecation_warnings, report_lines, secrets_of
    from overbrainer.config.secrets import resolve_secret
    from overbrainer.flows.config_check import local_trainers, preflight, trainer_problems
    from overbrainer.flows.config_check import online as online_roles
    from overbrainer.project.directory import open_project

    async def flow() -> None:
        project = open_project(project_dir())
        settings = load_settings(project.root)
        trainers = await local_trainers(settings, project.runs)
        for line in report_lines(settings, os.environ.get(SSH_CLIENT_ENV), trainers):
            click.echo(line)
        for warning in deprecation_warnings(settings):
            click.echo(f"warning: {warning}", err=True)
        await preflight(settings, os.environ, trainer_problems(settings, trainers))
        if resolve:
            for key, secret in secrets_of(settings):
                await resolve_secret(secret, key, os.environ)
                click.echo(f"{key}: resolved")
        if online:
            checks = await online_roles(settings, os.environ)
            for verdict in checks:
                click.echo(verdict.line)
            failed = [f"roles.{verdict.name}" for verdict in checks if not verdict.works]
            if failed:
                raise PreflightError(f"{' and '.join(failed)} cannot work (see above)")

    run_flow(flow)
