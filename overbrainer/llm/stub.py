"""The `stub` protocol: OpenAI's wire format, answered inside the process by the stand-in."""

from __future__ import annotations

import httpx2

from overbrainer.config.settings import Settings
from overbrainer.llm.openai import OpenAiWire


class StubWire(OpenAiWire):
    """The embedded stand-in (`devtools/embedded.py`) as a `WireProtocol`."""

    embedded = True

    def transport(self, settings: Settings, provider: str) -> httpx2.AsyncBaseTransport:
        """A fresh stand-in for `provider`, listing the models its roles use."""
        # Imported on use: the stand-in's server (~40 ms to import) stays off every command
        # whose providers are all real ones.
        from overbrainer.devtools.embedded import stub_transport

        roles = [role for _, role in settings.roles.all()]
        if settings.quality.judge is not None:
            roles.append(settings.quality.judge)
        return stub_transport(r.model for r in roles if r.provider == provider)


WIRE = StubWire()
