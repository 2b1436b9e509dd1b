"""What Gemini accepts of a JSON Schema.

`for_gemini`: Gemini's function declarations and response schema take no `pattern`, `contentEncoding` or `default`,
and of the formats only `date-time`, `date` and `time`. `openapi_schema`: a JSON Schema as the OpenAPI subset of
Gemini's `Schema` message, for models whose catalog entry says `schemaForm: responseSchema`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from onellm.errors import UnsupportedParameterError
from onellm.messages import CallWarning
from onellm.providers._schema import SchemaConversion, SchemaRules

__all__ = ["for_gemini", "openapi_schema"]

FORMATS: Final = frozenset({"date-time", "date", "time"})
_REMOVED: Final = ("pattern", "contentEncoding", "default")


def _node(rules: SchemaRules, out: dict[str, Any], pointer: str) -> None:
    for key in _REMOVED:
        rules.drop(out, key, pointer)
    if "format" in out and out["format"] not in FORMATS:
        rules.drop(out, "format", pointer)


def for_gemini(schema: Mapping[str, Any]) -> SchemaConversion:
    """The schema for Gemini's function declarations and response schema."""
    rules = SchemaRules(_node)
    return SchemaConversion(rules.convert(schema), rules.removed, True)


_OPENAPI_KEYS = {
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
}


def openapi_schema(schema: Mapping[str, Any], warnings: list[CallWarning], where: str) -> dict[str, Any]:
    """A JSON Schema as the OpenAPI subset of Gemini's `Schema` message: local `$ref`s inlined, a type list with
    `null` as `nullable`, `const` as a one-value enum, type names upper-cased; keywords the subset lacks are left out
    and named in one warning."""
    definitions: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        found = schema.get(key)
        if isinstance(found, Mapping):
            definitions.update({f"#/{key}/{name}": value for name, value in found.items()})
    dropped: set[str] = set()

    def convert(node: Any, depth: int) -> Any:
        if not isinstance(node, Mapping):
            return node
        if depth > 64:
            raise UnsupportedParameterError(
                f"{where}: the schema nests (or refers to itself) too deeply", parameter=where
            )
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = definitions.get(ref)
            if target is None:
                raise UnsupportedParameterError(f"{where}: cannot resolve schema reference {ref!r}", parameter=where)
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return convert(merged, depth + 1)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "type":
                if isinstance(value, list):
                    kinds = [str(v) for v in value if v != "null"]
                    if len(kinds) != len(value):
                        out["nullable"] = True
                    if len(kinds) == 1:
                        out["type"] = kinds[0].upper()
                    elif kinds:
                        out["anyOf"] = [{"type": k.upper()} for k in kinds]
                else:
                    out["type"] = str(value).upper()
            elif key == "const":
                out["enum"] = [value]
            elif key == "properties" and isinstance(value, Mapping):
                out["properties"] = {name: convert(sub, depth + 1) for name, sub in value.items()}
            elif key == "items":
                out["items"] = convert(value, depth + 1)
            elif key in ("anyOf", "oneOf") and isinstance(value, list):
                out["anyOf"] = [convert(sub, depth + 1) for sub in value]
            elif key in _OPENAPI_KEYS:
                out[key] = value
            elif key not in ("$defs", "definitions", "$schema"):
                dropped.add(key)
        if "enum" in out and "type" not in out:
            out["type"] = "STRING"
        return out

    converted: dict[str, Any] = convert(schema, 0)
    if dropped:
        warnings.append(
            CallWarning(
                kind="parameter_stripped",
                message=f"{where}: the OpenAPI schema subset has no {', '.join(sorted(dropped))}; left out",
            )
        )
    return converted
