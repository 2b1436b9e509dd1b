"""The Gemini request codec: a `ChatRequest` as a v1beta `GenerateContentRequest` body (JSON field spelling).

Turns and roles: a user turn is a `user` content, the assistant side a `model` content, and the results of the turn's
tool calls one following `user` content of `functionResponse` parts in call order (adjacent contents of one role are
joined). Gemini's own reasoning parts carry the thought signatures; each is attached again to the part it came before.
Ids this provider made up for calls Gemini sent without one are never sent back. Hosted tool calls are replayed from
their kept raw parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from onellm.errors import CapabilityMissingError, UnsupportedParameterError
from onellm.messages import (
    AssetPart,
    CallWarning,
    FileRefPart,
    HostedToolCallPart,
    JsonPart,
    Message,
    Part,
    ProviderPart,
    ReasoningPart,
    RefusalPart,
    TextPart,
    ToolCall,
)
from onellm.providers._content import (
    asset_base64,
    asset_media_type,
    at_message,
    json_text,
    result_text,
    unsendable_user_part,
)
from onellm.providers._request import ChatRequest
from onellm.providers._wire import fragment, reused
from onellm.providers.gemini._schema import openapi_schema

__all__ = [
    "MADE_UP_ID_PREFIX",
    "PROVIDER",
    "ThinkingStyle",
    "encode_request",
]

PROVIDER = "gemini"
MADE_UP_ID_PREFIX = "gemini-call-"

ThinkingStyle = str
"""`budget` (a `thinkingBudget` in tokens), `levels` (a `thinkingLevel` name), or `auto` (decided per request)."""

HOSTED_TOOLS = {
    "web_search": "googleSearch",
    "google_search": "googleSearch",
    "googleSearch": "googleSearch",
    "code_interpreter": "codeExecution",
    "code_execution": "codeExecution",
    "codeExecution": "codeExecution",
    "url_context": "urlContext",
    "urlContext": "urlContext",
    "google_maps": "googleMaps",
    "googleMaps": "googleMaps",
    "file_search": "fileSearch",
    "fileSearch": "fileSearch",
    "computer_use": "computerUse",
    "computerUse": "computerUse",
    "google_search_retrieval": "googleSearchRetrieval",
    "googleSearchRetrieval": "googleSearchRetrieval",
}

# -- conversation --------------------------------------------------------------------------------------------------


def _contents(messages: list[Message], reuse: bool = False) -> list[dict[str, Any]]:
    contents: list[dict[str, Any]] = []
    role: str | None = None
    parts: list[Any] = []
    for index, message in enumerate(messages):
        found: Sequence[tuple[str, Any]]
        try:
            if reuse:
                found = reused(message, _KEY, _fragments)
            else:
                found = _message_parts(message)
        except UnsupportedParameterError as error:
            if error.parameter != "user":
                raise
            raise at_message(error, index) from None
        for part_role, part in found:
            if part_role != role:
                role = part_role
                parts = []
                contents.append({"role": role, "parts": parts})
            parts.append(part)
    return contents


_KEY = ("gemini",)


def _fragments(message: Message) -> tuple[tuple[tuple[str, msgspec.Raw], ...], bool]:
    return tuple((role, fragment(part)) for role, part in _message_parts(message)), True


def _message_parts(message: Message) -> list[tuple[str, dict[str, Any]]]:
    """One turn's parts in order with their roles: the user's, the model's, then the results of its tool calls (a
    part joins the last content when it has the same role)."""
    out: list[tuple[str, dict[str, Any]]] = [("user", _user_part(p)) for p in message.user]
    if message.assistant or message.tool_calls:
        out.extend(("model", part) for part in _model_parts(message))
        out.extend(("user", _function_response(call)) for call in message.tool_calls if call.result is not None)
    return out


def _user_part(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"text": part.text}
    if isinstance(part, JsonPart):
        return {"text": json_text(part.json)}
    if isinstance(part, AssetPart):
        return _asset(part)
    if isinstance(part, FileRefPart):
        return {
            "fileData": {
                "mimeType": part.content_type or "application/octet-stream",
                "fileUri": part.uri or part.file_ref,
            }
        }
    if isinstance(part, RefusalPart):
        return {"text": part.refusal}
    raise unsendable_user_part(part, "Gemini")


def _asset(part: AssetPart) -> dict[str, Any]:
    media = asset_media_type(part)
    data = part.data if part.legacy is None else part.legacy_media
    url = data.get("url") if isinstance(data, dict) else data if isinstance(data, str) else None
    if isinstance(url, str) and url.startswith(("http://", "https://", "gs://")):
        return {"fileData": {"mimeType": media, "fileUri": url}}
    if isinstance(url, str) and url.startswith("data:"):
        header, _, encoded = url.partition(",")
        declared = header[5:].split(";", 1)[0]
        return {"inlineData": {"mimeType": declared or media, "data": encoded}}
    inline = asset_base64(part)
    if inline is None:
        raise CapabilityMissingError(
            f"asset {part.name or part.key or '(unnamed)'} has no inline content: load it from the asset store "
            "before sending (the runtime does this for stored assets)"
        )
    return {"inlineData": {"mimeType": media, "data": inline}}


def _signature(part: ReasoningPart) -> tuple[str, str] | None:
    """A Gemini signature part's (signature, kind of the part it belongs to); None for anything else."""
    data = part.data
    if part.provider != PROVIDER or not isinstance(data, dict):
        return None
    signature = data.get("signature")
    on = data.get("on")
    if isinstance(signature, str) and isinstance(on, str) and on != "thought":
        return signature, on
    return None


