"""One record codec: every JSON record on disk goes through this module's cattrs converter.

A record is an attrs class marked `@record(...)` (its on-disk options) and usually based on
`JsonRecord` (which gives it `to_json`/`from_json`). The converter writes fields in class
order, enums by value, tuples and sets as lists (sets sorted), and reads strictly: every value
is checked against its annotation and a wrong one is a `ValueError` naming the field
(`` `id` is not a string ``, `` missing field `topic` in example ``, `unknown field …`).
Integers are unsigned 64-bit, floats are finite (a JSON integer is one), a field with a
default may be missing. Hooks are built once per class, the first time it is read or written,
by cattrs' `make_dict_structure_fn`/`make_dict_unstructure_fn` with one checking hook per
field (two threads building them at once is harmless: the same hooks).
"""

from __future__ import annotations

import enum
import itertools
import json
import math
import types
from collections.abc import Callable, Mapping
from typing import Any, Literal, Self, TypeVar, Union, get_args, get_origin

import attrs
import cattrs
from cattrs.fns import identity
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

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
U64_MAX = 2**64 - 1
Reader = Callable[[Any, Any], Any]
"""A field's checking hook: (JSON value, type) → Python value, `ValueError` when wrong."""
Writer = Callable[[Any], Any]


class Style(enum.Enum):
    """How a record's JSON text is laid out."""

    COMPACT = "compact"
    """One line, no spaces, raw UTF-8 (the dataset files, the history, the compare records)."""
    SPACED = "spaced"
    """One line as `json.dumps` writes it by default: `, ` and `: `, non-ASCII escaped."""
    PRETTY = "pretty"
    """Indented by 2 spaces, raw UTF-8, then a newline (`run.json`, `pod.json`)."""


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


@attrs.frozen
class _Spec:
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

