"""Text helpers shared by the file tools: decoding, line ranges, truncation and the `replace_string` rules."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BinaryFileError",
    "DecodedText",
    "ReplaceError",
    "decode_text",
    "describe",
    "encode_text",
    "line_range",
    "replace_in_text",
    "split_lines",
    "split_lines_keepends",
    "truncate_middle",
]

_BOM = "\ufeff"


class BinaryFileError(ValueError):
    """The file holds bytes that are not UTF-8 text."""


class ReplaceError(ValueError):
    """`replace_string` cannot make the edit; the message says why and what to change."""


@dataclass(frozen=True, slots=True)
class DecodedText:
    """A file's text without its byte-order mark, and whether it had one (so a rewrite keeps it)."""

    text: str
    bom: bool


def describe(fn: Callable[..., Any]) -> str:
    """A tool's description for the model: its whole docstring before `Args:`, paragraphs kept apart."""
    doc = inspect.getdoc(fn) or ""
    body = doc.split("\nArgs:", 1)[0].strip()
    paragraphs = [" ".join(p.split()) for p in body.split("\n\n") if p.strip()]
    return "\n\n".join(paragraphs)


def decode_text(data: bytes, name: str) -> DecodedText:
    """Decode UTF-8 file content. A NUL byte or invalid UTF-8 means a binary file.

    Raises:
        BinaryFileError: naming the file and its size.
    """
    if b"\x00" in data[:8192]:
        raise BinaryFileError(f"{name} is a binary file ({len(data)} bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BinaryFileError(
            f"{name} is not UTF-8 text (invalid byte at offset {exc.start}; {len(data)} bytes)"
        ) from None
    if text.startswith(_BOM):
        return DecodedText(text[1:], True)
    return DecodedText(text, False)


def encode_text(text: str, *, bom: bool = False) -> bytes:
    return ((_BOM if bom else "") + text).encode("utf-8")


def split_lines(text: str) -> list[str]:
    """The lines of `text` without their breaks. Only LF and CRLF end a line (as editors and diff count them): a form
    feed, a vertical tab or U+2028 inside a line stays part of it, unlike `str.splitlines`."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def split_lines_keepends(text: str) -> list[str]:
    """The lines of `text` with their LF or CRLF breaks; the last one may have none."""
    parts = text.split("\n")
    out = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def line_range(text: str, start_line: int | None, end_line: int | None) -> tuple[str, int, int, int]:
    """Lines `start_line`..`end_line` (1-based, inclusive) with their line breaks.

    Returns the text, the first and last line actually returned, and the file's line count.
    """
    lines = split_lines_keepends(text)
    total = len(lines)
    first = 1 if start_line is None else start_line
    last = total if end_line is None else min(end_line, total)
    if first > total:
        return "", first, first - 1, total
    return "".join(lines[first - 1 : last]), first, last, total


def truncate_middle(text: str, limit: int, what: str = "characters") -> tuple[str, bool]:
    """Keep the head and the tail of `text` within `limit` characters, with a marker saying how much was left out."""
    if len(text) <= limit:
        return text, False
    head = limit // 2
    tail = limit - head
    elided = len(text) - head - tail
    return f"{text[:head]}\n[... {elided} {what} elided ...]\n{text[len(text) - tail :]}", True


def _line_numbers(text: str, needle: str, limit: int = 10) -> list[int]:
    out: list[int] = []
    start = 0
    while len(out) < limit:
        at = text.find(needle, start)
        if at < 0:
            break
        out.append(text.count("\n", 0, at) + 1)
        start = at + 1
    return out


def replace_in_text(text: str, old: str, new: str, *, replace_all: bool, name: str) -> tuple[str, int]:
    """Replace `old` with `new` in `text`.

    `old` must occur exactly once unless `replace_all` is true. When the file uses CRLF line breaks and `old` holds
    bare LF breaks (as a model usually writes them), both strings are matched and written with CRLF.

    Returns:
        The new text and the number of replacements.

    Raises:
        ReplaceError: `old` is empty, equal to `new`, absent, or present more than once without `replace_all`.
    """
    if not old:
        raise ReplaceError("old_string is empty; use write_file to create or overwrite a file")
    if old == new:
        raise ReplaceError("old_string and new_string are the same; nothing would change")
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        crlf_old = old.replace("\n", "\r\n")
        if text.count(crlf_old):
            old, new = crlf_old, new.replace("\r\n", "\n").replace("\n", "\r\n")
            count = text.count(old)
    if count == 0:
        raise ReplaceError(
            f"old_string was not found in {name}; read the file again and copy the text exactly, "
            "including whitespace and indentation"
        )
    if count > 1 and not replace_all:
        lines = ", ".join(str(n) for n in _line_numbers(text, old))
        raise ReplaceError(
            f"old_string occurs {count} times in {name} (at lines {lines}); include more surrounding text to make it "
            "unique, or set replace_all to replace every occurrence"
        )
    return text.replace(old, new), count
