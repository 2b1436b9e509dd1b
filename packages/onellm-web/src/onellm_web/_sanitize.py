"""A linear-time pass that rewrites any text into HTML that `html.parser` reads in linear time.

`html.parser` rescans to the end of its input for every construct left open: on CPython 3.11.7, 120 KB of `<a `
repeated takes 111 s and 800 KB of `<!--` repeated 243 s (quadratic; later patch releases fix some of these forms, not
all). Pages come from anywhere, so the text is first cut into constructs here, in one pass that never looks back, with
the tokenizing rules of the HTML standard kept where they decide where a construct ends:

- a start or end tag ends at the first `>` outside a quoted attribute value; a tag, comment or declaration still open
  at the end of the input swallows the rest, which is dropped (as a browser does);
- script, style and the other raw-text elements end at their own end tag; their content is dropped, as are comments,
  doctypes and processing instructions;
- the text of `title` is kept as text even when it holds markup.

What comes out holds only canonical tags (`<name attr="value">`, `</name>`), with the attributes a caller keeps and
every value double-quoted, and text in which every `<` is escaped. Entities are left for `html.parser` to decode.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Final

__all__ = ["MAX_ATTRIBUTE_CHARS", "sanitize"]

MAX_ATTRIBUTE_CHARS: Final = 8192
"""A kept attribute whose value is longer than this is dropped (a data URL, a hostile value)."""

_MAX_ATTRIBUTES: Final = 64
"""Attributes read one by one per tag; the rest of a tag with more is skipped in one step."""

_RAW_TEXT: Final = frozenset({"script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "textarea"})
"""Elements whose content is text up to their own end tag, and is dropped."""

_NAME: Final = re.compile(r"[a-z][a-z0-9._:-]*\Z")
_TAG_NAME: Final = re.compile(r"[^\t\n\f\r />]*")
_SEPARATORS: Final = re.compile(r"[\t\n\f\r /]*")
_ATTRIBUTE_NAME: Final = re.compile(r"[^\t\n\f\r />][^\t\n\f\r /=>]*")
_EQUALS: Final = re.compile(r"[\t\n\f\r ]*=[\t\n\f\r ]*")
_UNQUOTED: Final = re.compile(r"[^\t\n\f\r >]*")
# The rest of a tag with very many attributes: anything up to `>`, a quoted value skipped whole. Possessive, so a tag
# that never ends fails in one linear scan.
_REST_OF_TAG: Final = re.compile(r"""(?:[^>=]++|=[\t\n\f\r ]*+(?:"[^"]*+"|'[^']*+'|[^\t\n\f\r >]*+))*+>""")
_COMMENT_END: Final = re.compile(r"--!?>")
_SIMPLE_TAG: Final = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)>")
"""A tag without attributes, the commonest form: written out without the attribute scan."""


def _end_tag_pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"</" + re.escape(name) + r"(?=[\t\n\f\r />])", re.IGNORECASE)


_RAW_END: Final = {name: _end_tag_pattern(name) for name in (*_RAW_TEXT, "title")}


def _escape_value(value: str) -> str:
    return value.replace('"', "&quot;")


class _Tag:
    __slots__ = ("attributes", "end", "name")

    def __init__(self, name: str, attributes: list[tuple[str, str]], end: int) -> None:
        self.name = name
        self.attributes = attributes
        self.end = end


