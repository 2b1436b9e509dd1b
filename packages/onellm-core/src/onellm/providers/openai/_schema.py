"""What OpenAI's strict function calling and structured output accept of a JSON Schema.

No `minLength`/`maxLength`, `uniqueItems`, `contentEncoding`, `default`; formats from OpenAI's list (no `uri`); every
object closed with every property required, so an optional property becomes required and nullable, and
`restore_optional_nulls` turns the nulls the model then sends back into absent arguments. A schema holding a map
cannot be closed and is sent without strict mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from onellm.providers._schema import SchemaConversion, SchemaRules, ordered, strict_conversion

__all__ = ["for_openai", "restore_optional_nulls"]

FORMATS: Final = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
_REMOVED: Final = ("minLength", "maxLength", "uniqueItems", "contentEncoding", "default")


def _node(rules: SchemaRules, out: dict[str, Any], pointer: str) -> None:
    for key in _REMOVED:
        rules.drop(out, key, pointer)
    if "format" in out and out["format"] not in FORMATS:
        rules.drop(out, "format", pointer)


def _add_null(schema: dict[str, Any]) -> dict[str, Any]:
    if "type" not in schema:
        return schema
    out = dict(schema)
    kind = out["type"]
    if isinstance(kind, list):
        if "null" not in kind:
            out["type"] = [*kind, "null"]
    elif kind != "null":
        out["type"] = [kind, "null"]
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return ordered(out)


def _all_required(out: dict[str, Any], properties: dict[str, Any]) -> None:
    required = set(out.get("required", ()))
    for name in properties:
        if name not in required:
            properties[name] = _add_null(properties[name])
    if properties:
        out["required"] = list(properties)


def for_openai(schema: Mapping[str, Any]) -> SchemaConversion:
    """The schema for OpenAI's strict function calling and structured output."""
    return strict_conversion("openai", schema, SchemaRules(_node, _all_required))


def restore_optional_nulls(arguments: Any, original: Mapping[str, Any]) -> Any:
    """Undo OpenAI's strict-mode nullable optionals: a `null` for a property that was optional and did not accept
    null in the original schema becomes an absent key, at every depth."""
    if isinstance(arguments, Mapping) and isinstance(original.get("properties"), Mapping):
        props: Mapping[str, Any] = original["properties"]
        required = set(original.get("required", ()))
        out: dict[str, Any] = {}
        for key, value in arguments.items():
            sub = props.get(key)
            if not isinstance(sub, Mapping):
                out[key] = value
                continue
            if value is None and key not in required and not _accepts_null(sub):
                continue
            out[key] = restore_optional_nulls(value, sub)
        return out
    if isinstance(arguments, list) and isinstance(original.get("items"), Mapping):
        return [restore_optional_nulls(v, original["items"]) for v in arguments]
    if isinstance(arguments, Mapping) and isinstance(original.get("additionalProperties"), Mapping):
        extra = original["additionalProperties"]
        return {k: restore_optional_nulls(v, extra) for k, v in arguments.items()}
    return arguments


def _accepts_null(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind is None:
        return True
    return kind == "null" or (isinstance(kind, list) and "null" in kind)
