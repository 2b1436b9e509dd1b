"""The canonical YAML writer of instance files, and the fast reader of what it writes.

Instance files are written by onellm, so their shape is known: block mappings with two-space indentation, sequences
written compactly under their key (`- ` at the key's column), strings plain when that is unambiguous, double-quoted
with JSON escapes otherwise, and multi-line text as literal block scalars (`|` / `|-`). `emit_*` produce that text.

`parse_*` read text in exactly that shape without a general YAML parser: a regular expression per logical line and a
literal body in one match. Whatever they meet outside the shape (comments, anchors, tags, flow collections, other
scalar styles, tabs, duplicate keys, very deep nesting) raises `Unsupported`, and the caller hands that piece of text
to the general loader. So the fast reader never guesses: it either reads a value exactly as a YAML 1.2 parser would,
or declines.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import msgspec

__all__ = ["Unsupported", "emit_block", "emit_mapping", "parse_block", "parse_entries", "parse_mapping"]


class Unsupported(Exception):
    """The text is not in the canonical shape; read it with the general loader."""


# Plain scalars the reader resolves as strings under both YAML 1.1 and 1.2: they start with a letter or `_`, hold no
# `: `, ` #`, tab, doubled or trailing space, and are none of the words YAML reads as booleans or null.
_NONASCII = "\u00a1-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff"


@functools.cache
def plain_pattern() -> re.Pattern[str]:
    """The plain-scalar pattern, compiled on first use (its character classes take milliseconds to compile)."""
    return re.compile(
        rf"[A-Za-z_/{_NONASCII}]"
        rf"(?:[ ]?(?:[A-Za-z0-9_.,;!?'()/+=%$@~<>\\\"*&|^`\[\]{{}}\-{_NONASCII}]|:(?=[^ ])|(?<! )#))*"
    )


_RESERVED = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n"})
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEC = re.compile(r"-?(?:0|[1-9][0-9]{0,40})\.[0-9]{1,40}")
# Bytes of the ASCII characters a file may hold as they are; every byte of a multi-byte character is let through here
# and the few non-ASCII characters that are not allowed are found by `_UNSAFE_WIDE`.
_ALLOWED_BYTES = bytes([9, 10, *range(0x20, 0x7F), *range(0x80, 0x100)])
# C1 controls, line and paragraph separators, the byte order mark, U+FFFE and U+FFFF, in UTF-8.
_UNSAFE_WIDE = re.compile(rb"\xc2[\x80-\x9f]|\xe2\x80[\xa8\xa9]|\xef\xbb\xbf|\xef\xbf[\xbe\xbf]")
# Characters JSON leaves raw that YAML wants escaped in a double-quoted scalar.
_DQ_EXTRA = re.compile(r"[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
_LINE_START = re.compile(r"\n(?=[^\n])")
_CACHE_LIMIT = 20_000
# Plain keys already checked (by the writer or the reader).
_good_keys: set[str] = set()

_dq_encode = msgspec.json.Encoder().encode
_str_decode = msgspec.json.Decoder(str).decode


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match[0]):04x}"


def quote(text: str) -> str:
    """`text` as a one-line double-quoted YAML scalar (JSON escapes, plus the ones YAML needs)."""
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


_plain_cache: dict[str, bool] = {}
_PLAIN_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_/")


def plain(text: str) -> bool:
    """True when `text` may be written as a plain scalar and reads back as this string (`plain_pattern`, not a reserved
    word). ASCII text, nearly all of it, is checked with a few substring tests instead of the pattern: every printable
    ASCII character may stand in a plain scalar except that a space may not be doubled or end it, and `: `, ` #`
    and a final `:` may not appear."""
    if not text.isascii():
        return plain_pattern().fullmatch(text) is not None  # no reserved word holds a non-ASCII character
    return (
        text[:1] in _PLAIN_FIRST
        and text.isprintable()
        and ": " not in text
        and " #" not in text
        and "  " not in text
        and text[-1] not in " :"
        and (len(text) > 5 or text.lower() not in _RESERVED)
    )


def _plain_ok(text: str) -> bool:
    found = _plain_cache.get(text)
    if found is None:
        found = plain(text)
        if len(text) < 100 and len(_plain_cache) < 20_000:
            _plain_cache[text] = found
    return found


def _literal_ok(text: str) -> bool:
    if not text or text[0] in " \t\n" or text.endswith("\n\n") or not printable(text):
        return False
    last = text[text.rstrip("\n").rfind("\n") + 1 :].rstrip("\n")
    return not (last and last.isspace())


def scalar(value: Any) -> str:
    """One scalar in canonical form. Strings that would read as anything else are quoted."""
    if isinstance(value, str):
        return value if _plain_ok(value) else quote(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        if value.is_finite():
            return format(value, "f")
        if value.is_nan():
            return ".nan"
        return "-.inf" if value < 0 else ".inf"
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
    raise TypeError(f"cannot write a {type(value).__name__} to an instance file; plain values only")


def _key(key: Any, pad: str) -> str:
    if isinstance(key, str):
        if key in _good_keys:
            return key
        if len(key) < 1000:
            if _KEY.fullmatch(key) and key.lower() not in _RESERVED:
                if len(_good_keys) < _CACHE_LIMIT:
                    _good_keys.add(key)
                return key
            return quote(key)
        # Implicit keys are limited to 1024 characters; longer ones take the explicit form.
        return f"? {quote(key)}\n{pad}"
    if isinstance(key, bool | int | Decimal | float) or key is None:
        return scalar(key)
    raise TypeError(f"cannot write a {type(key).__name__} key to an instance file")


def _body(text: str, indent: int, out: list[str]) -> None:
    pad = " " * indent
    out.append(pad)
    out.append(_LINE_START.sub("\n" + pad, text))
    if not text.endswith("\n"):
        out.append("\n")


def _after_key(value: Any, indent: int, out: list[str]) -> None:
    if isinstance(value, str):
        if "\n" in value and _literal_ok(value):
            out.append(": |\n" if value.endswith("\n") else ": |-\n")
            _body(value, indent + 2, out)
        else:
            out.append(": ")
            out.append(value if _plain_ok(value) else quote(value))
            out.append("\n")
    elif isinstance(value, Mapping):
        if value:
            out.append(":\n")
            _mapping(value, indent + 2, out, None)
        else:
            out.append(": {}\n")
    elif isinstance(value, list | tuple):
        if value:
            out.append(":\n")
            _sequence(value, indent, out)
        else:
            out.append(": []\n")
    else:
        out.append(": ")
        out.append(scalar(value))
        out.append("\n")


def _mapping(data: Mapping[Any, Any], indent: int, out: list[str], first: str | None) -> None:
    pad = " " * indent
    lead = pad if first is None else first
    for key, value in data.items():
        out.append(lead)
        lead = pad
        out.append(_key(key, pad))
        _after_key(value, indent, out)


def _sequence(items: list[Any] | tuple[Any, ...], indent: int, out: list[str]) -> None:
    pad = " " * indent
    for item in items:
        if isinstance(item, Mapping) and item:
            _mapping(item, indent + 2, out, pad + "- ")
        elif isinstance(item, list | tuple) and item:
            out.append(pad + "-\n")
            _sequence(item, indent + 2, out)
        elif isinstance(item, str) and "\n" in item and _literal_ok(item):
            out.append(pad + ("- |\n" if item.endswith("\n") else "- |-\n"))
            _body(item, indent + 2, out)
        elif isinstance(item, Mapping):
            out.append(pad + "- {}\n")
        elif isinstance(item, list | tuple):
            out.append(pad + "- []\n")
        else:
            out.append(pad + "- " + scalar(item) + "\n")


def emit_mapping(data: Mapping[str, Any], indent: int = 0) -> str:
    """A block mapping at `indent`, one `key: value` per line; nested values in canonical form."""
    out: list[str] = []
    _mapping(data, indent, out, None)
    return "".join(out)


def emit_key_value(key: str, value: Any) -> str:
    """One top-level `key: value` entry."""
    out: list[str] = [_key(key, "")]
    _after_key(value, 0, out)
    return "".join(out)


def emit_block(data: Mapping[str, Any], indent: int = 0) -> str:
    """One sequence entry (`- key: ...`) whose dash sits at column `indent`: the text of one message block."""
    out: list[str] = []
    if data:
        _mapping(data, indent + 2, out, " " * indent + "- ")
    else:
        out.append(" " * indent + "- {}\n")
    return "".join(out)


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

_KEY_TEXT = r'[A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\\n]|\\.)*"'
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
        raise Unsupported
    return _TOKEN.findall(text, pos)


def _literal(body: str, indicator: str, pad: int) -> str:
    text = body[pad:].replace("\n" + " " * pad, "\n").rstrip("\n")
    return text + "\n" if indicator == "|" else text


def _name(key: str) -> Any:
    """A key as written, checked: quoted keys are decoded, keys YAML reads as anything but a string are declined."""
    if key[0] == '"':
        try:
            return _str_decode(key)
        except msgspec.DecodeError:
            raise Unsupported from None
    if key.lower() in _RESERVED:
        raise Unsupported
    if len(key) < 1000 and len(_good_keys) < _CACHE_LIMIT:
        _good_keys.add(key)
    return key


def _read_sequence(tokens: list[_Token], i: int, n: int, indent: int, depth: int) -> tuple[list[Any], int]:
    """The entries whose dashes sit at column `indent`, from token `i` (itself an entry)."""
    if depth > _MAX_DEPTH:
        raise Unsupported
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
                raise Unsupported
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
        raise Unsupported
    ind, dash, key, lit, body, rest = tokens[i]
    size = len(ind)
    if size <= parent:
        raise Unsupported
    if dash:
        return _read_sequence(tokens, i, n, size, depth)
    if not key:
        raise Unsupported
    return _read_mapping(tokens, i + 1, n, size, key, lit, body, rest, depth)


def _read_mapping(
    tokens: list[_Token], i: int, n: int, indent: int, key: str, lit: str, body: str, rest: str, depth: int
) -> tuple[dict[Any, Any], int]:
    """The mapping at column `indent` whose first entry (already taken) is `key` with `lit`, `body`, `rest`."""
    if depth > _MAX_DEPTH:
        raise Unsupported
    out: dict[Any, Any] = {}
    good = _good_keys
    scalars = _scalars
    missing = _MISSING
    pad = " " * indent
    inner = indent + 2
    while True:
        name: Any = key if key in good else _name(key)
        if name in out:
            raise Unsupported
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
                raise Unsupported
            below = tokens[i]
            size = len(below[0])
            if size > indent:
                value, i = _read_nested(tokens, i, n, indent, depth + 1)
            elif size == indent and below[1]:
                value, i = _read_sequence(tokens, i, n, indent, depth + 1)
            else:
                raise Unsupported
        out[name] = value
        if i >= n:
            return out, i
        ind, dash, key, lit, body, rest = tokens[i]
        if ind != pad:
            if len(ind) < indent:
                return out, i
            raise Unsupported
        if dash or not key:
            raise Unsupported
        i += 1


def _scalar(rest: str) -> Any:
    first = rest[0]
    value: Any
    if first == '"':
        try:
            return _str_decode(rest)
        except msgspec.DecodeError:
            raise Unsupported from None
    if first in "-0123456789":
        digits = rest[1:] if first == "-" else rest
        if digits.isdigit() and digits.isascii() and len(digits) < 19 and (digits[0] != "0" or len(digits) == 1):
            value = int(rest)
        elif _DEC.fullmatch(rest):
            value = Decimal(rest)
        else:
            raise Unsupported
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
        raise Unsupported
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
        raise Unsupported
    return items


def parse_block(text: str, indent: int = 0) -> Any:
    """Read one sequence entry whose dash sits at column `indent` (the text `emit_block` writes)."""
    items = parse_entries(text, 0, indent)
    if len(items) != 1:
        raise Unsupported
    return items[0]


def parse_mapping(text: str) -> dict[Any, Any]:
    """Read a top-level block mapping (the text `emit_mapping` writes at indent 0)."""
    if not text:
        return {}
    tokens = _tokens(text)
    n = len(tokens)
    ind, dash, key, lit, body, rest = tokens[0]
    if ind or dash or not key:
        raise Unsupported
    out, i = _read_mapping(tokens, 1, n, 0, key, lit, body, rest, 1)
    if i != n:
        raise Unsupported
    return out
