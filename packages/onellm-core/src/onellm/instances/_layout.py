"""Splitting an instance file in the canonical layout into its header and its message blocks, by text.

The canonical layout (`spec/instances.md`, "Canonical layout"): the header keys, then `messages:` as the last
top-level key, then one sequence entry per message, each starting with `- ` at the same column. Such a file can be cut
into pieces without parsing it: the header is everything before the `messages:` line, and a message block runs from
one entry's dash to the next. The entries are read together when they are all in onellm's own style, else block by
block; the text of each block is kept so that a save can write it back unchanged.

`split` returns None for any file it cannot cut with certainty (carriage returns, a byte order mark, characters YAML
does not allow, a key or document marker after the messages, flow-style messages); such a file is read whole by the
general loader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from onellm.yamlio import printable

__all__ = ["Layout", "cut", "header_end", "split"]

_MESSAGES = re.compile(r"^messages:(?P<empty>[ ]+\[\])?[ ]*(?:#[^\n]*)?(?:\n|\Z)", re.MULTILINE)
_FIRST_ENTRY = re.compile(r"(?P<indent>[ ]*)-(?:[ ]|\n|\Z)")
_SKIP = re.compile(r"(?:[ ]*(?:#[^\n]*)?\n)*")
_STRAY_PATTERNS: dict[int, re.Pattern[str]] = {}


def _stray(indent: int) -> re.Pattern[str]:
    """A line that can belong to no entry of a sequence whose dashes sit at `indent`: less indented than the dashes
    and not a comment or blank, or at the dashes' column without a dash."""
    found = _STRAY_PATTERNS.get(indent)
    if found is None:
        found = _STRAY_PATTERNS[indent] = re.compile(
            rf"\n(?![ ]{{{indent + 1}}}|[ ]{{{indent}}}-(?:[ ]|\n|\Z)|[ ]*#|[ ]*(?:\n|\Z))"
        )
    return found


@dataclass(slots=True)
class Layout:
    """The pieces of an instance file in the canonical layout."""

    header: str
    """Everything before the `messages:` line (ends with a newline, or is empty)."""
    messages_line: str | None
    """The `messages:` line as written, or None when the file has no messages key."""
    prefix: str
    """Blank and comment lines between the `messages:` line and the first entry."""
    indent: int
    """The column of the entries' dashes."""
    start: int
    """Where the first entry starts in the text (the entries run from there to the end); the text's length when
    there are none."""
    explicit_empty: bool
    """The file says `messages: []`."""

    def has_strays(self, text: str) -> bool:
        """True when a line among the entries belongs to no entry (a top-level key after the messages, say), so the
        entries cannot be cut apart and read one by one. A reader of the whole run of entries finds such lines by
        itself."""
        return self.start < len(text) and _stray(self.indent).search(text, self.start) is not None

    def blocks(self, text: str) -> list[str]:
        """The text of each entry, in order (see `cut`)."""
        return cut(text, self.start, self.indent)


def split(text: str) -> Layout | None:
    """Find the header of `text` and where its message entries start, or None when it is not in the canonical layout.

    The entries are not cut apart here (`Layout.blocks` does that, when it is needed); `Layout.has_strays` says whether
    some line among them fits no entry.
    """
    if "\r" in text or not printable(text):
        return None
    found = _MESSAGES.search(text)
    if found is None:
        if re.search(r"^messages[ ]*:", text, re.MULTILINE) or re.search(r'^["\']messages["\'][ ]*:', text, re.M):
            return None
        return Layout(text, None, "", 0, len(text), False)
    header = text[: found.start()]
    tail_start = found.end()
    if found["empty"]:
        if text[tail_start:].strip(" \n") and _SKIP.fullmatch(text, tail_start) is None:
            return None
        return Layout(header, found[0], text[tail_start:], 0, len(text), True)
    skipped = _SKIP.match(text, tail_start)
    assert skipped is not None
    first = skipped.end()
    if first >= len(text):
        # `messages:` with nothing under it reads as null: an absent list.
        return Layout(header, found[0], text[tail_start:], 0, len(text), False)
    entry = _FIRST_ENTRY.match(text, first)
    if entry is None:
        return None
    return Layout(header, found[0], text[tail_start:first], len(entry["indent"]), first, False)


def cut(text: str, start: int, indent: int) -> list[str]:
    """The entries of the sequence that runs from `start` to the end of `text`, whose dashes sit at `indent`: one
    starts at each line with a dash at that column followed by a space or the line's end."""
    needle = "\n" + " " * indent + "-"
    width = len(needle)
    end = len(text)
    if start >= end:
        return []
    starts = [start]
    find = text.find
    at = find(needle, start)
    while at >= 0:
        after = at + width
        if after == end or text[after] in " \n":
            starts.append(at + 1)
        at = find(needle, after)
    starts.append(end)
    return [text[starts[i] : starts[i + 1]] for i in range(len(starts) - 1)]


_TOP_LEVEL_AFTER = re.compile(r"\n(?=[^ \n#-])")


def header_end(text: str) -> int | None:
    """Where the header of `text` ends (the start of its `messages:` line, or the end of the text when it has none),
    or None when a top-level key follows the messages, so the header cannot be read alone."""
    found = _MESSAGES.search(text)
    if found is None:
        if re.search(r"^[\"']?messages[\"']?[ ]*:", text, re.MULTILINE):
            return None
        return len(text)
    if _TOP_LEVEL_AFTER.search(text, found.end() - 1):
        return None
    return found.start()
