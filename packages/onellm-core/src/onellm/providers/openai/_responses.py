"""The Responses codec (`/responses`), OpenAI's default protocol.

Stateless: `store: false` unless asked otherwise, and when reasoning is requested `include:
["reasoning.encrypted_content"]`, so reasoning items come back whole and are replayed verbatim (from
`ReasoningPart.data`) on the next turn, to OpenAI only; another provider's reasoning is left out. Function tools are
`function` items; OpenAI's free-text custom tools arrive as tool calls with `{"input": text}`; hosted tools
(`web_search`, `file_search`, `code_interpreter`, `image_generation`, `mcp`, ...) come back as hosted tool call parts
with the whole item kept for replay; an output item this codec does not know is kept as a provider part.

Whole and streamed answers build their message through the same events: text, refusals and argument text stream as
deltas; every other item arrives whole when it is done.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import msgspec

from onellm.errors import MalformedResponseError, ProviderError, UnsupportedParameterError
from onellm.messages import (
    Annotation,
    AnnotationEvent,
    AssetPart,
    CallWarning,
    Done,
    FileRefPart,
    HostedToolCallPart,
    JsonPart,
    Message,
    MessageAccumulator,
    MessageStart,
    Part,
    PartAdded,
    ProviderPart,
    ReasoningPart,
    RefusalDelta,
    RefusalPart,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    UsageEvent,
)
from onellm.providers._content import (
    asset_base64,
    asset_url,
    at_message,
    json_text,
    result_text,
    strict_schema,
    unsendable_user_part,
)
from onellm.providers._request import ChatRequest, ChatResponse
from onellm.providers._stream import response_from
from onellm.providers._wire import fragment, reused
from onellm.providers.openai._schema import for_openai

__all__ = ["ResponsesStreamDecoder", "decode_response", "encode_responses_request", "response_events"]

PROVIDER = "openai"
HOSTED_ITEMS = {
    "web_search_call": "web_search",
    "file_search_call": "file_search",
    "code_interpreter_call": "code_interpreter",
    "image_generation_call": "image_generation",
    "mcp_call": "mcp",
    "computer_call": "computer",
    "local_shell_call": "local_shell",
    "shell_call": "shell",
}


# -- request -------------------------------------------------------------------------------------------------------


def encode_responses_request(
    request: ChatRequest,
    *,
    stream: bool = False,
    store: bool = False,
    prompt_cache_options: bool = False,
    reuse: bool = False,
) -> tuple[dict[str, Any], list[CallWarning]]:
    """The `/responses` body for a request, and the codec's notices (the request is not changed).
    `prompt_cache_options`: the model takes a cache time to live as `prompt_cache_options.ttl` (its catalog property
    `promptCacheOptions`). `reuse`: each message's input items are encoded once while it is unchanged and sent as
    `msgspec.Raw` fragments (`providers._wire`)."""
    warnings: list[CallWarning] = []
    if request.stop_sequences:
        raise UnsupportedParameterError(
            "the Responses API takes no stop sequences; use Chat Completions for them",
            parameter="stop_sequences",
            model=request.model,
        )
    custom = {h.name for h in request.hosted_tools if h.type == "custom" and h.name}
    body: dict[str, Any] = {"model": request.model, "input": _input(request, custom, reuse)}
    if request.system:
        body["instructions"] = request.system
    if request.max_output_tokens is not None:
        body["max_output_tokens"] = request.max_output_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.top_p is not None:
        body["top_p"] = request.top_p
    tools: list[dict[str, Any]] = []
    for tool in request.tools:
        item: dict[str, Any] = {"type": "function", "name": tool.name}
        if tool.description:
            item["description"] = tool.description
        if tool.strict:
            schema, strict = strict_schema(tool.input_schema, for_openai, what=f"tool {tool.name!r}", warnings=warnings)
        else:
            schema, strict = dict(tool.input_schema), False
        item["parameters"] = schema
        item["strict"] = strict
        tools.append(item)
    for hosted in request.hosted_tools:
        item = {"type": hosted.type}
        if hosted.name and hosted.type == "custom":
            item["name"] = hosted.name
        item.update(hosted.options)
        tools.append(item)
    if tools:
        body["tools"] = tools
    if request.tool_choice is not None:
        choice = request.tool_choice
        if choice.mode == "tool":
            kind = "custom" if choice.tool in custom else "function"
            body["tool_choice"] = {"type": kind, "name": choice.tool}
        else:
            body["tool_choice"] = choice.mode
    if request.parallel_tool_calls is not None and tools:
        body["parallel_tool_calls"] = request.parallel_tool_calls
    if request.response_format is not None and request.response_format.type != "text":
        fmt = request.response_format
        if fmt.type == "json":
            body["text"] = {"format": {"type": "json_object"}}
        else:
            schema, strict = dict(fmt.schema or {}), False
            if fmt.strict:
                schema, strict = strict_schema(schema, for_openai, what="the answer's schema", warnings=warnings)
            body["text"] = {
                "format": {"type": "json_schema", "name": fmt.name or "output", "schema": schema, "strict": strict}
            }
    if request.reasoning is not None:
        reasoning: dict[str, Any] = {}
        if request.reasoning.effort is not None:
            reasoning["effort"] = request.reasoning.effort
        if request.reasoning.summary is not None:
            reasoning["summary"] = request.reasoning.summary
        if request.reasoning.budget_tokens is not None:
            warnings.append(
                CallWarning(
                    kind="parameter_stripped",
                    message="OpenAI takes no reasoning token budget; the budget was not sent (use an effort)",
                )
            )
        if reasoning:
            body["reasoning"] = reasoning
        if not store:
            body["include"] = ["reasoning.encrypted_content"]
    body["store"] = store
    if request.service_tier is not None:
        body["service_tier"] = request.service_tier
    if request.user_id is not None:
        body["safety_identifier"] = request.user_id
    if request.cache is not None:
        cache = request.cache
        if not cache.enabled:
            warnings.append(
                CallWarning(kind="parameter_stripped", message="prompt caching cannot be turned off on this API")
            )
        else:
            if cache.key is not None:
                if len(cache.key) > 64:
                    raise UnsupportedParameterError(
                        "the prompt cache key is longer than 64 characters",
                        parameter="prompt_cache_key",
                        model=request.model,
                    )
                body["prompt_cache_key"] = cache.key
            if cache.ttl is not None:
                seconds = cache.ttl.total_seconds()
                if prompt_cache_options:
                    body["prompt_cache_options"] = {"ttl": "12h" if seconds > 1800 else "30m"}
                elif seconds >= 3600:
                    body["prompt_cache_retention"] = "24h"
    if stream:
        body["stream"] = True
    body.update(request.extra_parameters)
    return body, warnings


def _input(request: ChatRequest, custom: set[str], reuse: bool) -> list[Any]:
    items: list[Any] = []
    for index, message in enumerate(request.messages):
        try:
            if not reuse:
                items += _message_items(message, custom)
                continue
            # a custom tool's calls are written their own way: the names of the request's custom tools are in the key
            key = ("openai-responses", tuple(sorted(custom)) if custom and message.tool_calls else ())
            items += reused(message, key, _fragments, custom)
        except UnsupportedParameterError as error:
            if error.parameter != "user":
                raise
            raise at_message(error, index) from None
    return items


def _fragments(message: Message, custom: set[str]) -> tuple[tuple[msgspec.Raw, ...], bool]:
    return tuple(fragment(item) for item in _message_items(message, custom)), True


def _message_items(message: Message, custom: set[str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if message.user:
        user = message.user
        if any(type(p) is ProviderPart for p in user):
            _user_items(user, items)
        else:
            items.append({"role": "user", "content": _user_content(user)})
    if message.assistant or message.tool_calls:
        _assistant_items(message, custom, items)
    return items


def _user_items(parts: list[Part], items: list[dict[str, Any]]) -> None:
    """A user side that holds items kept from OpenAI (`openai.<type>` provider parts, such as the `compaction` item of
    `/responses/compact`): those are sent verbatim, in their place; the parts between them as user messages."""
    plain: list[Part] = []
    for part in parts:
        item = replayed_item(part)
        if item is None:
            plain.append(part)
            continue
        if plain:
            items.append({"role": "user", "content": _user_content(plain)})
            plain = []
        items.append(item)
    if plain:
        items.append({"role": "user", "content": _user_content(plain)})


def replayed_item(part: Part) -> dict[str, Any] | None:
    """The input item a user-side provider part stands for, when it is one kept from OpenAI (type `openai.<item
    type>`, the item whole in `raw`)."""
    if type(part) is not ProviderPart:
        return None
    raw = part.raw
    if isinstance(raw, dict) and isinstance(raw.get("type"), str) and part.type == f"{PROVIDER}.{raw['type']}":
        return dict(raw)
    return None


def _user_content(parts: list[Part]) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and type(parts[0]) is TextPart:
        return parts[0].text
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            content.append({"type": "input_text", "text": part.text})
        elif isinstance(part, JsonPart):
            content.append({"type": "input_text", "text": json_text(part.json)})
        elif isinstance(part, AssetPart):
            media = (part.content_type or "").lower()
            if media.startswith("image/") or part.legacy == "image":
                content.append({"type": "input_image", "image_url": asset_url(part), "detail": "auto"})
            elif media.startswith("audio/") or part.legacy == "audio":
                fmt = "mp3" if media in ("audio/mpeg", "audio/mp3") else "wav"
                content.append(
                    {"type": "input_audio", "input_audio": {"data": asset_base64(part) or "", "format": fmt}}
                )
            else:
                content.append(
                    {"type": "input_file", "filename": part.name or "document.pdf", "file_data": asset_url(part)}
                )
        elif isinstance(part, FileRefPart):
            content.append({"type": "input_file", "file_id": part.file_ref})
        else:
            raise unsendable_user_part(part, "the OpenAI Responses API")
    return content


def _assistant_items(message: Message, custom: set[str], items: list[dict[str, Any]]) -> None:
    """The assistant side of a turn as input items, in the turn's order: text and refusals as assistant messages,
    OpenAI's own reasoning and hosted items verbatim, tool calls each followed by its output."""
    for entry in message.entries():
        if isinstance(entry, ToolCall):
            _call_items(entry, custom, items)
        elif isinstance(entry, TextPart):
            items.append({"role": "assistant", "content": entry.text})
        elif isinstance(entry, RefusalPart):
            items.append({"role": "assistant", "content": entry.refusal})
        elif isinstance(entry, ReasoningPart | HostedToolCallPart):
            if entry.provider == PROVIDER and isinstance(entry.data, dict) and "type" in entry.data:
                items.append(dict(entry.data))  # replayed verbatim, to OpenAI only
        elif isinstance(entry, ProviderPart):
            raw = entry.raw
            if isinstance(raw, dict) and raw.get("type") == entry.type:
                items.append(dict(raw))


