"""Messages and tool calls: lossless plain data, the order index, timestamps kept to 100 ns, extension data."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from onellm import BadDefinitionError
from onellm.messages import (
    AssetPart,
    CostLine,
    HostedToolCallPart,
    JsonPart,
    Message,
    MessageSource,
    ReasoningPart,
    RefusalPart,
    TextPart,
    Timestamp,
    ToolCall,
    Usage,
)


def full_message() -> dict[str, Any]:
    """A message using every key, with unknown keys at every level."""
    return {
        "id": "msg_01",
        "user": [{"text": "What is the weather?", "x-user": 1}, {"asset": {"storage": "file", "key": "k"}}],
        "assistant": [{"text": "Let me look.", "annotations": [{"type": "url_citation", "url": "u", "x-ann": True}]}],
        "toolCalls": [
            {
                "id": "call_1",
                "tool": "get_weather",
                "routine": "tools/weather.yaml",
                "inputs": {"city": "Oslo", "units": "metric"},
                "result": [{"text": "4 °C"}],
                "isError": False,
                "cost": Decimal("0.001"),
                "costLines": [
                    {
                        "counter": "calls",
                        "quantity": 1,
                        "per": 1,
                        "unitPrice": Decimal("0.001"),
                        "multiplier": Decimal("1"),
                        "amount": Decimal("0.001"),
                        "x-line": "kept",
                    }
                ],
                "when": "{{ .inputs.weather }}",
                "injected": True,
                "injectedBy": "hook:prefetch",
                "x-call": {"a": [1, 2]},
            }
        ],
        "reasoning": [
            {"reasoning": "User wants weather.", "provider": "anthropic", "data": {"signature": "s"}, "x-r": 0}
        ],
        "dateTime": "2026-03-04T05:06:07.1234567+02:00",
        "source": {"kind": "agent", "name": "clerk", "runId": "r1"},
        "cache": True,
        "usage": {"model": "m", "inputTokens": 10, "outputTokens": 5, "x-usage": "u"},
        "when": "{{ not .inputs.quiet }}",
        "partOrder": ["r0", "a0", "t0", "x0"],
        "extraParts": [{"refusal": "partly", "x-x": 1}],
        "x-message": {"nested": {"deep": [None, 1.5]}},
    }


def test_every_key_round_trips_with_key_order() -> None:
    data = full_message()
    msg = Message.from_data(data)
    out = msg.to_data()
    assert out == data
    assert list(out) == list(data)
    assert Message.from_data(out) == msg


def test_full_message_in_memory_shape() -> None:
    msg = Message.from_data(full_message())
    assert [type(p) for p in msg.assistant] == [ReasoningPart, TextPart, RefusalPart]
    call = msg.tool_calls[0]
    assert call.after == 2
    assert call.injected
    assert call.injected_by == "hook:prefetch"
    assert call.cost_lines[0].extra == {"x-line": "kept"}
    assert msg.source == MessageSource(kind="agent", name="clerk", extra={"runId": "r1"})
    assert msg.date_time is not None
    assert msg.date_time.hundred_ns == 7
    assert msg.extra == {"x-message": {"nested": {"deep": [None, 1.5]}}}
    assert msg.reasoning == [msg.assistant[0]]
    assert msg.text == "Let me look."
    assert msg.user_text == "What is the weather?"


def test_message_built_in_code_round_trips() -> None:
    msg = Message(
        id="m",
        user=[TextPart("hi")],
        assistant=[TextPart("a"), ReasoningPart("r"), HostedToolCallPart("web_search"), TextPart("b")],
        tool_calls=[ToolCall(id="c0", tool="t", after=1), ToolCall(id="c1", tool="t")],
        date_time=Timestamp("2026-01-01T00:00:00Z"),
        usage=Usage(input_tokens=1, output_tokens=2),
    )
    data = msg.to_data()
    assert data["partOrder"] == ["a0", "t0", "r0", "x0", "a1", "t1"]
    assert data["assistant"] == [{"text": "a"}, {"text": "b"}]
    assert data["reasoning"] == [{"reasoning": "r"}]
    assert data["extraParts"] == [{"hostedToolCall": "web_search"}]
    again = Message.from_data(data)
    assert again == msg
    assert again.entries() == [msg.assistant[0], msg.tool_calls[0], *msg.assistant[1:], msg.tool_calls[1]]


# -- the order index -------------------------------------------------------------------------------------------------


def test_default_order_omits_the_index() -> None:
    msg = Message(
        assistant=[ReasoningPart("think"), ReasoningPart("more"), TextPart("a"), AssetPart(key="k")],
        tool_calls=[ToolCall(id="1", tool="t"), ToolCall(id="2", tool="t")],
    )
    data = msg.to_data()
    assert "partOrder" not in data
    assert "extraParts" not in data
    assert Message.from_data(data) == msg


def test_missing_index_means_default_order() -> None:
    msg = Message.from_data(
        {"assistant": [{"text": "a"}], "reasoning": [{"reasoning": "r"}], "toolCalls": [{"tool": "t", "inputs": {}}]}
    )
    assert msg.assistant == [ReasoningPart("r"), TextPart("a")]
    assert msg.tool_calls[0].after is None
    assert msg.entries() == [ReasoningPart("r"), TextPart("a"), msg.tool_calls[0]]


def test_explicit_default_index_is_kept_when_read() -> None:
    data = {"assistant": [{"text": "a"}], "reasoning": [{"reasoning": "r"}], "partOrder": ["r0", "a0"]}
    assert Message.from_data(data).to_data() == data


@pytest.mark.parametrize(
    "order",
    [
        ["a0", "r0", "a0"],  # duplicate
        ["a0", "a1"],  # out of range, and r0 missing
        ["a0"],  # too short
        ["a0", "r0", "t0"],  # no tool call 0
        ["a0", "q0"],  # unknown letter
        ["a0", "r00"],  # not a canonical number
        ["a0", "r-1"],
        ["a0", 3],
        "a0 r0",  # not a list
    ],
)
def test_stale_index_means_default_order_and_lists_are_untouched(order: Any) -> None:
    data = {"assistant": [{"text": "a"}], "reasoning": [{"reasoning": "r"}], "partOrder": order}
    msg = Message.from_data(data)
    assert msg.assistant == [ReasoningPart("r"), TextPart("a")]
    out = msg.to_data()
    assert out["assistant"] == [{"text": "a"}]
    assert out["reasoning"] == [{"reasoning": "r"}]


def test_stale_index_keeps_extra_parts_after_the_assistant_parts() -> None:
    data = {"assistant": [{"text": "a"}], "extraParts": [{"refusal": "no"}], "partOrder": ["x0"]}
    msg = Message.from_data(data)
    assert msg.assistant == [TextPart("a"), RefusalPart("no")]
    assert msg.to_data() == {"assistant": [{"text": "a"}], "partOrder": ["a0", "x0"], "extraParts": [{"refusal": "no"}]}


def test_lists_are_never_reordered_or_padded() -> None:
    data = {
        "assistant": [{"text": "first"}, {"text": "second"}],
        "toolCalls": [{"id": "b", "tool": "t", "inputs": {}}, {"id": "a", "tool": "t", "inputs": {}}],
        "partOrder": ["t1", "a1", "t0", "a0"],
    }
    msg = Message.from_data(data)
    assert msg.assistant == [TextPart("second"), TextPart("first")]
    assert [c.id for c in msg.tool_calls] == ["b", "a"]
    assert msg.tool_calls[0].after == 1
    assert msg.tool_calls[1].after == 0
    out = msg.to_data()
    assert out == data
    assert Message.from_data(out) == msg
    # Built in code, the same sequence is written with each list in sequence order.
    fresh = Message(
        assistant=list(msg.assistant),
        tool_calls=[ToolCall(id="b", tool="t", after=1), ToolCall(id="a", tool="t", after=0)],
    )
    assert fresh == msg
    assert fresh.to_data() == {
        "assistant": [{"text": "second"}, {"text": "first"}],
        "toolCalls": data["toolCalls"],
        "partOrder": ["t1", "a0", "t0", "a1"],
    }


def test_tool_call_between_text_parts() -> None:
    data = {
        "assistant": [{"text": "before"}, {"text": "after"}],
        "toolCalls": [{"id": "c", "tool": "t", "inputs": {"q": 1}}],
        "partOrder": ["a0", "t0", "a1"],
    }
    msg = Message.from_data(data)
    assert msg.tool_calls[0].after == 1
    assert msg.to_data() == data


def test_part_of_a_kind_in_an_unusual_list_stays_in_that_list() -> None:
    # A refusal inside `assistant` and text inside `extraParts`: both are read in order and written back where they were.
    data = {
        "assistant": [{"text": "a"}, {"refusal": "r"}],
        "partOrder": ["a0", "x0", "a1"],
        "extraParts": [{"text": "extra text"}],
    }
    msg = Message.from_data(data)
    assert msg.assistant == [TextPart("a"), TextPart("extra text"), RefusalPart("r")]
    assert msg.to_data() == data
    no_index = {"assistant": [{"json": 1}], "reasoning": [{"text": "not reasoning"}]}
    assert Message.from_data(no_index).to_data() == no_index


def test_reasoning_entry_without_the_reasoning_key() -> None:
    data = {"reasoning": [{"provider": "openai", "data": {"encrypted_content": "e"}}], "assistant": [{"text": "t"}]}
    msg = Message.from_data(data)
    assert msg.assistant[0] == ReasoningPart(provider="openai", data={"encrypted_content": "e"})
    assert msg.to_data() == data


def test_call_after_beyond_the_parts_means_at_the_end() -> None:
    msg = Message(assistant=[TextPart("x")], tool_calls=[ToolCall(tool="t", after=5)])
    assert msg.tool_calls[0].after is None
    with pytest.raises(ValueError, match="zero or more"):
        Message(tool_calls=[ToolCall(tool="t", after=-1)])


def test_reasoning_after_text_needs_an_index() -> None:
    msg = Message(assistant=[TextPart("a"), ReasoningPart("r")])
    assert msg.to_data() == {"assistant": [{"text": "a"}], "reasoning": [{"reasoning": "r"}], "partOrder": ["a0", "r0"]}


# -- tool calls --------------------------------------------------------------------------------------------------------


def test_tool_call_inputs_keep_key_order_and_invalid_inputs_are_kept() -> None:
    call = ToolCall.from_data({"id": "c", "tool": "t", "inputs": {"z": 1, "a": 2}})
    assert list(call.inputs) == ["z", "a"]
    bad = ToolCall(id="c", tool="t", invalid_inputs='{"z": 1,', is_error=True, result=[TextPart("bad JSON")])
    data = bad.to_data()
    assert data == {
        "id": "c",
        "tool": "t",
        "inputs": {},
        "invalidInputs": '{"z": 1,',
        "result": [{"text": "bad JSON"}],
        "isError": True,
    }
    assert ToolCall.from_data(data) == bad


def test_tool_call_without_result_differs_from_empty_result() -> None:
    pending = ToolCall.from_data({"tool": "t"})
    assert pending.result is None
    assert pending.to_data() == {"tool": "t"}
    ran = ToolCall.from_data({"tool": "t", "result": []})
    assert ran.result == []
    assert ran.to_data() == {"tool": "t", "result": []}


def test_tool_call_result_as_one_part_or_string_is_written_back_in_its_shape() -> None:
    one = {"tool": "t", "inputs": {}, "result": {"json": {"ok": True}}}
    assert ToolCall.from_data(one).result == [JsonPart({"ok": True})]
    assert ToolCall.from_data(one).to_data() == one
    text = {"tool": "t", "inputs": {}, "result": "done"}
    assert ToolCall.from_data(text).result == [TextPart("done")]
    assert ToolCall.from_data(text).to_data() == text


def test_tool_call_cost_lines_round_trip() -> None:
    line = CostLine.compute("searches", 2, 1000, Decimal("10"))
    call = ToolCall(id="c", tool="search", cost=line.amount, cost_lines=[line])
    assert ToolCall.from_data(call.to_data()) == call
    assert call.to_data()["cost"] == Decimal("0.02")


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"toolCalls": [{"id": "c"}]}, "message.toolCalls[0].tool"),
        ({"toolCalls": [{"tool": "t", "id": 7}]}, "message.toolCalls[0].id"),
        ({"toolCalls": [{"tool": "t", "inputs": "x"}]}, "message.toolCalls[0].inputs"),
        ({"toolCalls": [{"tool": "t", "isError": "yes"}]}, "message.toolCalls[0].isError"),
        ({"toolCalls": [{"tool": "t", "result": [{"text": 1}]}]}, "message.toolCalls[0].result[0].text"),
        ({"toolCalls": {"tool": "t"}}, "message.toolCalls"),
        ({"user": [{"text": "a"}, {"nope": 1}]}, "message.user[1]"),
        ({"assistant": [{"text": None}]}, "message.assistant[0].text"),
        ({"reasoning": [{"reasoning": 5}]}, "message.reasoning[0].reasoning"),
        ({"extraParts": [{"refusal": 5}]}, "message.extraParts[0].refusal"),
        ({"dateTime": "yesterday"}, "message.dateTime"),
        ({"dateTime": "2026-02-30T00:00:00Z"}, "message.dateTime"),
        ({"dateTime": "2026-04-31T00:00:00.5Z"}, "message.dateTime"),
        ({"dateTime": "2025-02-29T00:00:00Z"}, "message.dateTime"),
        ({"dateTime": "2026-13-01T00:00:00Z"}, "message.dateTime"),
        ({"dateTime": "2026-01-01T24:00:00Z"}, "message.dateTime"),
        ({"dateTime": "2026-01-01T00:00:00+24:00"}, "message.dateTime"),
        ({"dateTime": "2026-01-01T00:00:00.Z"}, "message.dateTime"),
        ({"dateTime": " 2026-01-01T00:00:00Z"}, "message.dateTime"),
        ({"dateTime": "2026-01-01T00:00:00"}, "message.dateTime"),
        ({"dateTime": 1700000000}, "message.dateTime"),
        ({"cache": "true"}, "message.cache"),
        ({"usage": {"outputTokens": 1.5}}, "message.usage.outputTokens"),
        ({"source": "user"}, "message.source"),
        ({"id": ["x"]}, "message.id"),
    ],
)
def test_bad_messages_name_the_path(data: dict[str, Any], path: str) -> None:
    with pytest.raises(BadDefinitionError) as info:
        Message.from_data(data)
    assert info.value.path == path


def test_path_prefix_from_caller() -> None:
    with pytest.raises(BadDefinitionError) as info:
        Message.from_data({"toolCalls": [{"tool": "t"}, {"id": "x"}]}, "messages[3]")
    assert info.value.path == "messages[3].toolCalls[1].tool"


# -- timestamps ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "2026-03-04T05:06:07.1234567Z",
        "2026-03-04T05:06:07Z",
        "2026-03-04T05:06:07.1Z",
        "2026-03-04T05:06:07.1200000+05:30",
        "2026-03-04T05:06:07.0000001-08:00",
        "2026-03-04t05:06:07z",
        "2026-03-04T05:06:07.123456789Z",
        "2016-12-31T23:59:60Z",
        "2024-02-29T12:00:00.5Z",
        "1969-07-20T20:17:40.0000001Z",
    ],
)
def test_timestamps_write_back_exactly(text: str) -> None:
    msg = Message.from_data({"dateTime": text})
    assert msg.to_data() == {"dateTime": text}


def test_timestamp_keeps_the_seventh_digit() -> None:
    ts = Timestamp("2026-03-04T05:06:07.1234567Z")
    assert ts.datetime == datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)
    assert ts.hundred_ns == 7
    assert ts.ticks % 10_000_000 == 1234567
    assert Timestamp.from_ticks(ts.ticks) == ts
    assert Timestamp.from_datetime(ts.datetime, 7) == ts
    assert ts != Timestamp("2026-03-04T05:06:07.1234568Z")
    assert ts < Timestamp("2026-03-04T05:06:07.1234568Z")


def test_timestamp_before_the_epoch() -> None:
    ts = Timestamp("1969-12-31T23:59:59.9999999Z")
    assert ts.ticks == -1
    assert ts.hundred_ns == 9
    assert Timestamp.from_ticks(-1) == ts


def test_timestamp_offsets_and_instants() -> None:
    a = Timestamp("2026-03-04T07:06:07.5+02:00")
    b = Timestamp("2026-03-04T05:06:07.5000000Z")
    assert a != b
    assert a.same_instant(b)
    assert a.datetime.utcoffset() == timedelta(hours=2)
    neg = Timestamp.from_datetime(datetime(2026, 1, 1, tzinfo=timezone(-timedelta(hours=3, minutes=30))))
    assert neg.text == "2026-01-01T00:00:00.0000000-03:30"


def test_timestamp_now_has_seven_digits_and_is_utc() -> None:
    text = Timestamp.now().text
    assert text.endswith("Z")
    assert len(text.split(".")[1]) == 8


def test_message_accepts_datetime_or_text_for_date_time() -> None:
    dt = datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    assert Message(date_time=dt).date_time == Timestamp("2026-05-06T07:08:09.1234560Z")  # type: ignore[arg-type]
    assert Message(date_time="2026-05-06T07:08:09Z").to_data() == {"dateTime": "2026-05-06T07:08:09Z"}  # type: ignore[arg-type]
    with pytest.raises(BadDefinitionError):
        Message(date_time=datetime(2026, 5, 6))  # type: ignore[arg-type]


def test_timestamp_from_a_yaml_datetime_is_accepted() -> None:
    msg = Message.from_data({"dateTime": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)})
    assert msg.date_time == Timestamp("2026-01-02T03:04:05.0000000Z")


# -- extension data ----------------------------------------------------------------------------------------------


def test_unknown_keys_at_the_message_level_keep_position() -> None:
    data = {"x-first": 1, "id": "m", "x-mid": [], "user": [{"text": "u"}], "x-null": None, "x-last": {}}
    out = Message.from_data(data).to_data()
    assert list(out.items()) == list(data.items())


def test_changing_a_value_keeps_every_unknown_key() -> None:
    data = full_message()
    msg = Message.from_data(copy.deepcopy(data))
    msg.tool_calls[0].inputs = {"city": "Bergen"}
    assert msg.usage is not None
    msg.usage.output_tokens = 99
    out = msg.to_data()
    data["toolCalls"][0]["inputs"] = {"city": "Bergen"}
    data["usage"]["outputTokens"] = 99
    assert out == data
    assert list(out) == list(data)


def test_empty_lists_written_stay_empty_lists() -> None:
    data = {"id": "m", "user": [], "assistant": [], "toolCalls": [], "reasoning": [], "extraParts": []}
    assert Message.from_data(data).to_data() == data
    assert Message(id="m").to_data() == {"id": "m"}


def test_equality_ignores_key_order_read() -> None:
    a = Message.from_data({"id": "m", "cache": True})
    b = Message.from_data({"cache": True, "id": "m"})
    assert a == b
    assert list(a.to_data()) == ["id", "cache"]
    assert list(b.to_data()) == ["cache", "id"]


def test_usage_on_message_round_trips() -> None:
    msg = Message(id="m", assistant=[TextPart("x")], usage=Usage(model="m", input_tokens=3, cost=Decimal("0.5")))
    assert Message.from_data(msg.to_data()) == msg


def test_copies_and_pickles_keep_the_layout_read() -> None:
    import pickle

    data = {
        "x-first": 1,
        "id": "m",
        "assistant": [{"refusal": "kept in assistant"}],
        "toolCalls": [{"tool": "t", "result": "plain string"}],
    }
    msg = Message.from_data(data)
    for clone in (copy.copy(msg), copy.deepcopy(msg), pickle.loads(pickle.dumps(msg))):
        assert clone == msg
        assert clone.to_data() == data
        assert list(clone.to_data()) == list(data)
    deep = copy.deepcopy(msg)
    assert deep.tool_calls[0] is not msg.tool_calls[0]


def test_reads_round_trip_yaml_values() -> None:
    """Definitions hand over ruamel's round-trip values (str and int subclasses); they read like plain ones."""
    from onellm.yamlio import load_document

    text = (
        "id: m\n"
        "user:\n"
        "  - text: |\n"
        "      block scalar\n"
        "  - text: 'quoted'\n"
        "toolCalls:\n"
        "  - tool: t\n"
        "    inputs: {n: 0x10}\n"
        "    cost: 1.25\n"
        "usage: {inputTokens: 1_000, outputTokens: 0o17}\n"
        'dateTime: "2026-01-01T00:00:00Z"\n'
    )
    msg = Message.from_data(load_document(text, file="m.yaml").data)
    assert msg.user == [TextPart("block scalar\n"), TextPart("quoted")]
    assert msg.tool_calls[0].cost == Decimal("1.25")
    assert msg.usage == Usage(input_tokens=1000, output_tokens=15)
    assert msg.date_time == Timestamp("2026-01-01T00:00:00Z")


