"""The Chat Completions codec: a `ChatRequest` as a `/chat/completions` body, and the answer (whole or streamed) as
the message model. Used by `OpenAIProvider` on request and by `OpenAICompatibleProvider` for every server.

Request rules: the system prompt leads as a `system` message; each turn becomes its user message, then the assistant
message (text, refusal and tool calls), then one `tool` message per tool result in call order. Reasoning and hosted tool
calls have no place in this protocol and are left out of the history. Server quirks come from the catalog's provider
or preset `properties`: `toolChoiceRequired` (Mistral sends `any`), `streamUsage: false`, `supportsReasoningEffort:
false`, `supportsStructuredOutput: false`, `usageCost` (OpenRouter's `usage.cost` copied to `Usage.cost`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import msgspec

from onellm._public import publish as _publish
from onellm.errors import MalformedResponseError, ProviderError, UnsupportedParameterError
from onellm.messages import (
    Annotation,
    AnnotationEvent,
    AssetPart,
    CallWarning,
    Done,
    FileRefPart,
    JsonPart,
    Message,
    MessageAccumulator,
    MessageStart,
    ReasoningDelta,
    ReasoningEnd,
    RefusalDelta,
    RefusalPart,
    StreamEvent,
    TextDelta,
    TextPart,
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
from onellm.providers._request import ChatRequest, ChatResponse, FinishReason, ToolDefinition
from onellm.providers._stream import response_from
from onellm.providers._wire import fragment, reused
from onellm.providers.openai._schema import for_openai

__all__ = [
    "ChatFlavor",
    "ChatStreamDecoder",
    "completion_events",
    "decode_chat_completion",
    "encode_chat_request",
    "finish_reason",
    "response_from",
]


@dataclass(frozen=True, slots=True)
class ChatFlavor:
    """How one server speaks Chat Completions."""

    provider: str = "openai"
    first_party: bool = True
    """OpenAI itself: `max_completion_tokens`, `safety_identifier`, prompt cache options."""
    required_tool_choice: str = "required"
    stream_usage: bool = True
    reasoning_effort: bool = True
    structured_output: bool = True
    usage_cost: bool = False
    properties: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_properties(cls, provider: str, properties: Mapping[str, Any], *, first_party: bool) -> ChatFlavor:
        def flag(name: str, default: bool) -> bool:
            value = properties.get(name, default)
            return value if isinstance(value, bool) else default

        choice = properties.get("toolChoiceRequired", "required")
        return cls(
            provider=provider,
            first_party=first_party,
            required_tool_choice=choice if isinstance(choice, str) else "required",
            stream_usage=flag("streamUsage", True),
            reasoning_effort=flag("supportsReasoningEffort", True),
            structured_output=flag("supportsStructuredOutput", True),
            usage_cost=flag("usageCost", False),
            properties=dict(properties),
        )


_FINISH = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
}


def finish_reason(value: str | None) -> FinishReason | None:
    if value is None:
        return None
    return _FINISH.get(value, FinishReason.OTHER)


# -- request -------------------------------------------------------------------------------------------------------


def encode_chat_request(
    request: ChatRequest, flavor: ChatFlavor, *, stream: bool = False, reuse: bool = False
) -> tuple[dict[str, Any], list[CallWarning]]:
    """The request body as plain data, in the order the fields are documented, and the codec's notices (the request
    is not changed); raises `UnsupportedParameterError` for what the server cannot do at all. `reuse`: each message's
    wire messages are encoded once while it is unchanged and sent as `msgspec.Raw` fragments (`providers._wire`)."""
    warnings: list[CallWarning] = []
    body: dict[str, Any] = {"model": request.model, "messages": _messages(request, reuse)}
    if request.max_output_tokens is not None:
        body["max_completion_tokens" if flavor.first_party else "max_tokens"] = request.max_output_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if request.stop_sequences:
        body["stop"] = list(request.stop_sequences)
    if request.tools:
        body["tools"] = [_tool(t, warnings) for t in request.tools]
    warnings.extend(
        CallWarning(
            kind="parameter_stripped",
            message=f"hosted tool {hosted.type!r} is not available over Chat Completions and was not sent",
        )
        for hosted in request.hosted_tools
    )
    if request.tool_choice is not None:
        choice = request.tool_choice
        if choice.mode == "tool":
            body["tool_choice"] = {"type": "function", "function": {"name": choice.tool}}
        elif choice.mode == "required":
            body["tool_choice"] = flavor.required_tool_choice
        else:
            body["tool_choice"] = choice.mode
    if request.parallel_tool_calls is not None and request.tools:
        body["parallel_tool_calls"] = request.parallel_tool_calls
    if request.response_format is not None and request.response_format.type != "text":
        fmt = request.response_format
        if fmt.type == "json":
            body["response_format"] = {"type": "json_object"}
        else:
            if not flavor.structured_output:
                raise UnsupportedParameterError(
                    f"{flavor.provider} does not take a JSON schema for the answer; ask for JSON without one",
                    parameter="response_format",
                    model=request.model,
                )
            schema, strict = dict(fmt.schema or {}), False
            if fmt.strict:
                schema, strict = strict_schema(schema, for_openai, what="the answer's schema", warnings=warnings)
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": fmt.name or "output", "schema": schema, "strict": strict},
            }
    if request.reasoning is not None and request.reasoning.effort is not None:
        if flavor.reasoning_effort:
            body["reasoning_effort"] = request.reasoning.effort
        else:
            warnings.append(
                CallWarning(
                    kind="parameter_stripped",
                    message=f"{flavor.provider} takes no reasoning effort; 'reasoning_effort' was not sent",
                )
            )
    if request.service_tier is not None:
        body["service_tier"] = request.service_tier
    if request.user_id is not None:
        body["safety_identifier" if flavor.first_party else "user"] = request.user_id
    if request.cache is not None:
        _cache(body, request, flavor, warnings)
    if stream:
        body["stream"] = True
        if flavor.stream_usage:
            body["stream_options"] = {"include_usage": True}
    body.update(request.extra_parameters)
    return body, warnings


def _cache(body: dict[str, Any], request: ChatRequest, flavor: ChatFlavor, warnings: list[CallWarning]) -> None:
    cache = request.cache
    assert cache is not None
    if not cache.enabled:
        warnings.append(
            CallWarning(kind="parameter_stripped", message="prompt caching cannot be turned off on this API")
        )
        return
    if not flavor.first_party:
        return
    if cache.key is not None:
        if len(cache.key) > 64:
            raise UnsupportedParameterError(
                "the prompt cache key is longer than 64 characters", parameter="prompt_cache_key", model=request.model
            )
        body["prompt_cache_key"] = cache.key
    if cache.ttl is not None and cache.ttl.total_seconds() >= 3600:
        body["prompt_cache_retention"] = "24h"


def _tool(tool: ToolDefinition, warnings: list[CallWarning]) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    if tool.strict:
        schema, strict = strict_schema(tool.input_schema, for_openai, what=f"tool {tool.name!r}", warnings=warnings)
        function["parameters"] = schema
        if strict:
            function["strict"] = True
    else:
        function["parameters"] = dict(tool.input_schema)
    return {"type": "function", "function": function}


def _messages(request: ChatRequest, reuse: bool) -> list[Any]:
    out: list[Any] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for index, message in enumerate(request.messages):
        try:
            if reuse:
                out += reused(message, _KEY, _fragments)
            else:
                out += _wire_messages(message)
        except UnsupportedParameterError as error:
            if error.parameter != "user":
                raise
            raise at_message(error, index) from None
    return out


_KEY = ("openai-chat",)


def _fragments(message: Message) -> tuple[tuple[msgspec.Raw, ...], bool]:
    return tuple(fragment(wire) for wire in _wire_messages(message)), True


def _wire_messages(message: Message) -> list[dict[str, Any]]:
    """One turn's wire messages: the user's, the assistant's, then one per tool result."""
    out: list[dict[str, Any]] = []
    if message.user:
        out.append({"role": "user", "content": _user_content(message)})
    if message.assistant or message.tool_calls:
        out.append(_assistant(message))
        out.extend(
            {"role": "tool", "tool_call_id": call.id or "", "content": result_text(call.result)}
            for call in message.tool_calls
            if call.result is not None
        )
    return out


