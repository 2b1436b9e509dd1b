"""The opt-in result cache: a finished answer kept under a SHA-256 of everything that can change it. A hit sends
nothing and costs nothing."""

from __future__ import annotations

import copy
import hashlib
import threading
from collections import OrderedDict
from typing import Any

import msgspec

from onellm.providers import ChatRequest, ChatResponse

__all__ = ["ResultCache", "cache_key", "plain"]

_ENCODER = msgspec.json.Encoder(decimal_format="number", order="sorted")


def plain(value: Any) -> Any:
    """A request option as plain data: message-model objects by their `to_data`, dataclasses as mappings."""
    if hasattr(value, "to_data"):
        return value.to_data()
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if hasattr(value, "__dataclass_fields__"):
        return {k: plain(getattr(value, k)) for k in value.__dataclass_fields__}
    if hasattr(value, "value") and hasattr(value, "name") and type(value).__module__ != "builtins":  # enums
        return value.value
    return value


def _message_data(message: Any) -> dict[str, Any]:
    data: dict[str, Any] = message.to_data()
    for key in ("id", "dateTime", "usage", "source"):
        data.pop(key, None)
    return data


def cache_key(qualified_model: str, request: ChatRequest) -> str:
    """SHA-256 (hex) over the model and every request field that can change the answer. Message ids, times and usage
    are left out: the same conversation asked again hits."""
    body = {
        "model": qualified_model,
        "wireModel": request.model,
        "messages": [_message_data(m) for m in request.messages],
        "system": request.system,
        "maxOutputTokens": request.max_output_tokens,
        "temperature": request.temperature,
        "topP": request.top_p,
        "stop": list(request.stop_sequences),
        "tools": plain(request.tools),
        "hostedTools": plain(request.hosted_tools),
        "toolChoice": plain(request.tool_choice),
        "parallelToolCalls": request.parallel_tool_calls,
        "responseFormat": plain(request.response_format),
        "reasoning": plain(request.reasoning),
        "serviceTier": request.service_tier,
        "extra": plain(request.extra_parameters),
    }
    return hashlib.sha256(_ENCODER.encode(body)).hexdigest()


class ResultCache:
    """Answers kept in memory, least recently used dropped first beyond `max_entries`. Thread-safe."""

    def __init__(self, max_entries: int = 1024) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._items: OrderedDict[str, ChatResponse] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> ChatResponse | None:
        """A copy of the kept answer, or None."""
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
        return copy.deepcopy(hit)

    def put(self, key: str, response: ChatResponse) -> None:
        kept = copy.deepcopy(response)
        with self._lock:
            self._items[key] = kept
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
