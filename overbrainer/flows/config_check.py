"""The checks of `config check` past loading: the offline pre-flight and `--online`."""

from __future__ import annotations

from collections.abc import Mapping

import trio

from overbrainer.config.preflight import PreflightError, config_problems
from overbrainer.config.settings import Settings
from overbrainer.devtools.embedded import stub_transports
from overbrainer.llm.online import RoleCheck, check_online


async def preflight(settings: Settings, environ: Mapping[str, str]) -> None:
    """Raise `PreflightError` on what would surely fail (no network: see config.preflight)."""
    problems = await trio.to_thread.run_sync(config_problems, settings, environ)
    if problems:
        raise PreflightError.of(problems)


async def online(settings: Settings, environ: Mapping[str, str]) -> list[RoleCheck]:
    """Each role's verdict from its provider's model list (the stub providers in-process)."""
    return await check_online(settings, stub_transports(settings), environ)
