"""What every codec shares once a stream's events exist: reading server-sent events into them, and building the
`ChatResponse` a finished accumulator describes (whole and streamed calls alike)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from onellm.errors import MalformedResponseError
from onellm.messages._events import MessageAccumulator, StreamEvent
from onellm.providers._request import ChatResponse, FinishReason
from onellm.providers._sse import SseDecoder

if TYPE_CHECKING:
    from onellm.messages import CallWarning
    from onellm.providers._http import HttpCall, HttpTransport

__all__ = ["EventDecoder", "collect", "collecting_into", "response_from", "sse_stream", "whole_answer_accumulator"]

_COLLECTING: ContextVar[MessageAccumulator | None] = ContextVar("onellm_whole_answer", default=None)


def whole_answer_accumulator() -> MessageAccumulator:
    """The accumulator a provider builds a whole answer in from its events: the caller's while it is collecting (see
    `collecting_into`), so a whole call that is cancelled part-way keeps what had arrived; else a fresh one."""
    found = _COLLECTING.get()
    if found is None:
        return MessageAccumulator()
    _COLLECTING.set(None)  # one answer per accumulator: a nested call builds its own
    return found


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


class EventDecoder(Protocol):
    """A codec's stream reader: the data of each server-sent event in, stream events out."""

    @property
    def finished(self) -> bool:
        """True once the provider's terminal event arrived."""
        ...

    def feed(self, data: bytes) -> list[StreamEvent]: ...


def response_from(
    accumulator: MessageAccumulator,
    warnings: list[CallWarning] | None = None,
    *,
    extra: dict[str, Any] | None = None,
) -> ChatResponse:
    """The `ChatResponse` of a finished accumulator."""
    message = accumulator.message()
    message.usage = accumulator.usage
    raw = accumulator.finish_reason
    try:
        reason: FinishReason | None = FinishReason(raw) if raw is not None else None
    except ValueError:
        reason = FinishReason.OTHER
    return ChatResponse(
        message=message,
        usage=accumulator.usage,
        finish_reason=reason,
        provider_finish_reason=raw,
        model=accumulator.model,
        id=accumulator.response_id,
        warnings=list(warnings or []),
        extra=extra or {},
    )


async def collect(events: AsyncIterator[StreamEvent], warnings: list[CallWarning] | None = None) -> ChatResponse:
    """Read a stream to its end and build the same `ChatResponse` a whole call gives."""
    accumulator = whole_answer_accumulator()
    async for event in events:
        accumulator.add(event)
    return response_from(accumulator, warnings)


async def sse_stream(
    transport: HttpTransport, call: HttpCall, decoder: EventDecoder, *, unfinished: str
) -> AsyncIterator[StreamEvent]:
    """Send a streamed call and yield the events its server-sent events decode to, until the decoder says the
    provider finished. A body that ends first is `MalformedResponseError` with the text `unfinished`."""
    sse = SseDecoder(provider=call.provider)
    async with transport.stream(call) as response:
        async for chunk in transport.aiter_bytes(call, response):
            for event in sse.feed(chunk):
                for item in decoder.feed(event.data):
                    yield item
                if decoder.finished:
                    return
        for event in sse.close():
            for item in decoder.feed(event.data):
                yield item
    if not decoder.finished:
        raise MalformedResponseError(unfinished, provider=call.provider)
