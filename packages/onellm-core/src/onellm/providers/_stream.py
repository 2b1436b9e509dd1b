"""What every codec shares once a stream's events exist: the one reader that turns a streamed HTTP body into stream
events (`EventStream`), and the `ChatResponse` a finished accumulator describes (whole and streamed calls alike).

`EventStream` is what a provider's `stream()` returns. It reads the body's server-sent events (or the frames of a
deployment's own framing, Bedrock's binary event stream) into the codec's decoder and hands out the events that
decoder makes, and it holds a stream to the rules that keep a broken or hostile
stream from passing as an answer:

- a stream ends at its codec's end event; the rest of the body is then read (up to 64 KiB, for up to one second), so
  the connection goes back to the pool, and an event found there is `MalformedResponseError`: a stream that goes on
  after its end was not at its end;
- a body that ends before the end event is `MalformedResponseError` (the codec says how, or accepts it: Gemini's
  stream has no end event and ends with its body);
- no event for `stream_idle_timeout` seconds (keep-alive comments do not count), or a stream longer than
  `stream_timeout`, is a `TransportError`;
- an event that nests too deeply to decode is `MalformedResponseError`, not a `RecursionError`;
- every error that leaves the stream has the call's secrets removed;
- `aclose()` closes the HTTP response before it returns.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio

from onellm._public import publish as _publish
from onellm.errors import MalformedResponseError, TransportError
from onellm.messages import MessageAccumulator, StreamEvent
from onellm.providers._errors import clean
from onellm.providers._request import ChatResponse, FinishReason
from onellm.providers._sse import SseDecoder, SseEvent

if TYPE_CHECKING:
    import httpx

    from onellm.messages import CallWarning, Message
    from onellm.providers._http import HttpCall, HttpTransport

__all__ = [
    "DRAIN_BYTES",
    "DRAIN_SECONDS",
    "EventDecoder",
    "EventStream",
    "FrameReader",
    "collect",
    "collecting_into",
    "collecting_lazily",
    "feed_each",
    "response_from",
    "whole_answer_accumulator",
    "whole_response",
]

DRAIN_BYTES: Final = 64 * 1024
"""How much of a body after its end event is read to give the connection back to the pool."""
DRAIN_SECONDS: Final = 1.0
"""How long that read may take; past either bound the connection is closed instead."""

_COLLECTING: ContextVar[MessageAccumulator | collecting_lazily | None] = ContextVar("onellm_whole_answer", default=None)


def whole_answer_accumulator() -> MessageAccumulator:
    """The accumulator a provider builds a whole answer in from its events: the caller's while it is collecting (see
    `collecting_into`), so a whole call that is cancelled part-way keeps what had arrived; else a fresh one."""
    found = _COLLECTING.get()
    if found is None:
        return MessageAccumulator()
    _COLLECTING.set(None)  # one answer per accumulator: a nested call builds its own
    if isinstance(found, MessageAccumulator):
        return found
    made = found.accumulator = MessageAccumulator()
    return made


class collecting_into:  # used as a function: `with collecting_into(accumulator):`
    """Let the next whole answer a provider builds in this context (`whole_answer_accumulator`) go into
    `accumulator`, so the caller can read what had arrived if the call ends early."""

    __slots__ = ("_accumulator", "_token")

    def __init__(self, accumulator: MessageAccumulator) -> None:
        self._accumulator = accumulator

    def __enter__(self) -> MessageAccumulator:
        self._token = _COLLECTING.set(self._accumulator)
        return self._accumulator

    def __exit__(self, *exc: object) -> None:
        _COLLECTING.reset(self._token)


class collecting_lazily:  # used as a function: `with collecting_lazily() as collected:`
    """`collecting_into` for a caller that may not need the accumulator: it is made only when a provider asks for one
    (`whole_answer_accumulator`), and is then `accumulator`. A provider that has its answer whole without events
    (the scripted provider) makes none."""

    __slots__ = ("_token", "accumulator")

    def __init__(self) -> None:
        self.accumulator: MessageAccumulator | None = None

    def __enter__(self) -> collecting_lazily:
        self._token = _COLLECTING.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _COLLECTING.reset(self._token)


class EventDecoder(Protocol):
    """A codec's stream reader: each server-sent event in, stream events out."""

    @property
    def finished(self) -> bool:
        """True once the provider's end event arrived."""
        ...

    def feed(self, data: bytes, event: str | None) -> list[StreamEvent]:
        """One event's data and its `event:` name (None when the stream named none)."""
        ...

    def end(self) -> list[StreamEvent]:
        """The body ended before the end event: the events that close the answer, or `MalformedResponseError`."""
        ...


