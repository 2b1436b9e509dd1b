"""Walking a directory for `list_files` and `search_files_regex`.

Entries come in name order, a directory before what it holds. Symbolic links are reported as links and never
followed into (their target may lie outside the roots, and following them could loop). `.git` directories are left
out, `.gitignore` files are honoured from the starting directory down (the first 64 KB and 1,000 rules of each),
exclusion globs prune whole directories, and any entry the read grant refuses (the runtime's own state, protected
paths) is left out as if it did not exist.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from onellm.errors import CapabilityDeniedError
from onellm.tools.builtin._glob import IgnoreRules, PathFilter, parse_gitignore

if TYPE_CHECKING:
    from onellm.capabilities import Capabilities, DirectoryHandle

__all__ = ["Entry", "walk"]

_GITIGNORE_LIMIT = 64 * 1024
_MAX_DEPTH = 200


@dataclass(frozen=True, slots=True)
class Entry:
    rel: str
    """The path relative to the starting directory, `/`-separated."""
    path: Path
    kind: Literal["dir", "file", "symlink", "other"]
    directory: DirectoryHandle
    """The open directory that holds the entry, open while the walk is inside it: open a file with
    `entry.directory.open_file(entry.path.name)` (a symbolic link with `Capabilities.open_read`)."""


def _read_gitignore(directory: DirectoryHandle) -> str:
    try:
        st = directory.lstat(".gitignore")
    except OSError:
        return ""
    if not stat.S_ISREG(st.st_mode):
        return ""
    try:
        with directory.open_file(".gitignore") as fh:
            data: bytes = fh.read(_GITIGNORE_LIMIT)
    except (CapabilityDeniedError, OSError):
        return ""
    if st.st_size > _GITIGNORE_LIMIT:
        data = data[: data.rfind(b"\n") + 1]  # a line cut at the limit is not a rule
    return data.decode("utf-8", "replace")


def walk(caps: Capabilities, start: Path, *, recursive: bool, filters: PathFilter) -> Iterator[Entry]:
    """Yield the entries below `start` (a resolved, granted directory), each directory followed by what it holds.

    Every directory is opened once and what it holds is listed, checked and opened relative to it
    (`Capabilities.open_directory`), so no entry is resolved again from the root.
    """
    try:
        handle = caps.open_directory(start)
    except (CapabilityDeniedError, OSError):
        return
    with handle:
        rules = IgnoreRules().add("", parse_gitignore(_read_gitignore(handle)))
        yield from _walk_dir(handle, "", rules, recursive, filters, 0)


def _walk_dir(
    directory: DirectoryHandle,
    prefix: str,
    rules: IgnoreRules,
    recursive: bool,
    filters: PathFilter,
    depth: int,
) -> Iterator[Entry]:
    try:
        entries = sorted(directory.scan(), key=lambda e: e.name)
    except OSError:
        return
    base = directory.path
    for e in entries:
        name = e.name
        rel = f"{prefix}{name}"
        try:
            is_link = e.is_symlink()
            is_dir = not is_link and e.is_dir(follow_symlinks=False)
            is_file = not is_link and e.is_file(follow_symlinks=False)
        except OSError:
            continue
        if is_dir and name == ".git":
            continue
        if rules.ignored(rel, is_dir=is_dir) or filters.excluded(rel):
            continue
        path = Path(base, name)
        if is_link:
            yield Entry(rel, path, "symlink", directory)
            continue
        if not directory.allows(name):
            continue
        if not is_dir:
            yield Entry(rel, path, "file" if is_file else "other", directory)
            continue
        yield Entry(rel, path, "dir", directory)
        if recursive and depth < _MAX_DEPTH:
            try:
                sub = directory.open_directory(name)
            except (CapabilityDeniedError, OSError):
                continue
            with sub:
                inner = rules.add(rel, parse_gitignore(_read_gitignore(sub)))
                yield from _walk_dir(sub, rel + "/", inner, recursive, filters, depth + 1)
