"""The circuit breaker of one provider connection: stop asking a provider nobody can reach."""

from __future__ import annotations

import trio

from overbrainer.llm.errors import ProviderUnreachable

TRIP_AFTER = 3
"""Consecutive connection failures that open the breaker.

Three: one failure can be a blip and two can be one item's retry, but a third in a row with no
reply between them, across items or retries, is a provider that is down, mistyped or
unreachable, and every further request would only wait through its own backoff to fail too.
"""

OUTAGE_SECS = 5.0
"""How long the failures must have gone on before a provider that did answer is given up.

Five seconds spans a couple of backoff rounds: a blip that refuses every request in flight at
once does not stop the stage, a provider that died does within seconds.
"""


class Breaker:
    """Counts connection failures in a row (no HTTP reply between them) for one provider.

    It opens at `TRIP_AFTER` failures when the provider never answered in this command, or
    when it did but the failures have lasted `OUTAGE_SECS`; once open, every request fails
    at once without being sent.
    """

    def __init__(
        self,
        provider: str,
        address: str,
        *,
        trip_after: int = TRIP_AFTER,
        outage_secs: float = OUTAGE_SECS,
    ) -> None:
        self.provider = provider
        self.address = address
        self.trip_after = trip_after
        self.outage_secs = outage_secs
        self.tripped: ProviderUnreachable | None = None
        self._answered = False
        self._streak = 0
        self._since = 0.0

    def check(self) -> None:
        """Raise `ProviderUnreachable` when the breaker is open."""
        if self.tripped is not None:
            raise self.tripped

    def replied(self) -> None:
        """The provider answered (any HTTP status): it can be reached."""
        self._answered = True
        self._streak = 0

    def failed_to_connect(self, cause: str) -> ProviderUnreachable | None:
        """Count one connection failure; the error to raise when this one opens the breaker."""
        now = trio.current_time()
        if self._streak == 0:
            self._since = now
        self._streak += 1
        if self._streak < self.trip_after:
            return None
        if self._answered and now - self._since < self.outage_secs:
            return None
        self.tripped = ProviderUnreachable(self.provider, self.address, cause)
        return self.tripped
