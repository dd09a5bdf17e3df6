"""File sizes as the export and push lines show them (spec §B.5): decimal MB/GB, one decimal."""

from __future__ import annotations

_GB = 1_000_000_000
_MB = 1_000_000


def format_size(size: int) -> str:
    """`412.3 MB`, `1.2 GB`, `0.0 MB`: decimal units, one decimal, truncated (never rounded up)."""
    if size >= _GB:
        return f"{size * 10 // _GB / 10:.1f} GB"
    return f"{max(size, 0) * 10 // _MB / 10:.1f} MB"
