"""The type-to-schema table, type by type: each fragment is compared as JSON text, so keyword order counts."""

import collections.abc
import dataclasses
import enum
import json
import typing
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, TypedDict
from uuid import UUID

import annotated_types
import msgspec
import pydantic
import pytest
from annotated_doc import Doc

from onellm.schema import KEYWORD_ORDER, iter_keywords
from onellm.tools import json_schema_for


def same(actual: Any, expected: Any) -> None:
    """Equal values and equal key order at every level."""
    assert json.dumps(actual) == json.dumps(expected)


class Color(enum.Enum):
    RED = "r"
    GREEN = "g"
    BLUE = "b"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Item:
    """A line of an order.

    Attributes:
        sku: Stock keeping unit.
        qty: How many.
    """

    sku: str
    qty: Annotated[int, msgspec.Meta(ge=1)]
    note: str | None = None
    gift: bool = False
    tags: list[str] = dataclasses.field(default_factory=list)


class Address(TypedDict):
    street: str
    city: NotRequired[str]


class Point(msgspec.Struct, rename="camel"):
    x_pos: float
    y_pos: float = 0.0


class Person(pydantic.BaseModel):
    name: str = pydantic.Field(description="Full name")
    age: int = pydantic.Field(default=0, ge=0)


@dataclasses.dataclass
class Node:
    value: int
    children: list["Node"]


@dataclasses.dataclass
class A:
    b: "B | None"


@dataclasses.dataclass
class B:
    a: list[A]


class Plain:
    pass


class ArrayLike(msgspec.Struct, array_like=True):
    x: int


class Tagged(msgspec.Struct, tag=True):
    x: int


