"""Unified diffs for `apply_patch`: parse the text, then apply each file's hunks to text held in memory.

The rules (docs/built-in-tools.md has the user's version):

- file headers `--- a/path` and `+++ b/path`; the `a/` and `b/` prefixes are removed when both are present; a tab and
  what follows it (a timestamp) is not part of the name; `/dev/null` as the old path creates a file, as the new path
  deletes one; two different names (a rename) are refused; `diff --git`, `index` and other extended header lines are
  skipped;
- hunks `@@ -oldStart,oldCount +newStart,newCount @@`, a missing count meaning 1; lines start with a space (context),
  `-` (removed) or `+` (added); `\\ No newline at end of file` marks the line before it; an empty line inside a hunk is
  an empty context line (editors strip the lone space);
- line numbers are hints: a hunk applies where its context and removed lines match the file exactly, at the position
  nearest to the stated line of the original file, and after the previous hunk; a hunk that
  matches nowhere fails the whole file, and the caller writes nothing;
- the file's line endings are kept: untouched and context lines keep theirs, added lines take the file's dominant one;
  only LF and CRLF end a line (a form feed or a lone CR inside a line is part of it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from onellm.tools.builtin._text import split_lines, split_lines_keepends

__all__ = ["FilePatch", "Hunk", "PatchError", "apply_file_patch", "parse_patch"]

_HUNK_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_NEWLINE = "\\ No newline at end of file"


class PatchError(ValueError):
    """The patch cannot be parsed or applied. The message names the file, the hunk and the patch line."""


@dataclass(slots=True)
class Hunk:
    """One `@@` block. `lines` holds (kind, text, no_newline) with kind ' ', '-' or '+'."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    line: int
    """1-based line of the `@@` header in the patch."""
    lines: list[tuple[str, str, bool]] = field(default_factory=list)

    @property
    def old_lines(self) -> list[str]:
        return [text for kind, text, _ in self.lines if kind != "+"]


@dataclass(slots=True)
class FilePatch:
    """The hunks for one file. `old_path` is None when the file is created, `new_path` None when it is deleted."""

    old_path: str | None
    new_path: str | None
    line: int
    """1-based line of the `---` header in the patch."""
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        """The file the patch touches."""
        name = self.new_path if self.new_path is not None else self.old_path
        assert name is not None
        return name


def _header_name(raw: str) -> str | None:
    name = raw.split("\t", 1)[0].rstrip()
    if len(name) >= 2 and name[0] == name[-1] == '"':
        name = name[1:-1]
    return None if name == "/dev/null" else name


def parse_patch(text: str) -> list[FilePatch]:
    """Parse unified-diff text into file patches. Raises `PatchError` naming the patch line on malformed input."""
    lines = split_lines(text)
    patches: list[FilePatch] = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if not (line.startswith("--- ") and i + 1 < n and lines[i + 1].startswith("+++ ")):
            if line.startswith("@@"):
                raise PatchError(f"patch line {i + 1}: hunk without a '--- ' and '+++ ' file header before it")
            i += 1
            continue
        old = _header_name(line[4:])
        new = _header_name(lines[i + 1][4:])
        if old is None and new is None:
            raise PatchError(f"patch line {i + 1}: both file names are /dev/null")
        if old is not None and new is not None and old.startswith("a/") and new.startswith("b/"):
            old, new = old[2:], new[2:]
        elif old is None and new is not None and new.startswith("b/"):
            new = new[2:]
        elif new is None and old is not None and old.startswith("a/"):
            old = old[2:]
        if old is not None and new is not None and old != new:
            raise PatchError(f"patch line {i + 1}: renames are not supported ({old!r} -> {new!r})")
        fp = FilePatch(old, new, i + 1)
        i += 2
        while i < n and lines[i].startswith("@@"):
            i = _parse_hunk(lines, i, fp)
        if not fp.hunks:
            raise PatchError(f"patch line {fp.line}: file header for {fp.path!r} has no hunks")
        patches.append(fp)
    if not patches:
        raise PatchError("the patch holds no file header ('--- ' and '+++ ' lines) and no hunks")
    return patches


def _parse_hunk(lines: list[str], i: int, fp: FilePatch) -> int:
    m = _HUNK_HEADER.match(lines[i])
    if m is None:
        raise PatchError(f"patch line {i + 1}: malformed hunk header {lines[i]!r}; expected '@@ -l,s +l,s @@'")
    hunk = Hunk(
        old_start=int(m.group(1)),
        old_count=int(m.group(2)) if m.group(2) is not None else 1,
        new_start=int(m.group(3)),
        new_count=int(m.group(4)) if m.group(4) is not None else 1,
        line=i + 1,
    )
    i += 1
    n = len(lines)
    while i < n:
        line = lines[i]
        if line.startswith("--- ") and i + 1 < n and lines[i + 1].startswith("+++ "):
            break
        if line.startswith("@@"):
            break
        if line == "":
            # An empty context line, if the hunk goes on after it; otherwise the hunk ended.
            j = i + 1
            while j < n and lines[j] == "":
                j += 1
            if (
                j < n
                and lines[j][:1] in (" ", "-", "+", "\\")
                and not (lines[j].startswith("--- ") and j + 1 < n and lines[j + 1].startswith("+++ "))
            ):
                hunk.lines.append((" ", "", False))
                i += 1
                continue
            break
        kind = line[0]
        if kind in (" ", "-", "+"):
            hunk.lines.append((kind, line[1:], False))
        elif line.startswith("\\"):
            if not hunk.lines:
                raise PatchError(f"patch line {i + 1}: '{_NO_NEWLINE}' before any line of the hunk")
            k, t, _ = hunk.lines[-1]
            hunk.lines[-1] = (k, t, True)
        else:
            break
        i += 1
    if not hunk.lines:
        raise PatchError(f"patch line {hunk.line}: empty hunk")
    fp.hunks.append(hunk)
    return i


