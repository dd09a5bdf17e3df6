"""Paid replies that cannot be read: each attempt counted and charged to its request's reservation.

A 2xx reply whose body is cut off, not JSON or not UTF-8 was billed all the same. The pipeline's
stages and compare's judge both count it by `unreadable_usage` (its prompt, its whole
`max_tokens`); its retry waits for room under the cap like any new request, and is
refused only when it could not fit even with nothing else in flight.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from overbrainer.llm import CompletionRequest, LlmError
from overbrainer.model.usage import Usage
from overbrainer.pipeline.money import Money, TokenRates
from overbrainer.pipeline.spend import Reservation, unreadable_usage


@attrs.define
class UnreadableReplies:
    """The unreadable attempts of one request, charged to its `reservation`."""

    request: CompletionRequest
    reservation: Reservation
    rates: TokenRates
    count: Callable[[Usage], None]
    """Adds one unreadable attempt's usage to the caller's figures (and says so once)."""
    renewing: bool = False
    """Whether the reservation was given back by a paid attempt and the retry must take it
    again before it starts."""

    def charge(self, error: BaseException | None) -> Money | None:
        """The cost of `error`, counted, when it is a paid reply we could not read; else None."""
        if not (isinstance(error, LlmError) and error.billed):
            return None
        usage = unreadable_usage(self.request)
        self.count(usage)
        return self.rates.cost(usage)

    def retrying(self, error: Exception) -> bool:
        """Before a retry: a paid attempt is counted and its reservation given back until
        `room` takes it again; False once the next attempt could never fit (the cap then
        refuses new requests)."""
        cost = self.charge(error)
        if cost is None:
            return True
        self.renewing = True
        return self.reservation.charge(cost)

    async def room(self) -> bool:
        """Before the next attempt: True once the cap covers it, after waiting for the requests
        in flight to settle; False when the cap refuses it."""
        if not self.renewing:
            return True
        self.renewing = False
        return await self.reservation.renew()

    def settle(self, error: BaseException | None) -> None:
        """The request ended without a reply: a last attempt that was unreadable settles the
        reservation with its cost (one that was not gives it back on exit, as usual)."""
        if (owed := self.charge(error)) is not None:
            self.reservation.settle(owed, estimated=True)
