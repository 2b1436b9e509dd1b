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

import json
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import msgspec

__all__ = ["Unsupported", "emit_block", "emit_mapping", "parse_block", "parse_mapping"]


class Unsupported(Exception):
    """The text is not in the canonical shape; read it with the general loader."""


# Plain scalars the reader resolves as strings under both YAML 1.1 and 1.2: they start with a letter or `_`, hold no
# `: `, ` #`, tab, doubled or trailing space, and are none of the words YAML reads as booleans or null.
_NONASCII = "\u00a1-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff"
_PLAIN = re.compile(
    rf"[A-Za-z_/{_NONASCII}]"
    rf"(?:[ ]?(?:[A-Za-z0-9_.,;!?'()/+=%$@~<>\\\"*&|^`\[\]{{}}\-{_NONASCII}]|:(?=[^ ])|(?<! )#))*"
)
_RESERVED = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n"})
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
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


def _plain_ok(text: str) -> bool:
    found = _plain_cache.get(text)
    if found is None:
        found = _PLAIN.fullmatch(text) is not None and text.lower() not in _RESERVED
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
# Tokenizing is done in two steps, so the bulk of a file (the lines of literal bodies: file contents, command output)
# is passed over by one quick search per body instead of being matched line by line:
#
# 1. Find the next literal indicator line (`key: |-`, `- |`, `- key: |`), and the end of its body: the first line
#    that is neither empty nor indented to the body's column (two columns past the key, four past a `- key:`). The
#    body's first line must start with content at exactly that column, which is how YAML detects its indentation.
# 2. Cut the structural text between bodies into logical lines with one `findall`: indentation, `- `, key, rest.
#
# Every line matches the line pattern (its last part takes any text), so the tokens tile the text: nothing is skipped.

_LINE = re.compile(
    r"""(?=[\s\S])([ ]*)(-[ ]|-(?=\n|\Z))?(?:([A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\\n]|\\.)*"):(?:[ ]|(?=\n|\Z)))?([^\n]*)(?:\n|\Z)"""
)
# A whole literal indicator line, matched at a line start.
_INDICATOR = re.compile(r"""([ ]*)(-[ ])?(?:([A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\\n]|\\.)*"):[ ])?\|-?\n""")
_BODY_ENDS: dict[int, re.Pattern[str]] = {}


def _body_end(indent: int) -> re.Pattern[str]:
    found = _BODY_ENDS.get(indent)
    if found is None:
        found = _BODY_ENDS[indent] = re.compile(rf"\n(?!\n|[ ]{{{indent}}})")
    return found


def _next_indicator(text: str, pos: int) -> re.Match[str] | None:
    """The next literal indicator line at or after `pos` (a line start). Candidates are found by looking for `|`,
    which is rare outside literal bodies, and checked with the full line pattern."""
    find = text.find
    at = find("|", pos)
    while at >= 0:
        after = text[at + 1 : at + 3]
        if after[:1] == "\n" or after == "-\n":
            start = text.rfind("\n", pos, at) + 1
            if start == 0:
                start = pos
            found = _INDICATOR.match(text, start)
            if found is not None and found.end() == at + len(after.split("\n")[0]) + 2:
                return found
        at = find("|", at + 1)
    return None


def _tokenize(text: str) -> tuple[list[tuple[str, str, str, str]], dict[int, str]]:
    """The logical lines of `text`, and the literal body of each indicator line (by token index)."""
    tokens: list[tuple[str, str, str, str]] = []
    bodies: dict[int, str] = {}
    pos = 0
    end = len(text)
    while pos < end:
        found = _next_indicator(text, pos)
        if found is None:
            tokens += _LINE.findall(text, pos)
            break
        tokens += _LINE.findall(text, pos, found.end())
        index = len(tokens) - 1
        body_start = found.end()
        pad = len(found[1]) + (4 if found[2] and found[3] else 2)
        if body_start + pad >= end or text[body_start + pad] in " \n" or not text.startswith(" " * pad, body_start):
            raise Unsupported
        stop = _body_end(pad).search(text, body_start)
        pos = end if stop is None else stop.end()
        bodies[index] = text[body_start:pos]
    return tokens, bodies


_MAX_DEPTH = 64
# Scalars seen before (tool names, counters, models, labels, small numbers) are looked up instead of parsed again.
# Only immutable results are kept.
_scalars: dict[str, Any] = {}
_MISSING: Any = object()