_SPECS: dict[type[Any], _Spec] = {}
_READERS: dict[type[Any], Reader] = {}
_WRITERS: dict[type[Any], Writer] = {}
_TEXTS: dict[type[Any], Callable[[Any], str]] = {}


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
        _SPECS[cls] = _Spec(
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
    writer = _WRITERS.get(type(value))
    if writer is None:
        if type(value) not in _SPECS:
            return converter.unstructure(value)
        writer = _writer_of(type(value))
    return writer(value)


def decode(cls: type[T], data: Any) -> T:
    """The record of class `cls` held by the JSON values `data`; `ValueError` when invalid."""
    reader = _READERS.get(cls) or _reader_of(cls)
    result: T = reader(data, cls)
    return result


def dumps(value: Any) -> str:
    """A record's JSON text, laid out in its style."""
    cls = type(value)
    text = _TEXTS.get(cls)
    if text is None:
        writer, layout = _writer_of(cls), _layout(cls)
        text = _TEXTS[cls] = lambda record: layout(writer(record))
    return text(value)


def _layout(cls: type[Any]) -> Callable[[Any], str]:
    style = _SPECS[cls].style
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
    reader = _READERS.get(cls) or _reader_of(cls)
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
    tag = _SPECS[cls].tag
    assert tag is not None, f"{cls.__name__} has no tag"
    return tag


# Reading -------------------------------------------------------------------------------------


def _is_record(tp: Any) -> bool:
    return isinstance(tp, type) and tp in _SPECS


def _field_reader(tp: Any, field: str, nan_as_null: bool = False) -> Reader:
    """The checking hook of a field of type `tp`."""
    if tp is Any:
        return lambda value, _: value
    if tp is str:
        return _simple(str, f"`{field}` is not a string")
    if tp is bool:
        return _simple(bool, f"`{field}` is not a boolean")
    if tp is int:
        return _unsigned(field)
    if tp is float:
        return _number(field, nan_as_null)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _choice({member.value: member for member in tp}, field)
    if _is_record(tp):
        return _READERS.get(tp) or _reader_of(tp)
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return _choice({arg: arg for arg in args}, field)
    if origin in (Union, types.UnionType):
        others = [arg for arg in args if arg is not type(None)]
        if len(others) != 1 or len(args) != 2:
            raise TypeError(f"`{field}`: only `X | None` unions are records' fields")
        other = others[0]
        # One hook rather than two for the usual optional fields.
        if other is str:
            return _simple_or_null(str, f"`{field}` is not a string")
        if isinstance(other, type) and issubclass(other, enum.Enum):
            return _choice({member.value: member for member in other} | {None: None}, field)
        return _optional(_field_reader(other, field, nan_as_null))
    if origin in (tuple, list, set, frozenset):
        if origin is tuple and (len(args) != 2 or args[1] is not Ellipsis):
            raise TypeError(f"`{field}`: only `tuple[X, ...]` tuples are records' fields")
        return _sequence(origin, _field_reader(args[0], field), field)
    if origin is dict:
        if args[0] is not str:
            raise TypeError(f"`{field}`: only `dict[str, X]` dicts are records' fields")
        return _mapping(_field_reader(args[1], field), field)
    raise TypeError(f"`{field}`: no record codec for {tp!r}")


def _simple(kind: type[Any], message: str) -> Reader:
    def read(value: Any, _: Any) -> Any:
        if type(value) is not kind:
            raise ValueError(message)
        return value

    return read


def _simple_or_null(kind: type[Any], message: str) -> Reader:
    def read(value: Any, _: Any) -> Any:
        if value is not None and type(value) is not kind:
            raise ValueError(message)
        return value

    return read


def _unsigned(field: str) -> Reader:
    def read(value: Any, _: Any) -> int:
        if type(value) is not int or not 0 <= value <= U64_MAX:
            raise ValueError(f"`{field}` is not an unsigned 64-bit integer")
        return value

    return read


def _number(field: str, nan_as_null: bool) -> Reader:
    def read(value: Any, _: Any) -> float | None:
        if type(value) is int:
            return float(value)
        if type(value) is not float:
            raise ValueError(f"`{field}` is not a number")
        if not math.isfinite(value):
            if nan_as_null:
                return None
            raise ValueError(f"`{field}` is not a finite number")
        return value

    return read


def _choice(table: dict[Any, Any], field: str) -> Reader:
    kinds = {type(key) for key in table}

    def read(value: Any, _: Any) -> Any:
        # Looked up by exact type: `True` must not pass for a choice of `1`.
        if type(value) not in kinds or value not in table:
            raise ValueError(f"`{field}` has an unknown value")
        return table[value]

    return read


def _optional(inner: Reader) -> Reader:
    def read(value: Any, tp: Any) -> Any:
        return None if value is None else inner(value, tp)

    return read


_NONES = itertools.repeat(None)
"""The type argument a field hook gets for each item of a list (the hooks ignore it)."""


def _sequence(origin: Any, inner: Reader, field: str) -> Reader:
    def read(value: Any, tp: Any) -> Any:
        if type(value) is not list:
            raise ValueError(f"`{field}` is not a list")
        return origin(map(inner, value, _NONES))

    return read


def _mapping(inner: Reader, field: str) -> Reader:
    def read(value: Any, tp: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise ValueError(f"`{field}` is not an object")
        return {key: inner(item, tp) for key, item in value.items()}

    return read


def _reader_of(cls: type[Any]) -> Reader:
    """Build (once) the reading hook of record class `cls`."""
    spec = _SPECS.get(cls)
    if spec is None:
        raise TypeError(f"{cls.__name__} is not a record (mark it with `@record`)")
    if spec.read is not None:
        _READERS[cls] = spec.read
        return spec.read
    attrs.resolve_types(cls)
    fields = attrs.fields(cls)
    hooks: dict[str, Any] = {
        field.name: override(
            struct_hook=_field_reader(field.type, field.name, spec.nan_as_null),
            rename=spec.rename.get(field.name),
        )
        for field in fields
    }
    build = make_dict_structure_fn(cls, converter, _cattrs_forbid_extra_keys=False, **hooks)
    keys = [spec.rename.get(field.name, field.name) for field in fields]
    required = frozenset(
        key
        for key, field in zip(keys, fields, strict=True)
        if (field.default is attrs.NOTHING and field.name not in spec.optional)
        or field.name in spec.require
        or "*" in spec.require
    )
    nullable = frozenset(spec.rename.get(name, name) for name in spec.optional)
    allowed = frozenset(keys) | ({spec.tag[0]} if spec.tag else set())
    name, strict, check, tag = spec.name, spec.strict, spec.check, spec.tag
    if tag is not None:
        required |= {tag[0]}

    if tag is None and not nullable and check is None:

        def read(value: Any, _: Any) -> Any:
            if type(value) is not dict:
                raise ValueError(f"{name} is not an object")
            present = value.keys()
            # Most records hold every field, or only the required ones: a comparison settles it.
            if (
                present != allowed
                and present != required
                and not (present >= required and (not strict or present <= allowed))
            ):
                _fields_error(present, required, allowed, strict, name)
            return build(value, cls)

    else:

        def read(value: Any, _: Any) -> Any:
            if type(value) is not dict:
                raise ValueError(f"{name} is not an object")
            if tag is not None and value.get(tag[0]) != tag[1]:
                raise ValueError(f"not a {name}")
            present = value.keys()
            if not (present >= required and (not strict or present <= allowed)):
                _fields_error(present, required, allowed, strict, name)
            if nullable and not present >= nullable:
                value = dict.fromkeys(nullable - present) | value
            if tag is not None:
                value = {key: item for key, item in value.items() if key != tag[0]}
            result = build(value, cls)
            if check is not None:
                check(result)
            return result

    _READERS[cls] = read
    converter.register_structure_hook(cls, read)
    return read


def _fields_error(
    present: Any, required: frozenset[str], allowed: frozenset[str], strict: bool, name: str
) -> None:
    if strict and present - allowed:
        raise ValueError(f"unknown field `{sorted(present - allowed)[0]}` in {name}")
    raise ValueError(f"missing field `{sorted(required - present)[0]}` in {name}")


# Writing -------------------------------------------------------------------------------------


def _field_writer(tp: Any) -> Writer | None:
    """How a field of type `tp` is written; None when its value is already JSON."""
    if tp in (Any, str, bool, int, float):
        return None
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {member: member.value for member in tp}.__getitem__
    if _is_record(tp):
        return _WRITERS.get(tp) or _writer_of(tp)
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return None
    if origin in (Union, types.UnionType):
        (other,) = (arg for arg in args if arg is not type(None))
        if isinstance(other, type) and issubclass(other, enum.Enum):
            values: dict[Any, Any] = {member: member.value for member in other}
            return (values | {None: None}).__getitem__
        inner = _field_writer(other)
        return None if inner is None else (lambda value: None if value is None else inner(value))
    if origin in (tuple, list):
        return _list_writer(_field_writer(args[0]))
    if origin in (set, frozenset):
        return _set_writer(_field_writer(args[0]))
    if origin is dict:
        return _dict_writer(_field_writer(args[1]))
    raise TypeError(f"no record codec for {tp!r}")


def _list_writer(item: Writer | None) -> Writer:
    if item is None:
        return list
    return lambda value: list(map(item, value))


def _set_writer(item: Writer | None) -> Writer:
    if item is None:
        return sorted
    return lambda value: sorted(map(item, value))


def _dict_writer(item: Writer | None) -> Writer | None:
    if item is None:
        return None
    return lambda value: {key: item(element) for key, element in value.items()}


def _writer_of(cls: type[Any]) -> Writer:
    """Build (once) the writing hook of record class `cls`."""
    spec = _SPECS[cls]
    if spec.write is not None:
        _WRITERS[cls] = spec.write
        return spec.write
    attrs.resolve_types(cls)
    hooks: dict[str, Any] = {}
    for field in attrs.fields(cls):
        writer = _field_writer(field.type)
        hooks[field.name] = override(
            omit_if_default=field.name in spec.omit,
            rename=spec.rename.get(field.name),
            unstruct_hook=identity if writer is None else writer,
        )
    write: Writer = make_dict_unstructure_fn(cls, converter, _cattrs_omit_if_default=False, **hooks)
    if spec.order is not None:
        plain, order = write, spec.order

        def write(value: Any) -> Any:
            fields = plain(value)
            return {key: fields[key] for key in order if key in fields} | fields

    if spec.tag is not None:
        untagged, (key, tag) = write, spec.tag

        def write(value: Any) -> Any:
            return {key: tag, **untagged(value)}

    _WRITERS[cls] = write
    converter.register_unstructure_hook(cls, write)
    return write
