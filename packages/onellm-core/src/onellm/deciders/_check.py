"""The guard a `decider.schema.json` puts on a decider's inputs and outputs.

Exactly these keywords are enforced: `type` (a name or a list of names: `object`, `array`, `string`, `number`,
`integer`, `boolean`, `null`), `properties`, `required`, `additionalProperties` (false, or a schema), `items` (a
schema for every element, or a list of schemas by position), `enum`, `const`, `minimum`, `maximum` (inclusive) and
`anyOf`. Every other keyword is ignored: this is a guard against wrong inputs, not a JSON Schema validator. Values
compare as JSON does (`1` equals `1.0`; `true` is not `1`). The first value that does not fit is reported with its
path (`inputs.ticket.lines[2]`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from onellm._describe import join_path, type_name
from onellm._public import publish as _publish

__all__ = ["Mismatch", "check_value"]

_TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")


class Mismatch(Exception):
    """A value does not fit its schema: where, and why."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def _fits_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, Mapping)
    if name == "array":
        return isinstance(value, list | tuple)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if name == "number":
        return _is_number(value)
    if name == "integer":
        if not _is_number(value):
            return False
        if isinstance(value, int):
            return True
        return bool(math.isfinite(value) and value == int(value))
    return True  # an unknown type name constrains nothing


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return Decimal(str(a)) == Decimal(str(b)) if isinstance(a, float) or isinstance(b, float) else bool(a == b)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _describe_types(names: Sequence[str]) -> str:
    words = [("an " if n in ("object", "array", "integer") else "a ") + n for n in names]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def check_value(value: Any, schema: Any, path: str) -> None:
    """Check `value` against `schema` (the enforced keywords only).

    Raises:
        Mismatch: the first value that does not fit, with its path and the reason.
    """
    if schema is True or schema is None or not isinstance(schema, Mapping):
        if schema is False:
            raise Mismatch(path, "no value is allowed here")
        return
    kind = schema.get("type")
    if kind is not None:
        names = (
            [kind]
            if isinstance(kind, str)
            else [n for n in kind if isinstance(n, str)]
            if isinstance(kind, list)
            else []
        )
        if names and not any(_fits_type(value, n) for n in names):
            raise Mismatch(path, f"expected {_describe_types(names)}, found {type_name(value)}")
    if "const" in schema and not _json_equal(value, schema["const"]):
        raise Mismatch(path, f"must be {schema['const']!r}")
    options = schema.get("enum")
    if isinstance(options, list) and not any(_json_equal(value, option) for option in options):
        shown = ", ".join(repr(o) for o in options[:10])
        raise Mismatch(path, f"must be one of {shown}, found {value!r}")
    if _is_number(value):
        low = schema.get("minimum")
        if _is_number(low) and Decimal(str(value)) < Decimal(str(low)):
            raise Mismatch(path, f"must be at least {low}, found {value}")
        high = schema.get("maximum")
        if _is_number(high) and Decimal(str(value)) > Decimal(str(high)):
            raise Mismatch(path, f"must be at most {high}, found {value}")
    if isinstance(value, Mapping):
        _check_object(value, schema, path)
    elif isinstance(value, list | tuple):
        items = schema.get("items")
        if isinstance(items, list):
            for i, (item, sub) in enumerate(zip(value, items, strict=False)):
                check_value(item, sub, f"{path}[{i}]")
        elif items is not None:
            for i, item in enumerate(value):
                check_value(item, items, f"{path}[{i}]")
    forms = schema.get("anyOf")
    if isinstance(forms, list) and forms:
        problems: list[Mismatch] = []
        for option in forms:
            try:
                check_value(value, option, path)
            except Mismatch as mismatch:
                problems.append(mismatch)
            else:
                return
        deepest = max(problems, key=lambda m: len(m.path))
        if deepest.path != path:
            raise deepest
        raise Mismatch(path, "fits none of the allowed forms (" + "; ".join(p.problem for p in problems) + ")")


def _check_object(value: Mapping[Any, Any], schema: Mapping[str, Any], path: str) -> None:
    properties = schema.get("properties")
    props = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    if isinstance(required, list):
        for name in required:
            if isinstance(name, str) and name not in value:
                raise Mismatch(join_path(path, name), "is required")
    for key, item in value.items():
        name = str(key)
        if name in props:
            check_value(item, props[name], join_path(path, name))
            continue
        extra = schema.get("additionalProperties")
        if extra is False:
            allowed = ", ".join(sorted(map(str, props))) or "none"
            raise Mismatch(join_path(path, name), f"is not an allowed property (allowed: {allowed})")
        if isinstance(extra, Mapping):
            check_value(item, extra, join_path(path, name))


_publish("onellm.deciders", Mismatch)
