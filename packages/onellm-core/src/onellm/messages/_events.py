"""Stream events and the accumulator that builds a message from them (`spec/messages.md`, "Stream events").

A provider's stream becomes a sequence of typed events, each naming its content block by `index`. The accumulator
turns them into the same `Message` a non-streaming call builds:

- deltas for one index append in arrival order; a block's place in the turn is the order its first event arrived;
- tool call arguments are concatenated and parsed as JSON when the call ends; text that is not a JSON object is kept
  as `invalid_inputs`;
- usage events merge (a later non-zero counter replaces the earlier value); `Done` records the finish reason;
- the message id and timestamp stay empty for the runtime to stamp.

Text and argument deltas may be `str` or UTF-8 `bytes` (slices of the receive buffer); bytes are decoded once per
block at the end, so a character split across two deltas comes out whole.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any, TypeAlias

import msgspec

from onellm.errors import MalformedResponseError
from onellm.messages._message import Message, ToolCall
from onellm.messages._parts import Annotation, HostedToolCallPart, Part, ReasoningPart, RefusalPart, TextPart
from onellm.messages._usage import Usage

__all__ = [
    "AnnotationEvent",
    "Done",
    "HostedToolCallArgumentsDelta",
    "HostedToolCallEnd",
    "HostedToolCallStart",
    "MessageAccumulator",
    "MessageStart",
    "PartAdded",
    "ReasoningDelta",
    "ReasoningEnd",
    "RefusalDelta",
    "StreamEvent",
    "TextDelta",
    "ToolCallArgumentsDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "UsageEvent",
    "parse_arguments",
]


class MessageStart(msgspec.Struct, frozen=True, kw_only=True):
    """The provider started its answer."""

    model: str | None = None
    """The model that answers, as the provider names it."""
    response_id: str | None = None
    """The provider's id for the response (not the message id, which the runtime stamps)."""


class TextDelta(msgspec.Struct, frozen=True):
    """More text for the text block at `index`."""

    index: int
    text: str | bytes


class ReasoningDelta(msgspec.Struct, frozen=True):
    """More reasoning text for the reasoning block at `index`."""

    index: int
    text: str | bytes


class ReasoningEnd(msgspec.Struct, frozen=True, kw_only=True):
    """The reasoning block at `index` ended; carries the provider's opaque data (signature, encrypted content)."""

    index: int
    provider: str | None = None
    data: Any = None
    display: str | None = None


class RefusalDelta(msgspec.Struct, frozen=True):
    """More refusal text for the refusal block at `index`."""

    index: int
    text: str | bytes


class ToolCallStart(msgspec.Struct, frozen=True):
    """A client tool call starts at `index`."""

    index: int
    id: str | None
    tool: str


class ToolCallArgumentsDelta(msgspec.Struct, frozen=True):
    """More argument text (JSON, in pieces) for the tool call at `index`."""

    index: int
    text: str | bytes


class ToolCallEnd(msgspec.Struct, frozen=True):
    """The tool call at `index` is complete; its arguments are parsed now."""

    index: int


class HostedToolCallStart(msgspec.Struct, frozen=True, kw_only=True):
    """A tool the provider runs itself starts at `index`."""

    index: int
    tool: str
    id: str | None = None
    provider: str | None = None


class HostedToolCallArgumentsDelta(msgspec.Struct, frozen=True):
    """More input text (JSON, in pieces) for the hosted tool call at `index`."""

    index: int
    text: str | bytes


class HostedToolCallEnd(msgspec.Struct, frozen=True, kw_only=True):
    """The hosted tool call at `index` finished, with what the provider reports about it."""

    index: int
    status: str | None = None
    inputs: Any = None
    """Inputs given whole (used when no argument deltas came)."""
    result: Any = None
    cost: Decimal | None = None
    data: Any = None


class AnnotationEvent(msgspec.Struct, frozen=True):
    """An annotation (citation) for the text block at `index`."""

    index: int
    annotation: Annotation


class PartAdded(msgspec.Struct, frozen=True):
    """A whole part (asset, JSON, file reference, provider part, or a complete text) at `index`."""

    index: int
    part: Part


class UsageEvent(msgspec.Struct, frozen=True):
    """Usage so far; merged into what came before."""

    usage: Usage


class Done(msgspec.Struct, frozen=True):
    """The message is complete."""

    finish_reason: str | None = None
    """Why the model stopped: `stop`, `length`, `tool_calls`, `content_filter`, `refusal`, ..."""
    extra: dict[str, Any] | None = None
    """Extension data for the message (`Message.extra`), such as a provider's response fields it has no part for."""


StreamEvent: TypeAlias = (
    MessageStart
    | TextDelta
    | ReasoningDelta
    | ReasoningEnd
    | RefusalDelta
    | ToolCallStart
    | ToolCallArgumentsDelta
    | ToolCallEnd
    | HostedToolCallStart
    | HostedToolCallArgumentsDelta
    | HostedToolCallEnd
    | AnnotationEvent
    | PartAdded
    | UsageEvent
    | Done
)
"""Any stream event."""


