"""The spend cap of one command: no new request once the known spend reaches it."""

from __future__ import annotations

import attrs

from overbrainer.model.errors import UsageError, WorkFailed


class SpendCapReached(WorkFailed):
    """The command's known spend reached `[pipeline] max_cost_usd` / `--max-cost` (exit 1).

    Amounts show four decimals, like the cost on the summary lines.
    """

    def __init__(self, limit: float, spent: float) -> None:
        super().__init__(
            f"spend cap of ${limit:.4f} reached after ${spent:.4f}; "
            "run the command again to continue"
        )
        self.limit = limit
        self.spent = spent


class UnknownPrices(UsageError):
    """A cap was asked for but a role's price is unknown, so the spend cannot be known."""

    def __init__(self) -> None:
        super().__init__("--max-cost needs known prices")


@attrs.define
class SpendCap:
    """The known spend of a command (every stage of `run` shares one) against its cap."""

    limit: float | None = None
    spent: float = 0.0

    def add(self, cost: float | None) -> None:
        """Count a request's known cost."""
        if cost is not None:
            self.spent += cost

    @property
    def reached(self) -> bool:
        """Whether no new request may start."""
        return self.limit is not None and self.spent >= self.limit

    def error(self) -> SpendCapReached:
        """The error that ends a command stopped by the cap."""
        assert self.limit is not None
        return SpendCapReached(self.limit, self.spent)
