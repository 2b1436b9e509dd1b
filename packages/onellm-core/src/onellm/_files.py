"""Files onellm keeps for itself (instances, assets, definitions it saves): read and written with every fault typed.

- `read_regular` reads a regular file, never more than a size cap: a FIFO, a device, a directory or (unless asked to
  follow one) a symbolic link is refused before a byte is read, so `/dev/zero` or a pipe nobody writes to cannot hold
  a reader.
- `write_atomic` replaces a file by writing a temporary file beside it (`.<name>.<12 hex>.tmp`), flushing it to disk
  and renaming it over the target: a reader sees the old file or the new one. The writer holds an exclusive lock on its
  temporary file until the rename, so `clean_stale_temps` can tell the leftovers of a killed writer (unlocked) from a
  save in progress (locked) and remove only the former.
- `storage_error` turns an `OSError` into a `StorageError` naming the path, the operation and the cause (`No space
  left on device`, `Read-only file system`, ...), with the `OSError` chained.

Every function takes an optional `dir_fd`: names are then resolved in that open directory, never through a symbolic
link planted in its place.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import sys
import time
from collections.abc import Sequence

from onellm.errors import StorageError

__all__ = [
    "TEMP_NAME",
    "clean_stale_temps",
    "kind_of",
    "open_directory",
    "pread",
    "read_fd",
    "read_regular",
    "storage_error",
    "write_atomic",
]

TEMP_NAME = re.compile(r"\.(?P<target>.+)\.[0-9a-f]{12}\.tmp")
"""The name of a temporary file `write_atomic` makes for `<target>`."""
STALE_SECONDS = 2.0
"""How long an unlocked temporary file must have been left alone before `clean_stale_temps` removes it (the lock
says whether its writer is still at work; the age covers the instant between creating the file and locking it)."""
WINDOWS_STALE_SECONDS = 3600.0
"""Without locks (Windows), only age tells: an hour."""

_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CHUNK = 1 << 20

_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFLNK: "a symbolic link",
}


def _describe_errno(exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    name = errno.errorcode.get(exc.errno or 0)
    return f"{reason} ({name})" if name else reason


def storage_error(exc: OSError, path: str | os.PathLike[str], operation: str, *, what: str = "") -> StorageError:
    """A `StorageError` for `exc`, raised while doing `operation` on `path` (chain it with `raise ... from exc`)."""
    shown = os.fspath(path)
    if exc.errno == errno.ELOOP:
        detail = "it is a symbolic link (refused: a store follows no links) or a loop of links"
    else:
        detail = _describe_errno(exc)
    subject = f"{what} {shown}" if what else shown
    return StorageError(f"cannot {operation} {subject}: {detail}", path=shown, operation=operation)


def kind_of(mode: int) -> str:
    """What a file of this `st_mode` is, in words."""
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def read_regular(
    path: str | os.PathLike[str],
    *,
    max_bytes: int,
    operation: str = "read",
    follow_symlinks: bool = False,
    dir_fd: int | None = None,
    shown: str | os.PathLike[str] | None = None,
) -> bytes | None:
    """The bytes of a regular file, or None when it does not exist.

    Raises:
        StorageError: it is not a regular file (a directory, a pipe, a device, a symbolic link unless
            `follow_symlinks`), it is larger than `max_bytes`, or it cannot be read.
    """
    where = shown if shown is not None else path
    flags = _READ_FLAGS | (0 if follow_symlinks else _NOFOLLOW)
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise storage_error(exc, where, operation) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise StorageError(
                f"cannot {operation} {os.fspath(where)}: it is {kind_of(info.st_mode)}, not a regular file",
                path=os.fspath(where),
                operation=operation,
            )
        if info.st_size > max_bytes:
            raise _too_large(where, operation, info.st_size, max_bytes)
        return read_fd(fd, max_bytes=max_bytes, operation=operation, shown=where)
    except OSError as exc:
        raise storage_error(exc, where, operation) from exc
    finally:
        os.close(fd)


def _too_large(where: str | os.PathLike[str], operation: str, size: int, max_bytes: int) -> StorageError:
    return StorageError(
        f"cannot {operation} {os.fspath(where)}: it is {size:,} bytes, more than the {max_bytes:,} allowed",
        path=os.fspath(where),
        operation=operation,
    )


def pread(fd: int, size: int, offset: int) -> bytes:
    """Up to `size` bytes of an open file from `offset`."""
    if hasattr(os, "pread"):
        return os.pread(fd, size, offset)
    os.lseek(fd, offset, os.SEEK_SET)  # pragma: no cover - Windows
    return os.read(fd, size)  # pragma: no cover - Windows


def read_fd(fd: int, *, max_bytes: int, operation: str, shown: str | os.PathLike[str], start: int = 0) -> bytes:
    """Read an open file from `start` to its end, refusing to go past `max_bytes` (a file that grows while read)."""
    chunks: list[bytes] = []
    total = 0
    offset = start
    while True:
        chunk = pread(fd, min(_CHUNK, max_bytes + 1 - total), offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        offset += len(chunk)
        if total > max_bytes:
            raise _too_large(shown, operation, total, max_bytes)


def open_directory(path: str | os.PathLike[str], *, operation: str, create: bool = False) -> int:
    """An open descriptor of the directory `path` itself (never a symbolic link to one), made first if `create`.

    Raises:
        StorageError: it is a link, a file, or cannot be made or opened.
    """
    if create:
        try:
            os.mkdir(path)
        except FileExistsError:
            pass
        except OSError as exc:
            raise storage_error(exc, path, operation) from exc
    try:
        return os.open(path, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            raise StorageError(
                f"cannot {operation} {os.fspath(path)}: it is not a directory",
                path=os.fspath(path),
                operation=operation,
            ) from exc
        raise storage_error(exc, path, operation) from exc


_IOV_MAX = 512


def _write_all(fd: int, data: bytes | Sequence[bytes]) -> None:
    """Write every byte of `data` (or of its pieces, gathered a few hundred to a system call)."""
    pieces: Sequence[bytes | memoryview] = [data] if isinstance(data, bytes | bytearray | memoryview) else data
    pending = [memoryview(piece) for piece in pieces if piece]
    gather = getattr(os, "writev", None)
    while pending:
        if gather is not None:
            written = gather(fd, pending[:_IOV_MAX])
        else:  # pragma: no cover - Windows
            written = os.write(fd, pending[0])
        done = 0
        while done < len(pending) and written >= len(pending[done]):
            written -= len(pending[done])
            done += 1
        del pending[:done]
        if written:
            pending[0] = pending[0][written:]


def write_atomic(
    path: str | os.PathLike[str],
    data: bytes | Sequence[bytes],
    *,
    durable: bool = True,
    mtime_ns: int | None = None,
    dir_fd: int | None = None,
    operation: str = "write",
    shown: str | os.PathLike[str] | None = None,
) -> None:
    """Replace `path` (a name in `dir_fd` when given) with `data` atomically.

    Args:
        path: The file to replace (or create).
        data: Its new content (or its pieces in order, written without joining them first).
        durable: Flush the file (and, on POSIX, the directory entry) to disk before returning.
        mtime_ns: Set this modification time on the new file (nanoseconds since the epoch).
        dir_fd: An open directory that `path` is relative to.
        operation: What the caller is doing, for the error (`save`, `put`, ...).
        shown: The path to name in errors, when `path` is relative to `dir_fd`.

    Raises:
        StorageError: the file could not be written (full or read-only disk, missing directory, a directory in the
            way, ...). The old file is then untouched and no temporary file is left behind.
    """
    where = shown if shown is not None else path
    target = os.fspath(path)
    directory, name = os.path.split(target)
    tmp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, _WRITE_FLAGS, 0o666, dir_fd=dir_fd)
    except OSError as exc:
        raise storage_error(exc, where, operation) from exc
    closed = False
    try:
        _lock_quietly(fd)
        _write_all(fd, data)
        if durable:
            os.fsync(fd)
        if mtime_ns is not None:
            if os.utime in os.supports_fd:
                os.utime(fd, ns=(mtime_ns, mtime_ns))
            else:  # pragma: no cover - Windows
                os.utime(tmp, ns=(mtime_ns, mtime_ns))
        if sys.platform == "win32":  # pragma: no cover - Windows cannot rename a file that is open
            os.close(fd)
            closed = True
        _replace(tmp, target, dir_fd)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        if isinstance(exc, OSError):
            raise storage_error(exc, where, operation) from exc
        raise
    finally:
        if not closed:
            os.close(fd)
    if durable and sys.platform != "win32":
        sync_directory(directory or ".", dir_fd)


def _lock_quietly(fd: int) -> None:
    if sys.platform == "win32":  # pragma: no cover
        return
    import fcntl

    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _replace(tmp: str, path: str, dir_fd: int | None) -> None:
    if sys.platform != "win32":
        os.replace(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return
    # Windows refuses to replace a file another process has open (a reader, a virus scanner); such a hold is short.
    for attempt in range(50):  # pragma: no cover - Windows
        try:
            os.replace(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            return
        except PermissionError:
            if attempt == 49:
                raise
            time.sleep(0.01)


def sync_directory(directory: str | os.PathLike[str], dir_fd: int | None = None) -> None:
    """Flush a directory's entries to disk (best effort: some file systems refuse)."""
    if dir_fd is not None and not os.fspath(directory).strip("."):
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)
        return
    try:
        fd = os.open(directory, os.O_RDONLY | _DIRECTORY, dir_fd=dir_fd)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def clean_stale_temps(directory: str | os.PathLike[str], *, dir_fd: int | None = None) -> list[str]:
    """Remove the temporary files killed writers left in `directory`; return their names. Never raises.

    A temporary file is stale when no writer holds its lock and it has not changed for `STALE_SECONDS` (on Windows,
    where there is no lock to ask, for `WINDOWS_STALE_SECONDS`).
    """
    try:
        names = os.listdir(dir_fd if dir_fd is not None else directory)
    except OSError:
        return []
    now = time.time()
    return [
        name
        for name in names
        if TEMP_NAME.fullmatch(name) is not None and _remove_if_stale(name, directory, dir_fd, now)
    ]


def is_stale_temp(name: str) -> bool:
    """True when `name` is the name of a temporary file `write_atomic` makes."""
    return TEMP_NAME.fullmatch(name) is not None


def _remove_if_stale(name: str, directory: str | os.PathLike[str], dir_fd: int | None, now: float) -> bool:
    path = name if dir_fd is not None else os.path.join(directory, name)
    try:
        info = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode):
        return False
    age = now - info.st_mtime
    if sys.platform == "win32":  # pragma: no cover
        if age < WINDOWS_STALE_SECONDS:
            return False
        with contextlib.suppress(OSError):
            os.unlink(path, dir_fd=dir_fd)
            return True
        return False
    if age < STALE_SECONDS:
        return False
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a writer is at work on it
        with contextlib.suppress(OSError):
            os.unlink(path, dir_fd=dir_fd)
            return True
        return False
    finally:
        os.close(fd)
