"""The size words of the export and push lines (spec §B.5)."""

from __future__ import annotations

import pytest

from overbrainer.model.sizes import format_size


@pytest.mark.parametrize(
    ("size", "words"),
    [
        (0, "0.0 MB"),
        (99_999, "0.0 MB"),
        (412_399_999, "412.3 MB"),
        (999_999_999, "999.9 MB"),
        (1_000_000_000, "1.0 GB"),
        (1_299_999_999, "1.2 GB"),
        (15_960_000_000, "15.9 GB"),
    ],
)
def test_sizes_are_decimal_and_truncated(size: int, words: str) -> None:
    assert format_size(size) == words