def test_bad_item_error_has_no_chained_noise() -> None:
    with pytest.raises(BadDefinitionError) as info:
        Message.from_data({"user": [{"text": "a"}, {"text": 1}]})
    assert info.value.path == "message.user[1].text"
    assert info.value.__context__ is None


@pytest.mark.parametrize(
    "value",
    [Decimal("1E+999999999"), Decimal("NaN"), Decimal("sNaN"), float("inf"), float("nan"), Decimal("2.5"), True],
)
def test_hostile_numbers_are_typed_errors(value: Any) -> None:
    with pytest.raises(BadDefinitionError) as info:
        Message.from_data({"usage": {"inputTokens": value}})
    assert info.value.path == "message.usage.inputTokens"


@pytest.mark.parametrize("value", [Decimal("sNaN"), Decimal("Infinity"), float("nan"), "1e", True])
def test_hostile_money_is_a_typed_error(value: Any) -> None:
    with pytest.raises(BadDefinitionError):
        Message.from_data({"usage": {"cost": value}})


def test_index_token_with_thousands_of_digits_is_stale_not_a_crash() -> None:
    msg = Message.from_data({"assistant": [{"text": "a"}], "partOrder": ["a" + "1" * 5000]})
    assert msg.assistant == [TextPart("a")]


def test_whole_decimal_token_count_reads_as_int() -> None:
    usage = Message.from_data({"usage": {"inputTokens": Decimal("5.0")}}).usage
    assert usage is not None
    assert usage.input_tokens == 5
    assert type(usage.input_tokens) is int


