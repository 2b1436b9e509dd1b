"""The Anthropic Messages codec (`/v1/messages`), whole and streamed.

Requests: the system prompt as `system`; each message as a user turn (its content), an assistant turn (thinking,
text, tool use and server tool blocks in the turn's order) and a user turn of tool results; neighbouring turns of
the same role are joined. `Message.cache` puts `cache_control` on that message's last cacheable block (`ttl: "1h"`
when the request's cache time to live is an hour or more). `max_tokens` is required by the API: the request's, else
the caller's default (the catalog's `maxOutputTokens`). From `anthropic-version` 2026-10-21 on, the API rejects
`temperature`, `top_p` and `top_k`: the codec leaves them out with a `parameter_stripped` warning.

Answers: text blocks become text parts with their citations as annotations; `thinking` and `redacted_thinking` blocks
become reasoning parts (provider `anthropic`, `data` the block itself) that are replayed verbatim, to Anthropic only;
a server tool call (`server_tool_use` or `mcp_tool_use`) and its result block become one hosted tool call part whose
`data` holds both blocks for replay; a block this codec does not know is kept as a provider part and replayed as is.

Whole and streamed answers build their message through the same stream events, so both give the same message.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import msgspec

from onellm.errors import (
    BadRequestError,
    ContextOverflowError,
    MalformedResponseError,
    ProviderError,
    UnsupportedParameterError,
)
from onellm.messages import (
    Annotation,
    AnnotationEvent,
    AssetPart,
    CallWarning,
    Done,
    FileRefPart,
    HostedToolCallEnd,
    HostedToolCallPart,
    HostedToolCallStart,
    JsonPart,
    Message,
    MessageAccumulator,
    MessageStart,
    Part,
    PartAdded,
    ProviderPart,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningPart,
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
from onellm.providers._content import asset_base64, asset_media_type, json_text, result_text, strict_schema
from onellm.providers._errors import error_from_status
from onellm.providers._http import ErrorDetail
from onellm.providers._request import ChatRequest, ChatResponse
from onellm.providers._stream import response_from
from onellm.providers._wire import fragment, inner, reused
from onellm.providers.anthropic._schema import for_anthropic

__all__ = [
    "CITATION_TYPES",
    "DEFAULT_API_VERSION",
    "PROVIDER",
    "SAMPLING_CUTOFF_VERSION",
    "MessagesStreamDecoder",
    "classify_error",
    "count_tokens_body",
    "decode_message",
    "encode_messages_request",
    "message_events",
    "usage_from",
]

PROVIDER = "anthropic"
DEFAULT_API_VERSION = "2026-10-21"
SAMPLING_CUTOFF_VERSION = "2026-10-21"
"""`anthropic-version` values from this date on reject `temperature`, `top_p` and `top_k`."""

DEFAULT_SERVER_TOOL_VERSIONS = {
    "web_search": "web_search_20250305",
    "web_fetch": "web_fetch_20250910",
    "code_execution": "code_execution_20250825",
}
"""The tool type sent for a hosted tool named without a version (a versioned type such as `web_search_20260318` is
sent as given)."""

CITATION_TYPES = frozenset(
    {
        "char_location",
        "page_location",
        "content_block_location",
        "web_search_result_location",
        "search_result_location",
    }
)
"""Anthropic's citation types: annotations of these types are sent back with their text; others (another
provider's URL citations) are not."""

_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "pause_turn": "pause_turn",
    "refusal": "refusal",
}
_SERVER_CALLS = frozenset({"server_tool_use", "mcp_tool_use"})
_REASONING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
_COUNT_TOKENS_FIELDS = (
    "model",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
    "output_config",
    "cache_control",
)
_CACHEABLE_SKIP = frozenset({"thinking", "redacted_thinking"})
_DELTA_KINDS = frozenset({"text", "tool_use", "thinking", "server_tool_use", "mcp_tool_use"})
_CONTEXT_MARKERS = ("exceed context limit", "prompt is too long", "context window")


# -- request -------------------------------------------------------------------------------------------------------


def _version_rejects_sampling(api_version: str) -> bool:
    # ISO dates compare as text; anything else (a gateway's own version word) keeps the old behaviour.
    return len(api_version) == 10 and api_version[4] == "-" and api_version >= SAMPLING_CUTOFF_VERSION


