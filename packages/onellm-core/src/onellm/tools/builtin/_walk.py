"""Walking a directory for `list_files` and `search_files_regex`.

Entries come in name order, a directory before what it holds. Symbolic links are reported as links and never
followed into (their target may lie outside the roots, and following them could loop). `.git` directories are left
out, `.gitignore` files are honoured from the starting directory down (the first 64 KB and 1,000 rules of each),
exclusion globs prune whole directories, and any entry the read grant refuses (the runtime's own state, protected
paths) is left out as if it did not exist.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from onellm.errors import CapabilityDeniedError
from onellm.tools.builtin._glob import IgnoreRules, PathFilter, parse_gitignore

if TYPE_CHECKING:
    from onellm.capabilities import Capabilities

__all__ = ["Entry", "walk"]

_GITIGNORE_LIMIT = 64 * 1024
_MAX_DEPTH = 200


@dataclass(frozen=True, slots=True)
class Entry:
    rel: str
    """The path relative to the starting directory, `/`-separated."""
    path: Path
    kind: Literal["dir", "file", "symlink", "other"]


def _read_gitignore(caps: Capabilities, directory: Path) -> str:
    candidate = directory / ".gitignore"
    try:
        st = os.lstat(candidate)
    except OSError:
        return ""
    if not stat.S_ISREG(st.st_mode):
        return ""
    try:
        with caps.open_read(str(candidate)) as fh:
            data: bytes = fh.read(_GITIGNORE_LIMIT)
    except (CapabilityDeniedError, OSError):
        return ""
    if st.st_size > _GITIGNORE_LIMIT:
        data = data[: data.rfind(b"\n") + 1]  # a line cut at the limit is not a rule
    return data.decode("utf-8", "replace")


def _allowed(caps: Capabilities, path: Path) -> bool:
    try:
        return caps.is_readable(str(path))
    except OSError:
        return False


def walk(
    caps: Capabilities, start: Path, *, recursive: bool, filters: PathFilter, check_files: bool = True
) -> Iterator[Entry]:
    """Yield the entries below `start` (a resolved, granted directory), each directory followed by what it holds.

    With `check_files=False` regular files are yielded without the read check (directories are always checked): for a
    caller that opens each file through `Capabilities.open_read`, which makes the same check.
    """
    rules = IgnoreRules().add("", parse_gitignore(_read_gitignore(caps, start)))
    yield from _walk_dir(caps, start, "", rules, recursive, filters, 0, check_files)


def _walk_dir(
    caps: Capabilities,
    directory: Path,
    prefix: str,
    rules: IgnoreRules,
    recursive: bool,
    filters: PathFilter,
    depth: int,
    check_files: bool,
) -> Iterator[Entry]:
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for e in entries:
        rel = f"{prefix}{e.name}"
        path = Path(e.path)
        try:
            is_link = e.is_symlink()
            is_dir = not is_link and e.is_dir(follow_symlinks=False)
            is_file = not is_link and e.is_file(follow_symlinks=False)
        except OSError:
            continue
        if is_dir and e.name == ".git":
            continue
        if rules.ignored(rel, is_dir=is_dir) or filters.excluded(rel):
            continue
        if is_link:
            yield Entry(rel, path, "symlink")
            continue
        if (is_dir or check_files) and not _allowed(caps, path):
            continue
        if not is_dir:
            yield Entry(rel, path, "file" if is_file else "other")
            continue
        yield Entry(rel, path, "dir")
        if recursive and depth < _MAX_DEPTH:
            sub = rules.add(rel, parse_gitignore(_read_gitignore(caps, path)))
            yield from _walk_dir(caps, path, rel + "/", sub, recursive, filters, depth + 1, check_files)
