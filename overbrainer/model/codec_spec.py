"""The on-disk options of record classes: `@record`, their layout `Style`, the one converter.

`record` files each marked class's options in `SPECS`; the reading and writing hooks
(`codec_read`, `codec_write`) are built from them and registered on `converter`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

import attrs
import cattrs

__all__ = [
    "SPECS",
    "Reader",
    "RecordSpec",
    "Style",
    "Writer",
    "converter",
    "is_record",
    "record",
]

T = TypeVar("T")
Reader = Callable[[Any, Any], Any]
"""A field's checking hook: (JSON value, type) → Python value, `ValueError` when wrong."""
Writer = Callable[[Any], Any]
"""A field's or a record's writing hook: Python value → JSON values."""


class Style(enum.Enum):
    """How a record's JSON text is laid out."""

    COMPACT = "compact"
    """One line, no spaces, raw UTF-8 (the dataset files, the history, the compare records)."""
    SPACED = "spaced"
    """One line as `json.dumps` writes it by default: `, ` and `: `, non-ASCII escaped."""
    PRETTY = "pretty"
    """Indented by 2 spaces, raw UTF-8, then a newline (`run.json`, `pod.json`)."""


@attrs.frozen
class RecordSpec:
    """A record class's on-disk options, as `record` was given them."""

    name: str
    style: Style
    strict: bool
    omit: frozenset[str]
    require: frozenset[str]
    optional: frozenset[str]
    nan_as_null: bool
    rename: Mapping[str, str]
    order: tuple[str, ...] | None
    tag: tuple[str, Any] | None
    check: Callable[[Any], None] | None
    write: Writer | None
    read: Reader | None


converter = cattrs.Converter(detailed_validation=False)
"""The one converter every record goes through."""

SPECS: dict[type[Any], RecordSpec] = {}
"""Each record class's options, filed by `record`."""


def is_record(tp: Any) -> bool:
    """Whether `tp` is a class marked `@record`."""
    return isinstance(tp, type) and tp in SPECS


def record(
    name: str | None = None,
    *,
    style: Style = Style.COMPACT,
    strict: bool = True,
    omit: tuple[str, ...] = (),
    require: tuple[str, ...] | Literal["all"] = (),
    optional: tuple[str, ...] = (),
    nan_as_null: bool = False,
    rename: Mapping[str, str] | None = None,
    order: tuple[str, ...] | None = None,
    tag: tuple[str, Any] | None = None,
    check: Callable[[Any], None] | None = None,
    write: Writer | None = None,
    read: Reader | None = None,
) -> Callable[[type[T]], type[T]]:
    """Mark an attrs class as a record and give its on-disk options.

    `name`: what errors call it (default: the class name in lower case). `strict`: an unknown
    field is an error (else ignored). `omit`: fields written only when not their default.
    `require`: fields that must be present although they have a default (`"all"`: every
    field). `optional`: fields without a default that may be missing (read as null).
    `nan_as_null`: a NaN or infinite number reads as null (else it is an error). `rename`:
    field → JSON key. `order`: the JSON keys written first, in this order. `tag`: a
    `(key, value)` written first and required on reading. `check`: further checks of a read
    record (`ValueError`). `write`/`read`: whole hand-made hooks, for a shape no option gives.
    An unknown field is named first (sorted), then a missing one (sorted).
    """

    def mark(cls: type[T]) -> type[T]:
        SPECS[cls] = RecordSpec(
            name or cls.__name__.lower(),
            style,
            strict,
            frozenset(omit),
            frozenset(("*",) if require == "all" else require),
            frozenset(optional),
            nan_as_null,
            dict(rename or {}),
            order,
            tag,
            check,
            write,
            read,
        )
        return cls

    return mark
