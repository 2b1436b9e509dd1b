"""`ScriptedProvider`: a chat and embedding provider that answers from a queue of scripted steps.

Register it under a real provider name (`ScriptedProvider("openai")`) and model names resolve through the catalog and
are priced as real calls would be; nothing leaves the process. Each request takes the next queued step. A whole
answer (`send`) is built from the same events a streamed answer (`stream`) yields, so the two give equal messages.

```python
from onellm import Runtime
from onellm.testing import ScriptedProvider, ScriptStep

openai = ScriptedProvider("openai").enqueue(ScriptStep.text_with_usage("2, 3 and 5.", 13, 7))
runtime = Runtime()
runtime.providers.set("openai", openai)
assert await runtime.ask("gpt-6-luna", "Name three prime numbers.") == "2, 3 and 5."
openai.assert_complete()
```
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import hashlib
import math
import types
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from onellm.errors import ProviderError
from onellm.messages import (
    Done,
    Message,
    MessageStart,
    Part,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    UsageEvent,
    parse_arguments,
)
from onellm.providers import (
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    response_from,
    whole_answer_accumulator,
    whole_response,
)

if TYPE_CHECKING:
    from onellm.clock import Clock

__all__ = ["Pause", "ScriptStep", "ScriptedProvider", "ScriptedToolCall"]

_ENCODER = msgspec.json.Encoder(decimal_format="number")
_decode = msgspec.json.Decoder().decode


def _request_copier() -> Callable[[ChatRequest], ChatRequest]:
    """A copy of a request, field by field, as `copy.copy` makes one (no `__init__` run again on values it has
    already taken) without its generic path. Written out from the class's fields (as `dataclasses` writes its
    `__init__`), so a field added to the class is copied too, and each is read and set as a plain attribute, which
    costs less than `operator.attrgetter`'s lookups or a call with every field."""
    body = "".join(f"    copy.{f.name} = request.{f.name}\n" for f in dataclasses.fields(ChatRequest))
    namespace: dict[str, Any] = {"ChatRequest": ChatRequest, "new": object.__new__}
    exec(f"def copy_request(request):\n    copy = new(ChatRequest)\n{body}    return copy\n", namespace)
    copier: Callable[[ChatRequest], ChatRequest] = namespace["copy_request"]
    return copier


_copy_request = _request_copier()


@dataclass(frozen=True, slots=True)
class Pause:
    """A wait inside a scripted answer: `seconds` on the provider's clock, until `event` is set, or (neither given)
    until the call is cancelled. Put it among a step's text pieces to stop a stream part-way."""

    seconds: float | None = None
    event: anyio.Event | None = None

    async def wait(self, clock: Clock | None) -> None:
        if self.event is not None:
            await self.event.wait()
        elif self.seconds is not None:
            if clock is not None:
                await clock.sleep(self.seconds)
            else:
                await anyio.sleep(self.seconds)
        else:
            await anyio.sleep_forever()


@dataclass(frozen=True, slots=True)
class ScriptedToolCall:
    """A tool call the scripted model makes: its id, the tool's name and the arguments (JSON text or a mapping)."""

    id: str
    tool: str
    arguments: str | dict[str, Any] = "{}"

    @property
    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return _ENCODER.encode(self.arguments).decode()


