"""The one text form of a moment in records: `YYYY-MM-DDTHH:MM:SSZ` in UTC."""

from __future__ import annotations

import datetime as dt
import re

_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z")


def utc(now: dt.datetime | None) -> dt.datetime:
    """`now` (default: the current time) in UTC; a naive time is refused."""
    moment = dt.datetime.now(dt.UTC) if now is None else now
    if moment.tzinfo is None:
        raise ValueError("a run time must be timezone-aware")
    return moment.astimezone(dt.UTC)


def rfc3339(now: dt.datetime | None = None) -> str:
    """`now` (default: the current time) as `YYYY-MM-DDTHH:MM:SSZ` in UTC."""
    return utc(now).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> dt.datetime | None:
    """The UTC time `text` gives in the `rfc3339` form; None for any other text."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(part) for part in match.groups())
    try:
        return dt.datetime(year, month, day, hour, minute, second, tzinfo=dt.UTC)
    except ValueError:
        return None