class _Reader:
    __slots__ = ("bodies", "depth", "i", "n", "tokens")

    def __init__(self, text: str) -> None:
        self.tokens, self.bodies = _tokenize(text)
        self.n = len(self.tokens)
        self.i = 0
        self.depth = 0

    def literal(self, rest: str, indent: int) -> str:
        body = self.bodies.get(self.i - 1)
        if body is None:
            raise Unsupported
        text = body[indent:].replace("\n" + " " * indent, "\n")
        stripped = text.rstrip("\n")
        if rest == "|" and len(stripped) != len(text):
            return stripped + "\n"
        return stripped

    def sequence(self, indent: int) -> list[Any]:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise Unsupported
        tokens = self.tokens
        out: list[Any] = []
        while self.i < self.n:
            ind, dash, key, rest = tokens[self.i]
            size = len(ind)
            if size != indent or not dash:
                if size > indent:
                    raise Unsupported
                break
            self.i += 1
            if key:
                out.append(self.mapping(indent + 2, key, rest))
            elif rest:
                out.append(self.literal(rest, indent + 2) if rest[0] == "|" else _scalar(rest))
            else:
                out.append(self.nested(indent))
        self.depth -= 1
        return out

    def nested(self, parent: int) -> Any:
        if self.i >= self.n:
            raise Unsupported
        ind, dash, key, rest = self.tokens[self.i]
        size = len(ind)
        if size <= parent:
            raise Unsupported
        if dash:
            return self.sequence(size)
        if not key:
            raise Unsupported
        self.i += 1
        return self.mapping(size, key, rest)

    def mapping(self, indent: int, key: str, rest: str) -> dict[Any, Any]:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise Unsupported
        tokens = self.tokens
        out: dict[Any, Any] = {}
        while True:
            if key in _good_keys:
                name: Any = key
            elif key[0] == '"':
                try:
                    name = _str_decode(key)
                except msgspec.DecodeError:
                    raise Unsupported from None
            elif key.lower() in _RESERVED:
                raise Unsupported
            else:
                name = key
                if len(key) < 1000 and len(_good_keys) < _CACHE_LIMIT:
                    _good_keys.add(key)
            if name in out:
                raise Unsupported
            if rest:
                value = _scalars.get(rest, _MISSING)
                if value is _MISSING:
                    value = self.literal(rest, indent + 2) if rest[0] == "|" else _scalar(rest)
                out[name] = value
            else:
                if self.i >= self.n:
                    raise Unsupported
                nxt = tokens[self.i]
                size = len(nxt[0])
                if size > indent:
                    out[name] = self.nested(indent)
                elif size == indent and nxt[1]:
                    out[name] = self.sequence(indent)
                else:
                    raise Unsupported
            if self.i >= self.n:
                break
            ind, dash, key, rest = tokens[self.i]
            size = len(ind)
            if size < indent:
                break
            if size != indent or dash or not key:
                raise Unsupported
            self.i += 1
        self.depth -= 1
        return out


def _scalar(rest: str) -> Any:
    found = _scalars.get(rest, _MISSING)
    if found is not _MISSING:
        return found
    first = rest[0]
    value: Any
    if first == '"':
        try:
            return _str_decode(rest)
        except msgspec.DecodeError:
            raise Unsupported from None
    if first in "-0123456789":
        if _INT.fullmatch(rest):
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
    elif _PLAIN.fullmatch(rest) and rest.lower() not in _RESERVED:
        value = rest
    else:
        raise Unsupported
    if len(_scalars) < _CACHE_LIMIT and len(rest) < 200:
        _scalars[rest] = value
    return value


def parse_block(text: str, indent: int = 0) -> Any:
    """Read one sequence entry whose dash sits at column `indent` (the text `emit_block` writes)."""
    reader = _Reader(text)
    items = reader.sequence(indent)
    if reader.i != reader.n or len(items) != 1:
        raise Unsupported
    return items[0]


def parse_mapping(text: str) -> dict[Any, Any]:
    """Read a top-level block mapping (the text `emit_mapping` writes at indent 0)."""
    reader = _Reader(text)
    if not reader.tokens:
        return {}
    ind, dash, key, rest = reader.tokens[0]
    if ind or dash or not key:
        raise Unsupported
    reader.i = 1
    out = reader.mapping(0, key, rest)
    if reader.i != reader.n:
        raise Unsupported
    return out
