"""Providers the runtime creates read per-model facts from the runtime's catalog, user layers included."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec
import pytest

from onellm import Runtime
from onellm.catalog import Catalog
from onellm.instances import MemoryInstanceStore
from onellm.providers import ReasoningOptions
from onellm.runtime import ProviderRegistry

CATALOG = Catalog.shipped().with_overrides(
    [
        {"name": "anthropic", "models": [{"name": "claude-house-1", "maxOutputTokens": 1234}]},
        {
            "name": "gemini",
            "properties": {"schemaForm": "responseSchema"},
            "models": [{"name": "gemini-house-1", "thinking": {"budget": True, "maxBudget": 8000}}],
        },
    ]
)
ENVIRON = {"ANTHROPIC_API_KEY": "sk-ant-test", "GEMINI_API_KEY": "g-test"}


def _runtime(sent: list[httpx.Request] | None = None, answer: dict[str, Any] | None = None) -> Runtime:
    def handler(request: httpx.Request) -> httpx.Response:
        if sent is not None:
            sent.append(request)
        return httpx.Response(200, json=answer or {})

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    registry = ProviderRegistry(ENVIRON, http_client=client)
    return Runtime(catalog=CATALOG, providers=registry, store=MemoryInstanceStore(), environ=ENVIRON)


ANTHROPIC_ANSWER = {
    "id": "msg_1",
    "type": "message",
    "model": "claude-house-1",
    "content": [{"type": "text", "text": "hello"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 3, "output_tokens": 1},
}
GEMINI_ANSWER = {
    "candidates": [{"content": {"role": "model", "parts": [{"text": "{}"}]}, "finishReason": "STOP", "index": 0}],
    "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1},
    "modelVersion": "gemini-house-1",
}


@pytest.mark.anyio
async def test_an_anthropic_model_known_only_to_a_user_layer_gets_its_output_limit() -> None:
    sent: list[httpx.Request] = []
    runtime = _runtime(sent, ANTHROPIC_ANSWER)
    result = await runtime.generate("claude-house-1", "hi")
    assert msgspec.json.decode(sent[0].content)["max_tokens"] == 1234
    assert [w.kind for w in result.warnings if w.kind == "parameter_defaulted"] == []
    await runtime.aclose()


@pytest.mark.anyio
async def test_a_gemini_model_known_only_to_a_user_layer_gets_its_settings() -> None:
    sent: list[httpx.Request] = []
    runtime = _runtime(sent, GEMINI_ANSWER)

    class Answer(msgspec.Struct):
        pass

    await runtime.ask("gemini-house-1", "hi", output=Answer, reasoning=ReasoningOptions(budget_tokens=500))
    config = msgspec.json.decode(sent[0].content)["generationConfig"]
    assert "responseSchema" in config  # the provider's schemaForm, through the profile
    assert config["thinkingConfig"] == {"thinkingBudget": 500}  # a budget model, through the profile
    await runtime.aclose()


def test_every_model_gets_its_own_profile_from_one_shared_provider() -> None:
    runtime = _runtime()
    first, provider = runtime.services.route("claude-house-1")
    second, same = runtime.services.route("claude-sonnet")
    assert provider is same
    assert (first.profile.max_output_tokens, second.profile.max_output_tokens) == (
        1234,
        CATALOG.resolve("claude-sonnet").entry.max_output_tokens,
    )


def test_a_factory_the_host_sets_comes_before_the_built_in_one() -> None:
    runtime = _runtime()
    made: list[str] = []

    def factory(model: Any, key: Any) -> object:
        made.append(model.name)
        return object()

    runtime.providers.set_factory("anthropic", factory)
    runtime.services.route("claude-house-1")
    assert made == ["claude-house-1"]