def _call_items(call: ToolCall, custom: set[str], items: list[dict[str, Any]]) -> None:
    arguments = call.invalid_inputs if call.invalid_inputs is not None else json_text(call.inputs)
    call_id = call.id or ""
    if call.tool in custom:
        given = call.inputs.get("input")
        text = given if isinstance(given, str) else arguments
        items.append({"type": "custom_tool_call", "call_id": call_id, "name": call.tool, "input": text})
        if call.result is not None:
            items.append({"type": "custom_tool_call_output", "call_id": call_id, "output": result_text(call.result)})
        return
    items.append({"type": "function_call", "call_id": call_id, "name": call.tool, "arguments": arguments})
    if call.result is not None:
        items.append({"type": "function_call_output", "call_id": call_id, "output": result_text(call.result)})


# -- answers -------------------------------------------------------------------------------------------------------


class _Details(msgspec.Struct):
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None


class _Usage(msgspec.Struct):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int | None = None
    input_tokens_details: _Details | None = None
    output_tokens_details: _Details | None = None


class _Incomplete(msgspec.Struct):
    reason: str | None = None


class _Error(msgspec.Struct):
    message: str = ""
    code: str | None = None


class _Response(msgspec.Struct):
    id: str | None = None
    status: str | None = None
    model: str | None = None
    output: list[dict[str, Any]] = []
    usage: _Usage | None = None
    incomplete_details: _Incomplete | None = None
    error: _Error | None = None
    service_tier: str | None = None


