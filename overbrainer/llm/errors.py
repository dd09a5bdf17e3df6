"""`LlmError` and its variants, with the reference's display texts and retry classification."""

from __future__ import annotations

import json
import re

from overbrainer.model.errors import OverbrainerError

MESSAGE_LIMIT = 300
"""Characters of provider text kept in a status error."""

AUTH_FAILED = "authentication failed, check the provider API key"
PERMISSION_DENIED = "permission denied by the provider"
_NAMES_THE_KEY = re.compile(
    r"api[ _-]?key|authenticat|unauthori[sz]ed|credential|no connected db", re.IGNORECASE
)
"""What a 400 that refuses the key says. LiteLLM's proxy without a database answers a key that
is not its master key `400 No connected db.` (type `no_db_connection`): it cannot look virtual
keys up, so the key is refused; Google's OpenAI endpoint answers `400 API key not valid`."""


class LlmError(OverbrainerError):
    """A provider request failed; the message never holds an API key."""

    @property
    def retryable(self) -> bool:
        """Whether another attempt may succeed (408, 429, 5xx, transport)."""
        return False

    @property
    def stops_stage(self) -> bool:
        """Whether the stage stops at this error instead of failing one item."""
        return False

    @property
    def refuses_every_request(self) -> bool:
        """Whether any request of the stage would get this error too: the reference's
        `is_fatal_for_stage` (HTTP 401-404, a key refused or not sendable, an unsupported
        operation, a client that cannot be built). The stage stops without counting the
        item failed; our own stops (an unreachable provider, one client error repeated) come
        from errors the reference counts as failed items, and still count."""
        return False

    @property
    def retry_after(self) -> float | None:
        """Seconds the server asked us to wait, if it said."""
        return None

    @property
    def billed(self) -> bool:
        """Whether the provider answered 2xx, so it may bill the attempt we could not read."""
        return False


class StatusError(LlmError):
    """A non-2xx answer: `HTTP {status}: {message}`."""

    def __init__(self, status: int, message: str, retry_after: float | None = None) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.detail = message
        self._retry_after = retry_after

    @classmethod
    def from_body(cls, status: int, body: str, retry_after: float | None = None) -> StatusError:
        """The error for `status` with the provider's text (known secrets in it are masked)."""
        return cls(status, status_message(status, body), retry_after)

    @property
    def retryable(self) -> bool:
        return self.status in (408, 429) or self.status >= 500

    @property
    def refuses_key(self) -> bool:
        """Whether the provider refused the key: 401, 403, or a 400 whose text names the key."""
        if self.status in (401, 403):
            return True
        return self.status == 400 and _NAMES_THE_KEY.search(self.detail) is not None

    @property
    def stops_stage(self) -> bool:
        return 401 <= self.status <= 404 or self.refuses_key

    @property
    def refuses_every_request(self) -> bool:
        return self.stops_stage

    @property
    def retry_after(self) -> float | None:
        return self._retry_after


class TransportError(LlmError):
    """Connecting, sending or receiving failed, or the request timed out."""

    def __init__(self, cause: str = "", *, connecting: bool = False) -> None:
        # «request failed», then a cause in words (never the URL, headers or body) so a user
        # can tell a refused connection from a timeout.
        super().__init__(f"request failed: {cause}" if cause else "request failed")
        self.connecting = connecting
        """True when no connection could be made (refused, DNS, TLS, connect timeout)."""

    @property
    def retryable(self) -> bool:
        return True


class CutBody(TransportError):
    """A 2xx head came, then the body broke off: the provider may bill it, so it is counted."""

    @property
    def billed(self) -> bool:
        return True


class ProviderUnreachable(LlmError):
    """The circuit breaker is open: the provider could not be reached, so the stage stops."""

    def __init__(self, provider: str, address: str, cause: str) -> None:
        who = f"provider `{provider}`" if provider else "the provider"
        super().__init__(f"cannot reach {who} at {address}: {cause}")

    @property
    def stops_stage(self) -> bool:
        return True


class RepeatedError(LlmError):
    """The same client error failed several items in a row: every other item would fail too."""

    def __init__(self, error: LlmError, count: int) -> None:
        super().__init__(f"{error.message} (the same for {count} items in a row)")
        self.error = error

    @property
    def stops_stage(self) -> bool:
        return True


class InvalidResponse(LlmError):
    """The provider answered 2xx with something we cannot read."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"invalid response: {detail}")
        self.detail = detail


class MalformedBody(InvalidResponse):
    """A 2xx body that is not JSON at all: a proxy hiccup or a cut-off reply, so try again."""

    @property
    def retryable(self) -> bool:
        return True

    @property
    def billed(self) -> bool:
        return True


class Unsupported(LlmError):
    """The protocol has no such operation (embeddings on anthropic)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} are not supported by this protocol")

    @property
    def stops_stage(self) -> bool:
        return True

    @property
    def refuses_every_request(self) -> bool:
        return True


class InvalidApiKey(LlmError):
    """The key cannot be sent as a header value."""

    def __init__(self) -> None:
        super().__init__("the API key is not a valid HTTP header value")

    @property
    def stops_stage(self) -> bool:
        return True

    @property
    def refuses_every_request(self) -> bool:
        return True


class ClientBuildError(LlmError):
    """The HTTP client could not be built."""

    def __init__(self) -> None:
        super().__init__("cannot build the HTTP client")

    @property
    def stops_stage(self) -> bool:
        return True

    @property
    def refuses_every_request(self) -> bool:
        return True


def status_message(status: int, body: str) -> str:
    """The message of a status error: fixed for 401/403, else `error.message` or the body."""
    if status == 401:
        return AUTH_FAILED
    if status == 403:
        return PERMISSION_DENIED
    try:
        decoded = json.loads(body)
    except ValueError:
        decoded = None
    message: object = None
    if isinstance(decoded, dict):
        inner = decoded.get("error")
        if isinstance(inner, dict):
            message = inner.get("message")
    text = message if isinstance(message, str) else body
    return text[:MESSAGE_LIMIT]
