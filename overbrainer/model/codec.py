"""One record codec: every JSON record on disk goes through this module's cattrs converter.

A record is an attrs class marked `@record(...)` (its on-disk options, `codec_spec`) and usually
based on `JsonRecord` (which gives it `to_json`/`from_json`). The converter writes fields in
class order, enums by value, tuples and sets as lists (sets sorted) (`codec_write`), and reads
strictly: every value is checked against its annotation and a wrong one is a `ValueError`
naming the field (`codec_read`). Hooks are built once per class, the first time it is read or
written. This module is the codec's face: the JSON text, laid out in each record's style.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Self, TypeVar, get_args

import attrs

from overbrainer.model.codec_read import READERS, reader_of
from overbrainer.model.codec_spec import SPECS, Style, converter, record
from overbrainer.model.codec_write import WRITERS, writer_of
from overbrainer.model.serde_float import SerdeFloatEncoder

__all__ = [
    "JsonRecord",
    "Style",
    "converter",
    "decode",
    "decode_tagged",
    "dumps",
    "encode",
    "load_json",
    "loads",
    "record",
]

T = TypeVar("T")

# Records are trees (attrs values, never cyclic): the encoder's cycle check only costs time.
_PRETTY = json.JSONEncoder(ensure_ascii=False, indent=2, check_circular=False).encode
_DUMPS: dict[Style, Callable[[Any], str]] = {
    Style.COMPACT: json.JSONEncoder(
        ensure_ascii=False, separators=(",", ":"), check_circular=False
    ).encode,
    Style.SPACED: json.JSONEncoder(check_circular=False).encode,
    Style.PRETTY: lambda value: _PRETTY(value) + "\n",
}
# Records holding floats are written as serde_json writes them (`0.00002`, not `2e-05`); the
# others keep the faster C encoder, which gives the same text without floats.
_SERDE_PRETTY = SerdeFloatEncoder(ensure_ascii=False, indent=2, check_circular=False).encode
_SERDE_DUMPS: dict[Style, Callable[[Any], str]] = {
    Style.COMPACT: SerdeFloatEncoder(
        ensure_ascii=False, separators=(",", ":"), check_circular=False
    ).encode,
    Style.PRETTY: lambda value: _SERDE_PRETTY(value) + "\n",
}

_TEXTS: dict[type[Any], Callable[[Any], str]] = {}
"""Each record class's whole writer: record → JSON text in its style."""


class JsonRecord:
    """Base of a record class: `to_json` and `from_json` through the one converter."""

    __slots__ = ()

    def to_json(self) -> str:
        """The record's JSON text, laid out in its style."""
        return dumps(self)

    def to_dict(self) -> Any:
        """The record as JSON values."""
        return encode(self)

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        """The record stored as `text`; `ValueError` naming what is wrong."""
        return loads(cls, text)


def encode(value: Any) -> Any:
    """A record (or any value the converter knows) as JSON values."""
    writer = WRITERS.get(type(value))
    if writer is None:
        if type(value) not in SPECS:
            return converter.unstructure(value)
        writer = writer_of(type(value))
    return writer(value)


def decode(cls: type[T], data: Any) -> T:
    """The record of class `cls` held by the JSON values `data`; `ValueError` when invalid."""
    reader = READERS.get(cls) or reader_of(cls)
    result: T = reader(data, cls)
    return result


def dumps(value: Any) -> str:
    """A record's JSON text, laid out in its style."""
    cls = type(value)
    text = _TEXTS.get(cls)
    if text is None:
        writer, layout = writer_of(cls), _layout(cls)
        text = _TEXTS[cls] = lambda record: layout(writer(record))
    return text(value)


def _layout(cls: type[Any]) -> Callable[[Any], str]:
    style = SPECS[cls].style
    if style in _SERDE_DUMPS and _holds_float(cls, set()):
        return _SERDE_DUMPS[style]
    return _DUMPS[style]


def _holds_float(tp: Any, seen: set[type[Any]]) -> bool:
    """Whether a value of type `tp` may hold a float (through records, unions and lists)."""
    if tp is float:
        return True
    if isinstance(tp, type) and attrs.has(tp):
        if tp in seen:
            return False
        seen.add(tp)
        attrs.resolve_types(tp)
        return any(_holds_float(field.type, seen) for field in attrs.fields(tp))
    return any(_holds_float(arg, seen) for arg in get_args(tp))


def load_json(text: str | bytes) -> Any:
    """Decode JSON text; a lone surrogate (which serde refuses) is refused too (`ValueError`)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")  # UnicodeDecodeError is a ValueError
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ValueError(f"not JSON: {error}") from None
    if "\\u" in text:  # only a \u escape can smuggle in a lone surrogate
        try:
            _DUMPS[Style.COMPACT](value).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds a lone surrogate") from None
    return value


def loads(cls: type[T], text: str | bytes) -> T:
    """The record of class `cls` stored as `text`; `ValueError` naming what is wrong."""
    reader = READERS.get(cls) or reader_of(cls)
    result: T = reader(load_json(text), cls)
    return result


def decode_tagged(classes: tuple[type[Any], ...], text: str | bytes, what: str) -> Any:
    """The record stored as `text` among tagged `classes` (all with the same tag key)."""
    tags = {_tag(cls)[1]: cls for cls in classes}
    key = _tag(classes[0])[0]
    raw = load_json(text)
    if type(raw) is not dict:
        raise ValueError(f"{what} is not an object")
    if key not in raw:
        raise ValueError(f"missing field `{key}` in {what}")
    value = raw[key]
    if type(value) not in {type(tag) for tag in tags} or value not in tags:
        raise ValueError(f"`{key}` has an unknown value")
    return decode(tags[value], raw)


def _tag(cls: type[Any]) -> tuple[str, Any]:
    tag = SPECS[cls].tag
    assert tag is not None, f"{cls.__name__} has no tag"
    return tag
