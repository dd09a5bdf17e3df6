"""The `stub` protocol: OpenAI's wire format, answered inside the process by the stand-in."""

from __future__ import annotations

from overbrainer.config.settings import Settings
from overbrainer.devtools.embedded import StubTransport, stub_transport
from overbrainer.llm.openai import OpenAiWire


class StubWire(OpenAiWire):
    """The embedded stand-in (`devtools/embedded.py`) as a `WireProtocol`."""

    embedded = True

    def transport(self, settings: Settings, provider: str) -> StubTransport:
        """A fresh stand-in for `provider`, listing the models its roles use."""
        return stub_transport(r.model for _, r in settings.roles.all() if r.provider == provider)


WIRE = StubWire()
