"""Shared machinery of the message model: the model base class, key layout, and plain-value checks.

Every model object reads from and writes to plain data (str, bool, int, Decimal, None, list, dict). Keys the model
does not know are kept in `extra`, in the order they were read, and written back at the same level.

**Key layout.** An object read by `from_data` remembers the keys it was read with, in their order (`_keys`). `to_data`
then writes the keys in that order, writes a known key that was present even when it holds its default value (so an
empty list written stays an empty list), and leaves out a defaulted key that was absent. Objects built in code have no
layout and write the canonical shape: known keys in the order of `spec/messages.md`, defaults omitted, extension keys
last. The layout is not part of equality: two objects with the same values are equal whatever order their keys had.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar, Self, TypeVar

import msgspec

from onellm._describe import type_name
from onellm.errors import BadDefinitionError

__all__ = ["Model"]

T = TypeVar("T")
_LIMIT = 10**30  # a whole number given as a decimal is read up to this size; larger is surely wrong


class Model(msgspec.Struct, kw_only=True, dict=True, repr_omit_defaults=True):
    """Base of the message model objects: keyword-only fields, equality by value, a key layout outside equality."""

    _keys: ClassVar[tuple[str, ...] | None] = None

    # The layout lives in the instance dict, which msgspec's copy and pickle support leave behind; carry it along.

    def __copy__(self) -> Self:
        new = msgspec.structs.replace(self)
        found = self.__dict__
        if found and (len(found) > 1 or _MEMO not in found):  # a layout to carry (not only a memo)
            new.__dict__.update(_layout(self))
        return new

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        values = {name: copy.deepcopy(getattr(self, name), memo) for name in self.__struct_fields__}
        new = type(self)(**values)
        new.__dict__.update(_layout(self))  # only immutable layout values live here
        return new

    def __reduce__(self) -> tuple[Any, ...]:
        values = {name: getattr(self, name) for name in self.__struct_fields__}
        return (_rebuild, (type(self), values, _layout(self)))


_MEMO = "_memo"  # a message's memo (`_memo.MEMO`): what was made from it, never carried to a copy


def _layout(obj: Model) -> dict[str, Any]:
    found = obj.__dict__
    if _MEMO in found:
        return {key: value for key, value in found.items() if key != _MEMO}
    return dict(found)


def _rebuild(cls: type[Model], values: dict[str, Any], layout: dict[str, Any]) -> Model:
    obj = cls(**values)
    obj.__dict__.update(layout)
    return obj


def set_layout(obj: Model, keys: tuple[str, ...]) -> None:
    """Remember the keys `obj` was read with (see the module docstring)."""
    obj.__dict__["_keys"] = keys


def relayout(out: dict[str, Any], defaults: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Reorder a canonical `out` by a remembered key layout.

    `defaults` maps each known key to the plain value it has when at its default. A key present in the layout is
    written (with its default value when the canonical form left it out); a key absent from the layout is written only
    when its value differs from its default; keys new since reading follow in canonical order.
    """
    result: dict[str, Any] = {}
    for key in keys:
        if key in out:
            result[key] = out[key]
        elif key in defaults:
            result[key] = defaults[key]
    if len(result) == len(out):
        return result
    added = [
        key
        for key, value in out.items()
        if key not in result and not (key in defaults and key not in keys and _same(value, defaults[key]))
    ]
    if not added:
        return result
    # Keys set since reading go where the canonical order puts them: after the nearest canonical key before them.
    order = list(result)
    canonical = list(out)
    for key in added:
        at = 0
        for earlier in reversed(canonical[: canonical.index(key)]):
            if earlier in result:
                at = order.index(earlier) + 1
                break
        order.insert(at, key)
        result[key] = out[key]
    return {key: result[key] for key in order}


def _same(value: Any, default: Any) -> bool:
    return type(value) is type(default) and bool(value == default)


