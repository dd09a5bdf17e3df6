"""Token usage of requests and the price that turns it into USD."""

from __future__ import annotations

import attrs


@attrs.frozen
class Usage:
    """Tokens of one or more requests; output tokens include reasoning."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )


@attrs.frozen
class Price:
    """USD per million tokens for input and output, as providers list them."""

    input_per_million: float
    output_per_million: float

    def cost(self, usage: Usage) -> float:
        """What `usage` costs at this price, in USD: `(in·p_in + out·p_out) / 1e6`."""
        # The reference's formula and order of operations, so the same usage writes the same
        # history text (0.0002, not 0.00019999999999999998).
        return (
            usage.input_tokens * self.input_per_million
            + usage.output_tokens * self.output_per_million
        ) / 1e6
