"""Compaction on OpenAI's side: `POST /responses/compact` (`contextStrategy: providerNative`).

The call takes the conversation as Responses input items (with the model, the instructions and the prompt cache
options) and answers with the compacted list of items: the user messages it kept and one `compaction` item whose
`encrypted_content` stands for everything else. That list is what goes in front of the next request's input.

In the message model: a kept user message whose text is the text of a user-only message that was sent is that
message, unchanged; another kept user message of plain text becomes a new user message with that text; every other
item (the `compaction` item above all) becomes a new user-side message holding it whole as a provider part of type
`openai.<item type>`, which the Responses codec sends back verbatim in its place, to OpenAI only.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec

from onellm.errors import MalformedResponseError
from onellm.messages import Message, Part, ProviderPart, TextPart
from onellm.providers._protocols import CompactedContext
from onellm.providers._request import ChatRequest
from onellm.providers.openai._responses import PROVIDER, _Response, _Usage, usage_from

__all__ = ["COMPACT_FIELDS", "compact_body", "decode_compaction"]

COMPACT_FIELDS = (
    "model",
    "input",
    "instructions",
    "prompt_cache_key",
    "prompt_cache_retention",
    "prompt_cache_options",
    "service_tier",
)
"""The fields of a Responses body that `/responses/compact` takes (`CompactResponseMethodPublicBody`)."""


def compact_body(full: dict[str, Any]) -> dict[str, Any]:
    """The `/responses/compact` body from the `/responses` body of the same request."""
    return {k: full[k] for k in COMPACT_FIELDS if k in full}


class _Compacted(msgspec.Struct):
    id: str | None = None
    object: str | None = None
    output: list[Any] | None = None
    usage: _Usage | None = None


_decoder = msgspec.json.Decoder(_Compacted, float_hook=Decimal)


def decode_compaction(body: bytes, request: ChatRequest) -> CompactedContext:
    """The compacted conversation of a `CompactResource` answer to `request`.

    Raises:
        MalformedResponseError: the answer is not a compacted response object, or holds no `compaction` item.
    """
    try:
        wire = _decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise MalformedResponseError(f"the compaction answer does not decode: {error}", provider=PROVIDER) from error
    if wire.object != "response.compaction" or wire.output is None:
        raise MalformedResponseError(
            f"the compaction answer is not a response.compaction object (object {wire.object!r})", provider=PROVIDER
        )
    items = wire.output
    for position, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            raise MalformedResponseError(
                f"the compaction answer's output[{position}] is not an item with a type", provider=PROVIDER
            )
    if not any(i["type"] == "compaction" and isinstance(i.get("encrypted_content"), str) for i in items):
        raise MalformedResponseError(
            "the compaction answer holds no compaction item with encrypted_content", provider=PROVIDER
        )
    usage = usage_from(_Response(id=wire.id, model=request.model, usage=wire.usage))
    return CompactedContext(messages=_messages(items, request.messages), usage=usage)


def _messages(items: list[dict[str, Any]], sent: list[Message]) -> list[Message]:
    unused = list(sent)
    out: list[Message] = []
    for item in items:
        texts = _user_texts(item)
        if texts is None:
            out.append(Message(user=[ProviderPart(type=f"{PROVIDER}.{item['type']}", raw=item)]))
            continue
        found = next((m for m in unused if _texts(m.user) == texts), None)
        if found is not None:
            unused.remove(found)
            if not found.assistant and not found.tool_calls:
                out.append(found)  # kept as it was
                continue
        parts: list[Part] = [TextPart(t) for t in texts]
        out.append(
            Message(
                user=parts,
                source=found.source if found is not None else None,
                date_time=found.date_time if found is not None else None,
            )
        )
    return out


def _user_texts(item: dict[str, Any]) -> list[str] | None:
    """The texts of a kept user message of plain text (None for any other item)."""
    if item.get("type", "message") != "message" or item.get("role") != "user":
        return None
    content = item.get("content")
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list) or not content:
        return None
    texts: list[str] = []
    for entry in content:
        if not isinstance(entry, dict) or entry.get("type") != "input_text" or not isinstance(entry.get("text"), str):
            return None
        texts.append(entry["text"])
    return texts


def _texts(parts: list[Part]) -> list[str] | None:
    if not parts or any(type(p) is not TextPart for p in parts):
        return None
    return [p.text for p in parts if isinstance(p, TextPart)]
