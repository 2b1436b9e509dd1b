"""What a provider is asked and what it answers: `ChatRequest` and `ChatResponse`, over the message model."""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from onellm.catalog import ModelProfile
    from onellm.messages import CallWarning, Message, Usage

__all__ = [
    "CacheOptions",
    "ChatRequest",
    "ChatResponse",
    "FinishReason",
    "HostedToolDefinition",
    "ReasoningOptions",
    "ResponseFormat",
    "ToolChoice",
    "ToolDefinition",
]


class FinishReason(enum.Enum):
    """Why the model stopped. Provider-specific reasons map onto these; `OTHER` keeps the provider's own word."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    REFUSAL = "refusal"
    PAUSE_TURN = "pause_turn"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A client tool offered to the model: its name, description and JSON Schema for the arguments."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool = False


@dataclass(frozen=True, slots=True)
class HostedToolDefinition:
    """A tool the provider runs itself (`web_search`, `code_interpreter`, `file_search`, ...), or OpenAI's free-text
    `custom` tool. `options` are the provider's own settings for it, sent as given."""

    type: str
    name: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolChoice:
    """`auto` (the default), `none`, `required`, or one named tool."""

    mode: str = "auto"
    tool: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("auto", "none", "required", "tool"):
            raise ValueError(f"tool choice mode must be auto, none, required or tool, not {self.mode!r}")
        if (self.mode == "tool") != (self.tool is not None):
            raise ValueError("a tool choice names a tool exactly when its mode is 'tool'")

    @classmethod
    def named(cls, tool: str) -> ToolChoice:
        return cls("tool", tool)


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """`text`, any JSON object (`json`), or a JSON Schema the answer must follow (`json_schema`)."""

    type: str = "text"
    schema: Mapping[str, Any] | None = None
    name: str | None = None
    strict: bool = True

    def __post_init__(self) -> None:
        if self.type not in ("text", "json", "json_schema"):
            raise ValueError(f"response format must be text, json or json_schema, not {self.type!r}")
        if (self.type == "json_schema") != (self.schema is not None):
            raise ValueError("a response format carries a schema exactly when its type is 'json_schema'")

    @classmethod
    def json_schema(cls, schema: Mapping[str, Any], *, name: str = "output", strict: bool = True) -> ResponseFormat:
        return cls("json_schema", schema, name, strict)


@dataclass(frozen=True, slots=True)
class ReasoningOptions:
    """Request-side reasoning controls: an effort name (`none`, `low`, `medium`, `high`, `xhigh`, or a provider's own
    such as `disabled`/`dynamic`), a token budget, and the summary the provider should return (`auto`, `detailed`)."""

    effort: str | None = None
    budget_tokens: int | None = None
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class CacheOptions:
    """Prompt caching: a cache key (OpenAI's `prompt_cache_key`), a time to live, or caching turned off."""

    enabled: bool = True
    key: str | None = None
    ttl: dt.timedelta | None = None


@dataclass(slots=True)
class ChatRequest:
    """One model call: the conversation as messages, and every option a provider may take."""

    model: str
    messages: list[Message]
    system: str | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop_sequences: list[str] = field(default_factory=list)
    tools: list[ToolDefinition] = field(default_factory=list)
    hosted_tools: list[HostedToolDefinition] = field(default_factory=list)
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None
    reasoning: ReasoningOptions | None = None
    cache: CacheOptions | None = None
    service_tier: str | None = None
    user_id: str | None = None
    extra_parameters: dict[str, Any] = field(default_factory=dict)
    """Top-level body fields sent as given, after everything else (they win over what the codec wrote)."""
    warnings: list[CallWarning] = field(default_factory=list)
    """Notices gathered while the request was adjusted. A provider never adds to them: its codec's own notices come
    back on the response (after these) or, for a stream, on the stream's `warnings`."""
    profile: ModelProfile | None = None
    """What the provider needs to know about the model (limits, schema form, thinking style, properties), from the
    catalog entry the runtime resolved (`ResolvedModel.profile`); None: the provider's own defaults."""


@dataclass(slots=True)
class ChatResponse:
    """A provider's answer: the assistant message (the turn's assistant side and tool calls), usage and why it ended."""

    message: Message
    usage: Usage | None
    finish_reason: FinishReason | None
    provider_finish_reason: str | None = None
    model: str | None = None
    id: str | None = None
    warnings: list[CallWarning] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
