"""Checking JSON values against a schema given as data (a tool file's schema, an adapter's tool).

`Tool.from_schema` tools have no Python signature to convert to, so their arguments are checked against the schema
itself, with the same messages and paths as typed tools (`Argument 'items[2].qty' must be an integer, not a string.`).
Values are returned as they came (plain JSON); nothing is converted.

Supported keywords: `type` (a name or a list), `enum`, `const`, `format` (`date-time`, `date`, `time`, `uuid` and
`duration` are checked; others are accepted as annotations), `minimum`, `maximum`, `exclusiveMinimum`,
`exclusiveMaximum`, `minLength`, `maxLength`, `pattern`, `items`, `minItems`, `maxItems`, `uniqueItems`,
`properties`, `required`, `additionalProperties` (false, true or a schema; absent means true, as JSON Schema says).
Annotations (`description`, `title`, `default`, `examples`, `contentEncoding`, `$schema`, `$comment`, ...) are ignored.
A keyword that would constrain values in a way this checker cannot (`oneOf`, `$ref`, `patternProperties`, ...) is
refused when the tool is built, so no rule in a schema is silently skipped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Final
from uuid import UUID

import msgspec

from onellm._describe import describe_value, quote_text
from onellm.schema import ArgumentError

__all__ = ["compile_schema"]

_ANNOTATIONS: Final = frozenset(
    {
        "description",
        "title",
        "default",
        "examples",
        "contentEncoding",
        "contentMediaType",
        "$schema",
        "$id",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
_HANDLED: Final = frozenset(
    {
        "type",
        "enum",
        "const",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "items",
        "minItems",
        "maxItems",
        "uniqueItems",
        "properties",
        "required",
        "additionalProperties",
    }
)
_TYPE_WORDS: Final = {
    "null": "null",
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "array": "an array",
    "object": "an object",
}
_FORMATS: Final[dict[str, tuple[type, str]]] = {
    "date-time": (datetime, "an RFC 3339 date-time string"),
    "date": (date, "a date string (YYYY-MM-DD)"),
    "time": (time, "a time string (HH:MM:SS)"),
    "uuid": (UUID, "a UUID string"),
    "duration": (timedelta, "an ISO 8601 duration string (like P1DT2H30M)"),
}

Check = Callable[[Any], None]


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "other"
        return "integer" if value.is_integer() else "number"
    if isinstance(value, Decimal):
        if not value.is_finite():
            return "other"
        return "integer" if value == value.to_integral_value() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return "other"


def _same_json(a: Any, b: Any) -> bool:
    ka, kb = _kind_of(a), _kind_of(b)
    if ka in ("integer", "number") and kb in ("integer", "number"):
        return bool(a == b)
    if ka != kb:
        return False
    if ka == "array":
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    if ka == "object":
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    return bool(a == b)


def _shown(value: Any) -> str:
    return quote_text(value) if isinstance(value, str) else "null" if value is None else repr(value)


def compile_schema(schema: Mapping[str, Any], *, where: str = "schema") -> Callable[[Any], Any]:
    """A checker for `schema`: returns the value unchanged, or raises `ArgumentError` naming the path.

    Raises `TypeError` for a schema this checker cannot enforce.
    """
    check = _compile(schema, where)

    def run(value: Any) -> Any:
        check(value)
        return value

    return run


def _compile(schema: Any, where: str) -> Check:
    if schema is True or schema == {}:
        return lambda value: None
    if schema is False:

        def never(value: Any) -> None:
            raise ArgumentError("is not allowed")

        return never
    if not isinstance(schema, Mapping):
        raise TypeError(f"{where}: a schema must be an object or a boolean")
    unknown = [k for k in schema if k not in _HANDLED and k not in _ANNOTATIONS]
    if unknown:
        raise TypeError(
            f"{where}: the keyword {unknown[0]!r} is not supported in a tool schema; supported: "
            + ", ".join(sorted(_HANDLED))
        )
    checks: list[Check] = []
    kinds = schema.get("type")
    if kinds is not None:
        names = [kinds] if isinstance(kinds, str) else list(kinds)
        if not names or any(n not in _TYPE_WORDS for n in names):
            raise TypeError(f"{where}: type must name JSON types, not {kinds!r}")
        allowed = frozenset(names) | ({"integer"} if "number" in names else frozenset())
        expected = " or ".join(_TYPE_WORDS[n] for n in names)

        def check_type(value: Any) -> None:
            if _kind_of(value) not in allowed:
                raise ArgumentError(f"must be {expected}, not {describe_value(value)}")

        checks.append(check_type)
    if "enum" in schema:
        options = list(schema["enum"])
        listed = ", ".join(_shown(o) for o in options)

        def check_enum(value: Any) -> None:
            if not any(_same_json(value, o) for o in options):
                shown = quote_text(value) if isinstance(value, str) else describe_value(value)
                raise ArgumentError(f"must be one of {listed}, not {shown}")

        checks.append(check_enum)
    if "const" in schema:
        constant = schema["const"]

        def check_const(value: Any) -> None:
            if not _same_json(value, constant):
                raise ArgumentError(f"must be {_shown(constant)}")

        checks.append(check_const)
    checks.extend(_number_checks(schema, where))
    checks.extend(_string_checks(schema, where))
    checks.extend(_array_checks(schema, where))
    checks.extend(_object_checks(schema, where))

    def check_all(value: Any) -> None:
        for c in checks:
            c(value)

    return check_all


def _number_checks(schema: Mapping[str, Any], where: str) -> list[Check]:
    out: list[Check] = []
    for key, op, word in (
        ("minimum", lambda v, b: v >= b, "at least"),
        ("maximum", lambda v, b: v <= b, "at most"),
        ("exclusiveMinimum", lambda v, b: v > b, "more than"),
        ("exclusiveMaximum", lambda v, b: v < b, "less than"),
    ):
        if key not in schema:
            continue
        bound = schema[key]
        if isinstance(bound, bool) or not isinstance(bound, int | float | Decimal):
            raise TypeError(f"{where}: {key} must be a number")

        def check(value: Any, bound: Any = bound, op: Any = op, word: str = word) -> None:
            if _kind_of(value) in ("integer", "number") and not op(value, bound):
                raise ArgumentError(f"must be {word} {bound}, not {describe_value(value)}")

        out.append(check)
    return out


def _count(schema: Mapping[str, Any], key: str, where: str) -> int | None:
    value = schema.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"{where}: {key} must be a non-negative integer")
    return value


def _string_checks(schema: Mapping[str, Any], where: str) -> list[Check]:
    out: list[Check] = []
    low, high = _count(schema, "minLength", where), _count(schema, "maxLength", where)
    if low is not None or high is not None:

        def check_length(value: Any) -> None:
            if isinstance(value, str):
                if low is not None and len(value) < low:
                    raise ArgumentError(f"must have at least {low} characters, not {len(value)}")
                if high is not None and len(value) > high:
                    raise ArgumentError(f"must have at most {high} characters, not {len(value)}")

        out.append(check_length)
    if "pattern" in schema:
        pattern = schema["pattern"]
        try:
            regex = re.compile(pattern)
        except (re.error, TypeError) as exc:
            raise TypeError(f"{where}: pattern {pattern!r} is not a valid regular expression: {exc}") from None

        def check_pattern(value: Any) -> None:
            if isinstance(value, str) and regex.search(value) is None:
                raise ArgumentError(f"must match the pattern {pattern}")

        out.append(check_pattern)
    fmt = schema.get("format")
    if fmt in _FORMATS:
        target, expected = _FORMATS[fmt]

        def check_format(value: Any) -> None:
            if isinstance(value, str):
                try:
                    msgspec.convert(value, target)
                except msgspec.ValidationError:
                    raise ArgumentError(f"must be {expected}, not {quote_text(value)}") from None

        out.append(check_format)
    return out


def _array_checks(schema: Mapping[str, Any], where: str) -> list[Check]:
    out: list[Check] = []
    if "items" in schema:
        item = _compile(schema["items"], f"{where}.items")

        def check_items(value: Any) -> None:
            if isinstance(value, list | tuple):
                for i, v in enumerate(value):
                    try:
                        item(v)
                    except ArgumentError as exc:
                        raise exc.within(i) from None

        out.append(check_items)
    low, high = _count(schema, "minItems", where), _count(schema, "maxItems", where)
    if low is not None or high is not None:

        def check_count(value: Any) -> None:
            if isinstance(value, list | tuple):
                if low is not None and len(value) < low:
                    raise ArgumentError(f"must have at least {low} items, not {len(value)}")
                if high is not None and len(value) > high:
                    raise ArgumentError(f"must have at most {high} items, not {len(value)}")

        out.append(check_count)
    if schema.get("uniqueItems") is True:

        def check_unique(value: Any) -> None:
            if isinstance(value, list | tuple):
                for i in range(len(value)):
                    for j in range(i):
                        if _same_json(value[i], value[j]):
                            raise ArgumentError(f"must hold unique items; item {i} repeats item {j}")

        out.append(check_unique)
    return out


def _object_checks(schema: Mapping[str, Any], where: str) -> list[Check]:
    props_raw = schema.get("properties", {})
    if not isinstance(props_raw, Mapping):
        raise TypeError(f"{where}: properties must be an object")
    props = {name: _compile(sub, f"{where}.properties.{name}") for name, sub in props_raw.items()}
    required = list(schema.get("required", ()))
    extra_raw = schema.get("additionalProperties", True)
    extra = None if extra_raw is False else _compile(extra_raw, f"{where}.additionalProperties")
    names = ", ".join(props) or "none"
    if not props and not required and extra_raw is True:
        return []

    def check_object(value: Any) -> None:
        if not isinstance(value, Mapping):
            return
        for key, item in value.items():
            sub = props.get(key)
            if sub is None:
                if extra is None:
                    raise ArgumentError(f"is not accepted (accepted: {names})", (str(key),))
                sub = extra
            try:
                sub(item)
            except ArgumentError as exc:
                raise exc.within(key) from None
        for name in required:
            if name not in value:
                raise ArgumentError("is required", (name,))

    return [check_object]
