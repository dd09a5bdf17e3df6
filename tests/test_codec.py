"""The one record codec: each `@codec.record` option, on toy records, in bytes and in errors."""

from __future__ import annotations

import enum
import json
from typing import Literal

import attrs
import pytest

from overbrainer.model import codec


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@codec.record("leaf", omit=("note",))
@attrs.frozen
class Leaf:
    kind: Literal["a", "b"]
    note: str | None = None


@codec.record("tree", nan_as_null=True)
@attrs.frozen
class Tree(codec.JsonRecord):
    name: str
    leaves: tuple[Leaf, ...]
    colour: Colour | None
    count: int = 0
    weight: float | None = None


@codec.record(
    "loose",
    style=codec.Style.SPACED,
    strict=False,
    require=("count",),
    optional=("maybe",),
    order=("maybe", "tags", "count"),
)
@attrs.define
class Loose(codec.JsonRecord):
    maybe: str | None
    tags: set[str] = attrs.field(factory=set)
    count: int = 0
    table: dict[str, list[str]] = attrs.field(factory=dict)


@codec.record("tagged", style=codec.Style.PRETTY, tag=("version", 2), require="all")
@attrs.frozen
class Tagged(codec.JsonRecord):
    value: bool = False


def _check_even(record: Even) -> None:
    if record.n % 2:
        raise ValueError("`n` is odd")


@codec.record("even", check=_check_even, rename={"n": "number"})
@attrs.frozen
class Even(codec.JsonRecord):
    n: int


TREE = Tree("t", (Leaf("a"), Leaf("b", "é")), Colour.BLUE, 3, 0.5)


def test_fields_in_class_order_enums_by_value_defaults_omitted_only_where_asked() -> None:
    line = TREE.to_json()
    assert line == (
        '{"name":"t","leaves":[{"kind":"a"},{"kind":"b","note":"é"}],'
        '"colour":"blue","count":3,"weight":0.5}'
    )
    assert Tree.from_json(line) == TREE
    assert Tree.from_json(line.encode()) == TREE
    assert codec.encode(TREE) == json.loads(line)
    assert codec.decode(Tree, json.loads(line)) == TREE
    assert codec.converter.structure(json.loads(line), Tree) == TREE


def test_styles_order_sets_and_dicts() -> None:
    loose = Loose(None, {"b", "a"}, 2, {"k": ["x"]})
    assert loose.to_json() == (
        '{"maybe": null, "tags": ["a", "b"], "count": 2, "table": {"k": ["x"]}}'
    )
    assert Loose.from_json(loose.to_json()) == loose
    assert Tagged(True).to_json() == '{\n  "version": 2,\n  "value": true\n}\n'
    assert Tagged.from_json(Tagged(True).to_json()) == Tagged(True)
    assert Even(4).to_json() == '{"number":4}'


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[]", "tree is not an object"),
        ('{"name":"t","leaves":[],"colour":null,"x":1}', "unknown field `x` in tree"),
        ('{"leaves":[],"colour":null}', "missing field `name` in tree"),
        ('{"name":1,"leaves":[],"colour":null}', "`name` is not a string"),
        ('{"name":"t","leaves":{},"colour":null}', "`leaves` is not a list"),
        ('{"name":"t","leaves":[3],"colour":null}', "leaf is not an object"),
        ('{"name":"t","leaves":[{"kind":"c"}],"colour":null}', "`kind` has an unknown value"),
        ('{"name":"t","leaves":[{"kind":"a","note":2}],"colour":null}', "`note` is not a string"),
        ('{"name":"t","leaves":[],"colour":"green"}', "`colour` has an unknown value"),
        ('{"name":"t","leaves":[],"colour":null,"count":-1}', "`count` is not an unsigned 64"),
        ('{"name":"t","leaves":[],"colour":null,"count":1.0}', "`count` is not an unsigned 64"),
        ('{"name":"t","leaves":[],"colour":null,"count":true}', "`count` is not an unsigned 64"),
        ('{"name":"t","leaves":[],"colour":null,"weight":"1"}', "`weight` is not a number"),
        ('{"name":"\\ud800","leaves":[],"colour":null}', "lone surrogate"),
        ('{"name":"t"', "not JSON"),
    ],
)
def test_a_wrong_value_is_named_never_quoted(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        Tree.from_json(text)


def test_optional_required_nan_tag_and_check_options() -> None:
    # `optional`: may be missing; `require`: must be present despite its default.
    assert Loose.from_json('{"tags":[],"count":1,"table":{},"extra":0}') == Loose(None, set(), 1)
    with pytest.raises(ValueError, match="missing field `count` in loose"):
        Loose.from_json('{"maybe":"m","tags":[],"table":{}}')
    # `nan_as_null` here; elsewhere a NaN is refused.
    text = '{"name":"t","leaves":[],"colour":null,"weight":NaN}'
    assert Tree.from_json(text).weight is None
    with pytest.raises(ValueError, match="`value` is not a boolean"):
        Tagged.from_json('{"version":2,"value":1}')
    with pytest.raises(ValueError, match="not a tagged"):
        Tagged.from_json('{"version":1,"value":true}')
    with pytest.raises(ValueError, match="missing field `value` in tagged"):
        Tagged.from_json('{"version":2}')
    with pytest.raises(ValueError, match="`n` is odd"):
        Even.from_json('{"number":3}')
    assert codec.decode_tagged((Tagged,), '{"version":2,"value":true}', "thing") == Tagged(True)
    with pytest.raises(ValueError, match="`version` has an unknown value"):
        codec.decode_tagged((Tagged,), '{"version":3,"value":true}', "thing")


def test_a_class_not_marked_is_refused() -> None:
    @attrs.frozen
    class Plain:
        x: int

    with pytest.raises(TypeError, match="not a record"):
        codec.decode(Plain, {"x": 1})