def _model_parts(message: Message) -> list[dict[str, Any]]:
    """The assistant side in its order; a pending signature goes onto the next part of the kind it names, or alone
    onto an empty part of that kind when none follows (as Gemini sent it)."""
    parts: list[dict[str, Any]] = []
    pending: tuple[str, str] | None = None

    def emit(kind: str, part: dict[str, Any]) -> None:
        nonlocal pending
        flush(kind)
        if pending is not None:
            part["thoughtSignature"] = pending[0]
            pending = None
        parts.append(part)

    def flush(next_kind: str | None) -> None:
        nonlocal pending
        if pending is not None and pending[1] != next_kind:
            signature, on = pending
            pending = None
            parts.append(
                {"text": "", "thoughtSignature": signature} if on == "text" else {"thoughtSignature": signature}
            )

    for entry in message.entries():
        if isinstance(entry, ToolCall):
            call: dict[str, Any] = {"name": entry.tool, "args": _call_args(entry)}
            if entry.id and not entry.id.startswith(MADE_UP_ID_PREFIX):
                call["id"] = entry.id
            emit("functionCall", {"functionCall": call})
        elif isinstance(entry, ReasoningPart):
            signature = _signature(entry)
            if signature is not None:
                flush(None)
                pending = signature
            elif entry.provider == PROVIDER and isinstance(entry.data, dict) and entry.data.get("on") == "thought":
                thought: dict[str, Any] = {"text": entry.text, "thought": True}
                if isinstance(entry.data.get("signature"), str):
                    thought["thoughtSignature"] = entry.data["signature"]
                flush(None)
                parts.append(thought)
            # reasoning of another provider is not Gemini's to read: left out
        elif isinstance(entry, TextPart):
            emit("text", {"text": entry.text})
        elif isinstance(entry, RefusalPart):
            emit("text", {"text": entry.refusal})
        elif isinstance(entry, JsonPart):
            emit("text", {"text": json_text(entry.json)})
        elif isinstance(entry, AssetPart):
            emit("inlineData", _asset(entry))
        elif isinstance(entry, FileRefPart):
            emit("fileData", _user_part(entry))
        elif isinstance(entry, HostedToolCallPart):
            replay = entry.data.get("replay") if entry.provider == PROVIDER and isinstance(entry.data, dict) else None
            if isinstance(replay, list):
                flush(None)
                parts.extend(dict(p) for p in replay if isinstance(p, dict))
        elif isinstance(entry, ProviderPart) and entry.type.startswith(PROVIDER + ".") and isinstance(entry.raw, dict):
            flush(None)
            parts.append(dict(entry.raw))
    flush(None)
    return parts


def _call_args(call: ToolCall) -> dict[str, Any]:
    if call.invalid_inputs is not None:
        raise UnsupportedParameterError(
            f"tool call {call.id or call.tool!r} has arguments that are not a JSON object; Gemini takes only objects",
            parameter="messages.toolCalls.inputs",
        )
    return dict(call.inputs)


def _function_response(call: ToolCall) -> dict[str, Any]:
    """A tool result: JSON object results as the response itself, other results as `output` (or `error`) text;
    images and other inline media in the result go as the response's own parts."""
    media: list[dict[str, Any]] = []
    result: list[Part] = []
    for part in call.result or []:
        inline = _asset(part) if isinstance(part, AssetPart) else None
        if inline is not None and "inlineData" in inline:
            media.append(inline)
        else:
            result.append(part)
    response: dict[str, Any]
    if call.is_error:
        response = {"error": result_text(result)}
    elif len(result) == 1 and isinstance(result[0], JsonPart) and isinstance(result[0].json, dict):
        response = dict(result[0].json)
    else:
        response = {"output": result_text(result)}
    body: dict[str, Any] = {"name": call.tool, "response": response}
    if media:
        body["parts"] = media
    if call.id and not call.id.startswith(MADE_UP_ID_PREFIX):
        body["id"] = call.id
    return {"functionResponse": body}


# -- options -------------------------------------------------------------------------------------------------------