def _scan_tag(text: str, start: int, keep: Collection[str]) -> _Tag | None:
    """The tag whose name starts at `start` (after `<` or `</`), or None when the input ends inside it."""
    n = len(text)
    name_match = _TAG_NAME.match(text, start)
    assert name_match is not None
    name = name_match.group().lower()
    pos = name_match.end()
    attributes: list[tuple[str, str]] = []
    seen: set[str] = set()
    count = 0
    while True:
        pos = _SEPARATORS.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= n:
            return None
        if text[pos] == ">":
            return _Tag(name, attributes, pos + 1)
        count += 1
        if count > _MAX_ATTRIBUTES:
            rest = _REST_OF_TAG.match(text, pos)
            return None if rest is None else _Tag(name, attributes, rest.end())
        attribute = _ATTRIBUTE_NAME.match(text, pos)
        assert attribute is not None
        key = attribute.group().lower()
        pos = attribute.end()
        value = ""
        equals = _EQUALS.match(text, pos)
        if equals is not None:
            pos = equals.end()
            if pos >= n:
                return None
            quote = text[pos]
            if quote in "\"'":
                close = text.find(quote, pos + 1)
                if close < 0:
                    return None
                value = text[pos + 1 : close]
                pos = close + 1
            elif quote != ">":
                unquoted = _UNQUOTED.match(text, pos)
                assert unquoted is not None
                value = unquoted.group()
                pos = unquoted.end()
        if key in keep and key not in seen and len(value) <= MAX_ATTRIBUTE_CHARS:
            attributes.append((key, value))
        seen.add(key)


def _skip_to_gt(text: str, start: int) -> int:
    """The index after the next `>`, or -1: a bogus comment, a declaration or a processing instruction."""
    close = text.find(">", start)
    return -1 if close < 0 else close + 1


def sanitize(text: str, keep: Collection[str]) -> str:
    """Rewrite `text` into canonical HTML (see the module docstring), keeping the attributes named in `keep`.

    Args:
        text: The decoded page.
        keep: Lower-case attribute names to keep; all others are dropped.
    """
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    out: list[str] = []
    n = len(text)
    i = 0
    while i < n:
        lt = text.find("<", i)
        if lt < 0:
            out.append(text[i:])
            break
        if lt > i:
            out.append(text[i:lt])
        simple = _SIMPLE_TAG.match(text, lt)
        if simple is not None:
            name = simple.group(2).lower()
            if name not in _RAW_TEXT and name not in ("title", "plaintext"):
                out.append(f"<{simple.group(1)}{name}>")
                i = simple.end()
                continue
        after = text[lt + 1 : lt + 2]
        if after.isascii() and after.isalpha():
            tag = _scan_tag(text, lt + 1, keep)
            if tag is None:
                break
            i = tag.end
            if tag.name in _RAW_TEXT or tag.name == "title":
                closing = _RAW_END[tag.name].search(text, i)
                content_end = n if closing is None else closing.start()
                if tag.name == "title":
                    out.append("<title>")
                    out.append(text[i:content_end].replace("<", "&lt;"))
                    out.append("</title>")
                if closing is None:
                    break
                end = _scan_tag(text, closing.start() + 2, ())
                if end is None:
                    break
                i = end.end
                continue
            if tag.name == "plaintext":
                out.append("<plaintext>")
                out.append(text[i:].replace("&", "&amp;").replace("<", "&lt;"))
                break
            if _NAME.match(tag.name):
                out.append("<" + tag.name)
                for key, value in tag.attributes:
                    out.append(f' {key}="{_escape_value(value)}"')
                out.append(">")
            continue
        if after == "/":
            second = text[lt + 2 : lt + 3]
            if second.isascii() and second.isalpha():
                tag = _scan_tag(text, lt + 2, ())
                if tag is None:
                    break
                if _NAME.match(tag.name):
                    out.append(f"</{tag.name}>")
                i = tag.end
                continue
            if second == ">":
                i = lt + 3
                continue
            if not second:
                out.append("&lt;/")
                break
            i = _skip_to_gt(text, lt + 2)
            if i < 0:
                break
            continue
        if after == "!":
            if text.startswith("<!--", lt):
                if text.startswith("<!-->", lt):
                    i = lt + 5
                    continue
                if text.startswith("<!--->", lt):
                    i = lt + 6
                    continue
                end_match = _COMMENT_END.search(text, lt + 4)
                if end_match is None:
                    break
                i = end_match.end()
                continue
            i = _skip_to_gt(text, lt + 2)
            if i < 0:
                break
            continue
        if after == "?":
            i = _skip_to_gt(text, lt + 2)
            if i < 0:
                break
            continue
        out.append("&lt;")
        i = lt + 1
    return "".join(out)
