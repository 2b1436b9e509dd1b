"""Broken and hostile streams fail typed and never pass as an answer: events nested too deeply, streams that only
keep alive or never end, a byte-order mark before the first event, an event named one kind that holds another,
events before the start or after the end, in each of the four wire formats.

The well-formed parts of these streams follow the vendors' references: Anthropic's stream events
(anthropic-sdk-python `src/anthropic/types/raw_message_stream_event.py` and its recorded streams), OpenAI's Responses
stream events and chat completion chunks (openapi.yaml 2.3.0 `ResponseStreamEvent`, `CreateChatCompletionStreamResponse`),
and Gemini's `GenerateContentResponse` (googleapis v1beta `generative_service.proto`). The broken parts are the attack.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from onellm.errors import MalformedResponseError, OnellmError, TransportError
from onellm.messages import Message, TextPart
from onellm.providers import ChatRequest
from onellm.providers._sse import iter_sse
from onellm.providers._stream import collect
from onellm.providers.anthropic import AnthropicProvider
from onellm.providers.gemini import GeminiProvider
from onellm.providers.openai import OpenAICompatibleProvider, OpenAIProvider

from ._loopback import Answer, LoopbackServer

KEY = "sk-hostile"
FORMATS = ("anthropic", "openai-responses", "openai-chat", "gemini")
DEEP = 100_000


def _event(name: str | None, data: Any) -> str:
    body = data if isinstance(data, str) else msgspec.json.encode(data).decode()
    return (f"event: {name}\n" if name else "") + f"data: {body}\n\n"


def anthropic_events(text: str = "Hello") -> list[tuple[str | None, Any]]:
    return [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "m",
                    "content": [],
                    "usage": {"input_tokens": 3, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def responses_events(text: str = "Hello") -> list[tuple[str | None, Any]]:
    response = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "gpt-6-luna", "output": []}
    done = {
        **response,
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "m1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }
    return [
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": response}),
        (
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "sequence_number": 1,
                "output_index": 0,
                "content_index": 0,
                "delta": text,
            },
        ),
        ("response.completed", {"type": "response.completed", "sequence_number": 2, "response": done}),
    ]


def chat_events(text: str = "Hello") -> list[tuple[str | None, Any]]:
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    return [
        (None, {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]}),
        (None, {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        (None, "[DONE]"),
    ]


def gemini_events(text: str = "Hello") -> list[tuple[str | None, Any]]:
    return [
        (
            None,
            {
                "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}],
                "modelVersion": "gemini-flash-latest",
                "responseId": "r1",
            },
        ),
        (
            None,
            {
                "candidates": [
                    {"content": {"role": "model", "parts": [{"text": "!"}]}, "finishReason": "STOP", "index": 0}
                ],
                "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2},
            },
        ),
    ]


EVENTS = {
    "anthropic": anthropic_events,
    "openai-responses": responses_events,
    "openai-chat": chat_events,
    "gemini": gemini_events,
}


def stream_of(events: list[tuple[str | None, Any]]) -> bytes:
    return "".join(_event(name, data) for name, data in events).encode()


def provider(fmt: str, handler: Any = None, *, base: str | None = None, **options: Any) -> Any:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler)) if handler is not None else None
    if fmt == "anthropic":
        return AnthropicProvider(api_key=KEY, max_tokens=10, http_client=client, base_url=base, **options)
    if fmt == "openai-responses":
        return OpenAIProvider(api_key=KEY, http_client=client, base_url=base and f"{base}/v1", **options)
    if fmt == "openai-chat":
        return OpenAICompatibleProvider(
            base_url=f"{base or 'https://llm.example.test'}/v1", api_key=KEY, http_client=client, **options
        )
    return GeminiProvider(api_key=KEY, http_client=client, base_url=base and f"{base}/v1beta", **options)


def request(fmt: str) -> ChatRequest:
    model = {"anthropic": "claude-sonnet-5-5", "gemini": "gemini-flash-latest"}.get(fmt, "gpt-6-luna")
    return ChatRequest(model, [Message(user=[TextPart("hi")])])


def streamed(fmt: str, body: bytes) -> Any:
    llm = provider(fmt, lambda _: httpx.Response(200, content=body, headers={"content-type": "text/event-stream"}))
    return anyio.run(collect, llm.stream(request(fmt)))


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_well_formed_stream_reads(fmt: str) -> None:
    assert streamed(fmt, stream_of(EVENTS[fmt]())).message.text.startswith("Hello")


# -- nesting -------------------------------------------------------------------------------------------------------


def _deep_event(fmt: str) -> tuple[str | None, str]:
    nested = "[" * DEEP + "]" * DEEP
    if fmt == "anthropic":
        return "content_block_start", (
            '{"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t", '
            f'"name": "f", "input": {{"a": {nested}}}}}}}'
        )
    if fmt == "openai-responses":
        return "response.output_item.done", (
            '{"type": "response.output_item.done", "output_index": 1, "item": {"type": "x", "v": ' + nested + "}}"
        )
    if fmt == "openai-chat":
        return None, '{"id": "c", "choices": [{"index": 0, "delta": {"content": "a", "extra": ' + nested + "}}]}"
    return None, '{"candidates": [{"content": {"parts": [{"text": "a", "deep": ' + nested + "}]}}]}"


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_event_nested_a_hundred_thousand_deep_is_malformed_not_a_recursion_error(fmt: str) -> None:
    events = EVENTS[fmt]()
    events.insert(1, _deep_event(fmt))
    with pytest.raises(MalformedResponseError, match="nests too deeply"):
        streamed(fmt, stream_of(events))


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_whole_answer_nested_a_hundred_thousand_deep_is_malformed(fmt: str) -> None:
    nested = "[" * DEEP + "]" * DEEP
    body = ('{"id": "x", "model": "m", "deep": ' + nested + "}").encode()
    llm = provider(fmt, lambda _: httpx.Response(200, content=body))
    with pytest.raises(MalformedResponseError, match="nests too deeply"):
        anyio.run(llm.send, request(fmt))


def test_an_error_body_nested_deeply_is_still_the_status_error() -> None:
    body = ('{"error": ' + "[" * DEEP + "]" * DEEP + "}").encode()
    llm = provider("openai-chat", lambda _: httpx.Response(400, content=body))
    with pytest.raises(OnellmError) as caught:
        anyio.run(llm.send, request("openai-chat"))
    assert type(caught.value).__name__ == "BadRequestError"


# -- byte-order mark -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_byte_order_mark_before_the_first_event_drops_nothing(fmt: str) -> None:
    body = stream_of(EVENTS[fmt]())
    plain = streamed(fmt, body)
    marked = streamed(fmt, b"\xef\xbb\xbf" + body)
    assert marked.message == plain.message
    assert marked.usage == plain.usage


def test_a_byte_order_mark_split_across_chunks_is_dropped() -> None:
    body = b"\xef\xbb\xbfdata: one\n\ndata: two\n\n"
    for cut in range(1, 6):
        events = list(iter_sse([body[:1], body[1:cut], body[cut:]]))
        assert [e.data for e in events] == [b"one", b"two"]
    assert [e.data for e in iter_sse([b"\xef\xbb", b""])] == []  # a stream of only part of a mark is empty


def test_only_the_first_byte_order_mark_is_dropped() -> None:
    events = list(iter_sse([b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\ndata: y\n\n"]))
    assert [e.data for e in events] == [b"y"]  # the second mark makes the first line an unknown field


# -- an event that says one kind and holds another ----------------------------------------------------------------


def test_an_anthropic_event_named_a_delta_that_holds_message_stop_is_malformed() -> None:
    events = anthropic_events()
    events[3] = ("content_block_delta", {"type": "message_stop"})
    with pytest.raises(MalformedResponseError, match="named 'content_block_delta' holds a 'message_stop'"):
        streamed("anthropic", stream_of(events))


def test_a_responses_event_named_a_delta_that_holds_completed_is_malformed() -> None:
    events = responses_events()
    events[1] = ("response.output_text.delta", events[2][1])
    with pytest.raises(MalformedResponseError, match=r"holds a 'response\.completed'"):
        streamed("openai-responses", stream_of(events))


@pytest.mark.parametrize(
    ("fmt", "events"),
    [
        ("anthropic", [("message_stop", {"type": "message_stop"})]),
        ("anthropic", anthropic_events()[1:]),
        ("openai-responses", responses_events()[1:]),
        ("openai-responses", [responses_events()[-1]]),
    ],
    ids=["anthropic-stop-only", "anthropic-no-start", "responses-no-created", "responses-completed-only"],
)
def test_events_before_the_start_are_malformed(fmt: str, events: list[tuple[str | None, Any]]) -> None:
    with pytest.raises(MalformedResponseError, match="before"):
        streamed(fmt, stream_of(events))


@pytest.mark.parametrize("fmt", ["anthropic", "openai-responses", "openai-chat"])
def test_an_event_after_the_end_event_is_malformed(fmt: str) -> None:
    events = EVENTS[fmt]()
    body = stream_of(events) + stream_of(EVENTS[fmt]("and more")[1:2])
    with pytest.raises(MalformedResponseError, match="after its end"):
        streamed(fmt, body)


@pytest.mark.parametrize("fmt", ["anthropic", "openai-responses", "openai-chat"])
def test_a_stream_that_ends_before_its_end_event_is_malformed(fmt: str) -> None:
    with pytest.raises(MalformedResponseError):
        streamed(fmt, stream_of(EVENTS[fmt]()[:-1]))


def test_a_gemini_stream_without_a_finish_reason_is_malformed() -> None:
    with pytest.raises(MalformedResponseError, match="before the answer finished"):
        streamed("gemini", stream_of(gemini_events()[:1]))
    with pytest.raises(MalformedResponseError, match="before any response"):
        streamed("gemini", b": only a comment\r\n\r\n")


def test_a_gemini_stream_split_by_crlf_reads_in_any_chunking() -> None:
    body = "".join(_event(n, d).replace("\n", "\r\n") for n, d in gemini_events()).encode()
    whole = streamed("gemini", body)
    for cut in range(1, len(body), 7):
        parts = [body[:cut], body[cut:]]
        events = list(iter_sse(parts))
        assert len(events) == 2
    assert whole.message.text == "Hello!"


# -- deadlines -----------------------------------------------------------------------------------------------------


def _keep_alive_forever(path: str, body: bytes) -> Answer:
    start = stream_of(anthropic_events()[:2])
    return Answer(pieces=[start, *([0.05, b": keep-alive\n\n"] * 200)], length=False)


def _pings_forever(path: str, body: bytes) -> Answer:
    start = stream_of(anthropic_events()[:2])
    ping = stream_of([anthropic_events()[2]])
    return Answer(pieces=[start, *([0.05, ping] * 200)], length=False)


def _run_against(server: LoopbackServer, **options: Any) -> tuple[BaseException, float]:
    llm = provider("anthropic", base=server.url, **options)
    started = time.monotonic()
    with pytest.raises(TransportError) as caught:
        anyio.run(collect, llm.stream(request("anthropic")))
    return caught.value, time.monotonic() - started


def test_keep_alive_comments_do_not_keep_a_stream_alive() -> None:
    with LoopbackServer(_keep_alive_forever) as server:
        error, took = _run_against(server, stream_idle_timeout=0.4)
    assert "sent no event for 0.4 s" in str(error)
    assert took < 2.0


def test_a_stream_that_never_ends_meets_the_overall_deadline() -> None:
    with LoopbackServer(_pings_forever) as server:
        error, took = _run_against(server, stream_idle_timeout=0.4, stream_timeout=0.6)
    assert "ran longer than 0.6 s" in str(error)
    assert took < 2.0


def test_a_stream_that_goes_silent_meets_the_idle_deadline() -> None:
    def silent(path: str, body: bytes) -> Answer:
        return Answer(pieces=[stream_of(anthropic_events()[:2]), 5.0], length=False)

    with LoopbackServer(silent) as server:
        error, took = _run_against(server, stream_idle_timeout=0.3)
    assert "sent no event for 0.3 s" in str(error)
    assert took < 2.0


def test_deadlines_are_checked_when_given() -> None:
    with pytest.raises(ValueError, match="stream_timeout"):
        provider("anthropic", lambda _: httpx.Response(200), stream_timeout=0)


def test_many_events_that_make_nothing_in_one_chunk_lose_nothing_after_them() -> None:
    """Events are decoded in batches as they are asked for; a run of pings longer than a batch must not drop the
    text that follows it in the same chunk."""
    events = anthropic_events("A")
    more = (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "B"}},
    )
    body = stream_of([*events[:4], *[events[2]] * 300, more, *events[4:]])
    assert streamed("anthropic", body).message.text == "AB"