@pytest.mark.parametrize("zone", [UTC, timezone(timedelta(hours=2))])
def test_a_timestamp_of_a_year_before_1000_has_four_year_digits(zone: timezone) -> None:
    stamp = Timestamp.from_datetime(datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=zone), 7)
    assert stamp.text.startswith("0999-01-02T03:04:05.0000067")
    assert Timestamp(stamp.text) == stamp
    assert stamp.datetime == datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=zone)


class _Later(datetime):
    """A datetime subclass: `Timestamp.from_datetime` writes it by its general path."""


def test_a_timestamp_in_another_second_is_written_anew() -> None:
    """The text up to the seconds is kept for the last second written: an instant in any other second (one before
    it, the next one, another day, the last second there is) gets its own, as the general path writes it."""
    instants = [
        datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=UTC),
        datetime(2026, 3, 4, 5, 6, 7, 999999, tzinfo=UTC),
        datetime(2026, 3, 4, 5, 6, 8, tzinfo=UTC),
        datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC),
        datetime(2026, 3, 4, 5, 6, 6, 999999, tzinfo=UTC),
        datetime(2027, 3, 4, 5, 6, 7, 123456, tzinfo=UTC),
        datetime(2026, 3, 5, 5, 6, 7, 123456, tzinfo=UTC),
        datetime(1000, 1, 1, tzinfo=UTC),
        datetime.max.replace(tzinfo=UTC),
        datetime.max.replace(microsecond=5, tzinfo=UTC),
        datetime.max.replace(microsecond=0, tzinfo=UTC),
        datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=UTC),
    ]
    for instant in instants:
        for digit in (0, 9):
            general = Timestamp.from_datetime(_Later.combine(instant.date(), instant.timetz()), digit)
            stamp = Timestamp.from_datetime(instant, digit)
            assert stamp.text == general.text
            assert stamp.datetime == instant
            assert stamp.hundred_ns == digit
