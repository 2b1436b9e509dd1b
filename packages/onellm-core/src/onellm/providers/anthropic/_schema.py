"""What Anthropic's strict tool use and structured output accept of a JSON Schema.

No `minimum`/`maximum`, `minLength`/`maxLength`, `uniqueItems`, `maxItems`, `contentEncoding`; `minItems` only 0 or 1;
simple patterns only (no look-around, back-references, named groups, inline flags, possessive or atomic forms); formats
from Anthropic's list; every object closed, so a schema holding a map is sent without strict mode.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from onellm.providers._schema import SchemaConversion, SchemaRules, strict_conversion

__all__ = ["for_anthropic"]

FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
_REMOVED: Final = ("minimum", "maximum", "minLength", "maxLength", "uniqueItems", "maxItems", "contentEncoding")
_COMPLEX_PATTERN: Final = re.compile(r"\(\?(?!:)|\\[1-9]|\\k<|[*+?}]\+")


def _node(rules: SchemaRules, out: dict[str, Any], pointer: str) -> None:
    for key in _REMOVED:
        rules.drop(out, key, pointer)
    if out.get("minItems", 0) not in (0, 1):
        rules.drop(out, "minItems", pointer)
    if "pattern" in out and _COMPLEX_PATTERN.search(str(out["pattern"])):
        rules.drop(out, "pattern", pointer)
    if "format" in out and out["format"] not in FORMATS:
        rules.drop(out, "format", pointer)


def for_anthropic(schema: Mapping[str, Any]) -> SchemaConversion:
    """The schema for Anthropic's strict tool use and structured output."""
    return strict_conversion("anthropic", schema, SchemaRules(_node))