def _split_lines(text: str) -> list[tuple[str, str]]:
    """Split text into (content, line ending) pairs; the last pair has ending '' when the text does not end in one."""
    out: list[tuple[str, str]] = []
    for raw in split_lines_keepends(text):
        if raw.endswith("\r\n"):
            out.append((raw[:-2], "\r\n"))
        elif raw.endswith("\n"):
            out.append((raw[:-1], "\n"))
        else:
            out.append((raw, ""))
    return out


def _dominant_ending(lines: list[tuple[str, str]]) -> str:
    counts: dict[str, int] = {}
    for _, ending in lines:
        if ending:
            counts[ending] = counts.get(ending, 0) + 1
    if not counts:
        return "\n"
    return max(counts, key=lambda e: (counts[e], e == "\n"))


def _find(file: list[tuple[str, str]], old: list[str], hint: int, lowest: int) -> int | None:
    """The start index where `old` matches `file` exactly, nearest `hint`, not before `lowest`."""
    size = len(old)
    last = len(file) - size
    if last < lowest:
        return None
    hint = min(max(hint, lowest), last)
    first = old[0]
    for delta in range(max(hint - lowest, last - hint) + 1):
        for pos in (hint - delta, hint + delta) if delta else (hint,):
            if (
                lowest <= pos <= last
                and file[pos][0] == first
                and all(file[pos + k][0] == old[k] for k in range(1, size))
            ):
                return pos
    return None


def apply_file_patch(original: str | None, fp: FilePatch) -> str | None:
    """Apply one file's hunks to `original` (None: the file does not exist). Returns the new text, None to delete.

    Raises:
        PatchError: a hunk does not match, or the patch creates a file that exists or edits one that does not.
    """
    name = fp.path
    if fp.old_path is None:
        if original is not None:
            raise PatchError(f"patch line {fp.line}: {name!r} already exists; the patch creates it (--- /dev/null)")
        file: list[tuple[str, str]] = []
    else:
        if original is None:
            raise PatchError(f"patch line {fp.line}: {name!r} does not exist")
        file = _split_lines(original)
    ending = _dominant_ending(file)
    result: list[tuple[str, str]] = []
    cursor = 0  # index in `file` up to which lines were copied or consumed
    for number, hunk in enumerate(fp.hunks, start=1):
        old = hunk.old_lines
        if not old:
            # Pure insertion: no context to search for, so the stated line is the position ("after line oldStart").
            pos = hunk.old_start
            if fp.old_path is None:
                pos = 0
            if pos < cursor or pos > len(file):
                raise PatchError(
                    f"patch line {hunk.line}: hunk {number} of {name!r} inserts after line {hunk.old_start}, "
                    f"but the file has {len(file)} lines"
                )
        else:
            hint = hunk.old_start - 1 if hunk.old_start > 0 else 0
            found = _find(file, old, hint, cursor)
            if found is None:
                first = old[0]
                raise PatchError(
                    f"patch line {hunk.line}: hunk {number} of {name!r} does not match the file: its "
                    f"{len(old)} context and removed lines (starting {first!r}) are not found at or after line "
                    f"{cursor + 1}"
                )
            pos = found
        result.extend(file[cursor:pos])
        k = pos
        for kind, text, no_newline in hunk.lines:
            if kind == " ":
                result.append((text, file[k][1]))
                k += 1
            elif kind == "-":
                k += 1
            else:
                result.append((text, "" if no_newline else ending))
        # A context line that ends the new side with '\ No newline' loses its line break.
        last_kind, _, last_flag = hunk.lines[-1]
        if last_kind == " " and last_flag and result:
            result[-1] = (result[-1][0], "")
        cursor = k
    result.extend(file[cursor:])
    # A line that was last and had no line break but is no longer last gets one.
    for idx in range(len(result) - 1):
        if result[idx][1] == "":
            result[idx] = (result[idx][0], ending)
    if fp.new_path is None:
        if result:
            raise PatchError(
                f"patch line {fp.line}: the patch deletes {name!r} (+++ /dev/null) but leaves {len(result)} lines"
            )
        return None
    return "".join(text + end for text, end in result)