_response_decoder = msgspec.json.Decoder(_Response, float_hook=Decimal)


def usage_from(wire: _Response) -> Usage | None:
    if wire.usage is None:
        return None
    details = wire.usage.input_tokens_details
    cached = (details.cached_tokens or 0) if details else 0
    written = (details.cache_write_tokens or 0) if details else 0
    counters: dict[str, int | Decimal] = {}
    out = wire.usage.output_tokens_details
    if out is not None and out.reasoning_tokens:
        counters["reasoningTokens"] = out.reasoning_tokens
    for item in wire.output:
        tool = HOSTED_ITEMS.get(str(item.get("type")))
        if tool is not None:
            key = f"toolCalls.{tool}"
            counters[key] = int(counters.get(key, 0)) + 1
    return Usage(
        model=wire.model,
        service_tier=wire.service_tier,
        input_tokens=max(0, wire.usage.input_tokens - cached - written),
        output_tokens=wire.usage.output_tokens,
        cache_creation_input_tokens=written,
        cache_read_input_tokens=cached,
        counters=counters,
    )


def _finish(wire: _Response, *, tool_called: bool, refused: bool) -> str:
    if wire.status == "incomplete":
        reason = wire.incomplete_details.reason if wire.incomplete_details else None
        if reason == "max_output_tokens":
            return "length"
        if reason == "content_filter":
            return "content_filter"
        return reason or "incomplete"
    if refused:
        return "refusal"
    if tool_called:
        return "tool_calls"
    return "stop"


