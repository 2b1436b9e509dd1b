"""What a prompt is made of and how the verbs read it: `Content` (strings and message parts), the request options
the verbs accept, message ids, and who a message comes from (`source`)."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias, TypedDict, get_args

from onellm.messages import MessageSource, Part, TextPart
from onellm.providers import CacheOptions, ReasoningOptions, ToolChoice

__all__ = [
    "REQUEST_OPTIONS",
    "Content",
    "RequestOptions",
    "api_source",
    "check_options",
    "new_message_id",
    "prompt_parts",
    "runtime_source",
]

Content: TypeAlias = str | Part
"""What a prompt is made of: strings (text) and message parts (`TextPart`, `AssetPart`, ...)."""

_PART_TYPES: tuple[type, ...] = get_args(Part)


class RequestOptions(TypedDict, total=False):
    """The request options every verb takes as keyword arguments, besides `system=` and `output=`:
    `await onellm.ask("gpt-6-luna", "Hi", temperature=0.2, max_output_tokens=200)`.

    Each is optional; one left out (or given as None, where None is allowed) is the model's default. Before a request
    is sent, the catalog's adjuster strips or clamps what the model does not take; each change is a warning on the
    result. An unknown option is a `TypeError` naming it.
    """

    max_output_tokens: int | None
    """The most tokens the answer may have."""
    temperature: float | None
    """Sampling temperature."""
    top_p: float | None
    """Nucleus sampling: the probability mass the next token is drawn from."""
    stop_sequences: list[str]
    """Texts that end the answer when the model writes them."""
    tool_choice: ToolChoice | None
    """Whether the model may, must or must not call a tool, or which one."""
    reasoning: ReasoningOptions | None
    """Reasoning effort, token budget and summary."""
    cache: CacheOptions | None
    """Prompt caching: a key, a time to live, or caching off."""
    service_tier: str | None
    """The provider's service tier, for example `flex` or `priority`."""
    user_id: str | None
    """An id for the end user, passed to providers that take one."""
    extra_parameters: dict[str, Any]
    """Top-level body fields sent as given, after everything else."""


REQUEST_OPTIONS: frozenset[str] = RequestOptions.__optional_keys__
"""The names of the request options (the keys of `RequestOptions`)."""


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


_IDS_AT_ONCE = 64
"""Message ids drawn from the system's random source in one read (a read costs about as much as formatting an id)."""

_VERSION_4 = bytes(b & 0x0F | 0x40 for b in range(256))
"""Byte 6 of each id: its high four bits say version 4."""

_VARIANT = bytes(b & 0x3F | 0x80 for b in range(256))
"""Byte 8 of each id: its high two bits say the RFC 4122 variant."""

_ids: deque[str] = deque()
"""Ids drawn and not handed out yet (a deque: two threads taking one at once never get the same)."""


def new_message_id() -> str:
    """A fresh message id (32 hex digits): a random (version 4) UUID's, made without a `UUID` object."""
    try:
        return _ids.popleft()
    except IndexError:
        pass
    data = bytearray(os.urandom(16 * _IDS_AT_ONCE))
    data[6::16] = data[6::16].translate(_VERSION_4)
    data[8::16] = data[8::16].translate(_VARIANT)
    text = data.hex()
    _ids.extend(text[at : at + 32] for at in range(32, len(text), 32))
    return text[:32]


def _forget_ids() -> None:
    """A forked child draws its own ids: the ones left were drawn for the parent, which hands them out too."""
    _ids.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_ids)


def api_source() -> MessageSource:
    """The source of a message the host's code sent through the API (a verb, a chat turn, a script's prompt)."""
    return MessageSource(kind="api")


def runtime_source() -> MessageSource:
    """The source of a message the runtime added itself (a script's scripted assistant answer, for example)."""
    return MessageSource(kind="runtime")
