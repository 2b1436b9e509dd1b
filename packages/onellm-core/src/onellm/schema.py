"""From Python types to JSON Schema 2020-12, and from JSON values back to Python values.

One compiler serves tool parameters (`onellm.tools`) and structured output (`output=` on the verbs), and code of your
own that wants the same schemas: `json_schema_for(Invoice)` is the schema a model is given for `output=Invoice`, and
`compile_type(Invoice).convert(data)` reads a decoded JSON value back as an `Invoice`. Each supported type compiles to a `JsonType`: the schema
fragment the model sees and a converter that turns a decoded JSON value into the Python value, or raises
`ArgumentError` naming the path of the first value that does not fit (`items[2].qty`). The rules are those of the
"Tool signatures and JSON Schema" page, over Python types (`docs/tool-schemas.md` has the table):

- objects are closed (`additionalProperties: false`); a property is required unless it has a default;
- `T | None` adds `"null"` to `type` (and `null` to an `enum`); a fragment without `type` is unchanged;
- enums are string enums of member names in declaration order, `Literal` is an enum of its values;
- keywords are written in one fixed order, and no keyword outside that list is ever written;
- an unsupported or recursive type is refused when the schema is built, with a `TypeError` naming where it was found.
"""

from __future__ import annotations

import base64
import binascii
import collections.abc
import dataclasses
import enum
import math
import re
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import PurePath
from typing import Any, Final, Literal, get_args, get_origin
from uuid import UUID

import msgspec

from onellm._describe import describe_value, quote_text
from onellm._docstrings import attribute_docs, parse_docstring
from onellm.errors import ArgumentError

__all__ = [
    "KEYWORD_ORDER",
    "ArgumentError",
    "Converter",
    "JsonType",
    "Property",
    "compile_type",
    "iter_keywords",
    "json_schema_for",
    "object_type",
    "ordered",
    "schema_default",
    "to_json_value",
    "with_keywords",
]

KEYWORD_ORDER: Final[tuple[str, ...]] = (
    "type",
    "format",
    "description",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "contentEncoding",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "properties",
    "required",
    "additionalProperties",
    "default",
)
"""Every keyword a schema may hold, in the order it is written."""

_KEYWORD_SET: Final = frozenset(KEYWORD_ORDER)

_MAX_DIGITS: Final = 1000
"""The most digits an integer argument may have (a larger one would cost real time to convert)."""
_MAX_BITS: Final = 3322


