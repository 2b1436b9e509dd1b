"""Streams give their connection back: a stream read to its end event reads the rest of the body, so the next call
reuses the connection; `aclose()` closes the HTTP response before it returns; a body that goes on after the end
event is read only within a bound. A loopback server counts the connections, since the transport is under test.
The streams are those of `test_hostile_streams` (written from the vendors' references, named there)."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

import onellm.providers._stream as stream_module
from onellm.providers._stream import collect

from ._loopback import Answer, LoopbackServer
from .test_hostile_streams import EVENTS, FORMATS, anthropic_events, provider, request, stream_of


def _whole_stream(fmt: str) -> Any:
    def answer(path: str, body: bytes) -> Answer:
        # the end event and the body's end in separate writes, as a server flushing per event sends them
        events = EVENTS[fmt]()
        return Answer(pieces=[stream_of(events[:-1]), 0.01, stream_of(events[-1:])], length=False)

    return answer


@pytest.mark.parametrize("fmt", FORMATS)
def test_streams_read_to_the_end_reuse_one_connection(fmt: str) -> None:
    with LoopbackServer(_whole_stream(fmt)) as server:
        llm = provider(fmt, base=server.url)

        async def five() -> list[str]:
            texts = [(await collect(llm.stream(request(fmt)))).message.text for _ in range(5)]
            await llm.aclose()
            return texts

        texts = anyio.run(five)
    assert all(text.startswith("Hello") for text in texts)
    assert len(server.requests) == 5
    assert server.connections == 1


def _slow_stream(path: str, body: bytes) -> Answer:
    events = anthropic_events()
    return Answer(
        pieces=[stream_of(events[:4]), *([0.05, b": still here\n\n"] * 100), stream_of(events[4:])], length=False
    )


def test_aclose_closes_the_response_before_it_returns() -> None:
    with LoopbackServer(_slow_stream) as server:
        llm = provider("anthropic", base=server.url)

        async def first_then_close() -> tuple[int, int, float]:
            events = llm.stream(request("anthropic"))
            async for event in events:
                if type(event).__name__ == "TextDelta":
                    break
            pool = llm._transport.client._transport._pool
            open_before = len(pool.connections)
            await events.aclose()
            closed_at = time.monotonic()
            open_after = len(pool.connections)
            await llm.aclose()
            return open_before, open_after, closed_at

        before, after, closed_at = anyio.run(first_then_close)
        deadline = time.monotonic() + 2
        while not server.disconnects and time.monotonic() < deadline:
            time.sleep(0.01)
    assert (before, after) == (1, 0)
    assert server.disconnects, "the server never saw the connection close"
    assert server.disconnects[0] - closed_at < 1.0


def test_a_body_that_goes_on_after_the_end_event_is_drained_only_within_a_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stream_module, "DRAIN_SECONDS", 0.2)

    def endless_tail(path: str, body: bytes) -> Answer:
        return Answer(pieces=[stream_of(anthropic_events()), *([0.05, b": tail\n\n"] * 100)], length=False)

    with LoopbackServer(endless_tail) as server:
        llm = provider("anthropic", base=server.url)

        async def twice() -> list[str]:
            texts = [(await collect(llm.stream(request("anthropic")))).message.text for _ in range(2)]
            await llm.aclose()
            return texts

        started = time.monotonic()
        texts = anyio.run(twice)
        took = time.monotonic() - started
    assert texts == ["Hello", "Hello"]
    assert took < 1.5  # each drain gave up after 0.2 s
    assert server.connections == 2  # a connection whose body never ended is not reused


def test_a_stream_dropped_without_aclose_still_lets_its_connection_go() -> None:
    import gc

    with LoopbackServer(_slow_stream) as server:
        llm = provider("anthropic", base=server.url)

        async def drop() -> tuple[int, int]:
            events = llm.stream(request("anthropic"))
            async for _ in events:
                break
            pool = llm._transport.client._transport._pool
            before = len(pool.connections)
            del events
            gc.collect()
            for _ in range(50):  # the event loop closes the dropped body reader on a later turn
                await anyio.sleep(0.01)
                if not pool.connections:
                    break
            after = len(pool.connections)
            await llm.aclose()
            return before, after

        assert anyio.run(drop) == (1, 0)