_TEXT, _REASONING, _REFUSAL, _TOOL, _HOSTED, _PART = range(6)
_KIND_NAMES = ("text", "reasoning", "refusal", "tool call", "hosted tool call", "part")


class _Block:
    __slots__ = ("annotations", "ended", "fields", "kind", "part", "pieces")

    def __init__(self, kind: int) -> None:
        self.kind = kind
        self.pieces: list[str | bytes] = []
        self.annotations: list[Annotation] = []
        self.fields: dict[str, Any] = {}
        self.part: Part | None = None
        self.ended = False

    def text(self) -> str:
        pieces = self.pieces
        if not pieces:
            return ""
        try:
            return "".join(pieces)  # type: ignore[arg-type]  # text deltas, nearly always
        except TypeError:
            pass  # some are bytes
        out: list[str] = []
        run: list[bytes] = []
        for piece in pieces:
            if isinstance(piece, str):
                if run:
                    out.append(b"".join(run).decode("utf-8", "replace"))
                    run = []
                out.append(piece)
            else:
                run.append(piece)
        if run:
            out.append(b"".join(run).decode("utf-8", "replace"))
        return "".join(out)


_decode_json = msgspec.json.Decoder().decode


def parse_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """Tool call arguments: a JSON object becomes the inputs; anything else is kept as invalid inputs."""
    if not text.strip():
        return {}, None
    try:
        value = _decode_json(text)
    except msgspec.DecodeError:
        return {}, text
    if type(value) is not dict:
        return {}, text
    return value, None