def ordered(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Return `schema` with its keywords in the fixed order. A keyword outside the list is a bug and raises."""
    unknown = [key for key in schema if key not in _KEYWORD_SET]
    if unknown:
        raise ValueError(f"schema keyword {unknown[0]!r} is not one onellm writes")
    return {key: schema[key] for key in KEYWORD_ORDER if key in schema}


Converter = Callable[[Any], Any]


class JsonType:
    """A compiled type: its schema fragment and the converter from JSON values."""

    __slots__ = ("converter", "hashable", "schema")

    def __init__(self, schema: dict[str, Any], converter: Converter, *, hashable: bool = True) -> None:
        self.schema = schema
        """The JSON Schema fragment, keywords in the fixed order."""
        self.converter = converter
        """`converter(value)`: the Python value, or `ArgumentError` naming the path below the value."""
        self.hashable = hashable
        """Whether converted values can be set members."""

    def convert(self, value: Any) -> Any:
        """Convert a decoded JSON value; raises `ArgumentError` (with an empty path at the top)."""
        return self.converter(value)


class Property:
    """One property of an object schema: the JSON name, the Python name it is passed as, and its type."""

    __slots__ = ("attr", "json_type", "name", "required")

    def __init__(self, name: str, attr: str, json_type: JsonType, required: bool) -> None:
        self.name = name
        self.attr = attr
        self.json_type = json_type
        self.required = required


# ----------------------------------------------------------------------------------------------------- annotations


class _Constraints:
    __slots__ = ("description", "max_length", "maximum", "min_length", "minimum", "pattern", "tz")

    def __init__(self) -> None:
        self.description: str | None = None
        self.minimum: int | float | Decimal | None = None
        self.maximum: int | float | Decimal | None = None
        self.min_length: int | None = None
        self.max_length: int | None = None
        self.pattern: str | None = None
        self.tz: bool | None = None

    def any_besides_description(self) -> bool:
        return any(
            v is not None for v in (self.minimum, self.maximum, self.min_length, self.max_length, self.pattern, self.tz)
        )


def _bound(value: Any, where: str) -> int | float | Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise TypeError(f"{where}: a bound must be a number, not {value!r}")
    return value


def _apply_metadata(meta: Any, c: _Constraints, where: str) -> None:
    """Fold one `Annotated` metadata object into the constraints; objects no schema rule knows are ignored."""
    cls = type(meta)
    module = cls.__module__
    if isinstance(meta, msgspec.Meta):
        for unsupported in ("multiple_of", "title", "examples", "extra_json_schema"):
            if getattr(meta, unsupported, None) is not None:
                raise TypeError(
                    f"{where}: Meta({unsupported}=...) has no keyword in a tool schema; "
                    "the supported ones are description, ge, le, gt and lt (integers), min_length, max_length, "
                    "pattern and tz"
                )
        if meta.description is not None:
            c.description = meta.description
        if meta.ge is not None:
            c.minimum = _bound(meta.ge, where)
        if meta.le is not None:
            c.maximum = _bound(meta.le, where)
        if meta.gt is not None:
            c.minimum = _exclusive(meta.gt, 1, where)
        if meta.lt is not None:
            c.maximum = _exclusive(meta.lt, -1, where)
        if meta.min_length is not None:
            c.min_length = meta.min_length
        if meta.max_length is not None:
            c.max_length = meta.max_length
        if meta.pattern is not None:
            c.pattern = meta.pattern
        if meta.tz is not None:
            c.tz = meta.tz
        return
    if cls.__name__ == "Doc" and isinstance(getattr(meta, "documentation", None), str):
        c.description = meta.documentation
        return
    if cls.__name__ == "FieldInfo" and module.startswith("pydantic"):
        description = getattr(meta, "description", None)
        if isinstance(description, str):
            c.description = description
        for inner in getattr(meta, "metadata", ()) or ():
            _apply_metadata(inner, c, where)
        return
    if module.startswith("pydantic") and cls.__name__ == "_PydanticGeneralMetadata":
        for key, value in vars(meta).items():
            if key == "pattern" and isinstance(value, str):
                c.pattern = value
            elif key not in ("strict",):
                raise TypeError(f"{where}: the pydantic constraint {key}= has no keyword in a tool schema")
        return
    if module == "annotated_types":
        name = cls.__name__
        if name == "Ge":
            c.minimum = _bound(meta.ge, where)
        elif name == "Le":
            c.maximum = _bound(meta.le, where)
        elif name == "Gt":
            c.minimum = _exclusive(meta.gt, 1, where)
        elif name == "Lt":
            c.maximum = _exclusive(meta.lt, -1, where)
        elif name == "Interval":
            for attr, fn in (("ge", None), ("le", None), ("gt", 1), ("lt", -1)):
                value = getattr(meta, attr, None)
                if value is None:
                    continue
                bound = _bound(value, where) if fn is None else _exclusive(value, fn, where)
                if attr in ("ge", "gt"):
                    c.minimum = bound
                else:
                    c.maximum = bound
        elif name == "MinLen":
            c.min_length = meta.min_length
        elif name == "MaxLen":
            c.max_length = meta.max_length
        elif name == "Len":
            c.min_length = meta.min_length
            c.max_length = meta.max_length
        else:
            raise TypeError(f"{where}: annotated_types.{name} has no keyword in a tool schema")
        return
    # Other metadata belongs to other libraries (PEP 593): it carries no schema meaning and is left alone.


def _exclusive(value: Any, step: int, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{where}: an exclusive bound (gt, lt) has no keyword in a tool schema except on integers; use ge or le"
        )
    return value + step


def _unwrap_annotated(tp: Any, c: _Constraints, where: str) -> Any:
    while get_origin(tp) is typing.Annotated:
        args = get_args(tp)
        tp = args[0]
        for meta in args[1:]:
            _apply_metadata(meta, c, where)
    return tp


# ---------------------------------------------------------------------------------------------------- fragments


def _with_null(schema: dict[str, Any]) -> dict[str, Any]:
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


def with_keywords(schema: Mapping[str, Any], **keywords: Any) -> dict[str, Any]:
    """A copy of `schema` with the given keywords set (None leaves a keyword out), in the fixed order."""
    out = dict(schema)
    out.update({key: value for key, value in keywords.items() if value is not None})
    return ordered(out)


def schema_default(value: Any) -> Any:
    """The `default` written for a default value, or `None` when the rules write none.

    Strings, numbers, booleans and enum members (by name) are written; `None` and every other value are not.
    """
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Decimal):
        if not value.is_finite():
            return None
        return int(value) if value == value.to_integral_value() else float(value)
    return None


# ---------------------------------------------------------------------------------------------------- converters


def _fail(expected: str, value: Any) -> ArgumentError:
    return ArgumentError(f"must be {expected}, not {describe_value(value)}")


def _check_range(n: Any, c: _Constraints) -> None:
    if c.minimum is not None and n < c.minimum:
        raise ArgumentError(f"must be at least {c.minimum}, not {_number_text(n)}")
    if c.maximum is not None and n > c.maximum:
        raise ArgumentError(f"must be at most {c.maximum}, not {_number_text(n)}")


def _number_text(n: Any) -> str:
    if isinstance(n, int) and n.bit_length() > 128:
        return "a larger number" if n > 0 else "a smaller number"
    text = str(n)
    return text if len(text) <= 40 else "a number with more digits"


def _bool_converter(value: Any) -> bool:
    if value is True or value is False:
        return bool(value)
    raise _fail("a boolean", value)


def _int_converter(c: _Constraints) -> Converter:
    ranged = c.minimum is not None or c.maximum is not None

    def convert(value: Any) -> int:
        kind = type(value)
        n: int
        if kind is int:
            n = value
        elif kind is float and value.is_integer():
            n = int(value)
        elif kind is Decimal and value.is_finite() and value == value.to_integral_value():
            if value.adjusted() > _MAX_DIGITS:
                raise ArgumentError(f"must be an integer of at most {_MAX_DIGITS} digits")
            n = int(value)
        else:
            raise _fail("an integer", value)
        if ranged:
            _check_range(n, c)
        return n  # an int already, on every path above

    return convert


def _number_converter(target: type, c: _Constraints) -> Converter:
    ranged = c.minimum is not None or c.maximum is not None
    as_decimal = target is Decimal

    def convert(value: Any) -> Any:
        kind = type(value)
        if kind is int:
            if value.bit_length() > _MAX_BITS:
                raise ArgumentError(f"must be a number of at most {_MAX_DIGITS} digits")
            n: Any = Decimal(value) if as_decimal else float(value)
        elif kind is float and math.isfinite(value):
            n = Decimal(repr(value)) if as_decimal else value
        elif kind is Decimal and value.is_finite():
            n = value if as_decimal else float(value)
        else:
            raise _fail("a number", value)
        if not as_decimal and not math.isfinite(n):
            raise ArgumentError("must be a number within the range of a float")
        if ranged:
            _check_range(n, c)
        return n

    return convert


def _length_check(kind: str, c: _Constraints) -> Callable[[int], None] | None:
    if c.min_length is None and c.max_length is None:
        return None
    low, high = c.min_length, c.max_length

    def check(length: int) -> None:
        if low is not None and length < low:
            raise ArgumentError(f"must have at least {low} {kind}, not {length}")
        if high is not None and length > high:
            raise ArgumentError(f"must have at most {high} {kind}, not {length}")

    return check


def _str_converter(c: _Constraints, where: str) -> Converter:
    check = _length_check("characters", c)
    regex: re.Pattern[str] | None = None
    if c.pattern is not None:
        try:
            regex = re.compile(c.pattern)
        except re.error as exc:
            raise TypeError(f"{where}: pattern {c.pattern!r} is not a valid regular expression: {exc}") from None
    pattern = c.pattern

    def convert(value: Any) -> str:
        if type(value) is not str:
            raise _fail("a string", value)
        if check is not None:
            check(len(value))
        if regex is not None and regex.search(value) is None:
            raise ArgumentError(f"must match the pattern {pattern}")
        return value

    return convert


def _parsed_converter(target: type, expected: str, c: _Constraints) -> Converter:
    tz = c.tz

    def convert(value: Any) -> Any:
        if type(value) is not str:
            raise _fail(expected, value)
        try:
            out: Any = msgspec.convert(value, target)
        except msgspec.ValidationError:
            raise ArgumentError(f"must be {expected}, not {quote_text(value)}") from None
        if tz is not None and isinstance(out, datetime | time):
            aware = out.tzinfo is not None
            if tz and not aware:
                raise ArgumentError("must include a time zone offset")
            if not tz and aware:
                raise ArgumentError("must not include a time zone offset")
        return out

    return convert


def _bytes_converter(target: type) -> Converter:
    def convert(value: Any) -> Any:
        if type(value) is not str:
            raise _fail("a base64 string", value)
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ArgumentError("must be a base64 string, not " + quote_text(value)) from None
        return raw if target is bytes else bytearray(raw)

    return convert


# ------------------------------------------------------------------------------------------------------ compiler

_STRING_FORMATS: Final[dict[type, tuple[str, str]]] = {
    datetime: ("date-time", "an RFC 3339 date-time string"),
    date: ("date", "a date string (YYYY-MM-DD)"),
    time: ("time", "a time string (HH:MM:SS)"),
    UUID: ("uuid", "a UUID string"),
}

_LIST_ORIGINS: Final = {list, collections.abc.Sequence, collections.abc.MutableSequence}
_SET_ORIGINS: Final = {set, frozenset, collections.abc.Set, collections.abc.MutableSet}
_DICT_ORIGINS: Final = {dict, collections.abc.Mapping, collections.abc.MutableMapping}


def _annotation_name(tp: Any) -> str:
    if isinstance(tp, type) and get_origin(tp) is None:
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def _is_pydantic_model(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "model_fields") and hasattr(tp, "model_validate")


class _Compiler:
    def __init__(self) -> None:
        self._stack: list[type] = []

    def compile(self, tp: Any, where: str) -> JsonType:
        c = _Constraints()
        core = _unwrap_annotated(tp, c, where)
        nullable = False
        while get_origin(core) in (typing.Union, types.UnionType):
            members = [a for a in get_args(core) if a is not type(None)]
            nullable = nullable or len(members) != len(get_args(core))
            if len(members) != 1:
                shown = " | ".join(_annotation_name(a) for a in get_args(core))
                raise TypeError(
                    f"{where}: the union {shown} has no schema; only `T | None` is supported "
                    "(use a Literal or an Enum for a choice of values)"
                )
            core = _unwrap_annotated(members[0], c, where)
        if core is type(None):
            raise TypeError(f"{where}: None alone has no schema")
        if get_origin(core) is Literal and None in get_args(core):
            nullable = True
        node = self._core(core, c, where)
        if c.description is not None:
            node = JsonType(
                with_keywords(node.schema, description=c.description), node.converter, hashable=node.hashable
            )
        return self._nullable(node) if nullable else node

    @staticmethod
    def _nullable(node: JsonType) -> JsonType:
        inner = node.converter

        def convert(value: Any) -> Any:
            return None if value is None else inner(value)

        return JsonType(_with_null(node.schema), convert, hashable=node.hashable)

    def _core(self, tp: Any, c: _Constraints, where: str) -> JsonType:
        origin = get_origin(tp)
        args = get_args(tp)
        if tp is Any:
            self._no_constraints(c, where, "Any")
            return JsonType({}, lambda value: value, hashable=False)
        if tp is bool:
            self._no_constraints(c, where, "bool")
            return JsonType({"type": "boolean"}, _bool_converter)
        if tp is int:
            self._only(c, where, "int", numeric=True)
            return JsonType(_ranged_schema("integer", c), _int_converter(c))
        if tp is float or tp is Decimal:
            self._only(c, where, tp.__name__, numeric=True)
            return JsonType(_ranged_schema("number", c), _number_converter(tp, c))
        if tp is str:
            self._only(c, where, "str", length=True, pattern=True)
            return JsonType(
                with_keywords({"type": "string"}, minLength=c.min_length, maxLength=c.max_length, pattern=c.pattern),
                _str_converter(c, where),
            )
        if isinstance(tp, type) and issubclass(tp, PurePath):
            self._no_constraints(c, where, tp.__name__)
            path_type = tp

            def convert_path(value: Any) -> Any:
                if type(value) is not str:
                    raise _fail("a path string", value)
                if not value or "\x00" in value:
                    raise ArgumentError("must be a non-empty path without NUL characters")
                return path_type(value)

            return JsonType({"type": "string"}, convert_path)
        if tp is bytes or tp is bytearray:
            self._no_constraints(c, where, tp.__name__)
            return JsonType({"type": "string", "contentEncoding": "base64"}, _bytes_converter(tp), hashable=tp is bytes)
        if tp in _STRING_FORMATS:
            fmt, expected = _STRING_FORMATS[tp]
            self._only(c, where, tp.__name__, tz=tp in (datetime, time))
            return JsonType({"type": "string", "format": fmt}, _parsed_converter(tp, expected, c))
        if tp is timedelta:
            self._no_constraints(c, where, "timedelta")
            return JsonType(
                {"type": "string", "format": "duration"},
                _parsed_converter(timedelta, "an ISO 8601 duration string (like P1DT2H30M)", c),
            )
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            self._no_constraints(c, where, tp.__name__)
            return self._enum(tp)
        if origin is Literal:
            self._no_constraints(c, where, "Literal")
            return self._literal(args, where)
        if origin is tuple:
            return self._tuple(tp, args, c, where)
        if origin in _LIST_ORIGINS or tp is list:
            self._only(c, where, _annotation_name(tp), length=True)
            item = self.compile(args[0] if args else Any, f"{where} (items)")
            return self._array(item, c, tuple_out=False)
        if origin in _SET_ORIGINS or tp in (set, frozenset):
            self._only(c, where, _annotation_name(tp), length=True)
            item = self.compile(args[0] if args else Any, f"{where} (items)")
            if not item.hashable:
                raise TypeError(
                    f"{where}: the items of {_annotation_name(tp)} must be hashable values, not {_annotation_name(args[0])}"
                )
            return self._set(item, c, frozen=origin is frozenset or tp is frozenset)
        if origin in _DICT_ORIGINS or tp is dict:
            self._no_constraints(c, where, _annotation_name(tp))
            key, value = args if args else (str, Any)
            if key is not str:
                raise TypeError(f"{where}: a dict key must be str, not {_annotation_name(key)}")
            return self._dict(self.compile(value, f"{where} (values)"))
        if isinstance(tp, type) and (
            dataclasses.is_dataclass(tp)
            or issubclass(tp, msgspec.Struct)
            or _is_typeddict(tp)
            or _is_pydantic_model(tp)
        ):
            self._no_constraints(c, where, tp.__name__)
            return self._object(tp, where)
        if isinstance(tp, typing.TypeVar):
            raise TypeError(f"{where}: a type variable ({tp}) has no schema; give a concrete type")
        if isinstance(tp, str | typing.ForwardRef):
            raise TypeError(f"{where}: the annotation {tp!r} could not be resolved to a type")
        raise TypeError(
            f"{where}: {_annotation_name(tp)} has no schema. Supported: bool, int, float, Decimal, str, Path, bytes, datetime, "
            "date, time, timedelta, UUID, Enum, Literal, list, tuple, set, frozenset, dict[str, T], dataclasses, "
            "TypedDict, msgspec.Struct, pydantic models, T | None and Annotated constraints"
        )

    # -- constraint checks

    @staticmethod
    def _no_constraints(c: _Constraints, where: str, name: str) -> None:
        if c.any_besides_description():
            raise TypeError(f"{where}: {name} takes no range, length or pattern constraint")

    @staticmethod
    def _only(
        c: _Constraints,
        where: str,
        name: str,
        *,
        numeric: bool = False,
        length: bool = False,
        pattern: bool = False,
        tz: bool = False,
    ) -> None:
        if not numeric and (c.minimum is not None or c.maximum is not None):
            raise TypeError(f"{where}: {name} takes no ge/le/gt/lt constraint")
        if not length and (c.min_length is not None or c.max_length is not None):
            raise TypeError(f"{where}: {name} takes no min_length/max_length constraint")
        if not pattern and c.pattern is not None:
            raise TypeError(f"{where}: {name} takes no pattern constraint")
        if not tz and c.tz is not None:
            raise TypeError(f"{where}: {name} takes no tz constraint")

    # -- composite types

    @staticmethod
    def _enum(tp: type[enum.Enum]) -> JsonType:
        members = list(tp.__members__.items())
        names = [name for name, member in members if member.name == name]
        lookup = {name: tp[name] for name in names}
        expected = "one of " + ", ".join(quote_text(n) for n in names)

        def convert(value: Any) -> Any:
            if type(value) is str:
                member = lookup.get(value)
                if member is not None:
                    return member
                raise ArgumentError(f"must be {expected}, not {quote_text(value)}")
            raise _fail(expected, value)

        return JsonType({"type": "string", "enum": names}, convert)

    @staticmethod
    def _literal(args: tuple[Any, ...], where: str) -> JsonType:
        values = [a for a in args if a is not None]
        if not values:
            raise TypeError(f"{where}: Literal[None] has no schema")
        if all(type(v) is str for v in values):
            kind = "string"
        elif all(type(v) is int for v in values):
            kind = "integer"
        elif all(type(v) is bool for v in values):
            kind = "boolean"
        else:
            raise TypeError(
                f"{where}: a Literal must hold values of one kind (all strings, all integers or all booleans)"
            )
        allowed = list(dict.fromkeys(values))
        expected = "one of " + ", ".join(quote_text(v) if isinstance(v, str) else repr(v) for v in allowed)

        def convert(value: Any) -> Any:
            for candidate in allowed:
                if type(value) is type(candidate) and value == candidate:
                    return candidate
            if isinstance(value, str):
                raise ArgumentError(f"must be {expected}, not {quote_text(value)}")
            raise _fail(expected, value)

        return JsonType({"type": kind, "enum": allowed}, convert)

    def _tuple(self, tp: Any, args: tuple[Any, ...], c: _Constraints, where: str) -> JsonType:
        self._only(c, where, _annotation_name(tp), length=True)
        if not args:
            return self._array(self.compile(Any, where), c, tuple_out=True)
        if len(args) == 2 and args[1] is Ellipsis:
            return self._array(self.compile(args[0], f"{where} (items)"), c, tuple_out=True)
        if args == ((),):
            raise TypeError(f"{where}: the empty tuple has no schema")
        if any(a != args[0] for a in args[1:]):
            raise TypeError(
                f"{where}: {_annotation_name(tp)} mixes item types; a schema array has one item type "
                "(use a dataclass or Struct for a record)"
            )
        if c.min_length is not None or c.max_length is not None:
            raise TypeError(f"{where}: a fixed-length tuple takes no length constraint")
        fixed = _Constraints()
        fixed.min_length = fixed.max_length = len(args)
        return self._array(self.compile(args[0], f"{where} (items)"), fixed, tuple_out=True)

    @staticmethod
    def _array(item: JsonType, c: _Constraints, *, tuple_out: bool) -> JsonType:
        check = _length_check("items", c)
        convert_item = item.converter

        def convert(value: Any) -> Any:
            if not isinstance(value, list | tuple):
                raise _fail("an array", value)
            if check is not None:
                check(len(value))
            out = []
            for i, v in enumerate(value):
                try:
                    out.append(convert_item(v))
                except ArgumentError as exc:
                    raise exc.within(i) from None
            return tuple(out) if tuple_out else out

        schema = with_keywords({"type": "array", "items": item.schema}, minItems=c.min_length, maxItems=c.max_length)
        return JsonType(schema, convert, hashable=tuple_out and item.hashable)

    @staticmethod
    def _set(item: JsonType, c: _Constraints, *, frozen: bool) -> JsonType:
        check = _length_check("items", c)
        convert_item = item.converter

        def convert(value: Any) -> Any:
            if not isinstance(value, list | tuple):
                raise _fail("an array", value)
            if check is not None:
                check(len(value))
            seen: dict[Any, int] = {}
            for i, v in enumerate(value):
                try:
                    converted = convert_item(v)
                except ArgumentError as exc:
                    raise exc.within(i) from None
                first = seen.setdefault(converted, i)
                if first != i:
                    raise ArgumentError(f"must hold unique items; item {i} repeats item {first}")
            return frozenset(seen) if frozen else set(seen)

        schema = with_keywords(
            {"type": "array", "items": item.schema, "uniqueItems": True}, minItems=c.min_length, maxItems=c.max_length
        )
        return JsonType(schema, convert, hashable=frozen)

    @staticmethod
    def _dict(value_type: JsonType) -> JsonType:
        convert_value = value_type.converter

        def convert(value: Any) -> Any:
            if type(value) is not dict and not isinstance(value, Mapping):
                raise _fail("an object", value)
            out: dict[str, Any] = {}
            for key, item in value.items():
                if type(key) is not str:
                    raise ArgumentError("must have string keys")
                try:
                    out[key] = convert_value(item)
                except ArgumentError as exc:
                    raise exc.within(key) from None
            return out

        return JsonType({"type": "object", "additionalProperties": value_type.schema}, convert, hashable=False)

    # -- records

    def _object(self, tp: type, where: str) -> JsonType:
        if tp in self._stack:
            chain = " -> ".join(t.__qualname__ for t in [*self._stack[self._stack.index(tp) :], tp])
            raise TypeError(f"{where}: {tp.__qualname__} refers to itself ({chain}); recursive types have no schema")
        self._stack.append(tp)
        try:
            props = self._record_properties(tp, where)
        finally:
            self._stack.pop()
        return object_type(props, _builder(tp, props))

    def _record_properties(self, tp: type, where: str) -> list[Property]:
        docs = {**parse_docstring(tp.__doc__).params, **attribute_docs(tp)}
        rows: list[tuple[str, str, Any, bool, Any, str | None]] = []  # json name, attr, type, required, default, doc
        if issubclass(tp, msgspec.Struct):
            config = tp.__struct_config__
            if config.array_like:
                raise TypeError(f"{where}: {tp.__qualname__} is array_like; a tool schema needs an object")
            if config.tag is not None:
                raise TypeError(f"{where}: {tp.__qualname__} is a tagged Struct; tagged unions have no tool schema")
            try:
                fields = msgspec.structs.fields(tp)
            except (NameError, TypeError) as exc:
                raise TypeError(f"{where}: cannot resolve the field types of {tp.__qualname__}: {exc}") from None
            for f in fields:
                default = f.default if f.default is not msgspec.NODEFAULT else None
                rows.append((f.encode_name, f.name, f.type, f.required, default, docs.get(f.name)))
        elif dataclasses.is_dataclass(tp):
            hints = self._hints(tp, where)
            for field in dataclasses.fields(tp):
                if not field.init:
                    continue
                required = field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
                default = None if field.default is dataclasses.MISSING else field.default
                doc = field.metadata.get("description") if isinstance(field.metadata.get("description"), str) else None
                rows.append((field.name, field.name, hints[field.name], required, default, doc or docs.get(field.name)))
        elif _is_typeddict(tp):
            hints = self._hints(tp, where)
            required_keys: frozenset[str] = getattr(tp, "__required_keys__", frozenset())
            for name, hint in hints.items():
                while get_origin(hint) in (typing.Required, typing.NotRequired):
                    hint = get_args(hint)[0]
                rows.append((name, name, hint, name in required_keys, None, docs.get(name)))
        else:  # pydantic model
            model_fields: Mapping[str, Any] = getattr(tp, "model_fields", {})
            for name, info in model_fields.items():
                hint = info.annotation
                if info.metadata:
                    hint = typing.Annotated[(hint, *info.metadata)]
                json_name = info.alias or name
                required = bool(info.is_required())
                default = None if required else info.get_default(call_default_factory=False)
                doc = info.description or docs.get(name)
                rows.append((json_name, json_name, hint, required, default, doc))
        props: list[Property] = []
        for json_name, attr, hint, required, default, doc in rows:
            node = self.compile(hint, f"{where} -> {tp.__qualname__}.{attr}")
            schema = node.schema
            if doc is not None and "description" not in schema:
                schema = with_keywords(schema, description=doc)
            if not required:
                schema = with_keywords(schema, default=schema_default(default))
            if schema is not node.schema:
                node = JsonType(schema, node.converter, hashable=node.hashable)
            props.append(Property(json_name, attr, node, required))
        return props

    @staticmethod
    def _hints(tp: type, where: str) -> dict[str, Any]:
        try:
            return typing.get_type_hints(tp, include_extras=True)
        except Exception as exc:
            raise TypeError(f"{where}: cannot resolve the field types of {tp.__qualname__}: {exc}") from None


def _ranged_schema(kind: str, c: _Constraints) -> dict[str, Any]:
    return with_keywords({"type": kind}, minimum=_plain_number(c.minimum), maximum=_plain_number(c.maximum))


def _plain_number(value: int | float | Decimal | None) -> int | float | None:
    if value is None:
        return None
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _builder(tp: type, props: list[Property]) -> Callable[[dict[str, Any]], Any]:
    if _is_typeddict(tp):
        return lambda values: values
    if _is_pydantic_model(tp):
        validate: Callable[[Any], Any] = tp.model_validate  # type: ignore[attr-defined]

        def build_model(values: dict[str, Any]) -> Any:
            try:
                return validate(values)
            except Exception as exc:
                raise ArgumentError(f"is not a valid {tp.__name__}: {exc}") from None

        return build_model

    def build(values: dict[str, Any]) -> Any:
        try:
            return tp(**values)
        except Exception as exc:
            raise ArgumentError(f"is not a valid {tp.__name__}: {type(exc).__name__}: {exc}") from None

    return build


def object_type(props: list[Property], build: Callable[[dict[str, Any]], Any] | None) -> JsonType:
    """A closed object of `props`; `build(values_by_attr)` makes the Python value (None: the values are the value)."""
    by_name = {p.name: (p.attr, p.json_type.converter) for p in props}
    required = [p.name for p in props if p.required]
    names = ", ".join(by_name) or "none"
    count = len(by_name)

    def convert(value: Any) -> Any:
        if type(value) is not dict and not isinstance(value, Mapping):
            raise _fail("an object", value)
        values: dict[str, Any] = {}
        for key, item in value.items():
            prop = by_name.get(key)
            if prop is None:
                raise ArgumentError(f"is not accepted (accepted: {names})", (str(key),))
            attr, converter = prop
            try:
                values[attr] = converter(item)
            except ArgumentError as exc:
                raise exc.within(key) from None
        if len(values) < count:
            for name in required:
                if name not in value:
                    raise ArgumentError("is required", (name,))
        return values if build is None else build(values)

    schema: dict[str, Any] = {"type": "object", "properties": {p.name: p.json_type.schema for p in props}}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return JsonType(ordered(schema), convert, hashable=False)


_CACHE: dict[Any, JsonType] = {}
_CACHE_SIZE: Final = 1024


def compile_type(tp: Any, *, where: str | None = None) -> JsonType:
    """Compile a type to its schema and converter; raises `TypeError` for a type with no schema.

    Results are cached per type (structured output asks for the same type call after call), so the returned
    `schema` is shared: treat it as read-only, or use `json_schema_for`, which returns a copy.
    """
    try:
        hit = _CACHE.get(tp)
    except TypeError:  # an unhashable annotation (some metadata objects are)
        return _Compiler().compile(tp, where or _annotation_name(tp))
    if hit is not None:
        return hit
    node = _Compiler().compile(tp, where or _annotation_name(tp))
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)), None)
    _CACHE[tp] = node
    return node


def json_schema_for(tp: Any) -> dict[str, Any]:
    """The JSON Schema fragment for a Python type, as written for tools and structured output (a fresh copy)."""
    copied: dict[str, Any] = _copy_json(compile_type(tp).schema)
    return copied


def _copy_json(value: Any) -> Any:
    if type(value) is dict:
        return {k: _copy_json(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy_json(v) for v in value]
    return value


# -------------------------------------------------------------------------------------------------------- results


def to_json_value(value: Any) -> Any:
    """A plain JSON value (str, bool, int, float, Decimal, None, list, dict) for a tool's return value.

    Enums are written by member name, dates and times in ISO 8601, UUIDs and paths as text, bytes as base64, records
    (dataclasses, msgspec Structs, pydantic models) as objects. Raises `TypeError` for anything else, and for a value
    nested more than 64 levels deep (an instance file that keeps it is read back with at most 100 levels in all).
    """
    return _to_json(value, 0)


def _to_json(value: Any, depth: int) -> Any:
    if depth > 64:
        raise TypeError("the value is nested too deeply to be sent as JSON")
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"{value!r} has no JSON form")
        return value
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise TypeError(f"{value!r} has no JSON form")
        return value
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return msgspec.to_builtins(value)
    if isinstance(value, UUID | PurePath):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(key, enum.Enum):
                key = key.name
            if not isinstance(key, str):
                raise TypeError(f"a dict key must be a string to be sent as JSON, not {type(key).__name__}")
            out[key] = _to_json(item, depth + 1)
        return out
    if isinstance(value, list | tuple | set | frozenset):
        return [_to_json(item, depth + 1) for item in value]
    if isinstance(value, msgspec.Struct):
        return {f.encode_name: _to_json(getattr(value, f.name), depth + 1) for f in msgspec.structs.fields(type(value))}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_json(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    if callable(dump) and _is_pydantic_model(type(value)):
        return _to_json(dump(mode="json", by_alias=True), depth + 1)
    raise TypeError(f"a {type(value).__qualname__} cannot be sent as JSON")


def iter_keywords(schema: Mapping[str, Any]) -> Iterator[str]:
    """Every keyword used anywhere in `schema` (for checks that only listed keywords are written)."""
    for key, value in schema.items():
        yield key
        if key == "properties" and isinstance(value, Mapping):
            for sub in value.values():
                yield from iter_keywords(sub)
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            yield from iter_keywords(value)