@dataclass(frozen=True, slots=True)
class ScriptStep:
    """One scripted answer: text pieces (with optional `Pause`s between them), tool calls, usage, the finish reason,
    or a failure raised after the pieces before it.

    Build one with the class methods (`text`, `text_with_usage`, `tool_calls`, `failure`, `paused`) or directly.
    """

    pieces: tuple[str | Pause, ...] = ()
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    usage: Usage | None = None
    finish_reason: str | None = None
    """`stop` by default, `tool_calls` when the step calls tools."""
    error: BaseException | None = None
    """Raised after the pieces have been sent (at once when there are none)."""
    model: str | None = None
    """The model the answer names; the request's model when None."""
    vectors: tuple[tuple[float, ...], ...] | None = None
    """For an embedding request: the vectors to return."""

    @classmethod
    def text(cls, *pieces: str | Pause) -> ScriptStep:
        """An answer in text, streamed as these pieces (joined for a whole answer). No usage is reported."""
        return cls(pieces=tuple(pieces))

    @classmethod
    def text_with_usage(
        cls,
        text: str | Sequence[str],
        input_tokens: int,
        output_tokens: int,
        *,
        cache_read_input_tokens: int = 0,
        cache_creation_input_tokens: int = 0,
    ) -> ScriptStep:
        """An answer in text with the usage the provider reports for it."""
        pieces = (text,) if isinstance(text, str) else tuple(text)
        usage = Usage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_input_tokens=cache_read_input_tokens,
            cache_creation_input_tokens=cache_creation_input_tokens,
        )
        return cls(pieces=pieces, usage=usage)

    @classmethod
    def calls(
        cls,
        *calls: ScriptedToolCall,
        text: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
    ) -> ScriptStep:
        """An answer that calls tools (optionally after some text)."""
        usage = None
        if input_tokens is not None or output_tokens is not None:
            usage = Usage(input_tokens=input_tokens or 0, output_tokens=output_tokens or 0)
        return cls(pieces=(text,) if text else (), tool_calls=tuple(calls), usage=usage)

    @classmethod
    def failure(cls, error: BaseException, *pieces_before: str | Pause) -> ScriptStep:
        """A call that fails with `error` (after streaming `pieces_before`, if any)."""
        return cls(pieces=tuple(pieces_before), error=error)

    @classmethod
    def paused(
        cls,
        *pieces_before: str,
        seconds: float | None = None,
        event: anyio.Event | None = None,
        then: Iterable[str] = (),
    ) -> ScriptStep:
        """Stream `pieces_before`, then wait (see `Pause`), then stream `then`."""
        return cls(pieces=(*pieces_before, Pause(seconds, event), *then))

    @classmethod
    def embedding(cls, *vectors: Sequence[float], input_tokens: int | None = None) -> ScriptStep:
        """An answer to an embedding request."""
        usage = Usage(input_tokens=input_tokens) if input_tokens is not None else None
        return cls(vectors=tuple(tuple(float(x) for x in v) for v in vectors), usage=usage)

    @property
    def joined_text(self) -> str:
        return "".join(p for p in self.pieces if isinstance(p, str))