def _annotation(data: Mapping[str, Any]) -> Annotation:
    known = {"type", "url", "title", "start_index", "end_index"}
    return Annotation(
        type=data.get("type"),
        url=data.get("url"),
        title=data.get("title"),
        start_index=data.get("start_index"),
        end_index=data.get("end_index"),
        extra={k: v for k, v in data.items() if k not in known},
    )


def whole_item_part(item: dict[str, Any]) -> Part:
    """An output item that arrives whole (reasoning, hosted tool calls, unknown items) as its part."""
    kind = str(item.get("type"))
    if kind == "reasoning":
        summary = "\n\n".join(s.get("text", "") for s in item.get("summary") or [] if isinstance(s, dict))
        text = "".join(c.get("text", "") for c in item.get("content") or [] if isinstance(c, dict))
        return ReasoningPart(text=text, provider=PROVIDER, display=summary or None, data=item)
    tool = HOSTED_ITEMS.get(kind)
    if tool is not None:
        inputs = {
            k: v for k, v in item.items() if k in ("action", "queries", "code", "arguments", "server_label", "name")
        }
        result = {k: v for k, v in item.items() if k in ("results", "outputs", "result", "output", "error")}
        return HostedToolCallPart(
            tool=tool,
            provider=PROVIDER,
            id=item.get("id"),
            status=item.get("status"),
            inputs=inputs or None,
            result=result or None,
            data=item,
        )
    return ProviderPart(type=kind, raw=item)


class _Blocks:
    """Event indexes for blocks, given in the order each block first appears."""

    __slots__ = ("_map",)

    def __init__(self) -> None:
        self._map: dict[tuple[int, int, str], int] = {}

    def get(self, output_index: int, content_index: int = 0, kind: str = "") -> tuple[int, bool]:
        key = (output_index, content_index, kind)
        found = self._map.get(key)
        if found is not None:
            return found, False
        index = self._map[key] = len(self._map)
        return index, True


