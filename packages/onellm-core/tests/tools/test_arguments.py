"""Converting the model's JSON arguments: every refusal names the path of the value and says what was expected."""

import dataclasses
import enum
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, TypedDict
from uuid import UUID

import msgspec
import pydantic
import pytest

from onellm.tools import ArgumentError, compile_type, tool


class Color(enum.Enum):
    RED = 1
    GREEN = 2


@dataclasses.dataclass
class Line:
    qty: int
    sku: str = "?"


class Order(msgspec.Struct, rename="camel"):
    order_id: str
    items: list[Line]
    notes: dict[str, str] = {}


class Where(TypedDict):
    city: str
    zip: NotRequired[str]


class Person(pydantic.BaseModel):
    name: str
    age: int = 0


def convert(tp: Any, value: Any) -> Any:
    return compile_type(tp).convert(value)


def refusal(tp: Any, value: Any) -> str:
    with pytest.raises(ArgumentError) as info:
        convert(tp, value)
    return info.value.message()


GOOD: list[tuple[Any, Any, Any]] = [
    (bool, True, True),
    (int, 3, 3),
    (int, 3.0, 3),
    (int, Decimal("4"), 4),
    (int, 10**30, 10**30),
    (float, 1, 1.0),
    (float, 2.5, 2.5),
    (Decimal, 0.1, Decimal("0.1")),
    (Decimal, 7, Decimal(7)),
    (Decimal, Decimal("1.10"), Decimal("1.10")),
    (str, "x", "x"),
    (Path, "work/a.txt", Path("work/a.txt")),
    (bytes, "aGk=", b"hi"),
    (bytearray, "aGk=", bytearray(b"hi")),
    (datetime, "2026-01-02T03:04:05Z", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
    (date, "2026-01-02", date(2026, 1, 2)),
    (time, "03:04:05", time(3, 4, 5)),
    (timedelta, "P1DT2H", timedelta(days=1, hours=2)),
    (UUID, "12345678-1234-5678-1234-567812345678", UUID("12345678-1234-5678-1234-567812345678")),
    (Color, "GREEN", Color.GREEN),
    (Literal["a", "b"], "b", "b"),
    (Literal[1, 2], 2, 2),
    (int | None, None, None),
    (Color | None, None, None),
    (Any, {"a": [1]}, {"a": [1]}),
    (list[int], [1, 2], [1, 2]),
    (tuple[int, ...], [1, 2], (1, 2)),
    (tuple[str, str], ["a", "b"], ("a", "b")),
    (set[str], ["a", "b"], {"a", "b"}),
    (frozenset[int], [1], frozenset({1})),
    (dict[str, int], {"a": 1}, {"a": 1}),
    (Mapping[str, Color], {"a": "RED"}, {"a": Color.RED}),
    (Line, {"qty": 2}, Line(qty=2)),
    (Where, {"city": "Oslo"}, {"city": "Oslo"}),
    (Order, {"orderId": "o1", "items": [{"qty": 1, "sku": "s"}]}, Order("o1", [Line(1, "s")])),
    (Person, {"name": "Ann"}, Person(name="Ann")),
    (Annotated[int, msgspec.Meta(ge=1, le=3)], 3, 3),
    (Annotated[str, msgspec.Meta(pattern="^[a-z]+$")], "abc", "abc"),
]


@pytest.mark.parametrize(("tp", "value", "expected"), GOOD)
def test_good_values_convert(tp: Any, value: Any, expected: Any) -> None:
    out = convert(tp, value)
    assert out == expected
    assert type(out) is type(expected)


BAD: list[tuple[Any, Any, str]] = [
    (bool, 1, "Argument must be a boolean, not 1."),
    (bool, "true", "Argument must be a boolean, not a string."),
    (int, 2.5, "Argument must be an integer, not 2.5."),
    (int, True, "Argument must be an integer, not a boolean."),
    (int, "3", "Argument must be an integer, not a string."),
    (int, None, "Argument must be an integer, not null."),
    (int, float("nan"), "Argument must be an integer, not nan."),
    (float, float("inf"), "Argument must be a number, not inf."),
    (Decimal, "1.5", "Argument must be a number, not a string."),
    (str, 5, "Argument must be a string, not 5."),
    (Path, "", "Argument must be a non-empty path without NUL characters."),
    (Path, 3, "Argument must be a path string, not 3."),
    (bytes, "not base64!", "Argument must be a base64 string, not 'not base64!'."),
    (datetime, "yesterday", "Argument must be an RFC 3339 date-time string, not 'yesterday'."),
    (date, "2026-13-01", "Argument must be a date string (YYYY-MM-DD), not '2026-13-01'."),
    (UUID, "nope", "Argument must be a UUID string, not 'nope'."),
    (timedelta, "1 day", "Argument must be an ISO 8601 duration string (like P1DT2H30M), not '1 day'."),
    (Color, "red", "Argument must be one of 'RED', 'GREEN', not 'red'."),
    (Color, 1, "Argument must be one of 'RED', 'GREEN', not 1."),
    (Literal["a", "b"], "c", "Argument must be one of 'a', 'b', not 'c'."),
    (Literal[1, 2], True, "Argument must be one of 1, 2, not a boolean."),
    (list[int], {"a": 1}, "Argument must be an array, not an object."),
    (list[int], [1, "2"], "Argument '[1]' must be an integer, not a string."),
    (set[int], [1, 2, 1.0], "Argument must hold unique items; item 2 repeats item 0."),
    (tuple[int, int], [1], "Argument must have at least 2 items, not 1."),
    (dict[str, int], {"a b": "x"}, "Argument '[\"a b\"]' must be an integer, not a string."),
    (dict[str, int], [], "Argument must be an object, not an array."),
    (Line, {"sku": "s"}, "Argument 'qty' is required."),
    (Line, {"qty": 1, "colour": "red"}, "Argument 'colour' is not accepted (accepted: qty, sku)."),
    (Line, {"qty": None}, "Argument 'qty' must be an integer, not null."),
    (Where, {"city": "Oslo", "zip": 123}, "Argument 'zip' must be a string, not 123."),
    (
        Order,
        {"orderId": "o", "items": [{"qty": 1}, {"qty": 1}, {"qty": "two"}]},
        "Argument 'items[2].qty' must be an integer, not a string.",
    ),
    (Order, {"order_id": "o", "items": []}, "Argument 'order_id' is not accepted (accepted: orderId, items, notes)."),
    (Order, {"orderId": "o", "items": [], "notes": {"k": 1}}, "Argument 'notes.k' must be a string, not 1."),
    (Annotated[int, msgspec.Meta(ge=1, le=3)], 0, "Argument must be at least 1, not 0."),
    (Annotated[int, msgspec.Meta(ge=1, le=3)], 4, "Argument must be at most 3, not 4."),
    (Annotated[str, msgspec.Meta(min_length=2)], "a", "Argument must have at least 2 characters, not 1."),
    (Annotated[str, msgspec.Meta(max_length=2)], "abc", "Argument must have at most 2 characters, not 3."),
    (Annotated[str, msgspec.Meta(pattern="^[a-z]+$")], "A1", "Argument must match the pattern ^[a-z]+$."),
    (Annotated[list[int], msgspec.Meta(max_length=1)], [1, 2], "Argument must have at most 1 items, not 2."),
    (Annotated[datetime, msgspec.Meta(tz=True)], "2026-01-02T03:04:05", "Argument must include a time zone offset."),
]


@pytest.mark.parametrize(("tp", "value", "message"), BAD)
def test_bad_values_are_refused_naming_the_path(tp: Any, value: Any, message: str) -> None:
    assert refusal(tp, value) == message


@tool
def place_order(order: Order, priority: Literal["low", "high"] = "low", note: str | None = None) -> str:
    """Place an order."""
    return order.order_id


def test_tool_arguments_name_the_parameter_then_the_path() -> None:
    with pytest.raises(ArgumentError) as info:
        place_order.convert_arguments({"order": {"orderId": "o", "items": [{"qty": 1}, {"qty": 1}, {"qty": 2.5}]}})
    assert info.value.message() == "Argument 'order.items[2].qty' must be an integer, not 2.5."


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "Argument 'order' is required."),
        ({"order": {"orderId": "o", "items": []}, "urgent": True}, "Argument 'urgent' is not accepted"),
        ({"order": None}, "Argument 'order' must be an object, not null."),
        ({"order": {"orderId": "o", "items": []}, "priority": None}, "Argument 'priority' must be one of"),
        ("[1, 2]", "Argument must be a JSON object, not list."),
        ("{not json", "Argument text is not valid JSON"),
    ],
)
def test_missing_unknown_null_and_malformed_arguments(arguments: Any, message: str) -> None:
    with pytest.raises(ArgumentError) as info:
        place_order.convert_arguments(arguments)
    assert info.value.message().startswith(message)