def read_list(reader: Callable[[Any, str], T], value: Any, path: str) -> list[T]:
    """Read each item of a list with `reader`.

    Item paths (`[3]`) are only formatted when an item is bad: the list is then read again with them, so the error
    names the item without the happy path paying for the text.
    """
    items = need_list(value, path)
    try:
        return [reader(item, path) for item in items]
    except BadDefinitionError as exc:
        error = exc
    for i, item in enumerate(items):
        reader(item, f"{path}[{i}]")
    raise error


def bad(path: str, message: str) -> BadDefinitionError:
    """The typed error for bad message data at `path`."""
    return BadDefinitionError(message, path=path)


def need_mapping(value: Any, path: str, key: str = "") -> Mapping[str, Any]:
    if type(value) is dict or isinstance(value, Mapping):
        return value
    raise bad(path + key, f"expected a mapping, found {type_name(value)}")


def need_list(value: Any, path: str, key: str = "") -> list[Any]:
    if type(value) is list:
        return value
    if isinstance(value, list | tuple):
        return list(value)
    raise bad(path + key, f"expected a list, found {type_name(value)}")


def opt_str(value: Any, path: str, key: str = "") -> str | None:
    if value is None or type(value) is str or isinstance(value, str):
        return value
    raise bad(path + key, f"expected a string, found {type_name(value)}")


def need_str(value: Any, path: str, key: str = "") -> str:
    if type(value) is str or isinstance(value, str):
        return value
    raise bad(path + key, f"expected a string, found {type_name(value)}")


def opt_bool(value: Any, path: str, key: str = "") -> bool:
    if value is None:
        return False
    if value is True or value is False:
        return value
    raise bad(path + key, f"expected true or false, found {type_name(value)}")


def need_int(value: Any, path: str, key: str = "") -> int:
    if value is None:
        return 0
    if type(value) is int:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)  # an int subclass, such as a round-trip YAML loader's
    if isinstance(value, Decimal):
        if value.is_finite() and -_LIMIT < value < _LIMIT and value == value.to_integral_value():
            return int(value)
    elif isinstance(value, float) and -_LIMIT < value < _LIMIT and value == int(value):
        return int(value)
    raise bad(path + key, f"expected a whole number, found {type_name(value)}")


def to_decimal(value: Any, path: str, key: str = "") -> Decimal:
    """An exact decimal from a plain number (a float goes through its shortest text, never its binary value)."""
    if type(value) is Decimal:
        if not value.is_finite():
            raise bad(path + key, "expected a finite number")
        return value
    if type(value) is int:
        return Decimal(value)
    if type(value) is float:
        if value != value or value in (float("inf"), float("-inf")):
            raise bad(path + key, "expected a finite number")
        return Decimal(repr(value))
    if isinstance(value, bool):
        raise bad(path + key, "expected a number, found a boolean")
    if isinstance(value, int):
        return Decimal(int(value))
    if isinstance(value, float):
        return to_decimal(float(value), path, key)
    if isinstance(value, str):
        try:
            parsed = Decimal(value.strip())
        except InvalidOperation:
            raise bad(path + key, f"expected a number, found the string {value!r}") from None
        if not parsed.is_finite():
            raise bad(path + key, "expected a finite number")
        return parsed
    raise bad(path + key, f"expected a number, found {type_name(value)}")


def opt_decimal(value: Any, path: str, key: str = "") -> Decimal | None:
    return None if value is None else to_decimal(value, path, key)


def quantity(value: Any, path: str, key: str = "") -> int | Decimal:
    """A counter value: an integer stays an integer, anything else becomes an exact decimal."""
    if type(value) is int:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    return to_decimal(value, path, key)


def plain_data(value: Any) -> Any:
    """A value as plain data for an instance file (run inputs, for example): message parts as their data form, records
    (msgspec structs, dataclasses) as objects, floats as the decimal they print as."""
    if isinstance(value, Mapping):
        return {str(k): plain_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_data(v) for v in value]
    if isinstance(value, msgspec.Struct) and hasattr(value, "to_data"):
        return value.to_data()
    if value is None or isinstance(value, str | bool | int | Decimal):
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    return msgspec.to_builtins(value, builtin_types=(Decimal,))
