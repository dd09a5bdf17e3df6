"""`overbrainer config check [--resolve]`: show the resolved configuration, or its problems."""

from __future__ import annotations

import os

import click

from overbrainer.cli.context import json_report, project_dir
from overbrainer.cli.group import cli
from overbrainer.cli.options import json_option
from overbrainer.cli.running import run_flow


@cli.group()
def config() -> None:
    """Inspect the project's configuration."""


@config.command()
@click.option("--resolve", is_flag=True, help="Resolve every secret to prove it works (masked).")
@click.option(
    "--online",
    is_flag=True,
    help="Ask each role's provider for its model list: reachable, key, model, price. Where a "
    "provider gives no list, send one request of at most 1 output token per model to test the "
    "key.",
)
@click.option(
    "--no-train",
    is_flag=True,
    help="Check what `run --no-train` needs: a training target without Axolotl is no error.",
)
@json_option
def check(resolve: bool, online: bool, no_train: bool) -> None:
    """Load and validate the configuration; print one fact per line (no lock is taken).

    It fails (exit 2) on what a run would surely fail on: an unset base URL, a missing key,
    a vault: reference without VAULT_ADDR or token, a local training target without Axolotl
    (unless --no-train); with --online, on a role that cannot work. Every check runs and
    prints its lines whatever another found; the problems of all come last.
    """
    # Imported on use: defining the command (for `--help`, completion) needs only click.
    from overbrainer.config import load_settings
    from overbrainer.config.env import SSH_CLIENT_ENV
    from overbrainer.config.errors import ConfigError
    from overbrainer.config.preflight import config_warnings
    from overbrainer.config.report import deprecation_warnings, report_lines
    from overbrainer.flows.config_check import (
        decontaminate_problems,
        failed_roles,
        local_trainers,
        preflight_problems,
        raise_problems,
        resolve_secrets,
        trainer_problems,
    )
    from overbrainer.flows.config_check import online as online_roles
    from overbrainer.flows.config_json import roles_json, secrets_json, setting_json, targets_json
    from overbrainer.llm import RoleCheck
    from overbrainer.project.directory import open_project

    report = json_report()

    async def flow() -> None:
        project = open_project(project_dir())
        settings = load_settings(project.root)
        trainers = await local_trainers(settings, project.runs)
        problems: list[str] = []
        try:
            lines = report_lines(settings, os.environ.get(SSH_CLIENT_ENV), trainers)
        except ConfigError as error:  # a bad OVERBRAINER_SSH_CLIENT: the other checks go on
            lines, problems = [], [error.message]
        for line in lines:
            click.echo(line)
        for warning in deprecation_warnings(settings):
            click.echo(f"warning: {warning}", err=True)
        training = [] if no_train else trainer_problems(settings, trainers)
        problems += await preflight_problems(settings, os.environ, training)
        problems += await decontaminate_problems(settings, project.root)
        secrets: list[tuple[str, str | None]] | None = None
        if resolve:
            secrets = await resolve_secrets(settings, os.environ)
            for key, unresolved in secrets:
                if unresolved is None:
                    click.echo(f"{key}: resolved")
                else:
                    problems.append(unresolved)
        checks: list[RoleCheck] | None = None
        if online:
            checks = await online_roles(settings, os.environ)
            for verdict in checks:
                click.echo(verdict.line)
            problems += failed_roles(checks)
        if report is not None:
            warnings = deprecation_warnings(settings) + config_warnings(settings)
            report.put("settings", [setting_json(line) for line in lines])
            report.put("roles", roles_json(settings, problems, checks))
            report.put("targets", targets_json(settings, problems, trainers))
            report.put("secrets", None if secrets is None else secrets_json(secrets))
            report.put("warnings", warnings)
            report.put("problems", list(dict.fromkeys(problems)))
        raise_problems(problems)

    run_flow(flow)
