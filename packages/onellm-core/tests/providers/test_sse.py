from __future__ import annotations

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onellm.errors import MalformedResponseError
from onellm.providers._sse import SseDecoder, SseEvent, aiter_sse, iter_sse

OPENAI_STYLE = (
    b'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
    b'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"lo \xc3\xa9"}}]}\n\n'
    b"data: [DONE]\n\n"
)
ANTHROPIC_STYLE = (
    b"event: message_start\r\n"
    b'data: {"type":"message_start"}\r\n\r\n'
    b": keep-alive comment\r\n"
    b"event: ping\r\n"
    b'data: {"type": "ping"}\r\n\r\n'
    b"event: content_block_delta\r\n"
    b'data: {"type":"content_block_delta","delta":{"text":"\xe4\xb8\xad"}}\r\n\r\n'
    b"event: message_stop\r\n"
    b'data: {"type":"message_stop"}\r\n\r\n'
)
MIXED = b"id: 7\rretry: 1500\rdata: one\r\ndata: two\n\nevent: x\ndata:\n\n"
STREAMS = [OPENAI_STYLE, ANTHROPIC_STYLE, MIXED]


def whole(stream: bytes) -> list[SseEvent]:
    return list(iter_sse([stream]))


def test_openai_style_stream() -> None:
    events = whole(OPENAI_STYLE)
    assert [e.data for e in events][-1] == b"[DONE]"
    assert events[1].data.decode() == '{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"lo é"}}]}'
    assert all(e.event is None for e in events)


def test_anthropic_style_stream_with_crlf_and_comments() -> None:
    events = whole(ANTHROPIC_STYLE)
    assert [e.event for e in events] == ["message_start", "ping", "content_block_delta", "message_stop"]
    assert "中" in events[2].data.decode()


def test_fields_follow_the_event_stream_rules() -> None:
    events = whole(MIXED)
    assert events[0] == SseEvent(b"one\ntwo", None, "7", 1500)
    assert events[1] == SseEvent(b"", "x", "7", None)  # id persists, retry does not, empty data still dispatches


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        (b"data:no-space\n\n", [b"no-space"]),
        (b"data:  two spaces\n\n", [b" two spaces"]),
        (b"data\n\n", [b""]),
        (b"event: only-a-name\n\ndata: x\n\n", [b"x"]),  # an event without data is not dispatched
        (b"unknown: field\ndata: y\n\n", [b"y"]),
        (b":comment only\n\n", []),
        (b"data: a\n\n\n\ndata: b\n\n", [b"a", b"b"]),
        (b"retry: soon\ndata: z\n\n", [b"z"]),
    ],
)
def test_field_edge_cases(stream: bytes, expected: list[bytes]) -> None:
    assert [e.data for e in whole(stream)] == expected


def test_retry_takes_digits_only() -> None:
    (event,) = whole(b"retry: 12a\ndata: z\n\n")
    assert event.retry is None


def test_id_with_nul_is_ignored_and_last_id_is_kept() -> None:
    decoder = SseDecoder()
    decoder.feed(b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n")
    assert decoder.last_event_id == "1"


def test_stream_ending_inside_an_event_is_malformed() -> None:
    with pytest.raises(MalformedResponseError, match="ended inside an event"):
        whole(b'data: {"partial": tr')
    with pytest.raises(MalformedResponseError, match="ended inside an event"):
        whole(b"data: complete line but no blank line\n")


def test_stream_ending_after_a_comment_is_fine() -> None:
    assert [e.data for e in whole(b"data: a\n\n: bye")] == [b"a"]


def test_a_giant_event_is_refused_with_bounded_memory() -> None:
    decoder = SseDecoder(max_event_bytes=1024)
    decoder.feed(b"data: " + b"x" * 1000 + b"\n")
    with pytest.raises(MalformedResponseError, match="larger than 1024 bytes"):
        decoder.feed(b"data: " + b"y" * 100 + b"\n")


def test_a_giant_line_without_terminator_is_refused() -> None:
    decoder = SseDecoder(max_event_bytes=1024)
    for _ in range(10):
        decoder.feed(b"z" * 100)
    with pytest.raises(MalformedResponseError, match="larger than"):
        decoder.feed(b"z" * 100)


def test_invalid_utf8_in_event_name_is_malformed() -> None:
    with pytest.raises(MalformedResponseError, match="not valid UTF-8"):
        whole(b"event: \xff\xfe\ndata: x\n\n")


def test_invalid_utf8_in_data_is_left_for_the_json_decoder() -> None:
    (event,) = whole(b"data: \xff\n\n")
    assert event.data == b"\xff"


def test_cr_split_from_its_lf_across_chunks() -> None:
    events = list(iter_sse([b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]))
    assert [e.data for e in events] == [b"a", b"b"]


def test_async_reader() -> None:
    async def chunks() -> object:
        for byte in range(len(OPENAI_STYLE)):
            yield OPENAI_STYLE[byte : byte + 1]

    async def collect() -> list[SseEvent]:
        return [e async for e in aiter_sse(chunks())]  # type: ignore[arg-type]

    assert anyio.run(collect) == whole(OPENAI_STYLE)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(STREAMS), st.lists(st.integers(min_value=0, max_value=400), max_size=30))
