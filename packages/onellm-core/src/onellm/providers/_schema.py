"""What the providers' schema rules share: walking a JSON Schema, removing keywords a provider rejects (and saying
where), closing objects for strict modes, and keeping keywords in onellm's fixed order.

Each provider's own rules live beside its codec (`anthropic/_schema.py`, `openai/_schema.py`, `gemini/_schema.py`),
following the "What each provider rejects" table of the tool-schema page. A tool still checks every removed
constraint when the call arrives, so removing a keyword only changes what the model is told, never what a tool
accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from onellm.errors import UnsupportedParameterError
from onellm.schema import KEYWORD_ORDER

__all__ = ["KEYWORD_ORDER", "SchemaConversion", "SchemaRules", "has_map", "ordered", "strict_conversion"]


_RANK: Final = {key: rank for rank, key in enumerate(KEYWORD_ORDER)}
_SUBSCHEMA_LISTS: Final = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS: Final = ("$defs", "definitions")


def ordered(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with onellm's keywords in their fixed order, then any other keyword in the order given."""
    known = sorted((key for key in schema if key in _RANK), key=_RANK.__getitem__)
    return {**{key: schema[key] for key in known}, **{k: v for k, v in schema.items() if k not in _RANK}}


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

    def __repr__(self) -> str:
        return f"SchemaConversion(strict={self.strict}, removed={self.removed!r})"


def has_map(schema: Mapping[str, Any]) -> bool:
    """Whether the schema holds a map (an object with an `additionalProperties` schema), which cannot be closed."""
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        return True
    items = schema.get("items")
    if isinstance(items, Mapping) and has_map(items):
        return True
    for key in _SUBSCHEMA_LISTS:
        found = schema.get(key)
        if isinstance(found, list) and any(isinstance(s, Mapping) and has_map(s) for s in found):
            return True
    for key in ("properties", *_SUBSCHEMA_MAPS):
        found = schema.get(key)
        if isinstance(found, Mapping) and any(has_map(p) for p in found.values() if isinstance(p, Mapping)):
            return True
    return False


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


class SchemaRules:
    """One provider's rules: `node` removes what the provider rejects from one schema object (the walk reaches every
    sub-schema), `properties` may rewrite an object's properties (OpenAI makes every one required)."""

    __slots__ = ("_node", "_properties", "removed")

    def __init__(
        self,
        node: Callable[[SchemaRules, dict[str, Any], str], None],
        properties: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
    ) -> None:
        self._node = node
        self._properties = properties
        self.removed: list[str] = []

    def drop(self, out: dict[str, Any], key: str, pointer: str) -> None:
        """Remove `key` from one schema object and note where it was."""
        if key in out:
            del out[key]
            self.removed.append(f"{pointer}/{key}")

    def convert(self, schema: Mapping[str, Any], pointer: str = "", depth: int = 0) -> dict[str, Any]:
        if depth > 64:
            raise UnsupportedParameterError(
                f"the schema nests more than 64 levels deep (at {pointer or '/'})", parameter="schema"
            )
        out = dict(schema)
        self._node(self, out, pointer)
        items = out.get("items")
        if isinstance(items, Mapping):
            out["items"] = self.convert(items, pointer + "/items", depth + 1)
        extra = out.get("additionalProperties")
        if isinstance(extra, Mapping):
            out["additionalProperties"] = self.convert(extra, pointer + "/additionalProperties", depth + 1)
        for key in _SUBSCHEMA_LISTS:
            found = out.get(key)
            if isinstance(found, list):
                out[key] = [
                    self.convert(sub, f"{pointer}/{key}/{i}", depth + 1) if isinstance(sub, Mapping) else sub
                    for i, sub in enumerate(found)
                ]
        for key in _SUBSCHEMA_MAPS:
            found = out.get(key)
            if isinstance(found, Mapping):
                out[key] = {
                    name: self.convert(sub, f"{pointer}/{key}/{_escape(name)}", depth + 1)
                    if isinstance(sub, Mapping)
                    else sub
                    for name, sub in found.items()
                }
        props = out.get("properties")
        if isinstance(props, Mapping):
            converted = {
                name: self.convert(sub, f"{pointer}/properties/{_escape(name)}", depth + 1)
                if isinstance(sub, Mapping)
                else sub
                for name, sub in props.items()
            }
            if self._properties is not None:
                self._properties(out, converted)
            out["properties"] = converted
        return ordered(out)


def strict_conversion(provider: str, schema: Mapping[str, Any], rules: SchemaRules) -> SchemaConversion:
    """A conversion for a provider's strict mode: the schema as it is, not strict, when it holds a map."""
    if has_map(schema):
        return SchemaConversion(
            dict(schema),
            [],
            False,
            f"{provider} strict mode needs every object closed, and this schema holds a map (an object with "
            "additionalProperties)",
        )
    return SchemaConversion(rules.convert(schema), rules.removed, True)
