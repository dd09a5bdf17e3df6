"""Writing records: each record class's hook to JSON values, built once from its options.

Fields are written in class order, enums by value, tuples and sets as lists (sets sorted);
`omit`, `rename`, `order` and `tag` shape the object. Hooks are built by cattrs'
`make_dict_unstructure_fn`.
"""

from __future__ import annotations

import enum
import types
from typing import Any, Literal, Union, get_args, get_origin

import attrs
from cattrs.fns import identity
from cattrs.gen import make_dict_unstructure_fn, override

from overbrainer.model.codec_spec import SPECS, Writer, converter, is_record

__all__ = ["WRITERS", "writer_of"]

WRITERS: dict[type[Any], Writer] = {}
"""Each record class's writing hook, once built."""


def _field_writer(tp: Any) -> Writer | None:
    """How a field of type `tp` is written; None when its value is already JSON."""
    if tp in (Any, str, bool, int, float):
        return None
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {member: member.value for member in tp}.__getitem__
    if is_record(tp):
        return WRITERS.get(tp) or writer_of(tp)
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


def writer_of(cls: type[Any]) -> Writer:
    """Build (once) the writing hook of record class `cls`."""
    spec = SPECS[cls]
    if spec.write is not None:
        WRITERS[cls] = spec.write
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

    WRITERS[cls] = write
    converter.register_unstructure_hook(cls, write)
    return write
