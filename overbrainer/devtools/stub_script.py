"""What a test scripts the stand-in provider with (`Reply`) and reads back from it (`Recorded`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeAlias

import attrs

Json: TypeAlias = dict[str, "Json"] | list["Json"] | str | int | float | bool | None
"""A JSON value, as the stand-in reads and writes it."""


@attrs.define
class Reply:
    """One scripted reply; the defaults are a plain 200 answer."""

    content: str = "ok"
    reasoning: str | None = None
    reasoning_content: str | None = None
    reasoning_details: list[Json] | None = None
    thinking: str | None = None
    refusal: str | None = None
    finish_reason: str = "stop"
    usage: tuple[int, int] | None = (10, 5)
    """Input and output tokens; None leaves `usage` out of the reply, as some providers do."""
    delay: float = 0.0
    status: int = 200
    headers: dict[str, str] = attrs.field(factory=dict)
    body: bytes | None = None
    drop: bool = False
    echo_auth: bool = False
    """An error reply (`status`) whose message quotes the request's credential headers."""
    cut: bool = False
    """Send the head and half the body, then close the connection."""
    reset: bool = False
    """Answer nothing and reset the connection (TCP RST)."""
    off_contract: bool = False
    """A 200 answer the test shapes outside the API on purpose: a `Contract` does not check it."""

    @property
    def deliberate(self) -> bool:
        """Whether this reply is a scripted fault (an error, raw bytes, a cut or lost answer,
        no `usage`)."""
        return (
            self.off_contract
            or self.status != 200
            or self.body is not None
            or self.drop
            or self.reset
            or self.cut
            or self.usage is None
        )


@attrs.frozen
class Recorded:
    """A request the stub received: method, path, lower-case headers, decoded and raw body."""

    method: str
    path: str
    headers: dict[str, str]
    body_json: Json
    raw: bytes

    @property
    def prompt(self) -> str | None:
        """The text of the last user message, if any."""
        body = self.body_json if isinstance(self.body_json, dict) else {}
        messages = body.get("messages")
        for message in reversed(messages if isinstance(messages, list) else []):
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                return content if isinstance(content, str) else None
        return None

    @property
    def system(self) -> str | None:
        """The system prompt (OpenAI system message or Anthropic `system`), if any."""
        body = self.body_json if isinstance(self.body_json, dict) else {}
        system = body.get("system")
        if isinstance(system, str):
            return system
        messages = body.get("messages")
        for message in messages if isinstance(messages, list) else []:
            if isinstance(message, dict) and message.get("role") == "system":
                content = message.get("content")
                return content if isinstance(content, str) else None
        return None

    @property
    def is_completion(self) -> bool:
        """Whether this is a chat-completions or Messages request."""
        return self.path.endswith(("/chat/completions", "/messages"))


Responder = Callable[[Recorded], Reply | Awaitable[Reply]]
