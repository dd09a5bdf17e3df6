"""The spend cap of one command: a ledger of what was spent and what requests in flight may cost.

The rule: a request starts only once its worst-case cost is reserved, and a reservation is
granted only while `spent + reserved + this reservation <= cap`. When a reply comes, its
reservation is settled with its real cost (or an estimate, when the reply carries no usage);
a request that fails without a reply releases it. A reservation that does not fit waits for the
ones in flight to settle; one that does not fit with nothing in flight stops the command.
A paid attempt that is retried (a reply we could not read) is counted, gives its reservation
back, and its retry reserves again by the same rule: it waits for room, and is refused only
when it could not fit even with nothing else in flight.
Amounts are exact: integer `Money` (1e-30 USD) of the decimal prices and cap (`0.1` is 1/10),
so rounding never lets a request pass the cap, nor refuses one that fits exactly
(`pipeline/money.py` says why the unit holds every price).
"""

from __future__ import annotations

import logging
import math
from fractions import Fraction
from types import TracebackType

import attrs
import trio

from overbrainer.llm import Completion, CompletionRequest
from overbrainer.model.errors import UsageError, WorkFailed
from overbrainer.model.usage import Price, Usage
from overbrainer.pipeline.money import Money, in_usd, money_down, money_up
from overbrainer.pipeline.money import decimal as decimal  # tests check the figures with it

log = logging.getLogger(__name__)

MESSAGE_TOKENS = 16
"""Tokens a chat message may add to its text (role markers, separators), generously."""

LIST_FORMAT_TOKENS = 256
"""Tokens the structured-output schema of a list request may add to the prompt."""

BYTES_PER_TOKEN = 3
"""The estimate of a text's tokens when a reply has no usage: UTF-8 bytes / 3, rounded up."""


Amount = Money | Fraction
"""What the ledger takes: `Money`, or an exact fraction of USD (rounded up to `Money`)."""


def money(amount: Amount) -> Money:
    """`amount` as `Money`; a fraction finer than the unit is rounded up."""
    return amount if isinstance(amount, int) else money_up(amount)


def usd(amount: float | Fraction) -> str:
    """`$0.0006`, `$0.5000`, `$0.00001`: four decimals at least, six at most, as needed."""
    text = f"{float(amount):.6f}".rstrip("0")
    whole, _, decimals = text.partition(".")
    return f"${whole}.{decimals.ljust(4, '0')}"


class SpendCapReached(WorkFailed):
    """The next request could pass `[pipeline] max_cost_usd` / `--max-cost` (exit 1); one line
    that says what to change when a single request's worst case is above the cap."""

    def __init__(
        self,
        limit: float,
        spent: Fraction,
        refused: Fraction,
        hint: str = "run the command again to continue",
    ) -> None:
        self.reason = f"spend cap reached: {usd(spent)} of {usd(limit)}"
        """What the history line records as the reason the stage stopped."""
        if refused > decimal(limit):
            # No rerun gets past it, so "run again" would send the user round in circles.
            super().__init__(
                f"the spend cap {usd(limit)} is below one request's worst case {usd(refused)}: "
                "raise --max-cost or lower max_tokens"
            )
        else:
            super().__init__(
                f"{self.reason} (the next request could cost up to {usd(refused)}); {hint}"
            )
        self.limit = limit
        self.spent = spent


class UnknownPrices(UsageError):
    """A cap was asked for but a role's price is unknown, so the spend cannot be known."""

    def __init__(self) -> None:
        super().__init__("--max-cost needs known prices")


def exact_cost(usage: Usage, price: Price) -> Fraction:
    """What `usage` costs at `price` in USD, without rounding: what `TokenRates.cost` counts."""
    return (
        usage.input_tokens * decimal(price.input_per_million)
        + usage.output_tokens * decimal(price.output_per_million)
    ) / 1_000_000


