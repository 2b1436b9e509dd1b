"""The OpenAI wire protocols: Chat Completions (any compatible server) and, for OpenAI itself, Responses. The
providers load on first use, so the schema rules beside them (`for_openai`) can be read without them."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from onellm.providers.openai._schema import for_openai, restore_optional_nulls

if TYPE_CHECKING:
    from onellm.providers.openai._chat import ChatFlavor
    from onellm.providers.openai._decisions import MAX_QUESTIONS, decode_decisions_response, encode_decisions_request
    from onellm.providers.openai._provider import OpenAICompatibleProvider, OpenAIProvider, collect

_LAZY = {
    "MAX_QUESTIONS": "onellm.providers.openai._decisions",
    "decode_decisions_response": "onellm.providers.openai._decisions",
    "encode_decisions_request": "onellm.providers.openai._decisions",
    "ChatFlavor": "onellm.providers.openai._chat",
    "OpenAICompatibleProvider": "onellm.providers.openai._provider",
    "OpenAIProvider": "onellm.providers.openai._provider",
    "collect": "onellm.providers.openai._provider",
}

__all__ = [
    "MAX_QUESTIONS",
    "ChatFlavor",
    "OpenAICompatibleProvider",
    "OpenAIProvider",
    "collect",
    "decode_decisions_response",
    "encode_decisions_request",
    "for_openai",
    "restore_optional_nulls",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
