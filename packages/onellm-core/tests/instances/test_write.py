"""Message blocks written straight from the objects for the common shapes are byte for byte what the general path
(the message's plain data through the YAML writer) writes: on every message of the instance corpus, and on random
usages and messages."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onellm import yamlio
from onellm.instances import Instance
from onellm.instances._write import message_lines, usage_lines
from onellm.messages import CostLine, Message, MessageSource, Part, TextPart, Timestamp, ToolCall, Usage

CORPUS = Path(__file__).resolve().parents[4] / "testdata" / "formats" / "instances"
VALID = sorted((CORPUS / "valid").glob("*.yaml"))


def _forget_layouts(value: Any) -> None:
    """Drop the remembered key layout of every model object in `value`, as if it were built in code."""
    if isinstance(value, msgspec.Struct):
        if hasattr(value, "__dict__"):
            value.__dict__.pop("_keys", None)
        for name in value.__struct_fields__:
            _forget_layouts(getattr(value, name))
    elif isinstance(value, list | tuple):
        for item in value:
            _forget_layouts(item)
    elif isinstance(value, dict):
        for item in value.values():
            _forget_layouts(item)


def _general(inst: Instance) -> str:
    return yamlio.emit_mapping(inst.to_data())


def _check_usage(usage: Usage) -> str | None:
    for indent in (0, 2):
        text = usage_lines(usage, indent)
        if text is not None:
            assert text == yamlio.emit_mapping({"usage": usage.to_data()}, indent + 2)
    return usage_lines(usage, 0)


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_corpus_messages_built_in_code_are_written_as_the_general_path_writes_them(path: Path) -> None:
    inst = Instance.load(path)
    _forget_layouts(inst.messages)
    inst.forget_written_text()
    assert inst.dumps() == _general(inst)
    for msg in inst.messages:
        if msg.usage is not None:
            _check_usage(msg.usage)


def test_the_corpus_has_usages_the_direct_writer_takes() -> None:
    taken = 0
    for path in VALID:
        inst = Instance.load(path)
        _forget_layouts(inst.messages)
        taken += sum(msg.usage is not None and usage_lines(msg.usage, 0) is not None for msg in inst.messages)
    assert taken >= 3


def test_the_usage_of_a_priced_turn_is_written_directly() -> None:
    line = CostLine.compute(
        "inputTokens",
        300,
        1_000_000,
        Decimal(2),
        label="input tokens",
        source="https://x.test/p",
        as_of=date(2026, 1, 2),
    )
    usage = Usage(model="m-1", input_tokens=300, output_tokens=20, cost=line.amount, cost_lines=[line])
    text = _check_usage(usage)
    assert text is not None
    assert 'asOf: "2026-01-02"' in text
    assert "amount: 0.000600" in text


@pytest.mark.parametrize(
    "usage",
    [
        Usage(counters={"images": 2}),
        Usage(extra={"x": 1}),
        Usage(model="two\nlines"),
        Usage(input_tokens=True),
        Usage(cost=1.5),  # type: ignore[arg-type]
        Usage(cost_lines=[CostLine.compute("c", 1, 1, Decimal(1), label="a\nb")]),
        Usage(cost_lines=[CostLine.compute("c", 1, 1, Decimal(1), extra={"k": "v"})]),
        Usage(cost_lines=[CostLine(counter="c", quantity=1.5, unit_price=Decimal(1), amount=Decimal(1))]),  # type: ignore[arg-type]
    ],
)
def test_a_usage_outside_the_common_shape_is_left_to_the_general_path(usage: Usage) -> None:
    assert usage_lines(usage, 0) is None
    inst = Instance(messages=[Message(id="m", assistant=[TextPart(text="x")], usage=usage)])
    assert inst.dumps() == _general(inst)


def test_a_usage_read_with_its_key_layout_is_left_to_the_general_path() -> None:
    usage = Usage.from_data({"outputTokens": 1, "inputTokens": 2})
    assert usage_lines(usage, 0) is None
    inst = Instance(messages=[Message(id="m", usage=usage)])
    assert inst.dumps() == _general(inst)


_texts = st.one_of(
    st.sampled_from(["m", "yes", "null", "1.5", "2026-01-02", "a: b", "a #b", " lead", "x\ny", "", "é", "\u2028"]),
    st.text(max_size=12),
)
_decimals = st.decimals(allow_nan=True, allow_infinity=True, places=None) | st.sampled_from(
    [Decimal("1E+3"), Decimal("1E-9"), Decimal("-0"), Decimal("0.000800"), Decimal("1" + "0" * 120)]
)
_numbers = st.integers(-(10**20), 10**20) | _decimals


@st.composite
def _cost_lines(draw: st.DrawFn) -> CostLine:
    return CostLine(
        counter=draw(_texts),
        quantity=draw(_numbers),
        per=draw(_numbers),
        unit_price=draw(_decimals),
        multiplier=draw(_decimals),
        amount=draw(_decimals),
        label=draw(st.none() | _texts),
        source=draw(st.none() | _texts),
        as_of=draw(st.none() | st.dates()),
    )


@st.composite
def _usages(draw: st.DrawFn) -> Usage:
    ints = st.integers(-5, 10**12)
    return Usage(
        model=draw(st.none() | _texts),
        service_tier=draw(st.none() | _texts),
        input_tokens=draw(ints),
        output_tokens=draw(ints),
        cache_creation_input_tokens=draw(ints),
        cache_read_input_tokens=draw(ints),
        cost=draw(st.none() | _decimals),
        cost_lines=draw(st.lists(_cost_lines(), max_size=3)),
    )


@settings(max_examples=300, deadline=None)
@given(_usages(), st.booleans(), st.none() | _texts)
def test_random_usages_are_written_as_the_general_path_writes_them(usage: Usage, calls: bool, when: str | None) -> None:
    _check_usage(usage)
    tool_calls = [ToolCall(id="c1", tool="t", inputs={"n": 1}, result=[TextPart(text="ok")])] if calls else []
    msg = Message(id="m", assistant=[TextPart(text="x")], tool_calls=tool_calls, usage=usage, when=when)
    inst = Instance(messages=[msg, Message(usage=usage)])
    assert inst.dumps() == _general(inst)


@pytest.mark.parametrize(
    "msg",
    [
        # an order index follows the usage
        Message(
            id="m",
            assistant=[TextPart(text="x")],
            tool_calls=[ToolCall(id="c", tool="t", after=0)],
            usage=Usage(input_tokens=1),
        ),
        Message(id="m", assistant=[TextPart(text="x")], usage=Usage(input_tokens=1), extra={"later": [1]}),
        Message(usage=Usage(input_tokens=1)),
    ],
)
def test_a_message_whose_usage_is_not_its_last_key_is_written_as_the_general_path_writes_it(msg: Message) -> None:
    inst = Instance(messages=[msg])
    text = inst.dumps()
    assert text == _general(inst)
    assert Instance.loads(text).messages[0] == msg


def test_the_corpus_has_messages_the_direct_writer_takes() -> None:
    taken = 0
    for path in VALID:
        inst = Instance.load(path)
        _forget_layouts(inst.messages)
        taken += sum(message_lines(msg, 0) is not None for msg in inst.messages)
    assert taken >= 10


def test_a_priced_tool_turn_is_written_directly() -> None:
    msg = Message(
        id="b",
        tool_calls=[ToolCall(id="c0", tool="lookup", inputs={"n": 0}, result=[TextPart(text="entry 0: ok")])],
        date_time=Timestamp("2026-12-06T05:12:35.9737260Z"),
        source=MessageSource(kind="api"),
        usage=Usage(model="m", input_tokens=1),
    )
    head = message_lines(msg, 2)
    assert head is not None
    assert head.startswith(
        '  - id: b\n    toolCalls:\n    - id: c0\n      tool: lookup\n      inputs:\n        "n": 0\n'
    )
    inst = Instance(messages=[msg])
    assert inst.dumps() == _general(inst)


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | _decimals | _texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_texts, inner, max_size=3),
    max_leaves=6,
)
_text_parts: st.SearchStrategy[list[Part]] = st.lists(st.builds(TextPart, text=_texts), max_size=2)


@st.composite
def _tool_calls(draw: st.DrawFn) -> ToolCall:
    return ToolCall(
        id=draw(st.none() | _texts),
        tool=draw(_texts),
        inputs=draw(st.dictionaries(_texts, _values, max_size=3)),
        result=draw(st.none() | _text_parts),
        is_error=draw(st.booleans()),
        after=draw(st.none() | st.integers(0, 3)),
    )


@st.composite
def _messages(draw: st.DrawFn) -> Message:
    return Message(
        id=draw(st.none() | _texts),
        user=draw(_text_parts),
        assistant=draw(_text_parts),
        tool_calls=draw(st.lists(_tool_calls(), max_size=2)),
        date_time=draw(st.none() | st.just(Timestamp("2026-12-06T05:12:35.9737260Z"))),
        source=draw(
            st.none()
            | st.builds(MessageSource, kind=st.none() | _texts, name=st.none() | _texts)
            | st.just(MessageSource(kind="api", extra={"runId": "r"}))
        ),
        cache=draw(st.booleans()),
        usage=draw(st.none() | _usages()),
    )


@settings(max_examples=400, deadline=None)
@given(st.lists(_messages(), min_size=1, max_size=3), st.sampled_from([0, 2]))
def test_random_messages_are_written_as_the_general_path_writes_them(messages: list[Message], indent: int) -> None:
    inst = Instance(messages=messages)
    assert inst.dumps() == _general(inst)
    for msg in messages:
        head = message_lines(msg, indent)
        if head is not None:
            data = msg.to_data()
            data.pop("usage", None)
            assert head == yamlio.emit_block(data, indent)


@settings(max_examples=300, deadline=None)
@given(st.datetimes(timezones=st.just(UTC)) | st.datetimes(timezones=st.timezones()), st.integers(0, 9))
def test_a_timestamp_is_written_double_quoted_as_the_general_path_writes_it(when: datetime, digit: int) -> None:
    stamps = [Timestamp.from_datetime(when)]
    text = stamps[0].text
    if "." in text and text.endswith("Z"):
        stamps.append(Timestamp(text[:-2] + str(digit) + "Z"))  # the seventh fractional digit
    for stamp in stamps:
        assert yamlio.one_line(stamp.text) == f'"{stamp.text}"'
        msg = Message(id="m", date_time=stamp)
        head = message_lines(msg, 0)
        assert head == yamlio.emit_block(msg.to_data(), 0)


class _Tagged(Message):
    def to_data(self) -> dict[str, Any]:
        return {**super().to_data(), "tag": 1}


class _TaggedUsage(Usage):
    def to_data(self) -> dict[str, Any]:
        return {**super().to_data(), "tag": 1}


def test_a_subclass_that_writes_itself_otherwise_is_left_to_the_general_path() -> None:
    for msg in (
        _Tagged(id="m", assistant=[TextPart(text="x")]),
        _Tagged(id="m", assistant=[TextPart(text="x")], usage=Usage(input_tokens=1)),
        Message(id="m", assistant=[TextPart(text="x")], usage=_TaggedUsage(input_tokens=1)),
    ):
        inst = Instance(messages=[msg])
        text = inst.dumps()
        assert text == _general(inst)
        assert "tag: 1" in text