def response_events(wire: _Response) -> list[StreamEvent]:
    """The events a whole response stands for, in the order its stream sends them."""
    if wire.status == "failed":
        raise ProviderError(wire.error.message if wire.error else "the response failed", provider=PROVIDER)
    events: list[StreamEvent] = [MessageStart(model=wire.model, response_id=wire.id)]
    blocks = _Blocks()
    tool_called = refused = False
    for position, item in enumerate(wire.output):
        kind = item.get("type")
        if kind == "message":
            for ci, content in enumerate(item.get("content") or []):
                if content.get("type") == "output_text":
                    index, _ = blocks.get(position, ci, "text")
                    if content.get("text"):
                        events.append(TextDelta(index, content["text"]))
                    events.extend(AnnotationEvent(index, _annotation(a)) for a in content.get("annotations") or [])
                elif content.get("type") == "refusal":
                    refused = True
                    index, _ = blocks.get(position, ci, "refusal")
                    events.append(RefusalDelta(index, content.get("refusal", "")))
        elif kind in ("function_call", "custom_tool_call"):
            tool_called = True
            index, _ = blocks.get(position, 0, "call")
            events.append(ToolCallStart(index, item.get("call_id"), str(item.get("name", ""))))
            text = item.get("arguments", "") if kind == "function_call" else json_text({"input": item.get("input", "")})
            if text:
                events.append(ToolCallArgumentsDelta(index, text))
            events.append(ToolCallEnd(index))
        else:
            index, _ = blocks.get(position, 0, "whole")
            events.append(PartAdded(index, whole_item_part(item)))
    usage = usage_from(wire)
    if usage is not None:
        events.append(UsageEvent(usage))
    events.append(Done(_finish(wire, tool_called=tool_called, refused=refused)))
    return events


def decode_response(body: bytes, *, warnings: list[CallWarning] | None = None) -> ChatResponse:
    try:
        wire = _response_decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise MalformedResponseError(f"the response does not decode: {error}", provider=PROVIDER) from error
    accumulator = MessageAccumulator()
    for event in response_events(wire):
        accumulator.add(event)
    return response_from(accumulator, warnings)


class _Event(msgspec.Struct):
    type: str
    output_index: int = 0
    content_index: int = 0
    delta: str | None = None
    item: dict[str, Any] | None = None
    annotation: dict[str, Any] | None = None
    response: _Response | None = None
    message: str | None = None
    code: str | None = None


_event_decoder = msgspec.json.Decoder(_Event, float_hook=Decimal)


def _decode_event(data: bytes) -> _Event:
    try:
        return _event_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise MalformedResponseError(f"a stream event does not decode: {error}", provider=PROVIDER) from error


_ANSWER_EVENTS = (
    "response.output_",
    "response.content_part.",
    "response.function_call_arguments.",
    "response.custom_tool_call_input.",
    "response.refusal.",
    "response.reasoning",
    "response.completed",
    "response.incomplete",
)
"""Events that carry the answer: before `response.created` they mean the stream is not the answer it claims to be."""