class ScriptedProvider:
    """A provider that replays queued `ScriptStep`s and records every request it receives.

    `name` is the provider name it serves under (`"openai"`, `"anthropic"`, or `"scripted"`). With `clock`, pauses
    of a set length wait on that clock. An embedding request with no queued embedding step gets deterministic vectors
    (from a hash of each text) and an input count of one token per four characters.
    """

    def __init__(self, name: str = "scripted", *, clock: Clock | None = None, dimensions: int = 8) -> None:
        self.name = name
        self.clock = clock
        self.dimensions = dimensions
        self._steps: deque[ScriptStep] = deque()
        self.requests: list[ChatRequest] = []
        """Every chat request received, in order (each a copy taken on arrival)."""
        self.embedding_requests: list[EmbeddingRequest] = []
        self._served = 0

    def __repr__(self) -> str:
        return f"ScriptedProvider({self.name!r}, queued={len(self._steps)}, served={self._served})"

    # ------------------------------------------------------------------------------------------------ the script
    def enqueue(self, *steps: ScriptStep) -> ScriptedProvider:
        """Queue answers, in order. Returns the provider, for chaining."""
        for step in steps:
            if not isinstance(step, ScriptStep):
                raise TypeError(f"enqueue takes ScriptStep values, not {type(step).__name__}")
            self._steps.append(step)
        return self

    def enqueue_text(self, *texts: str) -> ScriptedProvider:
        """Queue one text answer per argument."""
        return self.enqueue(*(ScriptStep.text(t) for t in texts))

    @property
    def pending(self) -> int:
        """Steps still queued."""
        return len(self._steps)

    @property
    def served(self) -> int:
        """Requests answered (failures included)."""
        return self._served

    def assert_complete(self) -> None:
        """Fail (AssertionError) when queued steps were left unused: the code under test made fewer calls than scripted."""
        if self._steps:
            left = ", ".join(_describe(s) for s in self._steps)
            raise AssertionError(
                f"scripted provider {self.name!r}: {len(self._steps)} queued step(s) unused after {self._served} "
                f"request(s): {left}"
            )

    def _next(self, what: str) -> ScriptStep:
        if not self._steps:
            raise ProviderError(
                f"scripted provider has no queued answer for {what} (request {self._served + 1}); enqueue one",
                provider=self.name,
            )
        self._served += 1
        return self._steps.popleft()

    # --------------------------------------------------------------------------------------------------- chat
    async def send(self, request: ChatRequest) -> ChatResponse:
        step = self._take(request)
        await _checkpoint()
        if step.error is None:
            for piece in step.pieces:
                if type(piece) is not str:
                    break
            else:  # nothing to wait for and nothing to fail: the answer whole, as its events would build it
                return self._whole(step, request)
        accumulator = whole_answer_accumulator()  # the runtime's, so a cancelled call keeps what had arrived
        if any(isinstance(piece, Pause) for piece in step.pieces):  # waits on the way: the stream's own pace
            async for event in self._events(step, request):
                accumulator.add(event)
        else:
            add = accumulator.add
            for event in self._answer(step, request):
                add(event)
            if step.error is not None:
                raise step.error
        return response_from(accumulator, request.warnings)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        step = self._take(request)
        await _checkpoint()
        async for event in self._events(step, request):
            yield event

    def _take(self, request: ChatRequest) -> ScriptStep:
        """Keep a copy of the request (its message list too: the caller may add to it) and take the next step."""
        if type(request) is ChatRequest:
            kept = _copy_request(request)
        else:
            kept = copy.copy(request)
        kept.messages = list(request.messages)
        self.requests.append(kept)
        if self._steps:
            self._served += 1
            return self._steps.popleft()
        return self._next(f"model {request.model!r}")  # raises: nothing queued

    async def _events(self, step: ScriptStep, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """The step's events, waiting at its pauses; the step's error is raised after its text."""
        if not any(isinstance(piece, Pause) for piece in step.pieces):
            for event in self._answer(step, request):
                yield event
            if step.error is not None:
                raise step.error
            return
        yield self._start(step, request)
        started = False
        for piece in step.pieces:
            if isinstance(piece, Pause):
                await piece.wait(self.clock)
                continue
            if piece:
                started = True
                yield TextDelta(0, piece)
        if step.error is not None:
            raise step.error
        for event in self._ending(step, request, 1 if started else 0, []):
            yield event

    def _answer(self, step: ScriptStep, request: ChatRequest) -> list[StreamEvent]:
        """The events of a step without pauses, in order; for a failing step, those sent before it fails (the
        caller raises its error after them)."""
        events: list[StreamEvent] = [self._start(step, request)]
        started = False
        for piece in step.pieces:
            if piece:
                started = True
                events.append(TextDelta(0, piece))  # type: ignore[arg-type]  # no Pause in this step
        if step.error is not None:
            return events
        return self._ending(step, request, 1 if started else 0, events)

    def _whole(self, step: ScriptStep, request: ChatRequest) -> ChatResponse:
        """The response the events of a step without pauses or error make (`_answer`), built without them: one text
        part of the pieces, then the tool calls (placed after it), the usage and the finish reason."""
        model = step.model or request.model
        text = "".join(step.pieces)  # type: ignore[arg-type]  # no Pause in this step
        assistant: list[Part] = [TextPart(text, [])] if text else []
        calls: list[ToolCall] = []
        for call in step.tool_calls:  # each placed after the text (`after` None: after every assistant entry)
            arguments = call.arguments
            if type(arguments) is dict:  # its JSON text is always an object: what `parse_arguments` would give
                calls.append(ToolCall(id=call.id, tool=call.tool, inputs=_decode(_ENCODER.encode(arguments))))
            else:
                inputs, invalid = parse_arguments(call.arguments_text)
                calls.append(ToolCall(id=call.id, tool=call.tool, inputs=inputs, invalid_inputs=invalid))
        usage = None if step.usage is None else _named(step.usage, model)
        message = Message(assistant=assistant, tool_calls=calls, usage=usage, extra={})
        finish = step.finish_reason or ("tool_calls" if step.tool_calls else "stop")
        return whole_response(message, finish, model, f"scripted-{self._served}", request.warnings)

    def _start(self, step: ScriptStep, request: ChatRequest) -> MessageStart:
        return MessageStart(model=step.model or request.model, response_id=f"scripted-{self._served}")

    def _ending(
        self, step: ScriptStep, request: ChatRequest, index: int, events: list[StreamEvent]
    ) -> list[StreamEvent]:
        """`events` with what follows the text added: the tool calls, usage and `Done`."""
        for call in step.tool_calls:
            events.append(ToolCallStart(index, call.id, call.tool))
            events.append(ToolCallArgumentsDelta(index, call.arguments_text))
            events.append(ToolCallEnd(index))
            index += 1
        if step.usage is not None:
            events.append(UsageEvent(_named(step.usage, step.model or request.model)))
        events.append(Done(step.finish_reason or ("tool_calls" if step.tool_calls else "stop")))
        return events

    # ---------------------------------------------------------------------------------------------- embeddings
    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        self.embedding_requests.append(request)
        await _checkpoint()
        if self._steps and self._steps[0].vectors is not None:
            step = self._next(f"embeddings of {request.model!r}")
            if step.error is not None:
                raise step.error
            assert step.vectors is not None
            if len(step.vectors) != len(request.inputs):
                raise ProviderError(
                    f"scripted embedding step has {len(step.vectors)} vectors for {len(request.inputs)} inputs",
                    provider=self.name,
                )
            usage = step.usage or Usage(input_tokens=sum(_tokens(t) for t in request.inputs))
            return EmbeddingResponse([list(v) for v in step.vectors], usage.merge(Usage(model=request.model)))
        self._served += 1
        size = request.dimensions or self.dimensions
        vectors = [_vector(text, size) for text in request.inputs]
        usage = Usage(model=request.model, input_tokens=sum(_tokens(t) for t in request.inputs))
        return EmbeddingResponse(vectors, usage, model=request.model)


def _checkpoint() -> Awaitable[None]:
    """`anyio.lowlevel.checkpoint()`: under a running asyncio loop the one bare yield of the `asyncio.sleep(0)`
    anyio's asyncio backend awaits for it (other tasks run, a cancellation is seen), without asking anyio which
    library runs (every answer waits here); anything else (trio) goes through anyio."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.lowlevel.checkpoint()
    return _yield()


@types.coroutine
def _yield() -> Generator[None, None, None]:
    """What `asyncio.sleep(0)` awaits, without its coroutine around it: a bare yield, which the task running it takes
    as "run me again on the loop's next pass"."""
    yield


def _named(usage: Usage, model: str | None) -> Usage:
    """The step's usage naming the model that answered: `usage.merge(Usage(model=model))` without the empty report
    merged in (its lists and mappings copied, so the answer shares nothing with the step)."""
    return msgspec.structs.replace(
        usage,
        model=usage.model if model is None else model,
        counters=dict(usage.counters),
        cost_lines=list(usage.cost_lines),
        extra=dict(usage.extra),
    )


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def _vector(text: str, size: int) -> list[float]:
    digest = b""
    counter = 0
    while len(digest) < size:
        digest += hashlib.sha256(f"{counter}:{text}".encode()).digest()
        counter += 1
    raw = [(b - 127.5) / 127.5 for b in digest[:size]]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


def _describe(step: ScriptStep) -> str:
    if step.error is not None:
        return f"failure {type(step.error).__name__}"
    if step.vectors is not None:
        return f"embedding ({len(step.vectors)} vectors)"
    if step.tool_calls:
        return "tool calls " + ", ".join(c.tool for c in step.tool_calls)
    text = step.joined_text
    return f"text {text[:30]!r}" + ("..." if len(text) > 30 else "")
