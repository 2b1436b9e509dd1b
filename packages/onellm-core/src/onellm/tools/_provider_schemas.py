"""Down-converting onellm's schemas for what each provider accepts.

onellm writes one schema (see `_schema`); a provider's strict tool use or structured output accepts only part of
JSON Schema. These functions remove what a provider rejects, following the "What each provider rejects" table of the
tool-schema page, and report what they removed. The invoker still checks every removed constraint when the call
arrives, so removing a keyword only changes what the model is told, never what a tool accepts.

- Anthropic (strict): no `minimum`/`maximum`, `minLength`/`maxLength`, `uniqueItems`, `maxItems`; `minItems` only 0
  or 1; simple patterns only; formats from its list; every object closed.
- OpenAI (strict): no `minLength`/`maxLength`, `uniqueItems`, `default`; formats from its list (no `uri`); every
  object closed with every property required, so an optional property becomes required and nullable
  (`restore_optional_nulls` turns the nulls the model then sends back into absent arguments).
- Gemini: no `pattern`, `default`; formats `date-time`, `date` and `time` only.

A map (`dict[str, T]`, an object with an `additionalProperties` schema) cannot be closed, so a schema holding one does
not fit Anthropic's or OpenAI's strict mode: the conversion then says `strict=False` and returns the schema unchanged,
for a non-strict request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from onellm.schema import ordered

__all__ = ["SchemaConversion", "for_anthropic", "for_gemini", "for_openai", "restore_optional_nulls"]

_ANTHROPIC_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
_OPENAI_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
_GEMINI_FORMATS: Final = frozenset({"date-time", "date", "time"})

# Look-around, back-references, named groups, inline flags, possessive and atomic forms: not "simple".
_COMPLEX_PATTERN: Final = re.compile(r"\(\?(?!:)|\\[1-9]|\\k<|[*+?}]\+")


class SchemaConversion:
    """A schema converted for one provider."""

    __slots__ = ("reason", "removed", "schema", "strict")

    def __init__(self, schema: dict[str, Any], removed: list[str], strict: bool, reason: str | None = None) -> None:
        self.schema = schema
        """The schema to send."""
        self.removed = removed
        """Where each removed keyword was, as JSON pointers (`/properties/qty/minimum`)."""
        self.strict = strict
        """Whether the schema fits the provider's strict mode; when false it is the original, for a non-strict call."""
        self.reason = reason
        """Why strict mode is not possible, when it is not."""


def _has_map(schema: Mapping[str, Any]) -> bool:
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        return True
    items = schema.get("items")
    if isinstance(items, Mapping) and _has_map(items):
        return True
    props = schema.get("properties")
    return isinstance(props, Mapping) and any(_has_map(p) for p in props.values() if isinstance(p, Mapping))


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


class _Converter:
    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.removed: list[str] = []

    def drop(self, out: dict[str, Any], key: str, pointer: str) -> None:
        if key in out:
            del out[key]
            self.removed.append(f"{pointer}/{key}")

    def convert(self, schema: Mapping[str, Any], pointer: str) -> dict[str, Any]:
        out = dict(schema)
        p = self.provider
        if p == "anthropic":
            for key in ("minimum", "maximum", "minLength", "maxLength", "uniqueItems", "maxItems", "contentEncoding"):
                self.drop(out, key, pointer)
            if out.get("minItems", 0) not in (0, 1):
                self.drop(out, "minItems", pointer)
            if "pattern" in out and _COMPLEX_PATTERN.search(str(out["pattern"])):
                self.drop(out, "pattern", pointer)
            if "format" in out and out["format"] not in _ANTHROPIC_FORMATS:
                self.drop(out, "format", pointer)
        elif p == "openai":
            for key in ("minLength", "maxLength", "uniqueItems", "contentEncoding", "default"):
                self.drop(out, key, pointer)
            if "format" in out and out["format"] not in _OPENAI_FORMATS:
                self.drop(out, "format", pointer)
        else:
            for key in ("pattern", "contentEncoding", "default"):
                self.drop(out, key, pointer)
            if "format" in out and out["format"] not in _GEMINI_FORMATS:
                self.drop(out, "format", pointer)
        items = out.get("items")
        if isinstance(items, Mapping):
            out["items"] = self.convert(items, pointer + "/items")
        extra = out.get("additionalProperties")
        if isinstance(extra, Mapping):
            out["additionalProperties"] = self.convert(extra, pointer + "/additionalProperties")
        props = out.get("properties")
        if isinstance(props, Mapping):
            converted = {
                name: self.convert(sub, f"{pointer}/properties/{_escape(name)}") for name, sub in props.items()
            }
            if p == "openai":
                required = set(out.get("required", ()))
                for name in converted:
                    if name not in required:
                        converted[name] = _add_null(converted[name])
                if converted:
                    out["required"] = list(converted)
            out["properties"] = converted
        return ordered(out)


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _strict(provider: str, schema: Mapping[str, Any]) -> SchemaConversion:
    if _has_map(schema):
        return SchemaConversion(
            dict(schema),
            [],
            False,
            f"{provider} strict mode needs every object closed, and this schema holds a map (an object with "
            "additionalProperties)",
        )
    converter = _Converter(provider)
    return SchemaConversion(converter.convert(schema, ""), converter.removed, True)


def for_anthropic(schema: Mapping[str, Any]) -> SchemaConversion:
    """The schema for Anthropic's strict tool use and structured output."""
    return _strict("anthropic", schema)


def for_openai(schema: Mapping[str, Any]) -> SchemaConversion:
    """The schema for OpenAI's strict function calling and structured output."""
    return _strict("openai", schema)


def for_gemini(schema: Mapping[str, Any]) -> SchemaConversion:
    """The schema for Gemini's function declarations and response schema."""
    converter = _Converter("gemini")
    return SchemaConversion(converter.convert(schema, ""), converter.removed, True)


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
