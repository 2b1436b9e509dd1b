"""The canonical YAML writer: one set of rules for every YAML file onellm writes.

Instance files, definitions built in code, catalog layers, and the values a changed definition gains are all written
by these rules, the ones OneLLM's own files follow (`spec/instances.md`, "Canonical layout"):

- block style, two-space indentation; a list sits under its key at the key's own column in instance files
  (`emit_mapping`, `emit_block`) and two columns further in for the files people edit (`dump_block`, `dump_document`,
  as the definitions format's examples are written);
- a string is plain when every YAML reader (1.1 or 1.2) reads it back as the same string: it starts with a letter,
  `_`, `/` or a digit, holds no `: `, ` #`, doubled or trailing space, and is not a word or a number, date or time a
  reader would take for another type (`yes`, `null`, `12`, `1.5`, `2026-01-02`, `1:30`);
- any other one-line string is double-quoted with JSON escapes (plus `\\uXXXX` for the characters YAML wants escaped);
- text that spans lines is a literal block (`|` or `|-`) when it can be one, and double-quoted otherwise;
- keys are plain when they are names (a letter or `_`, then letters, digits, `_`, `-`, `.`, `/`), double-quoted
  otherwise, and written in the explicit form (`? "..."`) from 1,000 characters on, since an implicit key may not be
  longer than 1,024;
- decimals in positional notation (`0.0000001`, never `1E-7`), floats with a decimal point before any exponent.

What the writer produces, every loader of `onellm.yamlio` (and the fast reader of `_fast`) reads back as the same
plain values.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import msgspec

__all__ = [
    "decimal_text",
    "dump_block",
    "dump_document",
    "dump_scalar",
    "emit_block",
    "emit_entries",
    "emit_entry",
    "emit_mapping",
    "key_text",
    "literal_ok",
    "one_line",
    "plain",
    "plain_key",
    "plain_pattern",
    "printable",
    "quote",
    "scalar",
]

# Non-ASCII characters a plain scalar may hold: YAML's printable set without the C1 controls, NEL, the line and
# paragraph separators and the byte order mark.
_NONASCII = "\u00a1-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff"


@functools.cache
def plain_pattern() -> re.Pattern[str]:
    """The plain-scalar pattern, compiled on first use (its character classes take milliseconds to compile).

    A plain scalar starts with a letter, `_`, `/`, a digit or a non-ASCII character, and then holds no `: `, ` #`,
    tab, doubled or trailing space. Whether it reads back as a string is `plain`'s business.
    """
    return re.compile(
        rf"[A-Za-z0-9_/{_NONASCII}]"
        rf"(?:[ ]?(?:[A-Za-z0-9_.,;!?'()/+=%$@~<>\\\"*&|^`\[\]{{}}\-{_NONASCII}]|:(?=[^ ])|(?<! )#))*"
    )


RESERVED = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n"})
"""Words (compared in lower case) some YAML reader takes for a boolean or null: never written plain."""

# Text that starts with a digit and that some YAML reader (1.1 or 1.2) takes for a number, a date or a time: an
# integer in any base, a float with or without a point or exponent (YAML 1.1 allows `1.2.3`), a sexagesimal number
# (`1:30`) or anything that starts like a date. Deliberately wider than the loader's own rules (`_guard`), so that a
# string written plain reads back as a string everywhere. The two forms that start with a run of digits (a number, a
# sexagesimal number) share it, taken whole at once (`*+`: what follows it is never a digit or `_`, so giving some
# back never helps): an id of digits and letters is refused without trying each split of its digits.
_TYPED_DIGITS = re.compile(
    r"""[0-9][0-9_]*+(?:(?:\.[0-9._]*)?(?:[eE][-+]?[0-9]+)?|(?::[0-5]?[0-9])+(?:\.[0-9_]*)?)
    |0[xob][0-9a-fA-F_]+
    |[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt \t].*)?""",
    re.X | re.S,
)
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-/]*")
_LONG_KEY = 1000
"""Keys this long or longer are written in the explicit form: YAML limits implicit keys to 1,024 characters."""

# Bytes of the ASCII characters a file may hold as they are; every byte of a multi-byte character is let through here
# and the few non-ASCII characters that are not allowed are found by `_UNSAFE_WIDE`.
_ALLOWED_BYTES = bytes([9, 10, *range(0x20, 0x7F), *range(0x80, 0x100)])
# C1 controls, line and paragraph separators, the byte order mark, U+FFFE and U+FFFF, in UTF-8.
_UNSAFE_WIDE = re.compile(rb"\xc2[\x80-\x9f]|\xe2\x80[\xa8\xa9]|\xef\xbb\xbf|\xef\xbf[\xbe\xbf]")
# Characters JSON leaves raw that YAML wants escaped in a double-quoted scalar.
_DQ_EXTRA = re.compile(r"[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
_LINE_START = re.compile(r"\n(?=[^\n])")
_CACHE_LIMIT = 20_000
_PLAIN_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_/")
_DIGITS = frozenset("0123456789")
_POSITIONAL_DIGITS = 100
"""A decimal longer than this in positional notation is written with an exponent instead."""

good_keys: set[str] = set()
"""Plain keys already checked, by the writer or the fast reader."""
known_texts: dict[str, str] = {}
"""Short strings already written on one line, each with its text (itself when plain, else double-quoted): what the
writer writes for them after a key."""
_quoted_keys: dict[str, str] = {}
"""Short string keys already written that are not plain keys (`"n"`, `"yes"`, `"a b"`), each with its text."""

_dq_encode = msgspec.json.Encoder().encode


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match[0]):04x}"


def quote(text: str) -> str:
    """`text` as a one-line double-quoted YAML scalar (JSON escapes, plus the ones YAML needs)."""
    if type(text) is not str:
        text = str(text)
    try:
        out = _dq_encode(text).decode()
    except UnicodeEncodeError:
        out = json.dumps(text, ensure_ascii=False)
    if _DQ_EXTRA.search(out):
        out = _DQ_EXTRA.sub(_escape, out)
    return out


def printable(text: str) -> bool:
    """True when every character of `text` may stand in a YAML file as it is: tab, LF and YAML's printable
    characters, without the ones some readers take as line breaks (CR, NEL, LS, PS) or the byte order mark."""
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    if raw.translate(None, _ALLOWED_BYTES):
        return False
    return text.isascii() or _UNSAFE_WIDE.search(raw) is None


def plain(text: str) -> bool:
    """True when `text` may be written as a plain scalar and reads back as this string in every YAML reader.

    ASCII text, nearly all of it, is checked with a few substring tests instead of `plain_pattern`: every printable
    ASCII character may stand in a plain scalar except that a space may not be doubled or end it, and `: `, ` #` and a
    final `:` may not appear. Text that starts with a digit must not read as a number, date or time.
    """
    if not text.isascii():
        # No reserved word holds a non-ASCII character, and no number, date or time does.
        return plain_pattern().fullmatch(text) is not None
    if text.isalnum():
        # Letters and digits only (an id, a word): only its first character and the word itself can refuse it.
        if text[0] in _DIGITS:
            return _TYPED_DIGITS.fullmatch(text) is None
        return len(text) > 5 or text.lower() not in RESERVED
    first = text[:1]
    if first not in _PLAIN_FIRST and (first not in _DIGITS or _TYPED_DIGITS.fullmatch(text) is not None):
        return False
    return (
        text.isprintable()
        and ": " not in text
        and " #" not in text
        and "  " not in text
        and text[-1] not in " :"
        and (len(text) > 5 or text.lower() not in RESERVED)
    )


def _one_line(text: str) -> str:
    """A string as written on one line: itself when plain, else double-quoted (short ones kept, by text)."""
    found = known_texts.get(text)
    if found is None:
        found = text if plain(text) else quote(text)
        if len(text) < 100 and len(known_texts) < _CACHE_LIMIT:
            known_texts[text] = found
    return found


one_line = _one_line
"""A one-line string (no line break) as the writer writes it as a value: itself when plain, else double-quoted."""


def plain_key(key: str) -> bool:
    """True when `key` is written as a plain key: a name (a letter or `_`, then letters, digits, `_`, `-`, `.`, `/`)
    that is not a reserved word, and short enough to be an implicit key."""
    if key in good_keys:
        return True
    if len(key) < _LONG_KEY and _KEY.fullmatch(key) is not None and key.lower() not in RESERVED:
        if len(good_keys) < _CACHE_LIMIT:
            good_keys.add(key)
        return True
    return False


def literal_ok(text: str) -> bool:
    """True when the multi-line `text` can be a literal block (`|` or `|-`) that reads back exactly."""
    if not text or text[0] in " \t\n" or text.endswith("\n\n") or not printable(text):
        return False
    last = text[text.rstrip("\n").rfind("\n") + 1 :].rstrip("\n")
    return not (last and last.isspace())


def decimal_text(value: Decimal) -> str:
    """A `Decimal` as a YAML number that reads back as the same value: positional notation (`0.0000001`), with a
    mantissa point and a signed exponent only when that would be very long; `.inf`, `-.inf`, `.nan` for the others."""
    if value.is_finite():
        text = str(value)  # positional unless the exponent is positive or the value tiny, and faster than format()
        if "E" in text:
            text = format(value, "f")
        if len(text) <= _POSITIONAL_DIGITS:
            return text
        sign, digits, exponent = value.as_tuple()
        mantissa = "".join(map(str, digits))
        power = len(digits) - 1 + int(exponent)
        return f"{'-' if sign else ''}{mantissa[0]}.{mantissa[1:] or '0'}e{power:+d}"
    if value.is_nan():
        return ".nan"
    return "-.inf" if value < 0 else ".inf"


def scalar(value: Any) -> str:
    """One scalar in canonical form, on one line. Strings that would read as anything else are quoted."""
    if isinstance(value, str):
        if type(value) is str and "\n" not in value:
            return _one_line(value)
        return value if plain(value) else quote(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, Decimal):
        return decimal_text(value)
    if isinstance(value, float):
        if value != value:
            return ".nan"
        if value in (float("inf"), float("-inf")):
            return "-.inf" if value < 0 else ".inf"
        text = repr(value)
        if "e" in text and "." not in text:
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{exponent}"
        return text
    raise TypeError(f"cannot write a {type(value).__name__} as YAML; plain values only")


def dump_scalar(value: Any) -> str:
    """One plain value as YAML scalar text, on one line (`scalar`); an empty mapping or list is `{}` or `[]`."""
    if isinstance(value, Mapping) and not value:
        return "{}"
    if isinstance(value, list | tuple) and not value:
        return "[]"
    return scalar(value)


def key_text(key: Any, pad: str = "") -> str:
    """A mapping key as written before its `:`; a long one in the explicit form, whose `:` line starts with `pad`."""
    if isinstance(key, str):
        if plain_key(key):
            return key
        if len(key) < _LONG_KEY:
            return quote(key)
        return f"? {quote(key)}\n{pad}"
    if isinstance(key, bool | int | Decimal | float) or key is None:
        return scalar(key)
    raise TypeError(f"cannot write a {type(key).__name__} key as YAML; mapping keys must be plain scalars")


# -- the block writer ---------------------------------------------------------------------------------------------
#
# `seq` is how many columns a list sits to the right of its key: 0 in instance files (`key:` then `- item` at the
# key's column), 2 in the files people edit.


def _body(text: str, indent: int, out: list[str]) -> None:
    pad = " " * indent
    out.append(pad)
    out.append(_LINE_START.sub("\n" + pad, text))
    if not text.endswith("\n"):
        out.append("\n")


def _bool_text(value: bool) -> str:
    return "true" if value else "false"


# The scalar types most values are, each with its writer: found by exact type, before the general checks.
_SCALAR_TEXT: dict[type, Any] = {
    int: int.__repr__,
    bool: _bool_text,
    Decimal: decimal_text,
    type(None): lambda _: "null",
}


def _after_key(value: Any, indent: int, out: list[str], seq: int) -> None:
    kind = type(value)
    text_of = _SCALAR_TEXT.get(kind)
    if text_of is not None:
        out.append(": " + text_of(value) + "\n")
    elif kind is str or (kind is not dict and kind is not list and isinstance(value, str)):
        if "\n" in value and literal_ok(value):
            out.append(": |\n" if value.endswith("\n") else ": |-\n")
            _body(value, indent + 2, out)
        else:
            out.append(": " + (_one_line(value) if kind is str else scalar(value)) + "\n")
    elif kind is dict or (kind is not list and isinstance(value, Mapping)):
        if value:
            out.append(":\n")
            _mapping(value, indent + 2, out, None, seq)
        else:
            out.append(": {}\n")
    elif kind is list or isinstance(value, list | tuple):
        if value:
            out.append(":\n")
            _sequence(value, indent + seq, out, seq)
        else:
            out.append(": []\n")
    else:
        out.append(": " + scalar(value) + "\n")


def _key(key: Any, pad: str) -> str:
    """`key_text`, kept for short string keys."""
    if type(key) is not str:
        return key_text(key, pad)
    found = _quoted_keys.get(key)
    if found is None:
        found = key_text(key, pad)
        if len(key) < 100 and len(_quoted_keys) < _CACHE_LIMIT:
            _quoted_keys[key] = found
    return found


def _mapping(data: Mapping[Any, Any], indent: int, out: list[str], first: str | None, seq: int) -> None:
    pad = " " * indent
    lead = pad if first is None else first
    good = good_keys
    scalars = _SCALAR_TEXT
    known = known_texts
    for key, value in data.items():
        head = lead + key if key in good else lead + _key(key, pad)  # a key checked before is written as it is
        lead = pad
        # The common cases in one line: a one-line string written before, a number, a flag or null.
        kind = type(value)
        if kind is str:
            text = known.get(value)
            if text is not None:
                out.append(f"{head}: {text}\n")
                continue
        else:
            text_of = scalars.get(kind)
            if text_of is not None:
                out.append(f"{head}: {text_of(value)}\n")
                continue
        out.append(head)
        _after_key(value, indent, out, seq)


def _sequence(items: list[Any] | tuple[Any, ...], indent: int, out: list[str], seq: int) -> None:
    pad = " " * indent
    dash = pad + "- "
    for item in items:
        kind = type(item)
        if kind is dict:
            if item:
                _mapping(item, indent + 2, out, dash, seq)
                continue
        elif kind is str and "\n" not in item:
            out.append(dash + _one_line(item) + "\n")
            continue
        if isinstance(item, Mapping) and item:
            _mapping(item, indent + 2, out, dash, seq)
        elif isinstance(item, list | tuple) and item:
            out.append(pad + "-\n")
            _sequence(item, indent + 2, out, seq)
        elif isinstance(item, str) and "\n" in item and literal_ok(item):
            out.append(pad + ("- |\n" if item.endswith("\n") else "- |-\n"))
            _body(item, indent + 2, out)
        else:
            out.append(dash + dump_scalar(item) + "\n")


def emit_mapping(data: Mapping[Any, Any], indent: int = 0) -> str:
    """A block mapping at `indent` in the instance layout (lists at their key's column): one `key: value` per line."""
    out: list[str] = []
    _mapping(data, indent, out, None, 0)
    return "".join(out)


def emit_entries(data: Mapping[Any, Any], indent: int = 0) -> list[str]:
    """`emit_mapping(data, indent)` cut into its entries, in order (each key with the lines under it): they join to
    it, and one entry can be written again alone."""
    return [emit_entry(key, value, indent) for key, value in data.items()]


def emit_entry(key: Any, value: Any, indent: int = 0) -> str:
    """The one entry `emit_mapping({key: value}, indent)` writes."""
    if key in good_keys:
        # The common cases of `_mapping`: a checked key, and a string written before, a number, a flag or null.
        kind = type(value)
        if kind is str:
            text = known_texts.get(value)
            if text is not None:
                return f"{' ' * indent}{key}: {text}\n"
        else:
            text_of = _SCALAR_TEXT.get(kind)
            if text_of is not None:
                return f"{' ' * indent}{key}: {text_of(value)}\n"
    out: list[str] = []
    _mapping({key: value}, indent, out, None, 0)
    return "".join(out)


def emit_block(data: Mapping[Any, Any], indent: int = 0) -> str:
    """One sequence entry (`- key: ...`) whose dash sits at column `indent`, in the instance layout: the text of one
    message block."""
    out: list[str] = []
    if data:
        _mapping(data, indent + 2, out, " " * indent + "- ", 0)
    else:
        out.append(" " * indent + "- {}\n")
    return "".join(out)


def dump_block(data: Any, indent: int = 0) -> str:
    """A mapping or a list as block YAML in the layout of the files people edit (a list two columns in from its
    key), every line starting with `indent` spaces and ending in a newline.

    An empty mapping or list, or a scalar, is one line (`{}`, `[]`, or the scalar; text spanning lines as a literal
    block when it can be one).
    """
    pad = " " * indent
    out: list[str] = []
    if isinstance(data, Mapping) and data:
        _mapping(data, indent, out, None, 2)
    elif isinstance(data, list | tuple) and data:
        _sequence(data, indent, out, 2)
    elif isinstance(data, str) and "\n" in data and literal_ok(data):
        out.append(pad + ("|\n" if data.endswith("\n") else "|-\n"))
        _body(data, indent + 2, out)
    else:
        out.append(pad + dump_scalar(data) + "\n")
    return "".join(out)


def dump_document(data: Any) -> str:
    """A whole document in the layout of the files people edit (`dump_block` at column 0)."""
    return dump_block(data, 0)