def encode_messages_request(
    request: ChatRequest,
    *,
    max_tokens: int,
    api_version: str = DEFAULT_API_VERSION,
    stream: bool = False,
    reuse: bool = False,
) -> tuple[dict[str, Any], list[CallWarning]]:
    """The `/v1/messages` body for a request, and the codec's notices (stripped parameters, strict mode turned off).
    The request is not changed. `reuse`: each message's content blocks are encoded once while it is unchanged and
    sent as `msgspec.Raw` fragments (`providers._wire`)."""
    warnings: list[CallWarning] = []
    cache_control = _cache_control(request)
    body: dict[str, Any] = {"model": request.model, "max_tokens": request.max_output_tokens or max_tokens}
    body["messages"] = _messages(request, cache_control, warnings, reuse)
    if request.system:
        body["system"] = request.system
    strip_sampling = _version_rejects_sampling(api_version)
    for name, value in (("temperature", request.temperature), ("top_p", request.top_p)):
        if value is None:
            continue
        if strip_sampling:
            _stripped(warnings, name, api_version)
        else:
            body[name] = value
    if request.stop_sequences:
        body["stop_sequences"] = list(request.stop_sequences)
    tools = _tools(request, warnings)
    if tools:
        body["tools"] = tools
    choice = _tool_choice(request, has_tools=bool(tools))
    if choice is not None:
        body["tool_choice"] = choice
    output_config: dict[str, Any] = {}
    thinking = _thinking(request, output_config)
    if thinking is not None:
        body["thinking"] = thinking
    _response_format(request, output_config, warnings)
    if output_config:
        body["output_config"] = output_config
    if request.cache is not None:
        cache = request.cache
        if cache.enabled:
            body["cache_control"] = cache_control
        if cache.key is not None:
            warnings.append(
                CallWarning(
                    kind="parameter_stripped",
                    message="Anthropic takes no prompt cache key; the key was not sent",
                    detail={"parameter": "cache.key"},
                )
            )
    if request.service_tier is not None:
        body["service_tier"] = request.service_tier
    if request.user_id is not None:
        body["metadata"] = {"user_id": request.user_id}
    if stream:
        body["stream"] = True
    for key, value in request.extra_parameters.items():
        if strip_sampling and key in ("temperature", "top_p", "top_k"):
            _stripped(warnings, key, api_version)
            continue
        body[key] = value
    return body, warnings


def count_tokens_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """The `/v1/messages/count_tokens` body: the fields of a messages body that endpoint takes."""
    return {key: body[key] for key in _COUNT_TOKENS_FIELDS if key in body}


def _stripped(warnings: list[CallWarning], name: str, api_version: str) -> None:
    warnings.append(
        CallWarning(
            kind="parameter_stripped",
            message=f"anthropic-version {api_version} rejects {name}; it was not sent",
            detail={"parameter": name, "apiVersion": api_version},
        )
    )


def _cache_control(request: ChatRequest) -> dict[str, Any]:
    control: dict[str, Any] = {"type": "ephemeral"}
    ttl = request.cache.ttl if request.cache is not None else None
    if ttl is not None and ttl >= dt.timedelta(hours=1):
        control["ttl"] = "1h"
    return control


def _tools(request: ChatRequest, warnings: list[CallWarning]) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for tool in request.tools:
        item: dict[str, Any] = {"name": tool.name}
        if tool.description:
            item["description"] = tool.description
        schema: Mapping[str, Any] = tool.input_schema
        strict = False
        if tool.strict:
            schema, strict = strict_schema(schema, for_anthropic, what=f"tool {tool.name!r}", warnings=warnings)
        item["input_schema"] = dict(schema)
        if strict:
            item["strict"] = True
        tools.append(item)
    for hosted in request.hosted_tools:
        kind = DEFAULT_SERVER_TOOL_VERSIONS.get(hosted.type, hosted.type)
        base = hosted.type if hosted.type in DEFAULT_SERVER_TOOL_VERSIONS else _unversioned(hosted.type)
        item = {"type": kind, "name": hosted.name or base}
        item.update(hosted.options)
        tools.append(item)
    return tools


def _unversioned(kind: str) -> str:
    """`web_search_20260318` -> `web_search`: the tool name the API expects for a versioned server tool type."""
    head, _, tail = kind.rpartition("_")
    return head if head and len(tail) == 8 and tail.isdigit() else kind


def _tool_choice(request: ChatRequest, *, has_tools: bool) -> dict[str, Any] | None:
    choice = request.tool_choice
    out: dict[str, Any] | None = None
    if choice is not None:
        if choice.mode == "tool":
            out = {"type": "tool", "name": choice.tool}
        else:
            out = {"type": {"auto": "auto", "none": "none", "required": "any"}[choice.mode]}
    if request.parallel_tool_calls is False and has_tools:
        out = out or {"type": "auto"}
        if out["type"] != "none":
            out["disable_parallel_tool_use"] = True
    return out


def _thinking(request: ChatRequest, output_config: dict[str, Any]) -> dict[str, Any] | None:
    options = request.reasoning
    if options is None:
        return None
    effort = options.effort
    if effort in ("none", "disabled"):
        return {"type": "disabled"}
    thinking: dict[str, Any]
    if options.budget_tokens is not None:
        thinking = {"type": "enabled", "budget_tokens": options.budget_tokens}
    elif effort is not None or options.summary is not None:
        thinking = {"type": "adaptive"}
    else:
        return None
    if effort is not None and effort != "dynamic":
        output_config["effort"] = effort
    if options.summary is not None:
        thinking["display"] = "omitted" if options.summary in ("none", "omitted") else "summarized"
    return thinking