def _user_content(message: Message) -> str | list[dict[str, Any]]:
    parts = message.user
    if len(parts) == 1 and type(parts[0]) is TextPart:
        return parts[0].text
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, JsonPart):
            content.append({"type": "text", "text": json_text(part.json)})
        elif isinstance(part, AssetPart):
            content.append(_asset(part))
        elif isinstance(part, FileRefPart):
            content.append({"type": "file", "file": {"file_id": part.file_ref}})
        else:
            raise unsendable_user_part(part, "OpenAI Chat Completions")
    return content


def _asset(part: AssetPart) -> dict[str, Any]:
    media = (part.content_type or "").lower() or {"image": "image/", "audio": "audio/", "pdf": "application/pdf"}.get(
        part.legacy or "", ""
    )
    if media.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": asset_url(part)}}
    if media.startswith("audio/"):
        data = asset_base64(part) or ""
        audio_format = "mp3" if media in ("audio/mpeg", "audio/mp3") else "wav"
        return {"type": "input_audio", "input_audio": {"data": data, "format": audio_format}}
    return {"type": "file", "file": {"filename": part.name or "document.pdf", "file_data": asset_url(part)}}


def _assistant(message: Message) -> dict[str, Any]:
    text = "".join(p.text for p in message.assistant if isinstance(p, TextPart))
    refusal = "".join(p.refusal for p in message.assistant if isinstance(p, RefusalPart))
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if refusal:
        out["refusal"] = refusal
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id or "",
                "type": "function",
                "function": {
                    "name": call.tool,
                    "arguments": call.invalid_inputs if call.invalid_inputs is not None else json_text(call.inputs),
                },
            }
            for call in message.tool_calls
        ]
    return out


