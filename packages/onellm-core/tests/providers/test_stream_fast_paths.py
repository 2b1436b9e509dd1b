"""The stream decoders read the common event (one more piece of text) on a path of its own. Every fixture stream,
read through that path (`feed_batch`, in runs of every length), gives the same events, and the same errors, as the
same stream read one event at a time through the general path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from onellm.messages._events import StreamEvent
from onellm.providers._sse import SseDecoder
from onellm.providers.anthropic._codec import MessagesStreamDecoder
from onellm.providers.gemini._response import ResponseDecoder
from onellm.providers.openai._chat import ChatFlavor, ChatStreamDecoder, _chunk_decoder
from onellm.providers.openai._responses import ResponsesStreamDecoder, _decode_event

from ._fixtures import case_id, cases, load

Decoder = Any


def _chat_general(decoder: ChatStreamDecoder, data: bytes, name: str | None) -> list[StreamEvent]:
    if data == b"[DONE]":
        return decoder.finish()
    out: list[StreamEvent] = []
    decoder._chunk(_chunk_decoder.decode(data), out)
    return out


def _anthropic_general(decoder: MessagesStreamDecoder, data: bytes, name: str | None) -> list[StreamEvent]:
    return decoder.feed(data, name)  # one event through the general path


def _responses_general(decoder: ResponsesStreamDecoder, data: bytes, name: str | None) -> list[StreamEvent]:
    return decoder._event(_decode_event(data), name)


def _gemini_general(decoder: ResponseDecoder, data: bytes, name: str | None) -> list[StreamEvent]:
    return decoder.feed_object(decoder._plain(data))


KINDS: dict[str, tuple[Callable[[], Decoder], Callable[[Decoder, bytes, str | None], list[StreamEvent]]]] = {
    "openai-chat": (lambda: ChatStreamDecoder(ChatFlavor()), _chat_general),
    "compatible": (lambda: ChatStreamDecoder(ChatFlavor(provider="compatible", first_party=False)), _chat_general),
    "openai-responses": (ResponsesStreamDecoder, _responses_general),
    "anthropic": (MessagesStreamDecoder, _anthropic_general),
    "gemini": (ResponseDecoder, _gemini_general),
}
STREAMS = [p for p in cases(*KINDS) if "stream" in load(p)]


def outcome(run: Callable[[], list[StreamEvent]]) -> tuple[str, Any]:
    try:
        return "events", run()
    except Exception as error:
        return "error", (type(error).__name__, str(error))


@pytest.mark.parametrize("path", STREAMS, ids=case_id)
@pytest.mark.parametrize("run", [1, 2, 3, 64])
def test_the_fast_path_reads_what_the_general_path_reads(path: Path, run: int) -> None:
    kind = path.parent.parent.name
    make, general = KINDS[kind]
    events = SseDecoder().feed(load(path)["stream"].encode())  # a stream cut short keeps its whole events
    datas = [e.data for e in events]
    names = [e.event for e in events]

    def slow() -> list[StreamEvent]:
        decoder = make()
        out: list[StreamEvent] = []
        for data, name in zip(datas, names, strict=True):
            out += general(decoder, data, name)
            if decoder.finished:
                break
        return out

    def fast() -> list[StreamEvent]:
        decoder = make()
        out: list[StreamEvent] = []
        position = 0
        while position < len(datas) and not decoder.finished:
            position = decoder.feed_batch(datas, names, position, min(position + run, len(datas)), out)
        return out

    expected = outcome(slow)
    assert expected[0] == "events"
    assert expected[1]
    assert outcome(fast) == expected


def test_a_gemini_chunk_beyond_text_is_read_as_plain_data() -> None:
    """A chunk the typed form cannot hold whole (a second candidate, an unknown key, a call, a thought without text)
    goes the general way, keeping what only the general way keeps."""
    chunks: list[dict[str, Any]] = [
        {"candidates": [{"content": {"parts": [{"text": "a"}], "role": "model"}, "index": 0}], "modelVersion": "m"},
        {"candidates": [{"content": {"parts": [{"text": "b", "thought": True}]}}]},
        {"candidates": [{"content": {"parts": [{"thought": True, "thoughtSignature": "sig"}]}}]},
        {"candidates": [{"content": {"parts": [{"text": "c", "thoughtSignature": "s2"}]}}], "newKey": 1},
        {"candidates": [{"content": {"parts": [{"text": "d"}]}}, {"content": {"parts": [{"text": "x"}]}, "index": 1}]},
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": {}}}]}}]},
        {"candidates": [{"content": {"parts": [{"text": "e"}]}, "finishReason": "STOP"}], "usageMetadata": None},
        {"usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2}},
        {"candidates": [{"content": {"parts": [{"text": ""}]}}], "usageMetadata": {"promptTokenCount": 9}},
    ]
    datas = [msgspec.json.encode(c) for c in chunks]
    fast = ResponseDecoder()
    out: list[StreamEvent] = []
    fast.feed_batch(datas, None, 0, len(datas), out)
    out += fast.finish()
    slow = ResponseDecoder()
    expected: list[StreamEvent] = []
    for data in datas:
        expected += slow.feed_object(msgspec.json.decode(data))
    expected += slow.finish()
    assert out == expected
    assert out[-2].usage.input_tokens == 9  # type: ignore[union-attr]  # the last usage wins, typed or plain
