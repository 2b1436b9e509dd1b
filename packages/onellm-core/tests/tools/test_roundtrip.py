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
