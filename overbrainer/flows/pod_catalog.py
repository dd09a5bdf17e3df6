"""The `pod` catalog commands: read Runpod's catalog with only the API key (reference §7.10)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from overbrainer.config.load import load_settings
from overbrainer.config.secrets import resolve_secret
from overbrainer.events.frontend import Frontend
from overbrainer.flows.pod_tables import Catalog
from overbrainer.flows.setup import CommandOptions
from overbrainer.model.errors import EXIT_INTERRUPTED, EXIT_OK
from overbrainer.project.directory import open_project
from overbrainer.targets import NO_KEY, RunpodApi, RunpodKeyError, open_runpod

Listing = Callable[[RunpodApi], Awaitable[Catalog]]
"""What a catalog command asks the API, as the lines it prints and its `--json` rows."""


async def pod_catalog(options: CommandOptions, front: Frontend, listing: Listing) -> int:
    """Load `[runpod]` from the project, ask Runpod, print the lines (and hand the rows to
    `--json`); Ctrl-C ends it (130).

    No lock is taken (nothing is written) and nothing but `[runpod]` is needed.
    """
    project = open_project(options.project_dir)
    settings = load_settings(project.root)
    secret = settings.runpod.api_key
    if secret is None or not secret.text.strip():
        raise RunpodKeyError(NO_KEY)
    async with front.interrupt() as interrupt:
        key = await interrupt.race(lambda: resolve_secret(secret, "runpod.api_key"))
        if key is None:
            return EXIT_INTERRUPTED

        async def ask() -> Catalog:
            async with open_runpod(settings.runpod.url, key) as api:
                return await listing(api)

        catalog = await interrupt.race(ask)
    if catalog is None:
        return EXIT_INTERRUPTED
    for line in catalog.lines:
        front.line(line)
    front.result(catalog.key, catalog.rows)
    return EXIT_OK