class ResponsesStreamDecoder:
    """Turns each server-sent event of a streamed response into stream events.

    An event whose `event:` name and data `type` disagree, and an event of the response before `response.created`,
    are `MalformedResponseError`.
    """

    __slots__ = ("_blocks", "_custom", "_refused", "_started", "_tool_called", "finished")

    def __init__(self) -> None:
        self._blocks = _Blocks()
        self._custom: dict[int, list[str]] = {}
        self._tool_called = False
        self._refused = False
        self._started = False
        self.finished = False

    def end(self) -> list[StreamEvent]:
        """The body ended before the response completed: the answer is not whole."""
        raise MalformedResponseError("the stream ended before the response completed", provider=PROVIDER)

    def feed(self, data: bytes, event_name: str | None = None) -> list[StreamEvent]:
        return self._event(_decode_event(data), event_name)

    def feed_batch(
        self, datas: list[bytes], names: list[str | None] | None, start: int, stop: int, out: list[StreamEvent]
    ) -> int:
        """Decode the events `start` to `stop` into `out`; stops after the response's end and returns where it
        stopped."""
        blocks = self._blocks
        decode = _event_decoder.decode
        for position in range(start, stop):
            data = datas[position]
            try:
                event = decode(data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                event = _decode_event(data)  # raises the error with its message
            name = None if names is None else names[position]
            kind = event.type
            if kind == "response.output_text.delta" and self._started and (name is None or name == kind):
                out.append(TextDelta(blocks.get(event.output_index, event.content_index, "text")[0], event.delta or ""))
                continue
            out += self._event(event, name)
            if self.finished:
                return position + 1
        return stop

    def _event(self, event: _Event, event_name: str | None) -> list[StreamEvent]:
        kind = event.type
        if event_name is not None and event_name != kind:
            raise MalformedResponseError(
                f"a stream event named {event_name!r} holds a {kind!r} event", provider=PROVIDER
            )
        if not self._started and kind.startswith(_ANSWER_EVENTS):
            raise MalformedResponseError(f"a {kind} event came before response.created", provider=PROVIDER)
        if kind == "response.output_text.delta":
            index, _ = self._blocks.get(event.output_index, event.content_index, "text")
            return [TextDelta(index, event.delta or "")]
        if kind == "response.function_call_arguments.delta":
            index, _ = self._blocks.get(event.output_index, 0, "call")
            return [ToolCallArgumentsDelta(index, event.delta or "")]
        if kind == "response.custom_tool_call_input.delta":
            self._custom.setdefault(event.output_index, []).append(event.delta or "")
            return []
        if kind == "response.refusal.delta":
            self._refused = True
            index, _ = self._blocks.get(event.output_index, event.content_index, "refusal")
            return [RefusalDelta(index, event.delta or "")]
        if kind == "response.output_text.annotation.added" and event.annotation is not None:
            index, _ = self._blocks.get(event.output_index, event.content_index, "text")
            return [AnnotationEvent(index, _annotation(event.annotation))]
        if kind == "response.output_item.added" and event.item is not None:
            item_kind = event.item.get("type")
            if item_kind in ("function_call", "custom_tool_call"):
                self._tool_called = True
                index, _ = self._blocks.get(event.output_index, 0, "call")
                return [ToolCallStart(index, event.item.get("call_id"), str(event.item.get("name", "")))]
            return []
        if kind == "response.output_item.done" and event.item is not None:
            return self._item_done(event.output_index, event.item)
        if kind == "response.created" and event.response is not None:
            if self._started:
                raise MalformedResponseError("a second response.created in one stream", provider=PROVIDER)
            self._started = True
            return [MessageStart(model=event.response.model, response_id=event.response.id)]
        if kind in ("response.completed", "response.incomplete") and event.response is not None:
            self.finished = True
            out: list[StreamEvent] = []
            usage = usage_from(event.response)
            if usage is not None:
                out.append(UsageEvent(usage))
            out.append(Done(_finish(event.response, tool_called=self._tool_called, refused=self._refused)))
            return out
        if kind == "response.failed":
            failure = event.response.error if event.response is not None else None
            raise ProviderError(failure.message if failure else "the response failed", provider=PROVIDER)
        if kind == "error":
            raise ProviderError(event.message or "the stream reported an error", provider=PROVIDER)
        return []

    def _item_done(self, position: int, item: dict[str, Any]) -> list[StreamEvent]:
        kind = item.get("type")
        if kind == "message":
            return []
        if kind == "function_call":
            index, _ = self._blocks.get(position, 0, "call")
            return [ToolCallEnd(index)]
        if kind == "custom_tool_call":
            index, _ = self._blocks.get(position, 0, "call")
            text = item.get("input")
            if not isinstance(text, str):
                text = "".join(self._custom.get(position, []))
            return [ToolCallArgumentsDelta(index, json_text({"input": text})), ToolCallEnd(index)]
        index, _ = self._blocks.get(position, 0, "whole")
        return [PartAdded(index, whole_item_part(item))]
