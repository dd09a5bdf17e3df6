"""The one-token probe of `config check --online`: is the key accepted when no list says so?

A provider whose `/models` gives no list (404, a 400 that is not about the key, 5xx, not JSON)
has not said whether it takes the key. One minimal request per provider and model (chat with
`max_tokens` 1, or one embedding of one word) does, for the price of a few tokens. It goes
through the role's own client, so the request has the provider's shape, and is sent once,
without retries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import trio

from overbrainer.config.settings import Settings
from overbrainer.llm.client import ProtocolClient
from overbrainer.llm.connect import EMBEDDER, connect_roles
from overbrainer.llm.errors import InvalidResponse, LlmError, StatusError
from overbrainer.llm.types import CompletionRequest
from overbrainer.model.error_groups import unwrapped
from overbrainer.model.errors import OverbrainerError
from overbrainer.model.usage import Usage

PROBE_TIMEOUT = 30.0
"""The longest wait for one probe's answer, in seconds: a model may have to load first."""
PROBE_PROMPT = "Reply with the word OK."
PROBE_TOKENS = 1
"""The most output tokens a probe asks for."""


@attrs.frozen
class Probe:
    """What the one-token probe of one provider and model got."""

    usage: Usage | None = None
    """The tokens of a 2xx answer (None: no answer)."""
    readable: bool = True
    """Whether that answer could be read."""
    status: int | None = None
    """The HTTP status of a refused probe."""
    key_refused: bool = False
    cause: str | None = None
    """Why there is neither answer nor status: a few words."""


async def _ask(name: str, client: ProtocolClient) -> Usage:
    if name == EMBEDDER:
        await client.wire.embed(client.http, client.model, ["OK"])
        return Usage()
    request = CompletionRequest(PROBE_PROMPT, max_tokens=PROBE_TOKENS)
    return (await client.complete_once(request)).usage


async def _probe(name: str, client: ProtocolClient) -> Probe:
    with trio.move_on_after(PROBE_TIMEOUT):
        try:
            return Probe(usage=await _ask(name, client))
        except StatusError as error:
            return Probe(status=error.status, key_refused=error.refuses_key)
        except InvalidResponse:
            return Probe(usage=Usage(), readable=False)
        except LlmError as error:
            return Probe(cause=error.message)
    return Probe(cause=f"no answer within {PROBE_TIMEOUT:g}s")


async def probe_roles(
    settings: Settings, roles: Sequence[str], env: Mapping[str, str]
) -> dict[str, Probe]:
    """The probe of each named role, all at once, by role name.

    Name one role per provider and model: each named role costs one request."""
    probes: dict[str, Probe] = {}
    try:
        async with connect_roles(settings, list(roles), env) as clients:

            async def probe(name: str) -> None:
                probes[name] = await _probe(name, clients[name].client)

            async with unwrapped(), trio.open_nursery() as nursery:
                for name in clients:
                    nursery.start_soon(probe, name)
    except OverbrainerError as error:
        return {name: Probe(cause=error.message) for name in roles}
    return probes