def _response_format(request: ChatRequest, output_config: dict[str, Any], warnings: list[CallWarning]) -> None:
    fmt = request.response_format
    if fmt is None or fmt.type == "text":
        return
    if fmt.type == "json":
        raise UnsupportedParameterError(
            "Anthropic has no free-form JSON mode; give a JSON schema (ResponseFormat.json_schema)",
            parameter="response_format",
            model=request.model,
        )
    converted = for_anthropic(fmt.schema or {})
    if not converted.strict:
        raise UnsupportedParameterError(
            f"the output schema does not fit Anthropic's structured output: {converted.reason}",
            parameter="response_format",
            model=request.model,
        )
    if converted.removed:
        warnings.append(
            CallWarning(
                kind="parameter_stripped",
                message=f"the answer's schema: structured output takes no {', '.join(converted.removed)}; removed",
            )
        )
    output_config["format"] = {"type": "json_schema", "schema": converted.schema}


def _messages(
    request: ChatRequest, cache_control: dict[str, Any], warnings: list[CallWarning], reuse: bool
) -> list[dict[str, Any]]:
    """The wire messages: each turn's blocks in order (its user blocks, its assistant blocks, the results of its tool
    calls), a block joining the last message when it has the same role. One plain text block is sent as a string,
    as the API's own examples do."""
    caching = request.cache is None or request.cache.enabled
    control = _ENCODE(cache_control)
    out: list[dict[str, Any]] = []
    role: str | None = None
    content: list[tuple[Any, Any]] = []
    for position, message in enumerate(request.messages):
        marked = message.cache and caching
        blocks: Sequence[tuple[str, Any, Any]]
        if reuse:
            key = ("anthropic", control if marked else None)
            blocks = reused(message, key, _fragments, position, cache_control, marked, warnings)
        else:
            blocks = _message_blocks(message, position, cache_control, marked, warnings)
        for block_role, block, text in blocks:
            if block_role != role:
                role = block_role
                content = []
                out.append({"role": role, "content": content})
            content.append((block, text))
    for wire in out:
        pairs = wire["content"]
        if len(pairs) == 1 and pairs[0][1] is not None:
            wire["content"] = pairs[0][1]
        else:
            wire["content"] = [block for block, _ in pairs]
    return out


_ENCODE = msgspec.json.Encoder(decimal_format="number").encode


def _fragments(
    message: Message, position: int, cache_control: dict[str, Any], marked: bool, warnings: list[CallWarning]
) -> tuple[tuple[tuple[str, msgspec.Raw, msgspec.Raw | None], ...], bool]:
    """`_message_blocks` encoded, and whether they may be kept (not when a block was left out with a notice)."""
    given = len(warnings)
    blocks = _message_blocks(message, position, cache_control, marked, warnings)
    encoded = []
    for role, block, text in blocks:
        raw = fragment(block)
        alone = None
        if text is not None:  # the text's JSON inside the block's, as a string of its own: the same bytes, shared
            alone = inner(raw, _TEXT_BLOCK_HEAD, b"}") or fragment(text)
        encoded.append((role, raw, alone))
    return tuple(encoded), len(warnings) == given


_TEXT_BLOCK_HEAD = b'{"type":"text","text":'


def _message_blocks(
    message: Message, position: int, cache_control: dict[str, Any], marked: bool, warnings: list[CallWarning]
) -> list[tuple[str, dict[str, Any], str | None]]:
    """One turn's blocks in order as (role, block, the block's text when it is plain text and may stand alone)."""
    produced: list[tuple[str, dict[str, Any]]] = []
    if message.user:
        produced.extend(
            ("user", _user_block(part, f"messages[{position}].user[{i}]")) for i, part in enumerate(message.user)
        )
    if message.assistant or message.tool_calls:
        assistant, results = _assistant_blocks(message, position, warnings)
        produced.extend(("assistant", block) for block in assistant)
        produced.extend(("user", block) for block in results)
    if marked:
        for _, block in reversed(produced):
            if block.get("type") not in _CACHEABLE_SKIP:
                block["cache_control"] = dict(cache_control)
                break
    return [
        (role, block, block["text"] if block.get("type") == "text" and len(block) == 2 else None)
        for role, block in produced
    ]


