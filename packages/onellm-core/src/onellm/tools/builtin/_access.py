"""File access for the built-in tools, always through the call's grants, and what the model is told about it.

Every read and write asks `Capabilities` first: the path is resolved to a real path and checked against the roots and
the protected names, then opened with the double check (`open_read` / `open_write`), so a link swapped in between is
caught before a byte is read or a file truncated. Nothing in the built-in tools opens a file any other way.

What the model reads names a file as it wrote it, or relative to the working directory: never by an absolute host
path it did not give (a link's target, a root, the working directory itself). `file_errors` turns what the system
says about a file into that form.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from onellm.errors import StorageError

if TYPE_CHECKING:
    from onellm.tools import ToolContext

__all__ = [
    "FileTooLargeError",
    "delete_file",
    "display_path",
    "file_errors",
    "read_bytes",
    "resolve_read",
    "resolve_write",
    "write_bytes",
]


_DONE = {"read": "read", "write": "written", "delete": "deleted", "list": "listed", "search": "searched"}


class FileTooLargeError(ValueError):
    """A file is larger than the tool's limit."""


def _check(path: str) -> str:
    if not isinstance(path, str) or not path.strip():
        raise ValueError("path is empty")
    return path


@contextlib.contextmanager
def file_errors(path: str, operation: str) -> Iterator[None]:
    """Re-raise what the system says about `path` in words the model can use, naming `path` as the model wrote it.

    A missing file stays `FileNotFoundError`, a directory `IsADirectoryError`, a file where a directory should be
    `NotADirectoryError`; anything else (a pipe or a device, a full or read-only disk, a permission) becomes a
    `StorageError` naming the path and the operation (`read`, `write`, `delete`, `list` or `search`). Errors the tools raised themselves, and refusals of the grant,
    pass unchanged.
    """
    try:
        yield
    except OSError as exc:
        code = exc.errno
        if code is None:
            raise
        if code == errno.ENOENT:
            raise FileNotFoundError(f"{path} does not exist") from exc
        if code == errno.EISDIR:
            hint = "; use list_files to see what it holds" if operation == "read" else ""
            raise IsADirectoryError(f"{path} is a directory{hint}") from exc
        if code == errno.ENOTDIR:
            raise NotADirectoryError(f"{path}: a part of the path before the last name is a file") from exc
        done = _DONE.get(operation, operation)
        reason = (exc.strerror or type(exc).__name__).rstrip(".")
        if reason.startswith("Not a regular file"):
            message = f"{path} is not a regular file (a device, a pipe or a socket); only regular files can be {done}"
        else:
            message = f"{path} could not be {done}: {reason[:1].lower()}{reason[1:]}"
        raise StorageError(message, path=path, operation=operation) from exc


def display_path(ctx: ToolContext, resolved: Path, given: str) -> str:
    """How a file is shown to the model: relative to the working directory when it is below it, else as given."""
    try:
        base = Path(os.path.realpath(ctx.working_directory))
        rel = resolved.relative_to(base)
    except ValueError:
        return given
    text = rel.as_posix()
    return text or "."


def resolve_read(ctx: ToolContext, path: str) -> Path:
    return ctx.capabilities.resolve_read(_check(path), base=ctx.working_directory)


def resolve_write(ctx: ToolContext, path: str) -> Path:
    return ctx.capabilities.resolve_write(_check(path), base=ctx.working_directory)


def read_bytes(ctx: ToolContext, path: str, limit: int) -> tuple[Path, bytes]:
    """Read a whole file under the read grant. Raises for a directory, a missing file or one above `limit` bytes.

    The size is taken from the opened file, so it is the size of the file that passed the double check.
    """
    resolved = resolve_read(ctx, path)
    with file_errors(path, "read"), ctx.capabilities.open_read(path, base=ctx.working_directory) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise FileTooLargeError(f"{path} is {size} bytes, above the limit of {limit} bytes")
        data: bytes = handle.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(f"{path} is above the limit of {limit} bytes")
    return resolved, data


def write_bytes(ctx: ToolContext, path: str, data: bytes) -> tuple[Path, bool]:
    """Create or replace a file under the write grant; missing parent directories are created. Returns (path, created).

    The file is created exclusively when it is new, so `created` says what this write did, not what a look before it
    saw.
    """
    caps = ctx.capabilities
    resolved = resolve_write(ctx, path)
    with file_errors(path, "write"):
        try:
            handle = caps.open_write(path, base=ctx.working_directory, exclusive=True, make_parents=True)
            created = True
        except FileExistsError:
            handle = caps.open_write(path, base=ctx.working_directory)
            created = False
        with handle:
            handle.write(data)
    return resolved, created


def delete_file(ctx: ToolContext, path: str) -> Path:
    """Delete a file under the write grant (never a directory; a link itself, never its target)."""
    resolved = resolve_write(ctx, path)
    with file_errors(path, "delete"):
        if resolved.is_dir():
            raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
        return ctx.capabilities.remove_file(path, base=ctx.working_directory)


def describe_start(ctx: ToolContext, path: str, resolved: Path, operation: str) -> str:
    """What a listing or a search starts from: "dir", "file" or "missing", with the system's errors in model terms."""
    with file_errors(path, operation):
        if resolved.is_dir():
            return "dir"
        if resolved.exists():
            return "file"
    return "missing"