def feed_each(
    decoder: EventDecoder,
    datas: list[bytes],
    names: list[str | None] | None,
    start: int,
    stop: int,
    out: list[StreamEvent],
) -> int:
    """Feed the events `start` to `stop` one by one into `out`, stopping after the end event; returns where it
    stopped. A decoder may define the same as `feed_batch(datas, names, start, stop, out)` to read a run of events
    in one loop of its own (the codecs here do); `EventStream` uses it when it is there."""
    feed = decoder.feed
    for position in range(start, stop):
        out += feed(datas[position], None if names is None else names[position])
        if decoder.finished:
            return position + 1
    return stop


class FrameReader(Protocol):
    """What cuts a streamed body into events: the server-sent events reader (`SseDecoder`) unless a deployment frames
    its stream otherwise (Bedrock's binary event stream)."""

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events the bytes complete."""
        ...

    def read(self, chunk: bytes) -> tuple[list[bytes], list[str | None] | None]:
        """The same as `feed`, as the data of each event and their names (None when no event has a name)."""
        ...

    def close(self) -> list[SseEvent]:
        """The end of the body: the last events, or `MalformedResponseError` when it ended inside one."""
        ...


_FINISH_REASONS: Final[dict[str, FinishReason]] = {reason.value: reason for reason in FinishReason}
"""`FinishReason` by its value (a provider's own word is `OTHER`)."""
_OTHER: Final = FinishReason.OTHER


def response_from(
    accumulator: MessageAccumulator,
    warnings: list[CallWarning] | None = None,
    *,
    extra: dict[str, Any] | None = None,
) -> ChatResponse:
    """The `ChatResponse` of a finished accumulator."""
    usage = accumulator.usage
    message = accumulator._message(usage)  # the response's usage is the message's (one object, not copied)
    return whole_response(
        message, accumulator.finish_reason, accumulator.model, accumulator.response_id, warnings, extra
    )


def whole_response(
    message: Message,
    finish_reason: str | None,
    model: str | None,
    response_id: str | None,
    warnings: list[CallWarning] | None = None,
    extra: dict[str, Any] | None = None,
) -> ChatResponse:
    """The `ChatResponse` of a finished `message` (its usage is the response's): what `response_from` gives for an
    accumulator that built the same message, for a provider that has its answer whole without events."""
    reason = None if finish_reason is None else _FINISH_REASONS.get(finish_reason, _OTHER)
    return ChatResponse(
        message,
        message.usage,
        reason,
        finish_reason,
        model,
        response_id,
        list(warnings) if warnings else [],
        extra or {},
    )


async def collect(events: AsyncIterator[StreamEvent], warnings: list[CallWarning] | None = None) -> ChatResponse:
    """Read a stream to its end and build the same `ChatResponse` a whole call gives: `warnings` first, then those the
    stream's codec gave (`EventStream.warnings`)."""
    accumulator = whole_answer_accumulator()
    failure: MalformedResponseError | None = None
    try:
        async for event in events:
            accumulator.add(event)
    except RecursionError:
        failure = MalformedResponseError("a streamed answer nests too deeply to be read")
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()
    if failure is not None:
        raise failure
    given = [*(warnings or ()), *getattr(events, "warnings", ())]
    try:
        return response_from(accumulator, given, extra=getattr(events, "extra", None))
    except RecursionError:
        failure = MalformedResponseError("a streamed answer nests too deeply to be read")
    raise failure


_NO_EVENTS: Final[list[StreamEvent]] = []
_NO_DATA: Final[list[bytes]] = []
_BATCH: Final = 64
"""How many server-sent events one read decodes at most, after the first."""


class EventStream:
    """One streamed call's events, as they arrive. Iterate it; `warnings` holds the codec's notices once the request
    is sent; `aclose()` (or reading to the end) releases the connection.

    `prepare` builds the call (and the codec's warnings) when the stream is first read, so a request the codec
    refuses fails there, as an iteration error, like any other failure of the call.
    """

    __slots__ = (
        "_batch",
        "_call",
        "_chunks",
        "_datas",
        "_deadline",
        "_decoder",
        "_done",
        "_feed",
        "_last",
        "_names",
        "_pending_at",
        "_position",
        "_prepare",
        "_provider",
        "_ready",
        "_response",
        "_sse",
        "_transport",
        "warnings",
    )

    def __init__(
        self,
        transport: HttpTransport,
        prepare: Callable[[], tuple[HttpCall, list[CallWarning]]],
        decoder: EventDecoder,
        *,
        provider: str,
        frames: FrameReader | None = None,
    ) -> None:
        self._transport = transport
        self._prepare = prepare
        self._decoder = decoder
        self._provider = provider
        self._call: HttpCall | None = None
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._sse: FrameReader = frames if frames is not None else SseDecoder(provider=provider)
        self._ready: list[StreamEvent] = _NO_EVENTS
        self._position = 0
        feed_batch = getattr(decoder, "feed_batch", None)
        self._feed: Callable[[list[bytes], list[str | None] | None, int, int, list[StreamEvent]], int] = (
            feed_batch if feed_batch is not None else functools.partial(feed_each, decoder)
        )
        self._datas: list[bytes] = _NO_DATA  # the data of the events read and not yet decoded, and their names
        self._names: list[str | None] | None = None
        self._pending_at = 0
        self._batch = 1
        self._done = False
        self._deadline = 0.0
        self._last = 0.0
        self.warnings: list[CallWarning] = []

    def __repr__(self) -> str:
        state = "done" if self._done else "open" if self._response is not None else "not started"
        return f"EventStream({self._provider!r}, {state})"

    @property
    def extra(self) -> dict[str, Any] | None:
        """What the stream said beyond the message, when its codec keeps it (Anthropic's stop details)."""
        extra = getattr(self._decoder, "extra", None)
        return extra if isinstance(extra, dict) and extra else None

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> StreamEvent:
        position = self._position
        ready = self._ready
        if position < len(ready):
            self._position = position + 1
            return ready[position]
        if self._done:
            raise StopAsyncIteration
        events = await self._refill()
        if not events:
            raise StopAsyncIteration
        self._position = 1
        return events[0]

    async def next_batch(self) -> list[StreamEvent]:
        """Every event ready now (at least one, reading on when none is), or an empty list at the end: for a reader
        that takes events in runs rather than one `__anext__` each (the runtime's streamed answer does)."""
        position = self._position
        ready = self._ready
        if position < len(ready):
            self._position = len(ready)
            return ready[position:] if position else ready
        if self._done:
            return _NO_EVENTS
        events = await self._refill()
        self._position = len(events)
        return events

    async def aclose(self) -> None:
        """Stop reading: the HTTP response is closed before this returns."""
        self._done = True
        self._ready = _NO_EVENTS
        self._position = 0
        await self._release()

    # -- reading ---------------------------------------------------------------------------------------------------

    async def _refill(self) -> list[StreamEvent]:
        """The next events (the caller takes them from `_ready`), or none at the end."""
        failure: BaseException | None = None
        try:
            events = await self._read()
        except RecursionError:
            failure = MalformedResponseError(
                "an event of the stream nests too deeply to be read", provider=self._provider
            )
        except BaseException as error:
            self._done = True
            await self._release()
            if isinstance(error, Exception) and self._call is not None:
                raise clean(error, self._call.secrets)  # noqa: B904 - the same error, cleaned
            raise
        if failure is not None:
            self._done = True
            await self._release()
            raise failure
        self._ready = events
        self._position = 0
        return events

    async def _read(self) -> list[StreamEvent]:
        """The next events the codec makes. Server-sent events are decoded as they are asked for: the first alone, so
        the first event of a large chunk reaches the caller without waiting for the rest, then up to `_BATCH` at a
        time."""
        if self._chunks is None:
            await self._start()
        decoder = self._decoder
        feed = self._feed
        out: list[StreamEvent] = []
        while True:
            datas = self._datas
            position = self._pending_at
            count = len(datas)
            if position < count:
                names = self._names
                if self._batch == 1:  # the first events: one at a time until one gives something
                    while position < count and not out and not decoder.finished:
                        position = feed(datas, names, position, position + 1, out)
                else:
                    position = feed(datas, names, position, min(position + self._batch, count), out)
                self._pending_at = position
                if decoder.finished:
                    await self._finish(position < count)
                    return out
                if out:
                    self._batch = _BATCH
                    return out
                if position < count:  # a batch of events that make nothing (pings): read on in what arrived
                    continue
            chunk = await self._next_chunk()
            if chunk is None:  # the body ended
                for event in self._sse.close():
                    if decoder.finished:
                        self._after_end()
                    out.extend(decoder.feed(event.data, event.event))
                if not decoder.finished:
                    out.extend(decoder.end())
                self._done = True
                await self._release()
                return out
            datas, names = self._sse.read(chunk)
            now = time.monotonic()
            if datas:
                self._last = now
                self._datas = datas
                self._names = names
                self._pending_at = 0
            transport = self._transport
            if transport.stream_timeout is not None and now > self._deadline:
                raise TransportError(
                    f"the stream ran longer than {transport.stream_timeout:g} s", provider=self._provider
                )
            idle = transport.stream_idle_timeout
            if idle is not None and not datas and now - self._last > idle:
                raise TransportError(f"the stream sent no event for {idle:g} s", provider=self._provider)

    async def _finish(self, more: bool) -> None:
        """The end event came: anything after it fails the stream; the rest of the body is read, the response
        released."""
        if more:
            self._after_end()
        await self._drain()
        self._done = True
        await self._release()

    async def _start(self) -> None:
        call, warnings = self._prepare()
        self._call = call
        self.warnings = list(warnings)
        response = await self._transport.open(call)
        self._response = response
        self._chunks = self._transport.aiter_bytes(call, response)
        now = time.monotonic()
        self._last = now
        if self._transport.stream_timeout is not None:
            self._deadline = now + self._transport.stream_timeout

    async def _next_chunk(self) -> bytes | None:
        chunks = self._chunks
        assert chunks is not None
        transport = self._transport
        idle = transport.stream_idle_timeout
        limit = transport.stream_timeout
        if idle is None and limit is None:
            try:
                return await chunks.__anext__()
            except StopAsyncIteration:
                return None
        now = time.monotonic()
        wait = min(
            self._last + idle - now if idle is not None else float("inf"),
            self._deadline - now if limit is not None else float("inf"),
        )
        try:
            with anyio.fail_after(max(wait, 0.0)):
                return await chunks.__anext__()
        except StopAsyncIteration:
            return None
        except TimeoutError:
            pass
        if limit is not None and time.monotonic() >= self._deadline:
            raise TransportError(f"the stream ran longer than {limit:g} s", provider=self._provider)
        raise TransportError(f"the stream sent no event for {idle:g} s", provider=self._provider)

    def _after_end(self) -> None:
        raise MalformedResponseError("the stream went on after its end event", provider=self._provider)

    async def _drain(self) -> None:
        """Read what is left of the body after the end event, within `DRAIN_BYTES` and `DRAIN_SECONDS`, so the
        connection can be reused; an event there fails the stream."""
        chunks = self._chunks
        assert chunks is not None
        budget = DRAIN_BYTES
        with anyio.move_on_after(DRAIN_SECONDS):
            while budget >= 0:
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    if self._sse.close():
                        self._after_end()
                    return
                except TransportError:
                    return  # the answer is whole; a body that breaks after it only costs the connection
                budget -= len(chunk)
                if self._sse.feed(chunk):
                    self._after_end()

    async def _release(self) -> None:
        chunks, response = self._chunks, self._response
        self._chunks = None
        self._response = None
        if chunks is None and response is None:
            return
        with anyio.CancelScope(shield=True):
            close = getattr(chunks, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):  # the response is closed next whatever the iterator says
                    await close()
            if response is not None:
                await response.aclose()


_publish("onellm.providers", collecting_into, collecting_lazily)
