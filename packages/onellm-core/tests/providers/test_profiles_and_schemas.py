"""What providers read from a request's profile, and hand-written strict schemas (with keywords onellm's own compiler
never writes) converted beside each provider.

The request bodies checked here follow the vendors' references: OpenAI's `CreateResponse` (`prompt_cache_options`,
`text.format`) and `FunctionTool` of openapi.yaml 2.3.0, Anthropic's `ToolParam` (`strict`, `input_schema`) of
anthropic-sdk-python `src/anthropic/types/tool_param.py`."""

from __future__ import annotations

import datetime as dt
from typing import Any

import anyio
import httpx
import msgspec

from onellm.catalog import Catalog
from onellm.messages import Message, TextPart
from onellm.providers import CacheOptions, ChatRequest, ResponseFormat, ToolDefinition
from onellm.providers.anthropic._codec import encode_messages_request
from onellm.providers.openai import OpenAIProvider
from onellm.providers.openai._schema import for_openai

SHIPPED = Catalog.shipped()

HAND_WRITTEN = {
    "type": "object",
    "$defs": {"when": {"type": "string", "format": "date-time", "default": "now"}},
    "properties": {
        "at": {"$ref": "#/$defs/when"},
        "choice": {"anyOf": [{"type": "string", "minLength": 2}, {"type": "integer", "minimum": 0}]},
    },
    "required": ["at", "choice"],
    "additionalProperties": False,
}


def test_a_hand_written_strict_schema_is_converted_not_refused() -> None:
    converted = for_openai(HAND_WRITTEN)
    assert converted.strict
    assert converted.schema == {
        "type": "object",
        "properties": {
            "at": {"$ref": "#/$defs/when"},
            "choice": {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]},
        },
        "required": ["at", "choice"],
        "additionalProperties": False,
        "$defs": {"when": {"type": "string", "format": "date-time"}},
    }
    assert converted.removed == ["/$defs/when/default", "/properties/choice/anyOf/0/minLength"]


def test_a_hand_written_schema_in_an_anthropic_strict_tool() -> None:
    request = ChatRequest("m", [], tools=[ToolDefinition("book", "", HAND_WRITTEN, strict=True)])
    body, warnings = encode_messages_request(request, max_tokens=9)
    tool = body["tools"][0]
    assert tool["strict"] is True
    assert "minimum" not in str(tool["input_schema"])
    assert [w.kind for w in warnings] == ["parameter_stripped"]


def _recording() -> tuple[OpenAIProvider, list[httpx.Request]]:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(
            200,
            json={
                "id": "resp_1",
                "object": "response",
                "status": "completed",
                "model": "gpt-6-luna",
                "output": [],
                "usage": {"input_tokens": 1, "output_tokens": 0},
            },
        )

    return OpenAIProvider(api_key="sk-t", http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler))), sent


def test_a_models_prompt_cache_options_come_from_its_profile() -> None:
    """`promptCacheOptions` is a model's property: one provider sends `prompt_cache_options` for the model whose
    profile has it and `prompt_cache_retention` for one whose profile does not."""
    provider, sent = _recording()
    cache = CacheOptions(ttl=dt.timedelta(hours=2))

    def ask(model: str) -> dict[str, Any]:
        resolved = SHIPPED.resolve(model)
        request = ChatRequest(resolved.name, [Message(user=[TextPart("hi")])], cache=cache, profile=resolved.profile)
        anyio.run(provider.send, request)
        return dict(msgspec.json.decode(sent[-1].content))

    assert SHIPPED.resolve("gpt-6-luna").profile.properties["promptCacheOptions"] is True
    luna, five = ask("gpt-6-luna"), ask("gpt-5.4")
    assert (luna.get("prompt_cache_options"), luna.get("prompt_cache_retention")) == ({"ttl": "12h"}, None)
    assert (five.get("prompt_cache_options"), five.get("prompt_cache_retention")) == (None, "24h")


def test_a_profile_is_read_not_changed_and_the_request_keeps_its_warnings() -> None:
    provider, _ = _recording()
    profile = SHIPPED.resolve("gpt-5.4").profile
    schema = {"type": "object", "properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}}}
    request = ChatRequest(
        "gpt-5.4", [Message(user=[TextPart("hi")])], response_format=ResponseFormat.json_schema(schema), profile=profile
    )
    response = anyio.run(provider.send, request)
    assert [w.kind for w in response.warnings] == ["parameter_stripped"]  # strict mode dropped for a map
    assert request.warnings == []
    assert request.profile is profile