def test_nullable_parameter_without_default_is_required_and_takes_null() -> None:
    @tool
    def f(x: int | None) -> None:
        """F."""

    assert f.input_schema["required"] == ["x"]
    assert f.convert_arguments({"x": None}) == {"x": None}
    with pytest.raises(ArgumentError, match="'x' is required"):
        f.convert_arguments({})


def test_arguments_as_json_text_convert() -> None:
    out = place_order.convert_arguments('{"order": {"orderId": "o", "items": [{"qty": 2}]}, "priority": "high"}')
    assert out == {"order": Order("o", [Line(2)]), "priority": "high"}


def test_dataclass_post_init_failure_is_an_argument_error() -> None:
    @dataclasses.dataclass
    class Span:
        start: int
        end: int

        def __post_init__(self) -> None:
            if self.end < self.start:
                raise ValueError("end before start")

    with pytest.raises(ArgumentError) as info:
        compile_type(list[Span]).convert([{"start": 1, "end": 2}, {"start": 3, "end": 1}])
    assert info.value.message() == "Argument '[1]' is not a valid Span: ValueError: end before start."


@pytest.mark.parametrize(
    ("tp", "value", "message"),
    [
        (int, Decimal("1e5000"), "Argument must be an integer of at most 1000 digits."),
        (float, 10**5000, "Argument must be a number of at most 1000 digits."),
        (float, Decimal("1e400"), "Argument must be a number within the range of a float."),
        (Annotated[int, msgspec.Meta(le=5)], 10**5000, "Argument must be at most 5, not a larger number."),
        (str, 10**5000, "Argument must be a string, not a number."),
    ],
    ids=["decimal-int", "int-float", "decimal-float", "int-range", "int-str"],
)
def test_huge_numbers_are_refused_cheaply(tp: Any, value: Any, message: str) -> None:
    assert refusal(tp, value) == message


def test_paths_quote_keys_that_are_not_names() -> None:
    with pytest.raises(ArgumentError) as info:
        compile_type(dict[str, list[dict[str, int]]]).convert({"a b": [{"ok": 1}, {'q"x': "no"}]})
    assert info.value.path == '["a b"][1]["q\\"x"]'
    assert info.value.segments == ["a b", 1, 'q"x']