class MessageAccumulator:
    """Builds a `Message` from stream events.

    ```python
    from onellm.messages import Done, MessageAccumulator, MessageStart, TextDelta

    acc = MessageAccumulator()
    for event in [MessageStart(), TextDelta(0, "Hel"), TextDelta(0, "lo"), Done("stop")]:
        acc.add(event)
    message = acc.message()
    ```
    """

    __slots__ = ("_blocks", "_done", "_extra", "_order", "finish_reason", "model", "response_id", "usage")

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._order: list[int] = []
        self._done = False
        self._extra: dict[str, Any] = {}
        self.usage: Usage | None = None
        """Usage merged from every usage event so far."""
        self.finish_reason: str | None = None
        """The finish reason `Done` carried."""
        self.model: str | None = None
        """The model `MessageStart` named."""
        self.response_id: str | None = None
        """The provider's response id from `MessageStart`."""

    @property
    def done(self) -> bool:
        """True once `Done` arrived."""
        return self._done

    def _block(self, index: int, kind: int) -> _Block:
        block = self._blocks.get(index)
        if block is None:
            block = _Block(kind)
            self._blocks[index] = block
            self._order.append(index)
        elif block.kind != kind:
            raise MalformedResponseError(
                f"stream block {index} is a {_KIND_NAMES[block.kind]} block; an event for a {_KIND_NAMES[kind]} "
                "block cannot use its index"
            )
        return block

    def add(self, event: StreamEvent) -> None:
        """Take one event.

        Raises:
            MalformedResponseError: an event uses an index already taken by a block of another kind, or arrives
                after `Done`.
        """
        if type(event) is TextDelta and not self._done:  # the common event: more text for a text block
            block = self._blocks.get(event.index)
            if block is not None and block.kind == _TEXT:
                block.pieces.append(event.text)
                return
        if self._done:
            raise MalformedResponseError(f"stream event {type(event).__name__} after Done")
        kind = type(event)
        take = _STEP.get(kind, _UNSEEN)
        if take is _UNSEEN:  # a subclass of a common kind takes its base's step; other kinds take the chain below
            take = _STEP[kind] = next((_TAKE[base] for base in kind.__mro__ if base in _TAKE), None)
        if take is not None:
            take(self, event)
            return
        if isinstance(event, ReasoningDelta):
            self._block(event.index, _REASONING).pieces.append(event.text)
        elif isinstance(event, RefusalDelta):
            self._block(event.index, _REFUSAL).pieces.append(event.text)
        elif isinstance(event, HostedToolCallArgumentsDelta):
            self._block(event.index, _HOSTED).pieces.append(event.text)
        elif isinstance(event, ReasoningEnd):
            block = self._block(event.index, _REASONING)
            block.ended = True
            if event.provider is not None:
                block.fields["provider"] = event.provider
            if event.data is not None:
                block.fields["data"] = event.data
            if event.display is not None:
                block.fields["display"] = event.display
        elif isinstance(event, HostedToolCallStart):
            block = self._block(event.index, _HOSTED)
            block.fields["tool"] = event.tool
            block.fields["id"] = event.id
            block.fields["provider"] = event.provider
        elif isinstance(event, HostedToolCallEnd):
            block = self._block(event.index, _HOSTED)
            block.ended = True
            for name in ("status", "inputs", "result", "cost", "data"):
                value = getattr(event, name)
                if value is not None:
                    block.fields[name] = value
        elif isinstance(event, AnnotationEvent):
            self._block(event.index, _TEXT).annotations.append(event.annotation)
        elif isinstance(event, PartAdded):
            block = self._block(event.index, _PART)
            if block.part is not None:
                raise MalformedResponseError(f"stream block {event.index} received a second whole part")
            block.part = event.part
        else:
            raise TypeError(f"not a stream event: {event!r}")

    def _take_text(self, event: TextDelta) -> None:
        self._block(event.index, _TEXT).pieces.append(event.text)

    def _take_arguments(self, event: ToolCallArgumentsDelta) -> None:
        self._block(event.index, _TOOL).pieces.append(event.text)

    def _take_call_start(self, event: ToolCallStart) -> None:
        fields = self._block(event.index, _TOOL).fields
        fields["id"] = event.id
        fields["tool"] = event.tool

    def _take_call_end(self, event: ToolCallEnd) -> None:
        self._block(event.index, _TOOL).ended = True

    def _take_usage(self, event: UsageEvent) -> None:
        self.usage = event.usage if self.usage is None else self.usage.merge(event.usage)

    def _take_start(self, event: MessageStart) -> None:
        self.model = event.model
        self.response_id = event.response_id

    def _take_done(self, event: Done) -> None:
        self.finish_reason = event.finish_reason
        if event.extra:
            self._extra.update(event.extra)
        self._done = True

    def add_many(self, events: list[StreamEvent]) -> tuple[int, Exception | None]:
        """Take `events` in order, each as `add` takes it. Returns how many were taken, and the error `add` raised
        for the next one when one was refused (the events before it are taken)."""
        blocks = self._blocks
        add = self.add
        for position, event in enumerate(events):
            if type(event) is TextDelta and not self._done:
                block = blocks.get(event.index)
                if block is not None and block.kind == _TEXT:
                    block.pieces.append(event.text)
                    continue
            try:
                add(event)
            except Exception as error:
                return position, error
        return len(events), None

    def message(self) -> Message:
        """The message built so far (complete once `Done` arrived). Id and timestamp are left empty."""
        usage = self.usage
        return self._message(None if usage is None else msgspec.structs.replace(usage))

    def _message(self, usage: Usage | None) -> Message:
        """`message()` with `usage` as its usage (the accumulator's own, uncopied, for a response made of it)."""
        assistant: list[Part] = []
        calls: list[ToolCall] = []
        for index in self._order:
            block = self._blocks[index]
            kind = block.kind
            if kind == _TEXT:
                assistant.append(TextPart(block.text(), list(block.annotations)))
            elif kind == _TOOL:
                inputs, invalid = parse_arguments(block.text())
                fields = block.fields
                tool = fields.get("tool")
                if tool is None:
                    raise MalformedResponseError(f"stream block {index}: tool call arguments without a ToolCallStart")
                calls.append(
                    ToolCall(
                        id=fields.get("id"),
                        tool=tool,
                        inputs=inputs,
                        invalid_inputs=invalid,
                        after=len(assistant),
                    )
                )
            elif kind == _REASONING:
                f = block.fields
                assistant.append(ReasoningPart(block.text(), f.get("provider"), f.get("display"), f.get("data")))
            elif kind == _REFUSAL:
                assistant.append(RefusalPart(block.text()))
            elif kind == _HOSTED:
                assistant.append(self._hosted(index, block))
            else:
                assert block.part is not None
                assistant.append(block.part)
        return Message(assistant=assistant, tool_calls=calls, usage=usage, extra=dict(self._extra))

    @staticmethod
    def _hosted(index: int, block: _Block) -> HostedToolCallPart:
        f = block.fields
        tool = f.get("tool")
        if tool is None:
            raise MalformedResponseError(f"stream block {index}: hosted tool call events without a start")
        inputs = f.get("inputs")
        if inputs is None and block.pieces:
            text = block.text()
            try:
                inputs = _decode_json(text)
            except msgspec.DecodeError:
                inputs = text
        return HostedToolCallPart(
            tool,
            f.get("provider"),
            f.get("id"),
            f.get("status"),
            inputs,
            f.get("result"),
            f.get("cost"),
            f.get("data"),
        )


_TAKE: dict[type, Callable[[MessageAccumulator, Any], None]] = {
    TextDelta: MessageAccumulator._take_text,
    ToolCallArgumentsDelta: MessageAccumulator._take_arguments,
    ToolCallStart: MessageAccumulator._take_call_start,
    ToolCallEnd: MessageAccumulator._take_call_end,
    UsageEvent: MessageAccumulator._take_usage,
    MessageStart: MessageAccumulator._take_start,
    Done: MessageAccumulator._take_done,
}
"""How `MessageAccumulator.add` takes the most common events, by their type (or a base's)."""
_STEP: dict[type, Any] = dict(_TAKE)
"""`_TAKE` by each event type seen, found through its bases; None for a type the chain in `add` takes."""
_UNSEEN = object()
