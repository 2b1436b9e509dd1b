"""The message model: messages, parts, tool calls, usage and exact-decimal cost, stream events and the accumulator.

The file shape and the rules are those of `spec/messages.md`. Every object reads from and writes to plain data with
`from_data` / `to_data` (or `part_from_data` for a part), keeps unknown keys in `extra`, and round-trips losslessly:
`X.from_data(x.to_data()) == x`, and `X.from_data(d).to_data() == d` for data in the spec's shape, key order included.
"""

from onellm.messages._events import (
    AnnotationEvent,
    Done,
    HostedToolCallArgumentsDelta,
    HostedToolCallEnd,
    HostedToolCallStart,
    MessageAccumulator,
    MessageStart,
    PartAdded,
    ReasoningDelta,
    ReasoningEnd,
    RefusalDelta,
    StreamEvent,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    UsageEvent,
)
from onellm.messages._message import Message, MessageSource, ToolCall
from onellm.messages._parts import (
    LEGACY_MEDIA_KEYS,
    PART_KINDS,
    Annotation,
    AssetPart,
    FileRefPart,
    FromPart,
    HostedToolCallPart,
    JsonPart,
    Part,
    ProviderPart,
    ReasoningPart,
    RefusalPart,
    TextPart,
    part_from_data,
)
from onellm.messages._time import Timestamp
from onellm.messages._usage import CallWarning, Cost, CostLine, Usage, at_price_scale, format_money

__all__ = [
    "LEGACY_MEDIA_KEYS",
    "PART_KINDS",
    "Annotation",
    "AnnotationEvent",
    "AssetPart",
    "CallWarning",
    "Cost",
    "CostLine",
    "Done",
    "FileRefPart",
    "FromPart",
    "HostedToolCallArgumentsDelta",
    "HostedToolCallEnd",
    "HostedToolCallPart",
    "HostedToolCallStart",
    "JsonPart",
    "Message",
    "MessageAccumulator",
    "MessageSource",
    "MessageStart",
    "Part",
    "PartAdded",
    "ProviderPart",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningPart",
    "RefusalDelta",
    "RefusalPart",
    "StreamEvent",
    "TextDelta",
    "TextPart",
    "Timestamp",
    "ToolCall",
    "ToolCallArgumentsDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "Usage",
    "UsageEvent",
    "at_price_scale",
    "format_money",
    "part_from_data",
]
