"""Helpers every codec shares for turning message content into wire content: inline asset bytes, data URLs, tool
result text, and the argument text of a tool call."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from onellm.errors import CapabilityMissingError, UnsupportedParameterError

if TYPE_CHECKING:
    from onellm.messages import AssetPart, Part

__all__ = ["asset_base64", "asset_url", "json_text", "result_text", "strict_schema"]

_ENCODER = msgspec.json.Encoder(decimal_format="number")


def json_text(value: Any) -> str:
    """Compact JSON text of a plain value; decimals stay exact numbers."""
    return _ENCODER.encode(value).decode("utf-8")


def asset_base64(part: AssetPart) -> str | None:
    """The asset's inline content as base64 text, when the part carries it (bytes, or base64 text already)."""
    data = part.data if part.legacy is None else part.legacy_media
    if isinstance(data, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(data)).decode("ascii")
    if isinstance(data, str) and not data.startswith(("http://", "https://", "data:")):
        return data
    if isinstance(data, dict):
        inner = data.get("data")
        if isinstance(inner, str):
            return inner
    return None


def asset_url(part: AssetPart) -> str:
    """A URL a provider can read: the part's own http(s) or data URL, else a data URL built from inline content."""
    data = part.data if part.legacy is None else part.legacy_media
    if isinstance(data, str) and data.startswith(("http://", "https://", "data:")):
        return data
    if isinstance(data, dict):
        url = data.get("url")
        if isinstance(url, str):
            return url
    encoded = asset_base64(part)
    if encoded is None:
        raise CapabilityMissingError(
            f"asset {part.name or part.key or '(unnamed)'} has no inline content: load it from the asset store "
            "before sending (the runtime does this for stored assets)"
        )
    return f"data:{asset_media_type(part)};base64,{encoded}"


def asset_media_type(part: AssetPart) -> str:
    if part.content_type:
        return part.content_type
    data = part.legacy_media
    if isinstance(data, dict):
        for key in ("contentType", "mediaType", "mimeType"):
            if isinstance(data.get(key), str):
                return str(data[key])
    return {"image": "image/png", "audio": "audio/wav", "video": "video/mp4", "pdf": "application/pdf"}.get(
        part.legacy or "", "application/octet-stream"
    )


def result_text(parts: list[Part] | None) -> str:
    """A tool result as one text: text parts as they are, JSON parts as JSON text, other parts described."""
    from onellm.messages import JsonPart, RefusalPart, TextPart

    if not parts:
        return ""
    pieces: list[str] = []
    for part in parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, JsonPart):
            pieces.append(json_text(part.json))
        elif isinstance(part, RefusalPart):
            pieces.append(part.refusal)
        else:
            pieces.append(json_text(part.to_data()))
    return "\n".join(pieces)


def strict_schema(
    schema: Mapping[str, Any],
    convert: Callable[[Mapping[str, Any]], Any],
    *,
    what: str,
    warnings: list[Any],
) -> tuple[dict[str, Any], bool]:
    """A schema for a provider's strict mode: (schema to send, strict). Keywords the provider cannot take are removed
    and named in a warning; a schema that cannot be strict at all is sent as it is, non-strict, with a warning."""
    from onellm.messages import CallWarning

    conversion = convert(schema)
    if not conversion.strict:
        warnings.append(
            CallWarning(
                kind="parameter_stripped",
                message=f"{what} cannot use strict mode ({conversion.reason}); sent without it",
            )
        )
        return dict(schema), False
    if conversion.removed:
        warnings.append(
            CallWarning(
                kind="parameter_stripped",
                message=f"{what}: strict mode takes no {', '.join(conversion.removed)}; removed (the tool still checks them)",
            )
        )
    return dict(conversion.schema), True


def unsendable_user_part(part: Part, api: str) -> UnsupportedParameterError:
    """The error for a user-side part `api` has no input for. Such a part is refused, never dropped: a compaction kept
    from OpenAI Responses, for one, stands for the whole conversation before it. `at_message` adds where it is."""
    kind = getattr(part, "type", None) if part.kind == "providerPart" else None
    what = f"the provider part {kind!r}" if kind else f"a {part.kind} part"
    return UnsupportedParameterError(f"{what} cannot be sent to {api} as user content", parameter="user")


def at_message(error: UnsupportedParameterError, index: int) -> UnsupportedParameterError:
    """`unsendable_user_part`'s error, raised for the user side of `messages[index]`, with that path in front."""
    path = f"messages[{index}].user"
    return UnsupportedParameterError(f"{path}: {error}", parameter=path, model=error.model)
