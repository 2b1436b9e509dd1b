"""Providers the runtime creates read per-model facts from the runtime's catalog, user layers included."""

from __future__ import annotations

from typing import Any

from onellm import Runtime
from onellm.catalog import Catalog
from onellm.instances import MemoryInstanceStore
from onellm.messages import Message, TextPart
from onellm.providers import ChatRequest

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


def _runtime() -> Runtime:
    return Runtime(catalog=CATALOG, store=MemoryInstanceStore(), environ=ENVIRON)


def test_an_anthropic_model_known_only_to_a_user_layer_gets_its_output_limit() -> None:
    resolved, provider = _runtime().services.route("claude-house-1")
    assert resolved.provider == "anthropic"
    request = ChatRequest("claude-house-1", [Message(user=[TextPart("hi")])])
    assert provider.encode(request)["max_tokens"] == 1234
    assert not request.warnings


def test_a_gemini_model_known_only_to_a_user_layer_gets_its_settings() -> None:
    _, provider = _runtime().services.route("gemini-house-1")
    settings: Any = provider._settings("gemini-house-1")
    assert settings == ("responseSchema", "budget")


def test_a_factory_the_host_sets_comes_before_the_built_in_one() -> None:
    runtime = _runtime()
    made: list[str] = []

    def factory(model: Any, key: Any) -> object:
        made.append(model.name)
        return object()

    runtime.providers.set_factory("anthropic", factory)
    runtime.services.route("claude-house-1")
    assert made == ["claude-house-1"]
