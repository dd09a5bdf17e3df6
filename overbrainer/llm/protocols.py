"""The one registry of wire protocols: a provider's `protocol` to its `WireProtocol`.

A new protocol is a module beside `openai.py` and one entry here (and its name in
`config/settings.py`'s `Protocol`, which the configuration is read into).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from overbrainer.config.settings import Protocol
from overbrainer.llm import anthropic, openai, stub
from overbrainer.llm.wire import WireProtocol

WIRES: Mapping[Protocol, WireProtocol] = MappingProxyType(
    {Protocol.OPENAI: openai.WIRE, Protocol.ANTHROPIC: anthropic.WIRE, Protocol.STUB: stub.WIRE}
)


def wire_of(protocol: Protocol) -> WireProtocol:
    """The implementation of `protocol`."""
    return WIRES[protocol]
