"""A `[targets.NAME] kind = "ray"` table to a connected Jobs API client: the token and the
secret headers read from the environment here, and nowhere else."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator

from overbrainer.config.errors import ConfigError
from overbrainer.targets.ray.jobs_api import JobsApi, auth_headers, open_jobs_api
from overbrainer.targets.ray.settings import RayTarget


def secret(name: str, key: str, env: str) -> str:
    """The value of `$env`, which `targets.NAME.key` names; ConfigError when unset or empty."""
    value = os.environ.get(env, "")
    if not value:
        raise ConfigError(f"targets.{name}.{key} names ${env}, which is not set")
    return value


def request_headers(name: str, target: RayTarget) -> dict[str, str]:
    """The headers every request of this target carries (its token and proxy headers)."""
    token = secret(name, "token_env", target.token_env) if target.token_env else None
    hidden = {
        header: secret(name, f"header_envs.{header}", env)
        for header, env in target.header_envs.items()
    }
    return auth_headers(token, target.headers, hidden)


@contextlib.asynccontextmanager
async def open_cluster(name: str, target: RayTarget) -> AsyncIterator[JobsApi]:
    """The Jobs API of the target's cluster (nothing is sent until the first call)."""
    headers = request_headers(name, target)
    async with open_jobs_api(target.address, headers, target.request_secs) as api:
        yield api