def _user_block(part: Part, path: str) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, JsonPart):
        return {"type": "text", "text": json_text(part.json)}
    if isinstance(part, AssetPart):
        return _asset_block(part, path)
    if isinstance(part, FileRefPart):
        media = (part.content_type or "").lower()
        kind = "image" if media.startswith("image/") else "document"
        block: dict[str, Any] = {"type": kind, "source": {"type": "file", "file_id": part.file_ref}}
        if kind == "document" and part.name:
            block["title"] = part.name
        return block
    if isinstance(part, ProviderPart) and isinstance(part.raw, dict) and part.raw.get("type") == part.type:
        return dict(part.raw)
    raise UnsupportedParameterError(
        f"{path}: a {part.kind} part cannot be sent to Anthropic as user content", parameter=path
    )


def _asset_block(part: AssetPart, path: str) -> dict[str, Any]:
    media = asset_media_type(part).lower()
    data = part.data if part.legacy is None else part.legacy_media
    url = data if isinstance(data, str) and data.startswith(("http://", "https://")) else None
    if url is None and isinstance(data, dict) and isinstance(data.get("url"), str):
        url = data["url"]
    if media.startswith("image/"):
        kind = "image"
    elif media == "application/pdf" or media.startswith("text/"):
        kind = "document"
    else:
        raise UnsupportedParameterError(
            f"{path}: Anthropic takes images, PDFs and plain text, not {media}", parameter=path
        )
    if url is not None:
        block: dict[str, Any] = {"type": kind, "source": {"type": "url", "url": url}}
    else:
        encoded = asset_base64(part)
        if encoded is None:
            raise UnsupportedParameterError(
                f"{path}: asset {part.name or part.key or '(unnamed)'} has no inline content: load it from the asset "
                "store before sending",
                parameter=path,
            )
        if media.startswith("text/"):
            import base64

            text = base64.b64decode(encoded).decode("utf-8", "replace")
            block = {"type": kind, "source": {"type": "text", "media_type": "text/plain", "data": text}}
        else:
            block = {"type": kind, "source": {"type": "base64", "media_type": media, "data": encoded}}
    if kind == "document" and part.name:
        block["title"] = part.name
    return block