TABLE: list[tuple[str, Any, dict[str, Any]]] = [
    ("bool", bool, {"type": "boolean"}),
    ("int", int, {"type": "integer"}),
    ("float", float, {"type": "number"}),
    ("Decimal", Decimal, {"type": "number"}),
    ("str", str, {"type": "string"}),
    ("Path", Path, {"type": "string"}),
    ("bytes", bytes, {"type": "string", "contentEncoding": "base64"}),
    ("bytearray", bytearray, {"type": "string", "contentEncoding": "base64"}),
    ("datetime", datetime, {"type": "string", "format": "date-time"}),
    ("date", date, {"type": "string", "format": "date"}),
    ("time", time, {"type": "string", "format": "time"}),
    ("timedelta", timedelta, {"type": "string", "format": "duration"}),
    ("UUID", UUID, {"type": "string", "format": "uuid"}),
    ("Enum", Color, {"type": "string", "enum": ["RED", "GREEN", "BLUE"]}),
    ("IntEnum", Level, {"type": "string", "enum": ["LOW", "HIGH"]}),
    ("Literal str", Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
    ("Literal int", Literal[1, 2, 3], {"type": "integer", "enum": [1, 2, 3]}),
    ("Literal bool", Literal[True], {"type": "boolean", "enum": [True]}),
    ("Literal with None", Literal["a", None], {"type": ["string", "null"], "enum": ["a", None]}),
    ("int | None", int | None, {"type": ["integer", "null"]}),
    ("Optional[str]", typing.Optional[str], {"type": ["string", "null"]}),  # noqa: UP045
    ("Enum | None", Color | None, {"type": ["string", "null"], "enum": ["RED", "GREEN", "BLUE", None]}),
    ("Any", Any, {}),
    ("Any | None", Any | None, {}),
    ("list[int]", list[int], {"type": "array", "items": {"type": "integer"}}),
    ("bare list", list, {"type": "array", "items": {}}),
    ("Sequence[str]", Sequence[str], {"type": "array", "items": {"type": "string"}}),
    ("tuple[int, ...]", tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
    (
        "tuple[int, int]",
        tuple[int, int],
        {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
    ),
    ("set[str]", set[str], {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
    ("frozenset[int]", frozenset[int], {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}),
    (
        "AbstractSet[UUID]",
        collections.abc.Set[UUID],
        {"type": "array", "items": {"type": "string", "format": "uuid"}, "uniqueItems": True},
    ),
    ("dict[str, int]", dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
    ("bare dict", dict, {"type": "object", "additionalProperties": {}}),
    (
        "Mapping[str, list[str]]",
        Mapping[str, list[str]],
        {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    ),
    ("list[int | None]", list[int | None], {"type": "array", "items": {"type": ["integer", "null"]}}),
    (
        "list[str] | None",
        list[str] | None,
        {"type": ["array", "null"], "items": {"type": "string"}},
    ),
    (
        "dataclass",
        Item,
        {
            "type": "object",
            "properties": {
                "sku": {"type": "string", "description": "Stock keeping unit."},
                "qty": {"type": "integer", "description": "How many.", "minimum": 1},
                "note": {"type": ["string", "null"]},
                "gift": {"type": "boolean", "default": False},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["sku", "qty"],
            "additionalProperties": False,
        },
    ),
    (
        "TypedDict",
        Address,
        {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            "required": ["street"],
            "additionalProperties": False,
        },
    ),
    (
        "msgspec.Struct with rename",
        Point,
        {
            "type": "object",
            "properties": {"xPos": {"type": "number"}, "yPos": {"type": "number", "default": 0.0}},
            "required": ["xPos"],
            "additionalProperties": False,
        },
    ),
    (
        "pydantic model",
        Person,
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Full name"},
                "age": {"type": "integer", "minimum": 0, "default": 0},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
    ),
    (
        "dataclass | None",
        Address | None,
        {
            "type": ["object", "null"],
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            "required": ["street"],
            "additionalProperties": False,
        },
    ),
    # Annotated constraints
    ("int ge le", Annotated[int, msgspec.Meta(ge=1, le=10)], {"type": "integer", "minimum": 1, "maximum": 10}),
    ("int gt lt", Annotated[int, msgspec.Meta(gt=0, lt=100)], {"type": "integer", "minimum": 1, "maximum": 99}),
    ("float ge", Annotated[float, msgspec.Meta(ge=0.5)], {"type": "number", "minimum": 0.5}),
    ("Decimal le", Annotated[Decimal, msgspec.Meta(le=2.5)], {"type": "number", "maximum": 2.5}),
    (
        "str lengths and pattern",
        Annotated[str, msgspec.Meta(pattern="^[a-z]+$", max_length=8, min_length=2, description="A slug")],
        {"type": "string", "description": "A slug", "minLength": 2, "maxLength": 8, "pattern": "^[a-z]+$"},
    ),
    (
        "list lengths",
        Annotated[list[int], msgspec.Meta(min_length=1, max_length=3)],
        {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
    ),
    (
        "set lengths",
        Annotated[set[str], msgspec.Meta(max_length=3)],
        {"type": "array", "items": {"type": "string"}, "maxItems": 3, "uniqueItems": True},
    ),
    ("Doc description", Annotated[str, Doc("The case number")], {"type": "string", "description": "The case number"}),
    (
        "pydantic Field description",
        Annotated[int, pydantic.Field(description="Count", ge=0)],
        {"type": "integer", "description": "Count", "minimum": 0},
    ),
    (
        "annotated_types",
        Annotated[str, annotated_types.Len(1, 5)],
        {"type": "string", "minLength": 1, "maxLength": 5},
    ),
    ("annotated_types Gt", Annotated[int, annotated_types.Gt(0)], {"type": "integer", "minimum": 1}),
    (
        "pydantic Field pattern",
        Annotated[str, pydantic.Field(pattern="^a", min_length=1)],
        {"type": "string", "minLength": 1, "pattern": "^a"},
    ),
    (
        "nullable constrained",
        Annotated[int, msgspec.Meta(ge=0)] | None,
        {"type": ["integer", "null"], "minimum": 0},
    ),
    (
        "constrained nullable",
        Annotated[int | None, msgspec.Meta(ge=0, description="n")],
        {"type": ["integer", "null"], "description": "n", "minimum": 0},
    ),
    (
        "described enum",
        Annotated[Color, msgspec.Meta(description="Paint")],
        {"type": "string", "description": "Paint", "enum": ["RED", "GREEN", "BLUE"]},
    ),
    ("unknown metadata ignored", Annotated[int, "just a note"], {"type": "integer"}),
    (
        "nested nullable annotations keep every constraint",
        Annotated[Annotated[int, msgspec.Meta(ge=1)] | None, msgspec.Meta(le=9, description="d")] | None,
        {"type": ["integer", "null"], "description": "d", "minimum": 1, "maximum": 9},
    ),
]


@pytest.mark.parametrize(("label", "tp", "expected"), TABLE, ids=[row[0] for row in TABLE])
def test_type_to_schema_table(label: str, tp: Any, expected: dict[str, Any]) -> None:
    same(json_schema_for(tp), expected)


def test_keyword_order_holds_in_every_fragment_of_a_large_schema() -> None:
    @dataclasses.dataclass
    class Everything:
        a: Annotated[str, msgspec.Meta(description="d", min_length=1, max_length=2, pattern="x")] = "x"
        b: Annotated[list[Item], msgspec.Meta(min_length=1)] = dataclasses.field(default_factory=list)
        c: dict[str, set[Color]] = dataclasses.field(default_factory=dict)
        d: bytes | None = None

    schema = json_schema_for(Everything)

    def walk(fragment: dict[str, Any]) -> None:
        keys = list(fragment)
        assert keys == sorted(keys, key=KEYWORD_ORDER.index)
        for key in ("items", "additionalProperties"):
            if isinstance(fragment.get(key), dict):
                walk(fragment[key])
        for sub in fragment.get("properties", {}).values():
            walk(sub)

    walk(schema)
    assert set(iter_keywords(schema)) <= set(KEYWORD_ORDER)
    same(
        schema["properties"]["a"],
        {"type": "string", "description": "d", "minLength": 1, "maxLength": 2, "pattern": "x", "default": "x"},
    )


UNSUPPORTED: list[tuple[str, Any, str]] = [
    ("object", object, "object has no schema"),
    ("union", int | str, "only `T | None` is supported"),
    ("complex", complex, "complex has no schema"),
    ("plain class", Plain, "Plain has no schema"),
    ("Callable", Callable[[int], int], "has no schema"),
    ("dict with int keys", dict[int, str], "a dict key must be str"),
    ("mixed tuple", tuple[int, str], "mixes item types"),
    ("set of lists", set[list[int]], "must be hashable"),
    ("recursive", Node, "Node refers to itself"),
    ("mutually recursive", A, "A refers to itself (A -> B -> A)"),
    ("multiple_of", Annotated[int, msgspec.Meta(multiple_of=2)], "Meta(multiple_of=...)"),
    ("title", Annotated[int, msgspec.Meta(title="T")], "Meta(title=...)"),
    ("gt on float", Annotated[float, msgspec.Meta(gt=0.0)], "use ge or le"),
    ("length on int", Annotated[int, msgspec.Meta(min_length=1)], "int takes no min_length/max_length"),
    ("range on str", Annotated[str, msgspec.Meta(ge=1)], "str takes no ge/le/gt/lt"),
    ("pattern on list", Annotated[list[str], msgspec.Meta(pattern="x")], "takes no pattern"),
    ("length on dict", Annotated[dict[str, int], msgspec.Meta(min_length=1)], "takes no range, length or pattern"),
    ("bad pattern", Annotated[str, pydantic.Field(pattern="(")], "is not a valid regular expression"),
    ("pydantic multiple_of", Annotated[int, pydantic.Field(multiple_of=3)], "MultipleOf has no keyword"),
    ("array_like Struct", ArrayLike, "array_like"),
    ("tagged Struct", Tagged, "tagged Struct"),
    ("None", type(None), "None alone has no schema"),
    ("mixed Literal", Literal["a", 1], "values of one kind"),
    ("TypeVar", typing.TypeVar("T"), "type variable"),
]


@pytest.mark.parametrize(("label", "tp", "message"), UNSUPPORTED, ids=[row[0] for row in UNSUPPORTED])
def test_unsupported_types_are_refused_with_a_clear_message(label: str, tp: Any, message: str) -> None:
    with pytest.raises(TypeError) as info:
        json_schema_for(tp)
    assert message in str(info.value)


def test_a_type_used_twice_without_recursion_is_fine() -> None:
    @dataclasses.dataclass
    class Pair:
        left: Address
        right: Address

    schema = json_schema_for(Pair)
    assert schema["properties"]["left"] == schema["properties"]["right"]


class Invoice(msgspec.Struct):
    """An invoice.

    Attributes:
        number: From the class docstring.
        total: Overridden by the attribute docstring.
    """

    number: str
    total: Decimal
    """Amount due, exact."""
    currency: Annotated[str, msgspec.Meta(description="From the annotation")] = "USD"
    """Loses to the annotation."""


@dataclasses.dataclass
class BaseRow:
    id: int
    """Row id."""


@dataclasses.dataclass
class ChildRow(BaseRow):
    name: str = ""
    """Display name."""


def test_field_descriptions_from_attribute_docstrings() -> None:
    same(
        json_schema_for(Invoice)["properties"],
        {
            "number": {"type": "string", "description": "From the class docstring."},
            "total": {"type": "number", "description": "Amount due, exact."},
            "currency": {"type": "string", "description": "From the annotation", "default": "USD"},
        },
    )
    same(
        json_schema_for(ChildRow)["properties"],
        {
            "id": {"type": "integer", "description": "Row id."},
            "name": {"type": "string", "description": "Display name.", "default": ""},
        },
    )


def test_json_schema_for_returns_a_copy_of_the_cached_schema() -> None:
    first = json_schema_for(Item)
    first["properties"]["sku"]["description"] = "changed"
    assert json_schema_for(Item)["properties"]["sku"]["description"] == "Stock keeping unit."
