"""What a prompt is made of and how the verbs read it: `Content` (strings and message parts), the request options
the verbs accept, message ids, and who a message comes from (`source`)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias, get_args

from onellm.messages import MessageSource, Part, TextPart

__all__ = [
    "REQUEST_OPTIONS",
    "Content",
    "api_source",
    "check_options",
    "new_message_id",
    "prompt_parts",
    "runtime_source",
]

Content: TypeAlias = str | Part
"""What a prompt is made of: strings (text) and message parts (`TextPart`, `AssetPart`, ...)."""

_PART_TYPES: tuple[type, ...] = get_args(Part)

REQUEST_OPTIONS = frozenset(
    {
        "max_output_tokens",
        "temperature",
        "top_p",
        "stop_sequences",
        "tool_choice",
        "reasoning",
        "cache",
        "service_tier",
        "user_id",
        "extra_parameters",
    }
)
"""The request options the verbs take as keyword arguments (besides `output=` and `system=`)."""


def prompt_parts(content: Sequence[Content], argument: str = "content") -> list[Part]:
    """The message parts of a prompt: each string becomes a text part, message parts are kept as given.

    Raises:
        TypeError: an item is neither, or there is nothing at all (the message names the argument and index).
    """
    parts: list[Part] = []
    for i, item in enumerate(content):
        if isinstance(item, str):
            parts.append(TextPart(item))
        elif isinstance(item, _PART_TYPES):
            parts.append(item)
        else:
            raise TypeError(f"{argument}[{i}]: expected a string or a message part, not {type(item).__name__}")
    if not parts:
        raise TypeError(f"{argument}: a prompt needs at least one string or part")
    return parts


def check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options as a new dict, or a `TypeError` naming each unknown one."""
    unknown = sorted(set(options) - REQUEST_OPTIONS)
    if unknown:
        raise TypeError(
            f"unknown option(s) {', '.join(unknown)}; the verbs take {', '.join(sorted(REQUEST_OPTIONS))}, "
            "output= and system="
        )
    return dict(options)


def new_message_id() -> str:
    """A fresh message id (32 hex digits)."""
    return uuid.uuid4().hex


def api_source() -> MessageSource:
    """The source of a message the host's code sent through the API (a verb, a chat turn, a script's prompt)."""
    return MessageSource(kind="api")


def runtime_source() -> MessageSource:
    """The source of a message the runtime added itself (a script's scripted assistant answer, for example)."""
    return MessageSource(kind="runtime")