def _assistant_blocks(
    message: Message, position: int, warnings: list[CallWarning]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The assistant side of a turn in its order, and the tool results that answer its calls. Media the model made
    cannot be sent back in an assistant turn: it is left out with a warning."""
    blocks: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for entry in message.entries():
        if isinstance(entry, ToolCall):
            blocks.append({"type": "tool_use", "id": entry.id or "", "name": entry.tool, "input": _call_input(entry)})
            if entry.result is not None:
                results.append(_tool_result(entry))
        elif isinstance(entry, TextPart):
            if entry.text:
                block: dict[str, Any] = {"type": "text", "text": entry.text}
                if entry.annotations and all(a.type in CITATION_TYPES for a in entry.annotations):
                    block["citations"] = [_citation(a) for a in entry.annotations]
                blocks.append(block)
        elif isinstance(entry, RefusalPart):
            if entry.refusal:
                blocks.append({"type": "text", "text": entry.refusal})
        elif isinstance(entry, JsonPart):
            blocks.append({"type": "text", "text": json_text(entry.json)})
        elif isinstance(entry, ReasoningPart):
            data = entry.data
            if entry.provider == PROVIDER and isinstance(data, dict) and data.get("type") in _REASONING_BLOCKS:
                blocks.append(dict(data))  # replayed verbatim, to Anthropic only
        elif isinstance(entry, HostedToolCallPart):
            if entry.provider == PROVIDER and isinstance(entry.data, list):
                blocks.extend(dict(b) for b in entry.data if isinstance(b, dict) and "type" in b)
        elif isinstance(entry, ProviderPart):
            raw = entry.raw
            if isinstance(raw, dict) and raw.get("type") == entry.type:
                blocks.append(dict(raw))
        elif isinstance(entry, AssetPart | FileRefPart):
            warnings.append(
                CallWarning(
                    kind="content_omitted",
                    message=f"messages[{position}]: Anthropic takes no {entry.kind} part in an assistant turn; "
                    "it was left out",
                    detail={"message": position, "part": entry.kind},
                )
            )
    return blocks, results


def _call_input(call: ToolCall) -> Any:
    if call.invalid_inputs is None:
        return call.inputs
    # The model sent text that is not a JSON object; the API takes an object, so the text is kept under one key.
    return {"invalid_input": call.invalid_inputs}


def _tool_result(call: ToolCall) -> dict[str, Any]:
    parts = call.result or []
    content: str | list[dict[str, Any]]
    if all(isinstance(p, TextPart | JsonPart | RefusalPart) for p in parts):
        content = result_text(parts)
    else:
        content = []
        for i, part in enumerate(parts):
            if isinstance(part, AssetPart):
                content.append(_asset_block(part, f"toolCall[{call.id}].result[{i}]"))
            else:
                content.append({"type": "text", "text": result_text([part])})
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id or "", "content": content}
    if call.is_error:
        block["is_error"] = True
    return block


def _citation(annotation: Annotation) -> dict[str, Any]:
    out: dict[str, Any] = {"type": annotation.type}
    if annotation.url is not None:
        out["url"] = annotation.url
    if annotation.title is not None:
        out["title"] = annotation.title
    out.update(annotation.extra)
    return out


# -- answers -------------------------------------------------------------------------------------------------------


class _CacheCreation(msgspec.Struct):
    ephemeral_5m_input_tokens: int = 0
    ephemeral_1h_input_tokens: int = 0


class _OutputDetails(msgspec.Struct):
    thinking_tokens: int = 0


class _Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation: _CacheCreation | None = None
    server_tool_use: dict[str, Any] | None = None
    output_tokens_details: _OutputDetails | None = None
    service_tier: str | None = None


class _Message(msgspec.Struct):
    id: str | None = None
    type: str = "message"
    model: str | None = None
    content: list[dict[str, Any]] = []
    stop_reason: str | None = None
    stop_sequence: str | None = None
    stop_details: dict[str, Any] | None = None
    usage: _Usage | None = None
    container: Any = None
    context_management: Any = None


_message_decoder = msgspec.json.Decoder(_Message, float_hook=Decimal)


def usage_from(wire: _Usage | None, model: str | None) -> Usage | None:
    """Anthropic's usage in onellm's terms. `input_tokens` already leaves out cache reads and writes; the two cache
    write lifetimes become the counters `cacheCreation5mInputTokens` and `cacheCreation1hInputTokens` (both inside
    `cacheCreationInputTokens`), server tool requests become `toolCalls.<tool>`, thinking tokens `reasoningTokens`."""
    if wire is None:
        return None
    counters: dict[str, int | Decimal] = {}
    creation = wire.cache_creation
    if creation is not None:
        if creation.ephemeral_5m_input_tokens:
            counters["cacheCreation5mInputTokens"] = creation.ephemeral_5m_input_tokens
        if creation.ephemeral_1h_input_tokens:
            counters["cacheCreation1hInputTokens"] = creation.ephemeral_1h_input_tokens
    if wire.output_tokens_details is not None and wire.output_tokens_details.thinking_tokens:
        counters["reasoningTokens"] = wire.output_tokens_details.thinking_tokens
    for key, value in (wire.server_tool_use or {}).items():
        if isinstance(value, int) and value and key.endswith("_requests"):
            counters[f"toolCalls.{key[: -len('_requests')]}"] = value
    return Usage(
        model=model,
        service_tier=wire.service_tier,
        input_tokens=wire.input_tokens or 0,
        output_tokens=wire.output_tokens or 0,
        cache_creation_input_tokens=wire.cache_creation_input_tokens or 0,
        cache_read_input_tokens=wire.cache_read_input_tokens or 0,
        counters=counters,
    )


def finish_reason(stop_reason: str | None) -> str | None:
    """onellm's finish reason for an Anthropic `stop_reason` (an unknown one passes through as given)."""
    if stop_reason is None:
        return None
    return _STOP_REASONS.get(stop_reason, stop_reason)


def _annotation(citation: Mapping[str, Any]) -> Annotation:
    known = ("type", "url", "title")
    return Annotation(
        type=citation.get("type"),
        url=citation.get("url"),
        title=citation.get("title"),
        extra={k: v for k, v in citation.items() if k not in known},
    )


def _hosted_status(result: Mapping[str, Any]) -> str:
    content = result.get("content")
    if result.get("is_error") is True:
        return "failed"
    if isinstance(content, dict) and str(content.get("type", "")).endswith("_error"):
        return "failed"
    return "completed"


class _Blocks:
    """What both paths share: server tool calls wait for their result block, then become one hosted tool call."""

    __slots__ = ("pending",)

    def __init__(self) -> None:
        self.pending: dict[str, tuple[int, dict[str, Any]]] = {}

    def server_call(self, index: int, block: dict[str, Any]) -> list[StreamEvent]:
        call_id = block.get("id")
        self.pending[str(call_id)] = (index, block)
        return [HostedToolCallStart(index=index, tool=str(block.get("name", "")), id=call_id, provider=PROVIDER)]

    def server_call_done(self, block: dict[str, Any]) -> None:
        entry = self.pending.get(str(block.get("id")))
        if entry is not None:
            self.pending[str(block.get("id"))] = (entry[0], block)

    def result(self, index: int, block: dict[str, Any]) -> list[StreamEvent]:
        entry = self.pending.pop(str(block.get("tool_use_id")), None)
        if entry is None:
            return [PartAdded(index, ProviderPart(type=str(block.get("type")), raw=block))]
        use_index, use = entry
        return [
            HostedToolCallEnd(
                index=use_index,
                status=_hosted_status(block),
                inputs=use.get("input"),
                result=block.get("content"),
                data=[use, block],
            )
        ]

    def flush(self) -> list[StreamEvent]:
        """Server calls the answer ended without a result for (a paused turn): kept with their call block."""
        events: list[StreamEvent] = [
            HostedToolCallEnd(index=index, status="in_progress", inputs=use.get("input"), data=[use])
            for index, use in self.pending.values()
        ]
        self.pending.clear()
        return events


def _is_result(block: Mapping[str, Any]) -> bool:
    return str(block.get("type", "")).endswith("_tool_result") and "tool_use_id" in block


def message_events(wire: _Message) -> list[StreamEvent]:
    """The events a whole message stands for, as its stream would send them."""
    events: list[StreamEvent] = [MessageStart(model=wire.model, response_id=wire.id)]
    blocks = _Blocks()
    for index, block in enumerate(wire.content):
        kind = block.get("type")
        if kind == "text":
            text = block.get("text") or ""
            if text:
                events.append(TextDelta(index, text))
            events.extend(AnnotationEvent(index, _annotation(c)) for c in block.get("citations") or ())
        elif kind == "tool_use":
            events.append(ToolCallStart(index, block.get("id"), str(block.get("name", ""))))
            inputs = block.get("input")
            if inputs:
                events.append(ToolCallArgumentsDelta(index, json_text(inputs)))
            events.append(ToolCallEnd(index))
        elif kind in _REASONING_BLOCKS:
            thinking = block.get("thinking") if kind == "thinking" else None
            if thinking:
                events.append(ReasoningDelta(index, thinking))
            events.append(ReasoningEnd(index=index, provider=PROVIDER, data=block))
        elif kind in _SERVER_CALLS:
            events.extend(blocks.server_call(index, block))
        elif _is_result(block):
            events.extend(blocks.result(index, block))
        else:
            events.append(PartAdded(index, ProviderPart(type=str(kind), raw=block)))
    events.extend(blocks.flush())
    usage = usage_from(wire.usage, wire.model)
    if usage is not None:
        events.append(UsageEvent(usage))
    events.append(Done(finish_reason(wire.stop_reason)))
    return events


def _answer_extra(**fields: Any) -> dict[str, Any]:
    """What an answer says beyond its message, for `ChatResponse.extra`: the raw stop reason, the stop sequence, stop
    details, the code execution container and context management, each when present."""
    return {key: value for key, value in fields.items() if value is not None}


def decode_message(body: bytes, *, warnings: list[CallWarning] | None = None) -> ChatResponse:
    """A whole `/v1/messages` answer as a `ChatResponse`."""
    try:
        wire = _message_decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise MalformedResponseError(f"the message does not decode: {error}", provider=PROVIDER) from error
    return message_response(wire, warnings)


def message_response(wire: _Message, warnings: list[CallWarning] | None = None) -> ChatResponse:
    if wire.type != "message":
        raise MalformedResponseError(f"expected a message object, got type {wire.type!r}", provider=PROVIDER)
    accumulator = MessageAccumulator()
    for event in message_events(wire):
        accumulator.add(event)
    extra = _answer_extra(
        stop_reason=wire.stop_reason,
        stop_sequence=wire.stop_sequence,
        stop_details=wire.stop_details,
        container=wire.container,
        context_management=wire.context_management,
    )
    return response_from(accumulator, warnings, extra=extra)


def message_from_data(data: Any) -> _Message:
    """A message object already decoded as plain data (a batch result line)."""
    try:
        return msgspec.convert(data, _Message)
    except msgspec.ValidationError as error:
        raise MalformedResponseError(f"the message does not decode: {error}", provider=PROVIDER) from error


# -- stream --------------------------------------------------------------------------------------------------------


class _Delta(msgspec.Struct):
    type: str = ""
    text: str | None = None
    partial_json: str | None = None
    thinking: str | None = None
    signature: str | None = None
    citation: dict[str, Any] | None = None
    stop_reason: str | None = None
    stop_sequence: str | None = None
    stop_details: dict[str, Any] | None = None
    container: Any = None


class _ErrorObject(msgspec.Struct):
    type: str = "api_error"
    message: str = ""


class _Event(msgspec.Struct):
    type: str
    index: int = 0
    message: _Message | None = None
    content_block: dict[str, Any] | None = None
    delta: _Delta | None = None
    usage: _Usage | None = None
    error: _ErrorObject | None = None
    context_management: Any = None


_event_decoder = msgspec.json.Decoder(_Event, float_hook=Decimal)


def _decode_event(data: bytes) -> _Event:
    try:
        return _event_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise MalformedResponseError(f"a stream event does not decode: {error}", provider=PROVIDER) from error


_MESSAGE_EVENTS = frozenset(
    {"content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
)
_json_decoder = msgspec.json.Decoder(float_hook=Decimal)

_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def _overlay(start: _Usage | None, later: _Usage) -> _Usage:
    if start is None:
        return later
    changes = {name: getattr(later, name) for name in later.__struct_fields__ if getattr(later, name) is not None}
    return msgspec.structs.replace(start, **changes)


class _Open:
    __slots__ = ("block", "kind", "pieces", "signature")

    def __init__(self, kind: str, block: dict[str, Any]) -> None:
        self.kind = kind
        self.block = block
        self.pieces: list[str] = []
        self.signature: str | None = None


class MessagesStreamDecoder:
    """Turns each server-sent event of a streamed message into stream events. `finished` once `message_stop` came.

    An event whose `event:` name and data `type` disagree, and an event of the message before its `message_start`,
    are `MalformedResponseError`: a stream that says one thing and means another is not read as an answer.
    """

    __slots__ = (
        "_blocks",
        "_model",
        "_open",
        "_started",
        "_usage",
        "_usage_sent",
        "container",
        "context_management",
        "finished",
        "stop_details",
        "stop_reason",
        "stop_sequence",
    )

    def __init__(self) -> None:
        self._blocks = _Blocks()
        self._usage: _Usage | None = None
        self._usage_sent = False
        self._open: dict[int, _Open] = {}
        self._model: str | None = None
        self._started = False
        self.finished = False
        self.stop_reason: str | None = None
        self.stop_sequence: str | None = None
        self.stop_details: Any = None
        self.container: Any = None
        self.context_management: Any = None

    @property
    def extra(self) -> dict[str, Any]:
        """What the stream said beyond the message, as a whole answer's `ChatResponse.extra` holds it."""
        return _answer_extra(
            stop_reason=self.stop_reason,
            stop_sequence=self.stop_sequence,
            stop_details=self.stop_details,
            container=self.container,
            context_management=self.context_management,
        )

    def feed(self, data: bytes, event_name: str | None = None) -> list[StreamEvent]:
        return self._event(_decode_event(data), event_name, data)

    def feed_batch(
        self, datas: list[bytes], names: list[str | None] | None, start: int, stop: int, out: list[StreamEvent]
    ) -> int:
        """Decode the events `start` to `stop` into `out`; stops after `message_stop` and returns where it stopped."""
        opened = self._open
        decode = _event_decoder.decode
        for position in range(start, stop):
            data = datas[position]
            try:
                event = decode(data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                event = _decode_event(data)  # raises the error with its message
            name = None if names is None else names[position]
            if event.type == "content_block_delta" and self._started and (name is None or name == event.type):
                # the common event: one more piece of an open text block
                delta = event.delta
                block = opened.get(event.index)
                if delta is not None and delta.type == "text_delta" and block is not None and block.kind == "text":
                    if delta.text:
                        out.append(TextDelta(event.index, delta.text))
                    continue
            out += self._event(event, name, data)
            if self.finished:
                return position + 1
        return stop

    def _event(self, event: _Event, event_name: str | None, data: bytes) -> list[StreamEvent]:
        kind = event.type
        if event_name is not None and event_name != kind:
            raise MalformedResponseError(
                f"a stream event named {event_name!r} holds a {kind!r} event", provider=PROVIDER
            )
        if not self._started and kind in _MESSAGE_EVENTS:
            raise MalformedResponseError(f"a {kind} event came before message_start", provider=PROVIDER)
        if kind == "content_block_delta" and event.delta is not None:
            return self._delta(event.index, event.delta)
        if kind == "content_block_start" and event.content_block is not None:
            return self._start(event.index, event.content_block)
        if kind == "content_block_stop":
            return self._stop(event.index)
        if kind == "message_start" and event.message is not None:
            if self._started:
                raise MalformedResponseError("a second message_start in one stream", provider=PROVIDER)
            self._started = True
            self._model = event.message.model
            self._usage = event.message.usage
            self.container = event.message.container
            return [MessageStart(model=event.message.model, response_id=event.message.id)]
        if kind == "message_delta":
            out: list[StreamEvent] = []
            if event.delta is not None:
                self.stop_reason = event.delta.stop_reason
                self.stop_sequence = event.delta.stop_sequence
                self.stop_details = event.delta.stop_details
                if event.delta.container is not None:
                    self.container = event.delta.container
            if event.context_management is not None:
                self.context_management = event.context_management
            if event.usage is not None:
                # message_delta's counters are cumulative and final, zeros included: they replace the start's
                self._usage = _overlay(self._usage, event.usage)
                self._usage_sent = True
                usage = usage_from(self._usage, self._model)
                if usage is not None:
                    out.append(UsageEvent(usage))
            return out
        if kind == "message_stop":
            self.finished = True
            done = self._blocks.flush()
            usage = None if self._usage_sent else usage_from(self._usage, self._model)
            if usage is not None:
                done.append(UsageEvent(usage))
            done.append(Done(finish_reason(self.stop_reason)))
            return done
        if kind == "error":
            failure = event.error or _ErrorObject()
            raise error_from_status(
                _ERROR_STATUS.get(failure.type, 500),
                failure.message or "the stream reported an error",
                provider=PROVIDER,
                body=data.decode("utf-8", "replace"),
                code=failure.type,
            )
        return []  # ping, and event types added later

    def end(self) -> list[StreamEvent]:
        """The body ended before `message_stop`: the answer is not whole."""
        raise MalformedResponseError("the stream ended before message_stop", provider=PROVIDER)

    def _start(self, index: int, block: dict[str, Any]) -> list[StreamEvent]:
        kind = str(block.get("type"))
        if kind == "text":
            self._open[index] = _Open(kind, block)
            text = block.get("text") or ""
            out: list[StreamEvent] = [TextDelta(index, text)] if text else []
            out.extend(AnnotationEvent(index, _annotation(c)) for c in block.get("citations") or ())
            return out
        if kind == "tool_use":
            self._open[index] = _Open(kind, block)
            return [ToolCallStart(index, block.get("id"), str(block.get("name", "")))]
        if kind == "thinking":
            opened = self._open[index] = _Open(kind, block)
            if block.get("thinking"):
                opened.pieces.append(block["thinking"])
                return [ReasoningDelta(index, block["thinking"])]
            return []
        if kind in _SERVER_CALLS:
            self._open[index] = _Open(kind, block)
            return self._blocks.server_call(index, block)
        self._open[index] = _Open(kind, block)
        return []

    def _delta(self, index: int, delta: _Delta) -> list[StreamEvent]:
        opened = self._open.get(index)
        if opened is None:
            raise MalformedResponseError(f"a delta for content block {index}, which was not started", provider=PROVIDER)
        kind = delta.type
        if opened.kind not in _DELTA_KINDS:
            return []  # a block this codec does not know arrives whole in its start event and is kept as it came
        if kind == "text_delta":
            return [TextDelta(index, delta.text)] if delta.text and opened.kind == "text" else []
        if kind == "input_json_delta":
            if opened.kind == "tool_use":
                return [ToolCallArgumentsDelta(index, delta.partial_json)] if delta.partial_json else []
            if delta.partial_json:
                opened.pieces.append(delta.partial_json)
            return []
        if kind == "thinking_delta":
            if delta.thinking:
                opened.pieces.append(delta.thinking)
                return [ReasoningDelta(index, delta.thinking)]
            return []
        if kind == "signature_delta":
            opened.signature = (opened.signature or "") + (delta.signature or "")
            return []
        if kind == "citations_delta" and delta.citation is not None and opened.kind == "text":
            return [AnnotationEvent(index, _annotation(delta.citation))]
        return []

    def _stop(self, index: int) -> list[StreamEvent]:
        opened = self._open.pop(index, None)
        if opened is None:
            raise MalformedResponseError(f"content block {index} stopped without a start", provider=PROVIDER)
        kind = opened.kind
        if kind == "text":
            return []
        if kind == "tool_use":
            return [ToolCallEnd(index)]
        if kind == "thinking":
            block = dict(opened.block)
            block["thinking"] = "".join(opened.pieces)
            if opened.signature is not None:
                block["signature"] = opened.signature
            return [ReasoningEnd(index=index, provider=PROVIDER, data=block)]
        if kind == "redacted_thinking":
            return [ReasoningEnd(index=index, provider=PROVIDER, data=opened.block)]
        if kind in _SERVER_CALLS:
            block = dict(opened.block)
            if opened.pieces:
                text = "".join(opened.pieces)
                try:
                    block["input"] = _json_decoder.decode(text)
                except msgspec.DecodeError as error:
                    raise MalformedResponseError(
                        f"server tool call {block.get('id')!r}: its input is not JSON: {error}", provider=PROVIDER
                    ) from error
            self._blocks.server_call_done(block)
            return []
        if _is_result(opened.block):
            return self._blocks.result(index, opened.block)
        return [PartAdded(index, ProviderPart(type=kind, raw=opened.block))]


# -- errors --------------------------------------------------------------------------------------------------------


def classify_error(error: ProviderError, detail: ErrorDetail | None) -> ProviderError:
    """Causes the shared status mapping cannot see: a 400 that says the input and `max_tokens` exceed the context
    window is a context overflow."""
    if type(error) is BadRequestError and error.status in (400, 413):
        text = f"{detail.message if detail else ''} {error.message}".lower()
        if any(marker in text for marker in _CONTEXT_MARKERS):
            return ContextOverflowError(
                error.message,
                provider=error.provider,
                status=error.status,
                body=error.body,
                request_id=error.request_id,
            )
    return error
