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
import secrets
import stat
import tempfile
from collections.abc import Callable, Iterator
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


_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
# Everything below the state directory's parent is opened relative to a directory handle, never through a link, so a
# link swapped in after a check cannot redirect a write. Where the system has no such opens (Windows), paths are used.
_AT = (
    os.name != "nt"
    and bool(_O_NOFOLLOW and _O_DIRECTORY)
    and all(f in os.supports_dir_fd for f in (os.open, os.mkdir, os.rename, os.unlink, os.stat))
    and os.scandir in os.supports_fd
)


class _Folder:
    """One folder of the state directory (`todos`, `memory`): its files read, written, listed and removed by name.

    Neither the state directory nor the folder may be a link, and only regular files are read, at most
    `_MAX_STATE_FILE_BYTES` of them, without blocking on a pipe.
    """

    def __init__(self, state_dir: Path, sub: str) -> None:
        self.state_dir = state_dir
        self.sub = sub
        self.path = state_dir / sub

    def _links(self) -> None:
        for p, name in (
            (self.state_dir, "the state directory"),
            (self.path, f"the state directory's {self.sub!r} folder"),
        ):
            if p.is_symlink():
                raise StateError(f"{name} is a symbolic link; refusing to follow it")

    @contextlib.contextmanager
    def _opened(self, *, create: bool) -> Iterator[int | None]:
        """A handle on the folder (None when it does not exist and `create` is false), opened level by level."""
        self._links()
        fd = os.open(self.state_dir.parent, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        try:
            for name, what in ((self.state_dir.name, "the state directory"), (self.sub, f"the {self.sub!r} folder")):
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o777, dir_fd=fd)
                try:
                    child = os.open(name, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=fd)
                except FileNotFoundError:
                    if create:
                        raise
                    yield None
                    return
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
                        raise StateError(
                            f"{what} is a symbolic link or not a directory; refusing to follow it"
                        ) from None
                    raise
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def read(self, name: str, what: str) -> bytes | None:
        """The bytes of a regular file, or None when there is none."""
        flags = os.O_RDONLY | _O_NONBLOCK | _O_NOFOLLOW | _O_CLOEXEC | getattr(os, "O_BINARY", 0)
        if not _AT:
            self._links()
            return _read_fd(lambda: os.open(self.path / name, flags), what)
        with self._opened(create=False) as dfd:
            if dfd is None:
                return None
            return _read_fd(lambda: os.open(name, flags, dir_fd=dfd), what)

    def write(self, name: str, data: bytes) -> None:
        """Write a file whole: to a temporary file in the folder, then renamed over the old one."""
        if not _AT:
            self._links()
            _write_atomic(self.path / name, data)
            return
        with self._opened(create=True) as dfd:
            assert dfd is not None
            tmp = f".tmp-{secrets.token_hex(8)}{Path(name).suffix}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o666, dir_fd=dfd)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                # A rename replaces a link itself, never what it points to.
                os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp, dir_fd=dfd)
                raise

    def names(self) -> list[str]:
        """The names of the regular files in the folder."""
        if not _AT:
            self._links()
            try:
                return [p.name for p in self.path.iterdir() if p.is_file() and not p.is_symlink()]
            except FileNotFoundError:
                return []
        with self._opened(create=False) as dfd:
            if dfd is None:
                return []
            with os.scandir(dfd) as entries:
                return [e.name for e in entries if e.is_file(follow_symlinks=False)]

    def exists(self, name: str) -> bool:
        if not _AT:
            self._links()
            return os.path.lexists(self.path / name)
        with self._opened(create=False) as dfd:
            if dfd is None:
                return False
            try:
                os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                return False
            return True

    def remove(self, name: str) -> None:
        """Remove a file (a link itself, never its target). Raises `FileNotFoundError` when there is none."""
        if not _AT:
            self._links()
            os.unlink(self.path / name)
            return
        with self._opened(create=False) as dfd:
            if dfd is None:
                raise FileNotFoundError(errno.ENOENT, "No such file", name)
            if stat.S_ISDIR(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode):
                raise IsADirectoryError(errno.EISDIR, "Is a directory", name)
            os.unlink(name, dir_fd=dfd)


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


def _read_fd(opener: Callable[[], int], what: str) -> bytes | None:
    """The bytes of the regular file `opener` opens (without following a link), or None when there is none. A link,
    a pipe, a device or a file above the size bound is refused without blocking or reading it whole."""
    try:
        fd = opener()
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise StateError(f"{what} is a symbolic link; refusing to follow it") from None
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise StateError(f"{what} is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise StateError(f"{what} is not a regular file (a pipe, a device or a socket); refusing to read it")
        if st.st_size > _MAX_STATE_FILE_BYTES:
            raise StateError(f"{what} is larger than {_MAX_STATE_FILE_BYTES} bytes; refusing to read it")
        if os.name != "nt":
            os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        data = handle.read(_MAX_STATE_FILE_BYTES + 1)
    if len(data) > _MAX_STATE_FILE_BYTES:
        raise StateError(f"{what} is larger than {_MAX_STATE_FILE_BYTES} bytes; refusing to read it")
    return data


class TodoStore:
    """The todo list of one instance."""

    def __init__(self, state_dir: Path, instance_id: str | None) -> None:
        name = _FILE_ID.sub("_", instance_id or "default")[:128] or "default"
        self._folder = _Folder(state_dir, "todos")
        self.name = f"{name}.json"
        self.path = self._folder.path / self.name

    def read(self) -> list[TodoItem]:
        raw = self._folder.read(self.name, "the todo file of this instance")
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
        self._folder.write(self.name, json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8"))


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
        self._folder = _Folder(state_dir, "memory")
        self.dir = self._folder.path

    def _name(self, key: str) -> str:
        if not _KEY.match(key) or ".." in key:
            raise StateError(
                f"memory key {key!r} must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
            )
        return f"{key}.md"

    def keys(self) -> list[str]:
        names = sorted(n for n in self._folder.names() if n.endswith(".md"))
        return [n[:-3] for n in names if _KEY.match(n[:-3])]

    def read(self, key: str) -> str:
        raw = self._folder.read(self._name(key), f"memory entry {key!r}")
        if raw is None:
            raise StateError(f"no memory entry {key!r}; existing keys: {', '.join(self.keys()) or 'none'}")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise StateError(f"memory entry {key!r} is not UTF-8 text") from None

    def write(self, key: str, content: str, *, append: bool = False) -> int:
        name = self._name(key)
        exists = self._folder.exists(name)
        if not exists and len(self.keys()) >= MAX_MEMORY_ENTRIES:
            raise StateError(f"memory holds {MAX_MEMORY_ENTRIES} entries already; delete one first")
        if append and exists:
            content = self.read(key) + content
        if len(content) > MAX_MEMORY_ENTRY_CHARS:
            raise StateError(f"memory entry {key!r} would be longer than {MAX_MEMORY_ENTRY_CHARS} characters")
        self._folder.write(name, content.encode("utf-8"))
        return len(content)

    def delete(self, key: str) -> None:
        name = self._name(key)
        try:
            self._folder.remove(name)
        except FileNotFoundError:
            raise StateError(f"no memory entry {key!r}") from None
        except IsADirectoryError:
            raise StateError(f"memory entry {key!r} is a directory, not a file") from None
