"""Atomic file replacement: write a temporary file beside the target, flush it to disk, rename it over the target.

A reader (or a process that survives a crash of the writer) sees the old file or the new one, never a mix. Temporary
files are named `.<name>.<random>.tmp`, so directory listings that look for `<id>.yaml` never pick one up.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import time
from pathlib import Path

__all__ = ["write_atomic"]

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


def write_atomic(path: Path, data: bytes, *, durable: bool = True, mtime_ns: int | None = None) -> None:
    """Replace `path` with `data` atomically.

    Args:
        path: The file to replace (or create).
        data: Its new content.
        durable: Flush the file (and, on POSIX, the directory entry) to disk before returning.
        mtime_ns: Set this modification time on the new file (nanoseconds since the epoch).
    """
    directory = path.parent
    tmp = directory / f".{path.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, _FLAGS, 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        if mtime_ns is not None:
            os.utime(tmp, ns=(mtime_ns, mtime_ns))
        _replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable and sys.platform != "win32":
        _sync_directory(directory)


def _replace(tmp: Path, path: Path) -> None:
    if sys.platform != "win32":
        os.replace(tmp, path)
        return
    # Windows refuses to replace a file another process has open (a reader, a virus scanner); such a hold is short.
    for attempt in range(50):
        try:
            os.replace(tmp, path)
            return
        except PermissionError:
            if attempt == 49:
                raise
            time.sleep(0.01)


def _sync_directory(directory: Path) -> None:
    try:
        dir_fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