def estimate_tokens(*texts: str | None) -> int:
    """The tokens of `texts` when no provider counted them: their UTF-8 bytes / 3, rounded up."""
    size = sum(len(text.encode()) for text in texts if text)
    return math.ceil(size / BYTES_PER_TOKEN)


def worst_usage(request: CompletionRequest) -> Usage:
    """The most `request` can use: a token per prompt byte, and the whole output limit.

    A byte-level tokenizer never makes more tokens than bytes; the output stops at
    `max_tokens` (reasoning included) on both protocols.
    """
    messages = [text for text in (request.system, request.prompt) if text is not None]
    prompt = sum(len(text.encode()) + MESSAGE_TOKENS for text in messages)
    if request.json_list:
        prompt += LIST_FORMAT_TOKENS
    return Usage(prompt, request.max_tokens)


def counted_usage(request: CompletionRequest, completion: Completion) -> tuple[Usage, bool]:
    """The usage to count for a reply, and whether it is estimated (the reply had none)."""
    if completion.usage_reported:
        return completion.usage, False
    estimate = Usage(
        estimate_tokens(request.system, request.prompt),
        estimate_tokens(completion.content, completion.reasoning.text),
    )
    return estimate, True


def unreadable_usage(request: CompletionRequest) -> Usage:
    """What a paid reply we could not read counts: its prompt estimated as for a reply without
    usage, and its whole `max_tokens` out, the most the provider may bill for it."""
    return Usage(estimate_tokens(request.system, request.prompt), request.max_tokens)


@attrs.define(eq=False)
class Reservation:
    """The worst-case cost of one request in flight; settle or release it exactly once.

    As a context manager it releases itself on exit unless it was settled.
    """

    ledger: SpendCap
    amount: Money
    open: bool = True

    def settle(self, cost: Amount, *, estimated: bool = False) -> None:
        """The reply came: its real (or estimated) cost replaces the reservation."""
        self._close()
        self.ledger.spent_money += money(cost)
        self.ledger.estimated = self.ledger.estimated or estimated

    def charge(self, cost: Amount) -> bool:
        """An attempt was paid for (estimated) and its request is to be tried again: count
        `cost` and give the reservation back until `renew` takes it again. False, and the cap
        refuses new requests, when the next attempt could not fit even with nothing else in
        flight (what is spent only grows)."""
        ledger = self.ledger
        ledger.spent_money += money(cost)
        ledger.estimated = True
        self._close()
        limit = ledger.limit_money
        if limit is not None and ledger.spent_money + self.amount > limit:
            ledger.refuse(self.amount)
            return False
        return True

    async def renew(self) -> bool:
        """Reserve the same worst case for the next attempt, waiting for the requests in flight
        to settle while it does not fit, as `SpendCap.reserve` does; False when the cap refuses
        it (nothing is reserved then)."""
        assert not self.open, "renew follows charge"
        self.open = await self.ledger.admit(self.amount)
        return self.open

    def release(self) -> None:
        """The request ended without a reply to pay for: its reservation is given back."""
        self._close()

    def _close(self) -> None:
        if self.open:
            self.open = False
            self.ledger.reserved_money -= self.amount
            self.ledger.in_flight -= 1
            self.ledger.changed()

    def __enter__(self) -> Reservation:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.release()