def test_any_chunking_gives_the_same_events(stream: bytes, cuts: list[int]) -> None:
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    assert list(iter_sse(chunks)) == whole(stream)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.lists(st.integers(min_value=0, max_value=300), max_size=10))
def test_arbitrary_bytes_end_in_events_or_a_typed_error(stream: bytes, cuts: list[int]) -> None:
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    try:
        chunked = list(iter_sse(chunks))
    except MalformedResponseError:
        with pytest.raises(MalformedResponseError):
            whole(stream)
        return
    assert chunked == whole(stream)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(STREAMS), st.data())
def test_any_mix_of_line_ends_in_any_chunking_gives_the_same_events(stream: bytes, data: st.DataObject) -> None:
    """LF, CRLF and a lone CR each end a line: a stream written with any of them, split anywhere (a CRLF split
    between two chunks included), gives the events of the same stream written with LF."""
    lines = stream.replace(b"\r\n", b"\n").split(b"\n")
    ends = data.draw(st.lists(st.sampled_from([b"\n", b"\r\n", b"\r"]), min_size=len(lines), max_size=len(lines)))
    for i in range(len(ends) - 1):  # a CR before an empty line that ends in LF would be one CRLF, not two ends
        if ends[i] == b"\r" and not lines[i + 1] and ends[i + 1].startswith(b"\n"):
            ends[i] = b"\r\n"
    mixed = b"".join(line + end for line, end in zip(lines[:-1], ends, strict=False)) + lines[-1]
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(mixed)), max_size=20))))
    chunks = [mixed[a:b] for a, b in zip([0, *cuts], [*cuts, len(mixed)], strict=True)]
    assert list(iter_sse(chunks)) == whole(stream.replace(b"\r\n", b"\n"))


def read_all(chunks: list[bytes]) -> tuple[list[bytes], list[str | None]]:
    """Every event's data and name through `SseDecoder.read` (the closing events through `close`)."""
    decoder = SseDecoder()
    datas: list[bytes] = []
    names: list[str | None] = []
    for chunk in chunks:
        found, named = decoder.read(chunk)
        datas += found
        names += named if named is not None else [None] * len(found)
    for event in decoder.close():
        datas.append(event.data)
        names.append(event.event)
    return datas, names


# Pieces model servers send, and pieces that break the two fast shapes (a second data line, an id, a comment, a
# field without its space, an extra blank line, an event with no data, an unseen name).
PIECES = [
    b'data: {"a":1}\n\n',
    b"data: [DONE]\n\n",
    b"data: \n\n",
    b'event: delta\ndata: {"b":2}\n\n',
    b"event: ping\ndata: {}\n\n",
    b"event: other\ndata: x\n\n",
    b"data: one\ndata: two\n\n",
    b"id: 4\ndata: y\n\n",
    b": keep-alive\n\n",
    b"data:tight\n\n",
    b"event:tight\ndata: z\n\n",
    b"\n",
    b"event: lonely\n\n",
    b"event: a\ndata: p\ndata: q\n\n",
    b"event: \ndata: empty name\n\n",
    b"retry: 10\ndata: r\n\n",
    b"data: cr\r\n\r\n",
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=25),
    st.lists(st.integers(min_value=0, max_value=600), max_size=12),
    st.booleans(),
)
def test_read_gives_what_feed_gives(pieces: list[bytes], cuts: list[int], crlf: bool) -> None:
    """The fast cuts of `read` never change what a stream says: the same data and names as `feed`, in any chunking,
    with LF or CRLF line ends."""
    stream = b"".join(pieces)
    if crlf:
        stream = stream.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    try:
        expected = whole(stream)
    except MalformedResponseError:
        with pytest.raises(MalformedResponseError):
            read_all(chunks)
        return
    assert read_all(chunks) == ([e.data for e in expected], [e.event for e in expected])


def test_read_cuts_runs_of_model_events() -> None:
    decoder = SseDecoder()
    assert decoder.read(OPENAI_STYLE[:-3]) == ([*(e.data for e in whole(OPENAI_STYLE)[:2])], None)
    assert decoder.read(OPENAI_STYLE[-3:]) == ([b"[DONE]"], None)
    named = SseDecoder()
    datas, names = named.read(ANTHROPIC_STYLE.replace(b"\r\n", b"\n").replace(b": keep-alive comment\n", b""))
    assert names == ["message_start", "ping", "content_block_delta", "message_stop"]
    assert datas[1] == b'{"type": "ping"}'


def test_read_refuses_a_giant_event_and_a_bad_name() -> None:
    decoder = SseDecoder(max_event_bytes=1024)
    with pytest.raises(MalformedResponseError, match="larger than 1024 bytes"):
        decoder.read(b"data: " + b"x" * 2000 + b"\n\n")
    with pytest.raises(MalformedResponseError, match="not valid UTF-8"):
        SseDecoder().read(b"event: \xff\ndata: x\n\n")
