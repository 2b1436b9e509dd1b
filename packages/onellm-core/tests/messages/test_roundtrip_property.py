"""Property tests of the plain-data codec: any message survives to_data/from_data, and any valid data survives
from_data/to_data with its key order, whatever order its keys come in and wherever unknown keys sit."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onellm.messages import (
    Annotation,
    AssetPart,
    FileRefPart,
    HostedToolCallPart,
    JsonPart,
    Message,
    MessageSource,
    Part,
    ProviderPart,
    ReasoningPart,
    RefusalPart,
    TextPart,
    Timestamp,
    ToolCall,
    Usage,
)

_text = st.text(max_size=12)
_plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-1000, 1000)
    | _text
    | st.decimals(places=3, allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=5,
)
_unknown_key = st.text(alphabet="xyz-_", min_size=1, max_size=6).map(lambda k: "x-" + k)
_extra = st.dictionaries(_unknown_key, _plain, max_size=2)

_part: st.SearchStrategy[Part] = st.one_of(
    st.builds(
        TextPart, _text, st.lists(st.builds(Annotation, url=st.none() | _text, extra=_extra), max_size=2), _extra
    ),
    st.builds(AssetPart, storage=st.just("file"), key=_text, size=st.none() | st.integers(0, 10**9), extra=_extra),
    st.builds(ReasoningPart, _text, st.none() | _text, st.none() | _text, _plain, _extra),
    st.builds(HostedToolCallPart, _text, st.none() | _text, st.none() | _text, st.none() | _text, _plain, _plain),
    st.builds(RefusalPart, _text, _extra),
    st.builds(JsonPart, _plain, _extra),
    st.builds(FileRefPart, _text, st.none() | _text, extra=_extra),
    st.builds(ProviderPart, _text, _plain, _extra),
)
_call = st.builds(
    ToolCall,
    id=st.none() | _text,
    tool=_text,
    inputs=st.dictionaries(_text, _plain, max_size=3),
    invalid_inputs=st.none() | _text,
    result=st.none() | st.lists(_part, max_size=2),
    is_error=st.booleans(),
    cost=st.none() | st.decimals(min_value=0, max_value=5, places=6),
    injected=st.booleans(),
    injected_by=st.none() | _text,
    after=st.none() | st.integers(0, 6),
    extra=_extra,
)
_stamp = st.sampled_from(
    ["2026-01-02T03:04:05Z", "2026-01-02T03:04:05.1234567Z", "2026-01-02T03:04:05.5+01:00", "1999-12-31T23:59:59.999Z"]
).map(Timestamp)
_message = st.builds(
    Message,
    id=st.none() | _text,
    user=st.lists(_part, max_size=2),
    assistant=st.lists(_part, max_size=5),
    tool_calls=st.lists(_call, max_size=3),
    date_time=st.none() | _stamp,
    source=st.none() | st.builds(MessageSource, kind=st.none() | _text, name=st.none() | _text, extra=_extra),
    cache=st.booleans(),
    usage=st.none()
    | st.builds(Usage, input_tokens=st.integers(0, 10**6), cost=st.none() | st.decimals(0, 9, places=4), extra=_extra),
    when=st.none() | _text,
    extra=_extra,
)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(_message)
def test_any_message_survives_its_plain_data(msg: Message) -> None:
    data = msg.to_data()
    again = Message.from_data(data)
    assert again == msg
    assert again.to_data() == data
    assert list(again.to_data()) == list(data)


def _shuffle(draw: st.DrawFn, value: Any) -> Any:
    """The same data with every mapping's keys in a drawn order (the values of opaque keys left alone)."""
    if type(value) is list:
        return [_shuffle(draw, v) for v in value]
    if type(value) is dict:
        keys = draw(st.permutations(list(value)))
        return {
            k: (value[k] if k in ("inputs", "json", "data", "raw", "result") else _shuffle(draw, value[k]))
            for k in keys
        }
    return value


@st.composite
def _shuffled_data(draw: st.DrawFn) -> dict[str, Any]:
    return _shuffle(draw, draw(_message).to_data())  # type: ignore[no-any-return]


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(_shuffled_data())
def test_any_valid_data_survives_with_its_key_order(data: dict[str, Any]) -> None:
    out = Message.from_data(data).to_data()
    assert out == data
    assert repr(out) == repr(data)  # same key order at every level


def test_decimal_money_stays_decimal() -> None:
    msg = Message.from_data({"usage": {"inputTokens": 1, "outputTokens": 1, "cost": Decimal("0.000001")}})
    assert msg.usage is not None
    assert msg.usage.cost == Decimal("0.000001")
    assert type(msg.to_data()["usage"]["cost"]) is Decimal