@attrs.define
class SpendCap:
    """The spend of a command (every stage of `run` shares one) and its reservations."""

    limit: float | None = attrs.field(default=None, on_setattr=attrs.setters.frozen)
    """The cap in USD, None for none; fixed, since `limit_money` is worked out from it."""
    estimated: bool = False
    """Whether some counted cost was estimated, because a reply had no usage."""
    spent_money: int = attrs.field(default=0, init=False)
    """What was spent."""
    reserved_money: int = attrs.field(default=0, init=False)
    """What the requests in flight may still cost: the sum of their open reservations."""
    refused_money: Money | None = attrs.field(default=None, init=False)
    """The reservation the cap refused, once one was: no request starts after it."""
    limit_money: Money | None = attrs.field(init=False)
    """`limit` as `Money`, worked out once: the cap check is then integers only."""
    in_flight: int = 0
    """Reservations open now: the requests the cap lets run at once."""
    throttled: bool = False
    """Whether the cap has held a request back while others were in flight (said once)."""
    _settled: trio.Event = attrs.field(factory=trio.Event, init=False)
    _line: trio.Lock = attrs.field(factory=trio.Lock, init=False)

    @limit_money.default
    def _limit_money(self) -> Money | None:
        return None if self.limit is None else money_down(decimal(self.limit))

    @property
    def spent(self) -> Fraction:
        """What was spent, in USD."""
        return in_usd(self.spent_money)

    @property
    def reserved(self) -> Fraction:
        """What the requests in flight may still cost, in USD."""
        return in_usd(self.reserved_money)

    @property
    def refused(self) -> Fraction | None:
        """The reservation the cap refused, in USD, once one was."""
        return None if self.refused_money is None else in_usd(self.refused_money)

    @property
    def reached(self) -> bool:
        """Whether no new request may start."""
        return self.refused_money is not None

    def fits(self, amount: Amount) -> bool:
        """Whether a reservation of `amount` fits now: `spent + reserved + amount <= limit`."""
        limit = self.limit_money
        return limit is None or self.spent_money + self.reserved_money + money(amount) <= limit

    async def reserve(self, amount: Amount) -> Reservation | None:
        """Reserve `amount`, waiting for reservations in flight to settle while it does not fit.

        Requests are served in the order they asked (a trio.Lock is fair), so a big one is
        not overtaken forever by small ones. None when the cap refuses it: it does not fit with
        nothing else in flight, or another request was refused meanwhile. Nothing is reserved
        then.
        """
        amount = money(amount)
        return Reservation(self, amount) if await self.admit(amount) else None

    async def admit(self, amount: Money) -> bool:
        """`reserve`'s rule for `amount`: True once it is reserved, False when refused."""
        if not self._line.locked() and not self.reached and self.fits(amount):
            # No one waits in line and it fits: reserving now keeps the order and spares the
            # lock's two task switches (its checkpoint, and the hand-off to each task queued
            # behind that checkpoint), which every request paid before.
            self.reserved_money += amount
            self.in_flight += 1
            return True
        async with self._line:
            while not self.reached:
                if self.fits(amount):
                    self.reserved_money += amount
                    self.in_flight += 1
                    return True
                if self.reserved_money == 0:
                    self.refused_money = amount
                    return False
                self._say_throttled(amount)
                await self._settled.wait()
        return False

    def _say_throttled(self, amount: Money) -> None:
        """Once per command: the cap, not `[pipeline] concurrency`, sets how many run at once."""
        if self.throttled or self.limit is None:
            return
        self.throttled = True
        at_once = f"{self.in_flight} request{'' if self.in_flight == 1 else 's'}"
        log.warning(
            "the spend cap %s lets only %s run at once: each reserves its worst case (up to %s) "
            "until its reply comes; lower max_tokens to run more at once",
            usd(self.limit),
            at_once,
            usd(in_usd(amount)),
        )

    def refuse(self, amount: Amount) -> None:
        """No new request starts: one costing `amount` did not fit (a batch's next item)."""
        if self.refused_money is None:
            self.refused_money = money(amount)

    def pay(self, cost: Amount) -> None:
        """Count `cost` committed before this command (a batch it re-attached to)."""
        self.spent_money += money(cost)
        self.changed()

    def changed(self) -> None:
        """Wake the request waiting for room: a reservation closed."""
        if self._line.locked():  # only a request in line can be waiting for room
            self._settled.set()
            self._settled = trio.Event()

    def error(self) -> SpendCapReached:
        """The error that ends a command stopped by the cap."""
        refused = self.refused
        assert self.limit is not None and refused is not None
        return SpendCapReached(self.limit, self.spent, refused)
