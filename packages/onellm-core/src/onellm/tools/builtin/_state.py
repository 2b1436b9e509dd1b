"""The files behind the `todo` and `memory` tools, kept in the runtime's state directory.

The state directory (`.onellm` under the working directory unless the host moves it) is out of reach of the file tools,
so only these two tools change what is in it. Every write goes to a temporary file in the same directory and is then
renamed over the old one, so a crash leaves the previous version or the new one, never half of either.

- `todo`: one JSON list per instance, `todos/<instance id>.json` (`todos/default.json` outside an agent run);
- `memory`: one UTF-8 file per key, `memory/<key>.md`, shared by every agent that runs in the same working directory.

The directory is the runtime's, but a hostile local user or an open shell could still plant something there: a link
is refused, and only a regular file of bounded size is read (a pipe would block, a device never end). Messages name
the entry, never the directory's host path.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "MAX_MEMORY_ENTRIES",
    "MAX_MEMORY_ENTRY_CHARS",
    "MAX_TODO_CONTENT_CHARS",
    "MAX_TODO_ITEMS",
    "MemoryStore",
    "StateError",
    "TodoItem",
    "TodoStore",
    "render_todos",
]

MAX_TODO_ITEMS = 100
MAX_TODO_CONTENT_CHARS = 1000
MAX_MEMORY_ENTRIES = 200
MAX_MEMORY_ENTRY_CHARS = 32 * 1024
_MAX_STATE_FILE_BYTES = 4 * 1024 * 1024

TodoStatus = Literal["pending", "in_progress", "completed"]
_STATUSES: tuple[str, ...] = ("pending", "in_progress", "completed")
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_FILE_ID = re.compile(r"[^A-Za-z0-9._-]")


class StateError(ValueError):
    """A `todo` or `memory` request that breaks a rule (a bad key, a missing entry, a limit)."""


@dataclass(frozen=True, slots=True)
class TodoItem:
    """One entry of the plan."""

    content: str
    """What to do, in a short sentence."""
    status: TodoStatus = "pending"
    """`pending`, `in_progress` or `completed`."""


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _checked_dir(state_dir: Path, sub: str) -> Path:
    """`state_dir/sub`, refusing a link at either level (the directory is the runtime's, a link there is planted)."""
    for p, name in ((state_dir, "the state directory"), (state_dir / sub, f"the state directory's {sub!r} folder")):
        if p.is_symlink():
            raise StateError(f"{name} is a symbolic link; refusing to follow it")
    return state_dir / sub


def _read_regular(path: Path, what: str) -> bytes | None:
    """The bytes of a regular state file, or None when there is none. A link, a pipe, a device or a file above the
    size bound is refused without blocking or reading it whole."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise StateError(f"{what} is a symbolic link; refusing to follow it") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise StateError(f"{what} is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise StateError(f"{what} is not a regular file (a pipe, a device or a socket); refusing to read it")
        if st.st_size > _MAX_STATE_FILE_BYTES:
            raise StateError(f"{what} is larger than {_MAX_STATE_FILE_BYTES} bytes; refusing to read it")
        if os.name != "nt":
            os.set_blocking(fd, True)
        data = handle.read(_MAX_STATE_FILE_BYTES + 1)
    if len(data) > _MAX_STATE_FILE_BYTES:
        raise StateError(f"{what} is larger than {_MAX_STATE_FILE_BYTES} bytes; refusing to read it")
    return data


class TodoStore:
    """The todo list of one instance."""

    def __init__(self, state_dir: Path, instance_id: str | None) -> None:
        name = _FILE_ID.sub("_", instance_id or "default")[:128] or "default"
        self.path = _checked_dir(state_dir, "todos") / f"{name}.json"

    def read(self) -> list[TodoItem]:
        raw = _read_regular(self.path, "the todo file of this instance")
        if raw is None:
            return []
        try:
            data: Any = json.loads(raw)
        except ValueError:
            raise StateError("the todo file of this instance is not valid JSON; write the whole list again") from None
        return [
            TodoItem(entry["content"], entry["status"])
            for entry in (data if isinstance(data, list) else [])
            if isinstance(entry, dict) and isinstance(entry.get("content"), str) and entry.get("status") in _STATUSES
        ]

    def write(self, items: list[TodoItem]) -> None:
        if len(items) > MAX_TODO_ITEMS:
            raise StateError(f"todos holds {len(items)} items; at most {MAX_TODO_ITEMS}")
        for i, item in enumerate(items):
            if not item.content.strip():
                raise StateError(f"todos[{i}].content is empty")
            if len(item.content) > MAX_TODO_CONTENT_CHARS:
                raise StateError(f"todos[{i}].content is longer than {MAX_TODO_CONTENT_CHARS} characters")
            if item.status not in _STATUSES:
                raise StateError(f"todos[{i}].status must be one of {', '.join(_STATUSES)}")
        data = [{"content": item.content, "status": item.status} for item in items]
        _write_atomic(self.path, json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8"))


def render_todos(items: list[TodoItem]) -> str:
    """The list as the model reads it: one line per item with a status mark, then the counts."""
    if not items:
        return "The todo list is empty."
    marks = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}
    lines = [f"{i}. {marks[item.status]} {item.content}" for i, item in enumerate(items, start=1)]
    done = sum(1 for item in items if item.status == "completed")
    doing = sum(1 for item in items if item.status == "in_progress")
    lines.append(f"({done} of {len(items)} completed, {doing} in progress)")
    return "\n".join(lines)


class MemoryStore:
    """Notes kept across runs, one file per key."""

    def __init__(self, state_dir: Path) -> None:
        self.dir = _checked_dir(state_dir, "memory")

    def _path(self, key: str) -> Path:
        if not _KEY.match(key) or ".." in key:
            raise StateError(
                f"memory key {key!r} must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
            )
        return self.dir / f"{key}.md"

    def keys(self) -> list[str]:
        try:
            names = sorted(p.name for p in self.dir.iterdir() if p.suffix == ".md" and p.is_file())
        except FileNotFoundError:
            return []
        return [n[:-3] for n in names if _KEY.match(n[:-3])]

    def read(self, key: str) -> str:
        raw = _read_regular(self._path(key), f"memory entry {key!r}")
        if raw is None:
            raise StateError(f"no memory entry {key!r}; existing keys: {', '.join(self.keys()) or 'none'}")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise StateError(f"memory entry {key!r} is not UTF-8 text") from None

    def write(self, key: str, content: str, *, append: bool = False) -> int:
        path = self._path(key)
        exists = path.exists()
        if not exists and len(self.keys()) >= MAX_MEMORY_ENTRIES:
            raise StateError(f"memory holds {MAX_MEMORY_ENTRIES} entries already; delete one first")
        if append and exists:
            content = self.read(key) + content
        if len(content) > MAX_MEMORY_ENTRY_CHARS:
            raise StateError(f"memory entry {key!r} would be longer than {MAX_MEMORY_ENTRY_CHARS} characters")
        _write_atomic(path, content.encode("utf-8"))
        return len(content)

    def delete(self, key: str) -> None:
        path = self._path(key)
        try:
            path.unlink()
        except FileNotFoundError:
            raise StateError(f"no memory entry {key!r}") from None
        except IsADirectoryError:
            raise StateError(f"memory entry {key!r} is a directory, not a file") from None