# -- whole response ------------------------------------------------------------------------------------------------


class _Function(msgspec.Struct):
    name: str = ""
    arguments: str = ""


class _ToolCall(msgspec.Struct):
    id: str = ""
    type: str = "function"
    function: _Function | None = None
    custom: dict[str, Any] | None = None


class _UrlCitation(msgspec.Struct):
    url: str | None = None
    title: str | None = None
    start_index: int | None = None
    end_index: int | None = None


class _Annotation(msgspec.Struct):
    type: str = ""
    url_citation: _UrlCitation | None = None


class _ChoiceMessage(msgspec.Struct):
    role: str = "assistant"
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCall] | None = None
    annotations: list[_Annotation] | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None


class _Choice(msgspec.Struct):
    index: int = 0
    message: _ChoiceMessage | None = None
    finish_reason: str | None = None


class _PromptDetails(msgspec.Struct):
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    audio_tokens: int | None = None


class _CompletionDetails(msgspec.Struct):
    reasoning_tokens: int | None = None
    audio_tokens: int | None = None
    accepted_prediction_tokens: int | None = None
    rejected_prediction_tokens: int | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int | None = None
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None
    cost: Decimal | None = None


class _Completion(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    choices: list[_Choice] = []
    usage: _Usage | None = None
    service_tier: str | None = None
    system_fingerprint: str | None = None


_decoder = msgspec.json.Decoder(_Completion, float_hook=Decimal)


def usage_from(wire: _Usage | None, *, model: str | None, service_tier: str | None, flavor: ChatFlavor) -> Usage | None:
    """Chat Completions usage in the message model: input excludes cache reads and writes; subsets as counters."""
    if wire is None:
        return None
    prompt = wire.prompt_tokens_details
    completion = wire.completion_tokens_details
    cached = (prompt.cached_tokens or 0) if prompt else 0
    written = (prompt.cache_write_tokens or 0) if prompt else 0
    counters: dict[str, int | Decimal] = {}
    if completion is not None:
        if completion.reasoning_tokens:
            counters["reasoningTokens"] = completion.reasoning_tokens
        if completion.audio_tokens:
            counters["outputAudioTokens"] = completion.audio_tokens
        if completion.accepted_prediction_tokens:
            counters["acceptedPredictionTokens"] = completion.accepted_prediction_tokens
        if completion.rejected_prediction_tokens:
            counters["rejectedPredictionTokens"] = completion.rejected_prediction_tokens
    if prompt is not None and prompt.audio_tokens:
        counters["inputAudioTokens"] = prompt.audio_tokens
    return Usage(
        model=model,
        service_tier=service_tier,
        input_tokens=max(0, wire.prompt_tokens - cached - written),
        output_tokens=wire.completion_tokens,
        cache_creation_input_tokens=written,
        cache_read_input_tokens=cached,
        cost=wire.cost if flavor.usage_cost and wire.cost is not None else None,
        counters=counters,
    )


def completion_events(wire: _Completion, flavor: ChatFlavor) -> list[StreamEvent]:
    """The events a whole answer stands for, in the order a stream of the same answer sends them, so both build
    their message through the one accumulator."""
    if not wire.choices or wire.choices[0].message is None:
        raise MalformedResponseError("the chat completion has no choices", provider=flavor.provider)
    choice = wire.choices[0]
    body = choice.message
    assert body is not None
    events: list[StreamEvent] = [MessageStart(model=wire.model, response_id=wire.id)]
    index = 0
    reasoning_text = body.reasoning_content or body.reasoning
    if reasoning_text:
        events.append(ReasoningDelta(index, reasoning_text))
        events.append(ReasoningEnd(index=index, provider=flavor.provider))
        index += 1
    if body.content:
        events.append(TextDelta(index, body.content))
        events.extend(AnnotationEvent(index, a) for a in _annotations(body.annotations))
        index += 1
    if body.refusal:
        events.append(RefusalDelta(index, body.refusal))
        index += 1
    for call in body.tool_calls or []:
        name, arguments = _call_name_and_arguments(call)
        events.append(ToolCallStart(index, call.id, name))
        if arguments:
            events.append(ToolCallArgumentsDelta(index, arguments))
        events.append(ToolCallEnd(index))
        index += 1
    usage = usage_from(wire.usage, model=wire.model, service_tier=wire.service_tier, flavor=flavor)
    if usage is not None:
        events.append(UsageEvent(usage))
    events.append(Done(_finish_name(choice.finish_reason, refused=bool(body.refusal))))
    return events


def _annotations(wire: list[_Annotation] | None) -> list[Annotation]:
    return [
        Annotation(
            type="url_citation",
            url=a.url_citation.url,
            title=a.url_citation.title,
            start_index=a.url_citation.start_index,
            end_index=a.url_citation.end_index,
        )
        for a in wire or []
        if a.url_citation is not None
    ]


def _call_name_and_arguments(call: _ToolCall) -> tuple[str, str]:
    if call.function is not None:
        return call.function.name, call.function.arguments
    if call.custom is not None:  # a free-text custom tool: its input is one string
        return str(call.custom.get("name", "")), json_text({"input": call.custom.get("input", "")})
    return "", ""


def _finish_name(value: str | None, *, refused: bool) -> str | None:
    reason = finish_reason(value)
    if reason is FinishReason.STOP and refused:
        return FinishReason.REFUSAL.value
    if reason is FinishReason.OTHER:
        return value
    return reason.value if reason is not None else None


def decode_chat_completion(
    body: bytes, flavor: ChatFlavor, *, warnings: list[CallWarning] | None = None
) -> ChatResponse:
    """A whole `/chat/completions` answer as a `ChatResponse`."""
    try:
        wire = _decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise MalformedResponseError(
            f"the chat completion does not decode: {error}", provider=flavor.provider
        ) from error
    accumulator = MessageAccumulator()
    for event in completion_events(wire, flavor):
        accumulator.add(event)
    return response_from(accumulator, warnings)


# -- streamed response ---------------------------------------------------------------------------------------------


class _ToolCallDelta(msgspec.Struct):
    index: int = 0
    id: str | None = None
    type: str | None = None
    function: _Function | None = None


class _Delta(msgspec.Struct):
    role: str | None = None
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    annotations: list[_Annotation] | None = None


class _ChunkChoice(msgspec.Struct):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None


class _ErrorBody(msgspec.Struct):
    message: str = ""
    code: str | int | None = None
    type: str | None = None


class _Chunk(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    choices: list[_ChunkChoice] = []
    usage: _Usage | None = None
    service_tier: str | None = None
    error: _ErrorBody | None = None


_chunk_decoder = msgspec.json.Decoder(_Chunk, float_hook=Decimal)


class ChatStreamDecoder:
    """Turns the data of each server-sent event of a streamed chat completion into stream events.

    Blocks get their event index in the order their first delta arrives: reasoning, text, refusal and each tool call
    (by the wire's own tool-call index). `[DONE]` ends the stream; an `error` object mid-stream is a `ProviderError`.
    """

    __slots__ = (
        "_blocks",
        "_finish",
        "_flavor",
        "_open_calls",
        "_refused",
        "_started",
        "_text",
        "_usage",
        "finished",
    )

    def __init__(self, flavor: ChatFlavor) -> None:
        self._flavor = flavor
        self._blocks: dict[tuple[str, int], int] = {}
        self._open_calls: list[int] = []
        self._started = False
        self._finish: str | None = None
        self._refused = False
        self._usage: Usage | None = None
        self._text: int | None = None  # the text block's index, once it has one
        self.finished = False

    def _index(self, kind: str, key: int = 0) -> tuple[int, bool]:
        slot = (kind, key)
        found = self._blocks.get(slot)
        if found is not None:
            return found, False
        index = len(self._blocks)
        self._blocks[slot] = index
        return index, True

    def feed(self, data: bytes, event: str | None = None) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        self.feed_batch([data], None, 0, 1, events)
        return events

    def feed_batch(
        self, datas: list[bytes], names: list[str | None] | None, start: int, stop: int, out: list[StreamEvent]
    ) -> int:
        """Decode the events `start` to `stop` into `out`; stops after `[DONE]` and returns where it stopped."""
        decode = _chunk_decoder.decode
        for position in range(start, stop):
            data = datas[position]
            if data == b"[DONE]":
                out += self.finish()
                return position + 1
            try:
                chunk = decode(data)
            except (msgspec.DecodeError, msgspec.ValidationError) as error:
                raise MalformedResponseError(
                    f"a streamed chunk does not decode: {error}", provider=self._flavor.provider
                ) from error
            choices = chunk.choices
            if self._text is not None and len(choices) == 1 and chunk.usage is None and chunk.error is None:
                # the common chunk: one more piece of text
                choice = choices[0]
                delta = choice.delta
                if (
                    choice.index == 0
                    and delta is not None
                    and delta.content
                    and choice.finish_reason is None
                    and not (
                        delta.reasoning_content
                        or delta.reasoning
                        or delta.annotations
                        or delta.refusal
                        or delta.tool_calls
                    )
                ):
                    out.append(TextDelta(self._text, delta.content))
                    continue
            self._chunk(chunk, out)
        return stop

    def _chunk(self, chunk: _Chunk, events: list[StreamEvent]) -> None:
        if chunk.error is not None:
            raise ProviderError(chunk.error.message or "the stream reported an error", provider=self._flavor.provider)
        if not self._started:
            self._started = True
            events.append(MessageStart(model=chunk.model, response_id=chunk.id))
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta is not None:
                self._delta(delta, events)
            if choice.finish_reason is not None:
                self._finish = choice.finish_reason
        if chunk.usage is not None:
            usage = usage_from(chunk.usage, model=chunk.model, service_tier=chunk.service_tier, flavor=self._flavor)
            if usage is not None:
                self._usage = usage
                events.append(UsageEvent(usage))

    def _delta(self, delta: _Delta, events: list[StreamEvent]) -> None:
        reasoning = delta.reasoning_content or delta.reasoning
        if reasoning:
            index, _ = self._index("reasoning")
            events.append(ReasoningDelta(index, reasoning))
        if delta.content:
            index, _ = self._index("text")
            self._text = index
            events.append(TextDelta(index, delta.content))
        if delta.annotations:
            index, _ = self._index("text")
            self._text = index
            events.extend(AnnotationEvent(index, a) for a in _annotations(delta.annotations))
        if delta.refusal:
            self._refused = True
            index, _ = self._index("refusal")
            events.append(RefusalDelta(index, delta.refusal))
        for call in delta.tool_calls or []:
            index, new = self._index("tool", call.index)
            if new:
                name = call.function.name if call.function is not None else ""
                events.append(ToolCallStart(index, call.id, name))
                self._open_calls.append(index)
            if call.function is not None and call.function.arguments:
                events.append(ToolCallArgumentsDelta(index, call.function.arguments))

    def end(self) -> list[StreamEvent]:
        """The body ended without `[DONE]`: the answer may be cut short."""
        raise MalformedResponseError("the stream ended without [DONE]", provider=self._flavor.provider)

    def finish(self) -> list[StreamEvent]:
        """End of the stream: close what is open, then `Done`. Called on `[DONE]`."""
        if self.finished:
            return []
        if not self._started:
            raise MalformedResponseError("the stream ended before any chunk", provider=self._flavor.provider)
        self.finished = True
        events: list[StreamEvent] = []
        if ("reasoning", 0) in self._blocks:
            events.append(ReasoningEnd(index=self._blocks[("reasoning", 0)], provider=self._flavor.provider))
        events.extend(ToolCallEnd(index) for index in self._open_calls)
        events.append(Done(_finish_name(self._finish, refused=self._refused)))
        return events


_publish("onellm.providers.openai", ChatFlavor)
