"""The Anthropic Messages protocol: `AnthropicProvider` for Anthropic's own deployment. The provider loads on first
use, so the schema rules beside it (`for_anthropic`) can be read without it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from onellm.providers.anthropic._schema import for_anthropic

if TYPE_CHECKING:
    from onellm.providers.anthropic._provider import AnthropicProvider, collect

__all__ = ["AnthropicProvider", "collect", "for_anthropic"]


def __getattr__(name: str) -> Any:
    if name in ("AnthropicProvider", "collect"):
        value = getattr(importlib.import_module("onellm.providers.anthropic._provider"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
