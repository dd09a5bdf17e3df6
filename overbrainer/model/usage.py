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
    """USD per token for input and output."""

    input_per_token: float
    output_per_token: float

    def cost(self, usage: Usage) -> float:
        """What `usage` costs at this price, in USD."""
        return (
            usage.input_tokens * self.input_per_token + usage.output_tokens * self.output_per_token
        )
