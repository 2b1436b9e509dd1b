"""The canonical YAML emitter for plain values.

Block style, two-space indentation, sequences indented under their key, multi-line strings as literal block scalars,
and a string quoted whenever its plain form would read back as something else (a number, a boolean, null, a
timestamp, a YAML 1.1 boolean such as `yes`, a merge key) or would not parse. What it writes, `safe_load` reads back
as the same plain values.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

__all__ = ["decimal_text", "dump_block", "dump_document", "dump_scalar"]

_PRINTABLE_WIDE = "\u00a0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff"


class _Wide:
    """The patterns with character classes over most of Unicode, compiled on first use: each takes milliseconds to
    compile, which every program importing the YAML layer would otherwise pay."""

    @functools.cached_property
    def plain(self) -> re.Pattern[str]:
        """A plain scalar: a safe first character, then no `#`, no `: ` and no trailing space or colon."""
        return re.compile(
            rf"[A-Za-z0-9_/.$()+~=<^\\{_PRINTABLE_WIDE}]"
            rf"(?:[A-Za-z0-9 _/.$()+~=<>^|\\'\"%&*!?@`;{_PRINTABLE_WIDE}-]|:(?=[^ ]))*"
        )

    @functools.cached_property
    def single_ok(self) -> re.Pattern[str]:
        return re.compile(rf"[\t\x20-\x7e{_PRINTABLE_WIDE}]*")

    @functools.cached_property
    def literal_ok(self) -> re.Pattern[str]:
        return re.compile(rf"[\t\n\x20-\x7e{_PRINTABLE_WIDE}]*")

    @functools.cached_property
    def needs_escape(self) -> re.Pattern[str]:
        return re.compile(rf"[^\x20-\x21\x23-\x5b\x5d-\x7e{_PRINTABLE_WIDE}]")


_WIDE = _Wide()
_LOOKS_TYPED = re.compile(
    r"""(?:~|null|Null|NULL
    |y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
    |[-+]?(?:[0-9][0-9_]*)?\.?[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?0[box][0-9a-fA-F_]+
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?
    |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
    |[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?
    |<<|=)""",
    re.X,
)
_ESCAPES = {
    "\0": "\\0",
    "\x07": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\x0b": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    "\x1b": "\\e",
    '"': '\\"',
    "\\": "\\\\",
    "\x85": "\\N",
    "\u2028": "\\L",
    "\u2029": "\\P",
}


def decimal_text(value: Decimal) -> str:
    """A `Decimal` as a YAML number that reads back as the same value (`.inf`, `.nan` for the special ones)."""
    if value.is_nan():
        return ".nan"
    if value.is_infinite():
        return "-.inf" if value.is_signed() else ".inf"
    return str(value)


def _escape(match: re.Match[str]) -> str:
    ch = match.group(0)
    known = _ESCAPES.get(ch)
    if known is not None:
        return known
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _string(value: str) -> str:
    if _WIDE.plain.fullmatch(value) and value[-1] != " " and not _LOOKS_TYPED.fullmatch(value):
        return value
    if _WIDE.single_ok.fullmatch(value):
        return "'" + value.replace("'", "''") + "'"
    return '"' + _WIDE.needs_escape.sub(_escape, value) + '"'


def dump_scalar(value: Any) -> str:
    """One plain value as YAML scalar text, on one line.

    `None` is `null`, booleans `true`/`false`, `Decimal` an exact number; a string is plain when that reads back as
    the same string, else single-quoted, else double-quoted with escapes.
    """
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, Decimal):
        return decimal_text(value)
    if isinstance(value, float):
        if value != value:
            return ".nan"
        if value in (float("inf"), float("-inf")):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    if isinstance(value, Mapping) and not value:
        return "{}"
    if isinstance(value, (list, tuple)) and not value:
        return "[]"
    raise TypeError(f"cannot write a {type(value).__name__} as a YAML scalar")


def _literal(value: str) -> str | None:
    """The header of a literal block scalar for `value` (`|`, `|-`, `|+`, with an indentation indicator), if it fits."""
    if "\n" not in value or not _WIDE.literal_ok.fullmatch(value) or not value.strip("\n"):
        return None
    lines = value.split("\n")
    if any(line.endswith((" ", "\t")) for line in lines) or "\t" in value:
        return None  # trailing blanks and tabs survive only in quotes, whatever the reader
    if value.endswith("\n\n"):
        chomp = "+"
    elif value.endswith("\n"):
        chomp = ""
    else:
        chomp = "-"
    first = next(line for line in lines if line)
    indicator = "2" if first.startswith(" ") else ""
    return "|" + indicator + chomp


def _write_literal(out: list[str], value: str, pad: str) -> None:
    body = value[:-1] if value.endswith("\n") else value
    out.extend(pad + line + "\n" if line else "\n" for line in body.split("\n"))


def _is_block(value: Any) -> bool:
    if isinstance(value, Mapping):
        return bool(value)
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return bool(value)
    return False


def _mapping(out: list[str], data: Mapping[Any, Any], indent: int) -> None:
    pad = " " * indent
    for k, v in data.items():
        key = dump_scalar(k)
        if isinstance(k, (Mapping, list, tuple)):
            raise TypeError("mapping keys must be scalars")
        if _is_block(v):
            out.append(f"{pad}{key}:\n")
            _node(out, v, indent + 2)
        elif isinstance(v, str) and (header := _literal(v)) is not None:
            out.append(f"{pad}{key}: {header}\n")
            _write_literal(out, v, pad + "  ")
        else:
            out.append(f"{pad}{key}: {dump_scalar(v)}\n")


def _sequence(out: list[str], data: Sequence[Any], indent: int) -> None:
    pad = " " * indent
    for item in data:
        if _is_block(item):
            start = len(out)
            _node(out, item, indent + 2)
            out[start] = pad + "- " + out[start][indent + 2 :]
        elif isinstance(item, str) and (header := _literal(item)) is not None:
            out.append(f"{pad}- {header}\n")
            _write_literal(out, item, pad + "  ")
        else:
            out.append(f"{pad}- {dump_scalar(item)}\n")


def _node(out: list[str], data: Any, indent: int) -> None:
    if isinstance(data, Mapping):
        _mapping(out, data, indent)
    else:
        _sequence(out, data, indent)


def dump_block(data: Any, indent: int = 0) -> str:
    """A mapping or a sequence as block YAML, every line starting with `indent` spaces and ending in a newline.

    An empty mapping or sequence, or a scalar, is one line (`{}`, `[]`, or the scalar).
    """
    if not _is_block(data):
        if isinstance(data, str) and (header := _literal(data)) is not None:
            out = [" " * indent + header + "\n"]
            _write_literal(out, data, " " * (indent + 2))
            return "".join(out)
        return " " * indent + dump_scalar(data) + "\n"
    out = []
    _node(out, data, indent)
    return "".join(out)


def dump_document(data: Any) -> str:
    """A whole document in the canonical layout."""
    return dump_block(data, 0)
