"""Words for values and for where they are, shared by every error message that names them.

- `type_name(value)` names the kind of a plain value as a file holds it (`a string`, `a list`, `a mapping`), for
  "expected ..., found ..." messages about YAML files; `describe_value(value)` shows a JSON value in JSON's words
  (`an array`, `an object`, a short number as written) for the argument errors a model reads.
- `format_path(segments)` writes the keys and indexes from a document's top down to one value, the way
  `ArgumentError.path` always has: `items[2].qty`, `headers["X-Api-Key"]` (a key that is not an identifier is quoted
  in brackets). `join_path` adds one segment to such a text, and `parse_path` reads one back.
- `find_unplain(value)` finds the first value inside `value` that no file can hold (a datetime, bytes, a set), with
  its path, for the error that names it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

__all__ = ["describe_value", "find_unplain", "format_path", "join_path", "parse_path", "quote_text", "type_name"]


def type_name(value: Any) -> str:
    """The kind of a plain value, with its article: `null`, `a boolean`, `a number`, `a string`, `a list`,
    `a mapping`, or the Python type's name for anything else."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float | Decimal):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return type(value).__name__


def describe_value(value: Any) -> str:
    """A JSON value as an argument error shows it to a model: short numbers as written, else its kind in JSON's words
    (`a string`, `an array`, `an object`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int) and value.bit_length() > 128:
        return "a number"
    if isinstance(value, int | float | Decimal):
        text = repr(value) if not isinstance(value, Decimal) else str(value)
        return text if len(text) <= 40 else "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def quote_text(text: str) -> str:
    """`text` in single quotes for a message, cut to 60 characters."""
    shown = text if len(text) <= 60 else text[:57] + "..."
    return "'" + shown + "'"


def join_path(path: str, segment: str | int | Any) -> str:
    """`path` one level down: `[3]` for an index, `.key` for an identifier (no dot at the top), `["key"]` for any
    other key."""
    if isinstance(segment, int) and not isinstance(segment, bool):
        return f"{path}[{segment}]"
    key = segment if isinstance(segment, str) else str(segment)
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return path + '["' + key.replace("\\", "\\\\").replace('"', '\\"') + '"]'


def format_path(segments: Iterable[str | int | Any]) -> str:
    """The path of keys and indexes as text: `items[2].qty`, `notes["a b"]`; empty for the top value."""
    out = ""
    for segment in segments:
        out = join_path(out, segment)
    return out


_TOKEN = re.compile(r'\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]|\.?([^.\[\]]+)')
_UNESCAPE = re.compile(r"\\(.)")


def parse_path(path: str) -> list[str | int]:
    """The segments of a path written by `format_path`: `'a.b[2]["c d"]'` is `["a", "b", 2, "c d"]`."""
    steps: list[str | int] = []
    for index, quoted, key in _TOKEN.findall(path):
        if index:
            steps.append(int(index))
        elif key:
            steps.append(key)
        else:
            steps.append(_UNESCAPE.sub(r"\1", quoted))
    return steps


def find_unplain(value: Any, path: Iterable[str | int] = ()) -> tuple[list[str | int], str] | None:
    """The path to the first value within `value` that is not plain data (text, numbers, booleans, null, lists and
    mappings with such keys: what the YAML writer takes), under `path`, and its type's name (`datetime`, or
    `tuple (as a key)`); None when every value is plain."""
    segments = list(path)
    if value is None or isinstance(value, str | bool | int | Decimal | float):
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not (key is None or isinstance(key, str | bool | int | Decimal | float)):
                return [*segments, str(key)], f"{type(key).__name__} (as a key)"
            found = find_unplain(item, [*segments, key if isinstance(key, str | int) else str(key)])
            if found is not None:
                return found
        return None
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = find_unplain(item, [*segments, index])
            if found is not None:
                return found
        return None
    return segments, type(value).__name__
