"""Property: a value written as a tool result (JSON) and read back as an argument of the same type is the same value.

This ties the result encoder and the argument converter together, through real JSON text.
"""

import dataclasses
import enum
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Literal
from uuid import UUID

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from onellm.tools import compile_type, json_schema_for, to_json_value


class Mood(enum.Enum):
    HAPPY = "h"
    SAD = "s"


@dataclasses.dataclass(frozen=True)
class Line:
    sku: str
    qty: int
    price: float
    mood: Mood | None = None


class Order(msgspec.Struct, rename="camel"):
    order_id: UUID
    lines: list[Line]
    placed: datetime
    due: date | None
    window: tuple[time, time]
    grace: timedelta
    labels: frozenset[str]
    meta: dict[str, int]
    level: Literal["low", "high"]
    blob: bytes
    total: Decimal


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
lines = st.builds(Line, st.text(), st.integers(-(2**70), 2**70), finite, st.none() | st.sampled_from(Mood))
orders = st.builds(
    Order,
    st.uuids(),
    st.lists(lines, max_size=4),
    st.datetimes(timezones=st.just(UTC)),
    st.none() | st.dates(),
    st.tuples(st.times(), st.times()),
    st.timedeltas(min_value=timedelta(days=-999), max_value=timedelta(days=999)),
    st.frozensets(st.text(max_size=5), max_size=4),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=4),
    st.sampled_from(["low", "high"]),
    st.binary(max_size=20),
    st.decimals(places=2, min_value=-(10**6), max_value=10**6, allow_nan=False, allow_infinity=False),
)

encoder = msgspec.json.Encoder(decimal_format="number")


def through_json(value: Any) -> Any:
    return msgspec.json.decode(encoder.encode(to_json_value(value)))


@settings(max_examples=150, deadline=None)
@given(orders)
def test_result_json_reads_back_as_the_same_argument(order: Order) -> None:
    converted = compile_type(Order).convert(through_json(order))
    assert converted.total == order.total
    converted.total = order.total
    assert converted == order


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers() | st.none(), max_size=10))
def test_nullable_integer_lists(values: list[int | None]) -> None:
    assert compile_type(list[int | None]).convert(through_json(values)) == values


def test_schema_for_the_property_type_is_closed_everywhere() -> None:
    schema = json_schema_for(Order)
    assert schema["additionalProperties"] is False
    assert schema["properties"]["lines"]["items"]["additionalProperties"] is False
    assert schema["required"] == [
        "orderId",
        "lines",
        "placed",
        "due",
        "window",
        "grace",
        "labels",
        "meta",
        "level",
        "blob",
        "total",
    ]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["h", "s", "HAPPY", "low", "P1D", "2026-01-02", "aGk=", "12345678-1234-5678-1234-567812345678"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["orderId", "lines", "sku", "qty", "price", "mood", "x", "labels", "meta"])
            | st.text(max_size=4),
            children,
            max_size=5,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_any_json_value_converts_or_is_refused_with_an_argument_error(value: Any) -> None:
    from onellm.tools import ArgumentError

    for tp in (Order, list[Line], dict[str, set[int]]):
        messages: list[str] = []
        try:
            compile_type(tp).convert(value)
        except ArgumentError as exc:
            messages.append(exc.message())
        assert all(m.startswith("Argument") and m.endswith(".") for m in messages)
