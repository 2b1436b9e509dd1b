"""The Gemini API provider (`generateContent` and `streamGenerateContent` on v1beta, token counting, embeddings and
batches). The provider loads on first use, so the schema rules beside it (`for_gemini`) can be read without it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from onellm.providers.gemini._schema import for_gemini

if TYPE_CHECKING:
    from onellm.providers.gemini._provider import GeminiProvider, collect, decode_generate_content

__all__ = ["GeminiProvider", "collect", "decode_generate_content", "for_gemini"]


def __getattr__(name: str) -> Any:
    if name in ("GeminiProvider", "collect", "decode_generate_content"):
        value = getattr(importlib.import_module("onellm.providers.gemini._provider"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
