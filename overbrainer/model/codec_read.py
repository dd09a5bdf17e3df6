"""Reading records: each record class's checking hook, built once from its `@record` options.

Every value is checked against its field's annotation and a wrong one is a `ValueError`
naming the field (`` `id` is not a string ``, `` missing field `topic` in example ``,
`unknown field …`). Integers are unsigned 64-bit, floats are finite (a JSON integer is one), a
field with a default may be missing. Hooks are built by cattrs' `make_dict_structure_fn` with
one checking hook per field (two threads building them at once is harmless: the same hooks).
"""

from __future__ import annotations

import enum
import itertools
import math
import types
from typing import Any, Literal, Union, get_args, get_origin

import attrs
from cattrs.gen import make_dict_structure_fn, override

from overbrainer.model.codec_spec import SPECS, Reader, converter, is_record

__all__ = ["READERS", "reader_of"]

U64_MAX = 2**64 - 1
READERS: dict[type[Any], Reader] = {}
"""Each record class's reading hook, once built."""


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
    if is_record(tp):
        return READERS.get(tp) or reader_of(tp)
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


def reader_of(cls: type[Any]) -> Reader:
    """Build (once) the reading hook of record class `cls`."""
    spec = SPECS.get(cls)
    if spec is None:
        raise TypeError(f"{cls.__name__} is not a record (mark it with `@record`)")
    if spec.read is not None:
        READERS[cls] = spec.read
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

    READERS[cls] = read
    converter.register_structure_hook(cls, read)
    return read


def _fields_error(
    present: Any, required: frozenset[str], allowed: frozenset[str], strict: bool, name: str
) -> None:
    if strict and present - allowed:
        raise ValueError(f"unknown field `{sorted(present - allowed)[0]}` in {name}")
    raise ValueError(f"missing field `{sorted(required - present)[0]}` in {name}")
