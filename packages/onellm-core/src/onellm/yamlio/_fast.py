"""The fast reader of the canonical layout: onellm's own YAML read without a general parser.

Instance files are written by `_emit` in a known shape, so reading them needs no general YAML parser: a regular
expression per logical line and a literal body in one match. Whatever the reader meets outside that shape (comments,
anchors, tags, flow collections, other scalar styles, tabs, duplicate keys, very deep nesting, an implicit key longer
than YAML's 1,024 characters) raises `NotCanonical`, and the caller hands that piece of text to the general loader
(`safe_load`), which reads it or refuses it with a position. So the fast reader never guesses: it either reads a value
exactly as a YAML 1.2 parser would, or declines.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import msgspec

from onellm.yamlio._emit import RESERVED, good_keys, plain

__all__ = ["NotCanonical", "parse_block", "parse_entries", "parse_mapping"]


class NotCanonical(Exception):
    """The text is not in the canonical shape; read it with the general loader."""


_DEC = re.compile(r"-?(?:0|[1-9][0-9]{0,40})\.[0-9]{1,40}")
_CACHE_LIMIT = 20_000
_MAX_KEY = 1024
"""The longest implicit key YAML allows, counted as written (quotes included)."""
_str_decode = msgspec.json.Decoder(str).decode


# ---------------------------------------------------------------------------------------------------------------------
# The fast reader.
#
# One regular expression cuts the text into logical lines, each a tuple (indentation, dash, key, literal indicator,
# literal body, rest of the line). A literal indicator line (`key: |-`, `- |`, `- key: |`) takes its whole body in the
# same match: the first body line must hold content at exactly the body's column (two past the line's indentation, four
# past a `- key:`), which is how YAML detects the indentation, and the body runs on over every line that is empty or
# indented at least that far. So the bulk of a file (file contents, command output) is passed over inside the regular
# expression engine, and only the structural lines reach Python. Every line ends in a newline and matches the pattern
# (its last part takes any text), so the tokens tile the text: nothing is skipped.

_KEY_TEXT = r'[A-Za-z_][A-Za-z0-9_.\-/]*|"(?:[^"\\\n]|\\.)*"'
_BODY_PAD = r"\1[ ][ ](?(2)(?(3)[ ][ ]))"
_TOKEN = re.compile(
    rf"([ ]*+)(-[ ]|-(?=\n))?(?:({_KEY_TEXT}):(?:[ ]|(?=\n)))?"
    rf"(?:(\|-?)\n({_BODY_PAD}[^ \t\n][^\n]*+\n(?:{_BODY_PAD}[^\n]*+\n|\n)*+)|([^\n]*+)\n)"
)
_Token = tuple[str, str, str, str, str, str]

_MAX_DEPTH = 64
# Scalars seen before (tool names, counters, models, labels, small numbers) are looked up instead of parsed again.
# Only immutable results are kept.
_scalars: dict[str, Any] = {}
_MISSING: Any = object()


def _tokens(text: str, pos: int = 0) -> list[_Token]:
    if not text.endswith("\n"):
        raise NotCanonical
    return _TOKEN.findall(text, pos)


def _literal(body: str, indicator: str, pad: int) -> str:
    text = body[pad:].replace("\n" + " " * pad, "\n").rstrip("\n")
    return text + "\n" if indicator == "|" else text


def _name(key: str) -> Any:
    """A key as written, checked: quoted keys are decoded; keys YAML reads as anything but a string, and keys longer
    than an implicit key may be, are declined (the general loader then refuses the long ones with a position)."""
    if len(key) > _MAX_KEY:
        raise NotCanonical
    if key[0] == '"':
        try:
            return _str_decode(key)
        except msgspec.DecodeError:
            raise NotCanonical from None
    if key.lower() in RESERVED:
        raise NotCanonical
    if len(key) < 1000 and len(good_keys) < _CACHE_LIMIT:
        good_keys.add(key)
    return key


def _read_sequence(tokens: list[_Token], i: int, n: int, indent: int, depth: int) -> tuple[list[Any], int]:
    """The entries whose dashes sit at column `indent`, from token `i` (itself an entry)."""
    if depth > _MAX_DEPTH:
        raise NotCanonical
    out: list[Any] = []
    append = out.append
    scalars = _scalars
    missing = _MISSING
    pad = " " * indent
    inner = indent + 2
    value: Any
    while i < n:
        ind, dash, key, lit, body, rest = tokens[i]
        if ind != pad or not dash:
            if len(ind) > indent:
                raise NotCanonical
            break
        i += 1
        if key:
            value, i = _read_mapping(tokens, i, n, inner, key, lit, body, rest, depth + 1)
        elif lit:
            value = _literal(body, lit, inner)
        elif rest:
            value = scalars.get(rest, missing)
            if value is missing:
                value = _scalar(rest)
        else:
            value, i = _read_nested(tokens, i, n, indent, depth + 1)
        append(value)
    return out, i


def _read_nested(tokens: list[_Token], i: int, n: int, parent: int, depth: int) -> tuple[Any, int]:
    """The collection that starts at token `i`, indented past `parent`."""
    if i >= n:
        raise NotCanonical
    ind, dash, key, lit, body, rest = tokens[i]
    size = len(ind)
    if size <= parent:
        raise NotCanonical
    if dash:
        return _read_sequence(tokens, i, n, size, depth)
    if not key:
        raise NotCanonical
    return _read_mapping(tokens, i + 1, n, size, key, lit, body, rest, depth)


def _read_mapping(
    tokens: list[_Token], i: int, n: int, indent: int, key: str, lit: str, body: str, rest: str, depth: int
) -> tuple[dict[Any, Any], int]:
    """The mapping at column `indent` whose first entry (already taken) is `key` with `lit`, `body`, `rest`."""
    if depth > _MAX_DEPTH:
        raise NotCanonical
    out: dict[Any, Any] = {}
    good = good_keys
    scalars = _scalars
    missing = _MISSING
    pad = " " * indent
    inner = indent + 2
    while True:
        name: Any = key if key in good else _name(key)
        if name in out:
            raise NotCanonical
        if rest:
            value = scalars.get(rest, missing)
            if value is missing:
                value = _scalar(rest)
        elif lit:
            value = _literal(body, lit, inner)
        else:
            # The value is a collection on the lines below: a mapping indented further, or a sequence whose dashes
            # sit at the key's column or further in.
            if i >= n:
                raise NotCanonical
            below = tokens[i]
            size = len(below[0])
            if size > indent:
                value, i = _read_nested(tokens, i, n, indent, depth + 1)
            elif size == indent and below[1]:
                value, i = _read_sequence(tokens, i, n, indent, depth + 1)
            else:
                raise NotCanonical
        out[name] = value
        if i >= n:
            return out, i
        ind, dash, key, lit, body, rest = tokens[i]
        if ind != pad:
            if len(ind) < indent:
                return out, i
            raise NotCanonical
        if dash or not key:
            raise NotCanonical
        i += 1


def _scalar(rest: str) -> Any:
    first = rest[0]
    value: Any
    if first == '"':
        try:
            return _str_decode(rest)
        except msgspec.DecodeError:
            raise NotCanonical from None
    if first in "-0123456789":
        digits = rest[1:] if first == "-" else rest
        if digits.isdigit() and digits.isascii() and len(digits) < 19 and (digits[0] != "0" or len(digits) == 1):
            value = int(rest)
        elif _DEC.fullmatch(rest):
            value = Decimal(rest)
        elif first != "-" and plain(rest):
            value = rest  # text that starts with a digit but is no number, date or time (`24-1234`)
        else:
            raise NotCanonical
    elif rest == "true":
        value = True
    elif rest == "false":
        value = False
    elif rest == "null":
        value = None
    elif rest == "[]":
        return []
    elif rest == "{}":
        return {}
    elif plain(rest):
        value = rest
    else:
        raise NotCanonical
    if len(_scalars) < _CACHE_LIMIT and len(rest) < 200:
        _scalars[rest] = value
    return value


def parse_entries(text: str, pos: int = 0, indent: int = 0) -> list[Any]:
    """Read the sequence entries whose dashes sit at column `indent`, from `pos` (a line start) to the end of `text`:
    the message blocks of an instance file, all at once."""
    tokens = _tokens(text, pos)
    n = len(tokens)
    if not n:
        return []
    items, i = _read_sequence(tokens, 0, n, indent, 0)
    if i != n:
        raise NotCanonical
    return items


def parse_block(text: str, indent: int = 0) -> Any:
    """Read one sequence entry whose dash sits at column `indent` (the text `emit_block` writes)."""
    items = parse_entries(text, 0, indent)
    if len(items) != 1:
        raise NotCanonical
    return items[0]


def parse_mapping(text: str) -> dict[Any, Any]:
    """Read a top-level block mapping (the text `emit_mapping` writes at indent 0)."""
    if not text:
        return {}
    tokens = _tokens(text)
    n = len(tokens)
    ind, dash, key, lit, body, rest = tokens[0]
    if ind or dash or not key:
        raise NotCanonical
    out, i = _read_mapping(tokens, 1, n, 0, key, lit, body, rest, 1)
    if i != n:
        raise NotCanonical
    return out