def encode_request(
    request: ChatRequest,
    *,
    schema_form: str = "responseJsonSchema",
    thinking: ThinkingStyle = "auto",
    reuse: bool = False,
) -> tuple[dict[str, Any], list[CallWarning]]:
    """The `generateContent` body for a request, and the notices about settings it dropped (the request is not
    changed). `reuse`: each message's parts are encoded once while it is unchanged and sent as `msgspec.Raw`
    fragments (`providers._wire`)."""
    warnings: list[CallWarning] = []
    body: dict[str, Any] = {"contents": _contents(request.messages, reuse)}
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}]}
    tools: list[dict[str, Any]] = []
    if request.tools:
        declarations = []
        for tool in request.tools:
            declaration: dict[str, Any] = {"name": tool.name, "description": tool.description}
            if schema_form == "responseSchema":
                declaration["parameters"] = openapi_schema(tool.input_schema, warnings, f"tools.{tool.name}")
            else:
                declaration["parametersJsonSchema"] = dict(tool.input_schema)
            declarations.append(declaration)
        tools.append({"functionDeclarations": declarations})
    for hosted in request.hosted_tools:
        name = HOSTED_TOOLS.get(hosted.type)
        if name is None:
            raise UnsupportedParameterError(
                f"Gemini has no hosted tool {hosted.type!r} (it has googleSearch, codeExecution, urlContext, "
                "googleMaps, fileSearch, computerUse, googleSearchRetrieval)",
                parameter="hosted_tools",
                model=request.model,
            )
        tools.append({name: dict(hosted.options)})
    if tools:
        body["tools"] = tools
    if request.tool_choice is not None:
        choice = request.tool_choice
        mode = {"auto": "AUTO", "none": "NONE", "required": "ANY", "tool": "ANY"}[choice.mode]
        config: dict[str, Any] = {"mode": mode}
        if choice.tool is not None:
            config["allowedFunctionNames"] = [choice.tool]
        body["toolConfig"] = {"functionCallingConfig": config}
    if request.parallel_tool_calls is False:
        warnings.append(
            CallWarning(
                kind="parameter_stripped",
                message="Gemini has no switch for parallel tool calls; parallel_tool_calls=false was not sent",
            )
        )
    if request.user_id is not None:
        warnings.append(
            CallWarning(
                kind="parameter_stripped", message="Gemini's generateContent takes no end-user id; user_id was not sent"
            )
        )
    generation = _generation_config(request, schema_form, thinking, warnings)
    if generation:
        body["generationConfig"] = generation
    if request.cache is not None:
        cache = request.cache
        if cache.enabled and cache.key is not None and cache.key.startswith("cachedContents/"):
            body["cachedContent"] = cache.key
        else:
            warnings.append(
                CallWarning(
                    kind="parameter_stripped",
                    message="Gemini caches prompts by itself; only a cache key naming a cachedContents/ resource is "
                    "sent (as cachedContent), other cache options were not",
                )
            )
    if request.service_tier is not None:
        body["serviceTier"] = request.service_tier
    body.update(request.extra_parameters)
    return body, warnings


def _generation_config(
    request: ChatRequest, schema_form: str, thinking: ThinkingStyle, warnings: list[CallWarning]
) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if request.stop_sequences:
        config["stopSequences"] = list(request.stop_sequences)
    if request.max_output_tokens is not None:
        config["maxOutputTokens"] = request.max_output_tokens
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.top_p is not None:
        config["topP"] = request.top_p
    fmt = request.response_format
    if fmt is not None and fmt.type != "text":
        config["responseMimeType"] = "application/json"
        if fmt.type == "json_schema":
            if schema_form == "responseSchema":
                config["responseSchema"] = openapi_schema(fmt.schema or {}, warnings, "response_format")
            else:
                config["responseJsonSchema"] = dict(fmt.schema or {})
    thinking_config = _thinking_config(request, thinking, warnings)
    if thinking_config:
        config["thinkingConfig"] = thinking_config
    return config


def _thinking_config(request: ChatRequest, style: ThinkingStyle, warnings: list[CallWarning]) -> dict[str, Any]:
    options = request.reasoning
    if options is None:
        return {}
    config: dict[str, Any] = {}
    if options.summary is not None and options.summary != "none":
        config["includeThoughts"] = True
    effort = options.effort.lower() if options.effort is not None else None
    budget = options.budget_tokens
    if effort in ("disabled", "none"):
        budget, effort = 0, None
    elif effort == "dynamic":
        budget, effort = -1, None
    if style == "levels":
        if budget is not None and effort is None:
            if budget == -1:
                return config  # dynamic thinking is a level model's default
            warnings.append(
                CallWarning(
                    kind="parameter_stripped",
                    message=f"{request.model} takes thinking levels, not a token budget; the budget was not sent",
                )
            )
        if effort is not None:
            config["thinkingLevel"] = effort.upper()
        return config
    if style == "budget" and effort is not None:
        warnings.append(
            CallWarning(
                kind="parameter_stripped",
                message=f"{request.model} takes a thinking budget, not levels; effort {effort!r} was not sent",
            )
        )
        effort = None
    if budget is not None:
        config["thinkingBudget"] = budget
    if effort is not None:
        config["thinkingLevel"] = effort.upper()
    return config
