"""Stream events and the accumulator: the spec's rules, and streaming and whole messages building equal messages."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onellm.errors import MalformedResponseError
from onellm.messages import (
    Annotation,
    AnnotationEvent,
    AssetPart,
    CostLine,
    Done,
    FileRefPart,
    HostedToolCallArgumentsDelta,
    HostedToolCallEnd,
    HostedToolCallPart,
    HostedToolCallStart,
    JsonPart,
    Message,
    MessageAccumulator,
    MessageStart,
    Part,
    PartAdded,
    ProviderPart,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningPart,
    RefusalDelta,
    RefusalPart,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    UsageEvent,
)


def build(events: list[StreamEvent]) -> MessageAccumulator:
    acc = MessageAccumulator()
    for event in events:
        acc.add(event)
    return acc


def test_deltas_append_in_arrival_order_and_blocks_keep_first_arrival_order() -> None:
    acc = build(
        [
            MessageStart(model="m", response_id="resp_1"),
            TextDelta(5, "Hel"),
            ReasoningDelta(1, "think"),
            TextDelta(5, "lo"),
            ReasoningEnd(index=1, provider="anthropic", data={"signature": "s"}),
            TextDelta(0, "later block"),
            Done("stop"),
        ]
    )
    msg = acc.message()
    assert msg.assistant == [
        TextPart("Hello"),
        ReasoningPart("think", "anthropic", None, {"signature": "s"}),
        TextPart("later block"),
    ]
    assert acc.finish_reason == "stop"
    assert acc.model == "m"
    assert acc.response_id == "resp_1"
    assert acc.done
    assert msg.id is None
    assert msg.date_time is None


def test_tool_call_arguments_are_concatenated_and_parsed_at_the_end() -> None:
    msg = build(
        [
            TextDelta(0, "Looking it up."),
            ToolCallStart(1, "call_1", "get_weather"),
            ToolCallArgumentsDelta(1, '{"city": "Os'),
            ToolCallArgumentsDelta(1, 'lo", "days": 3, "z": 1, "a": 2}'),
            ToolCallEnd(1),
            Done("tool_calls"),
        ]
    ).message()
    assert msg.tool_calls == [
        ToolCall(id="call_1", tool="get_weather", inputs={"city": "Oslo", "days": 3, "z": 1, "a": 2})
    ]
    assert list(msg.tool_calls[0].inputs) == ["city", "days", "z", "a"]
    assert msg.tool_calls[0].after is None  # after the only text part: the end


@pytest.mark.parametrize("text", ['{"city": "Os', "[1, 2]", '"just a string"', "42", "not json at all"])
def test_arguments_that_are_not_a_json_object_are_kept_as_invalid_inputs(text: str) -> None:
    msg = build([ToolCallStart(0, "c", "t"), ToolCallArgumentsDelta(0, text), ToolCallEnd(0)]).message()
    assert msg.tool_calls[0].inputs == {}
    assert msg.tool_calls[0].invalid_inputs == text


def test_empty_arguments_mean_no_inputs() -> None:
    msg = build([ToolCallStart(0, "c", "t"), ToolCallEnd(0)]).message()
    assert msg.tool_calls[0] == ToolCall(id="c", tool="t")


def test_tool_call_between_parts_is_placed_by_arrival() -> None:
    msg = build(
        [
            TextDelta(0, "a"),
            ToolCallStart(1, "c", "t"),
            ToolCallArgumentsDelta(1, "{}"),
            TextDelta(2, "b"),
            ToolCallEnd(1),
        ]
    ).message()
    assert msg.tool_calls[0].after == 1
    assert msg.to_data()["partOrder"] == ["a0", "t0", "a1"]


def test_bytes_deltas_decode_a_character_split_across_events() -> None:
    raw = "naïve ☃".encode()
    cut = raw.index("☃".encode()) + 1
    msg = build([TextDelta(0, raw[:cut]), TextDelta(0, raw[cut:])]).message()
    assert msg.assistant == [TextPart("naïve ☃")]
    args = b'{"q": "\xc3\xa9t\xc3\xa9"}'
    msg = build(
        [ToolCallStart(0, "c", "t"), ToolCallArgumentsDelta(0, args[:8]), ToolCallArgumentsDelta(0, args[8:])]
    ).message()
    assert msg.tool_calls[0].inputs == {"q": "été"}


def test_usage_events_merge_later_non_zero_counter_wins() -> None:
    acc = build(
        [
            UsageEvent(Usage(model="m", input_tokens=100, cache_read_input_tokens=20, output_tokens=1)),
            TextDelta(0, "x"),
            UsageEvent(Usage(output_tokens=42, counters={"reasoningTokens": 7})),
            UsageEvent(Usage(output_tokens=0, counters={"reasoningTokens": 0})),
        ]
    )
    assert acc.message().usage == Usage(
        model="m", input_tokens=100, cache_read_input_tokens=20, output_tokens=42, counters={"reasoningTokens": 7}
    )


def test_annotations_attach_to_their_text_block() -> None:
    ann = Annotation(type="url_citation", url="https://example.com", start_index=0, end_index=4)
    msg = build([TextDelta(0, "Oslo is cold"), AnnotationEvent(0, ann)]).message()
    assert msg.assistant == [TextPart("Oslo is cold", [ann])]


def test_hosted_tool_call_and_whole_parts() -> None:
    msg = build(
        [
            HostedToolCallStart(index=0, tool="web_search", id="ws_1", provider="openai"),
            HostedToolCallArgumentsDelta(0, '{"query": '),
            HostedToolCallArgumentsDelta(0, '"weather"}'),
            HostedToolCallEnd(index=0, status="completed", result=[{"url": "u"}], cost=Decimal("0.01")),
            PartAdded(1, AssetPart(storage="file", key="k", content_type="image/png")),
            RefusalDelta(2, "I can't "),
            RefusalDelta(2, "do that."),
        ]
    ).message()
    assert msg.assistant == [
        HostedToolCallPart(
            "web_search", "openai", "ws_1", "completed", {"query": "weather"}, [{"url": "u"}], Decimal("0.01")
        ),
        AssetPart(storage="file", key="k", content_type="image/png"),
        RefusalPart("I can't do that."),
    ]


def test_an_index_cannot_change_kind() -> None:
    acc = build([TextDelta(0, "a")])
    with pytest.raises(MalformedResponseError, match="text block"):
        acc.add(ToolCallArgumentsDelta(0, "{}"))


def test_events_after_done_are_refused() -> None:
    acc = build([Done("stop")])
    with pytest.raises(MalformedResponseError, match="after Done"):
        acc.add(TextDelta(0, "late"))


def test_arguments_without_a_start_are_malformed() -> None:
    acc = build([ToolCallArgumentsDelta(0, "{}")])
    with pytest.raises(MalformedResponseError, match="ToolCallStart"):
        acc.message()


def test_not_an_event_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        MessageAccumulator().add("text")  # type: ignore[arg-type]


# -- the property: any event sequence and its whole-message counterpart build equal messages ------------------------

_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
_plain = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_inputs = st.dictionaries(_text, _plain, max_size=4)
_annotation = st.builds(
    Annotation,
    type=st.sampled_from(["url_citation", "file_citation"]),
    url=st.none() | _text,
    start_index=st.none() | st.integers(0, 100),
)
_whole_part = st.one_of(
    st.builds(JsonPart, _plain),
    st.builds(AssetPart, storage=st.just("file"), key=_text, content_type=st.sampled_from(["image/png", "audio/wav"])),
    st.builds(FileRefPart, _text, provider=st.sampled_from(["openai", "gemini"])),
    st.builds(ProviderPart, _text, _plain),
)
_invalid = st.sampled_from(['{"a":', "[1, 2]", "not json", '"text"', "42", "{'single': 1}"])

# A block is ("text", TextPart) | ("reasoning", ...) | ("refusal", ...) | ("hosted", ...) | ("part", Part) | ("call", ToolCall)
_block = st.one_of(
    st.tuples(st.just("text"), st.builds(TextPart, _text, st.lists(_annotation, max_size=2))),
    st.tuples(
        st.just("reasoning"),
        st.builds(
            ReasoningPart,
            _text,
            st.none() | st.just("anthropic"),
            st.none() | _text,
            st.none() | st.dictionaries(st.just("signature"), _text, min_size=1),
        ),
    ),
    st.tuples(st.just("refusal"), st.builds(RefusalPart, _text)),
    st.tuples(
        st.just("hosted"),
        st.builds(
            HostedToolCallPart,
            st.sampled_from(["web_search", "code_interpreter"]),
            st.none() | st.just("openai"),
            st.none() | _text,
            st.none() | st.just("completed"),
            st.none() | _inputs,
            st.none() | _plain.filter(lambda v: v is not None),
        ),
    ),
    st.tuples(st.just("part"), _whole_part),
    st.tuples(
        st.just("call"),
        st.one_of(
            st.builds(lambda i, t, x: ToolCall(id=i, tool=t, inputs=x), _text, _text, _inputs),
            st.builds(lambda i, t, bad: ToolCall(id=i, tool=t, invalid_inputs=bad), _text, _text, _invalid),
        ),
    ),
)
_usage = st.none() | st.builds(
    Usage,
    model=st.none() | st.just("m"),
    input_tokens=st.integers(0, 10**6),
    output_tokens=st.integers(0, 10**6),
    cache_read_input_tokens=st.integers(0, 1000),
    cost=st.none() | st.decimals(min_value=0, max_value=10, places=6),
    counters=st.dictionaries(st.sampled_from(["reasoningTokens", "images"]), st.integers(1, 100), max_size=2),
    cost_lines=st.lists(
        st.builds(
            lambda q, p: CostLine.compute("inputTokens", q, 1_000_000, p),
            st.integers(0, 10**6),
            st.decimals(min_value=0, max_value=100, places=3),
        ),
        max_size=2,
    ),
)


def _chunks(draw: st.DrawFn, text: str) -> list[str | bytes]:
    """The text cut at arbitrary points, as str pieces or as UTF-8 byte slices (characters split across pieces)."""
    as_bytes = draw(st.booleans())
    whole: str | bytes = text.encode() if as_bytes else text
    cuts = sorted(set(draw(st.lists(st.integers(0, len(whole)), max_size=4))))
    pieces: list[str | bytes] = []
    start = 0
    for cut in [*cuts, len(whole)]:
        pieces.append(whole[start:cut])
        start = cut
    return pieces


def _block_events(draw: st.DrawFn, kind: str, item: Any, index: int) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    if kind == "text":
        deltas = [TextDelta(index, piece) for piece in _chunks(draw, item.text)]
        # Annotations arrive in their order, anywhere after the block's first delta.
        after = sorted(
            draw(st.lists(st.integers(1, len(deltas)), min_size=len(item.annotations), max_size=len(item.annotations)))
        )
        events = []
        for i, delta in enumerate(deltas):
            events.append(delta)
            events += [
                AnnotationEvent(index, ann) for ann, pos in zip(item.annotations, after, strict=True) if pos == i + 1
            ]
    elif kind == "reasoning":
        events = [ReasoningDelta(index, piece) for piece in _chunks(draw, item.text)]
        events.append(ReasoningEnd(index=index, provider=item.provider, data=item.data, display=item.display))
    elif kind == "refusal":
        events = [RefusalDelta(index, piece) for piece in _chunks(draw, item.refusal)]
    elif kind == "hosted":
        events = [HostedToolCallStart(index=index, tool=item.tool, id=item.id, provider=item.provider)]
        if item.inputs is not None:
            events += [
                HostedToolCallArgumentsDelta(index, p) for p in _chunks(draw, msgspec.json.encode(item.inputs).decode())
            ]
        events.append(HostedToolCallEnd(index=index, status=item.status, result=item.result))
    elif kind == "part":
        events = [PartAdded(index, item)]
    else:
        args = item.invalid_inputs if item.invalid_inputs is not None else msgspec.json.encode(item.inputs).decode()
        events = [ToolCallStart(index, item.id, item.tool)]
        events += [ToolCallArgumentsDelta(index, p) for p in _chunks(draw, args)]
        events.append(ToolCallEnd(index))
    return events


@st.composite
def message_and_events(draw: st.DrawFn) -> tuple[Message, list[StreamEvent], str]:
    blocks = draw(st.lists(_block, max_size=6))
    usage = draw(_usage)
    finish = draw(st.sampled_from(["stop", "length", "tool_calls"]))
    # The whole message, as a non-streaming call builds it.
    assistant: list[Part] = []
    calls: list[ToolCall] = []
    for kind, item in blocks:
        if kind == "call":
            calls.append(msgspec.structs.replace(item, after=len(assistant)))
        else:
            assistant.append(item)
    whole = Message(assistant=assistant, tool_calls=calls, usage=usage)
    # Its stream: distinct indices in any order, each block's events in order, blocks first arriving in turn order.
    indices = draw(st.permutations(range(len(blocks))))
    per_block = [_block_events(draw, kind, item, indices[i]) for i, (kind, item) in enumerate(blocks)]
    events: list[StreamEvent] = [MessageStart(model="m")]
    started = 0
    cursors = [0] * len(blocks)
    while True:
        open_blocks = [i for i in range(started) if cursors[i] < len(per_block[i])]
        choices = open_blocks + ([started] if started < len(blocks) else [])
        if not choices:
            break
        pick = draw(st.sampled_from(choices))
        if pick == started:
            started += 1
        events.append(per_block[pick][cursors[pick]])
        cursors[pick] += 1
    if usage is not None:
        first = Usage(
            model=usage.model, input_tokens=usage.input_tokens, cache_read_input_tokens=usage.cache_read_input_tokens
        )
        later = Usage(
            output_tokens=usage.output_tokens, cost=usage.cost, counters=usage.counters, cost_lines=usage.cost_lines
        )
        events.insert(draw(st.integers(0, len(events))), UsageEvent(first))
        events.append(UsageEvent(later))
    events.append(Done(finish))
    return whole, events, finish


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message_and_events())
def test_stream_and_whole_message_build_equal_messages(case: tuple[Message, list[StreamEvent], str]) -> None:
    whole, events, finish = case
    acc = build(events)
    streamed = acc.message()
    assert streamed == whole
    assert acc.finish_reason == finish
    # And the built message survives its plain-data form.
    assert Message.from_data(streamed.to_data()) == streamed
    assert Message.from_data(streamed.to_data()).to_data() == streamed.to_data()


def test_subclasses_of_the_common_events_are_taken_as_their_bases() -> None:
    class Text(TextDelta):
        pass

    class Start(ToolCallStart):
        pass

    class Finished(Done):
        pass

    acc = MessageAccumulator()
    for event in (Text(0, "Hel"), TextDelta(0, "lo"), Start(1, "c1", "lookup"), ToolCallEnd(1), Finished("stop")):
        acc.add(event)
    message = acc.message()
    assert message.text == "Hello"
    assert [(c.id, c.tool) for c in message.tool_calls] == [("c1", "lookup")]
    assert acc.finish_reason == "stop"
    with pytest.raises(MalformedResponseError, match="after Done"):
        acc.add(Text(0, "more"))
