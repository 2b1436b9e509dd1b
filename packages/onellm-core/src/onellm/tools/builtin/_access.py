"""File access for the built-in tools, always through the call's grants.

Every read and write asks `Capabilities` first: the path is resolved to a real path and checked against the roots and
the protected names, then opened with the double check (`open_read` / `open_write`), so a link swapped in between is
caught before a byte is read or a file truncated. Nothing in the built-in tools opens a file any other way.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onellm.tools import ToolContext

__all__ = [
    "FileTooLargeError",
    "delete_file",
    "display_path",
    "read_bytes",
    "resolve_read",
    "resolve_write",
    "write_bytes",
]


class FileTooLargeError(ValueError):
    """A file is larger than the tool's limit."""


def _check(path: str) -> str:
    if not isinstance(path, str) or not path.strip():
        raise ValueError("path is empty")
    return path


def display_path(ctx: ToolContext, resolved: Path) -> str:
    """How a resolved path is shown to the model: relative to the working directory when it is below it."""
    try:
        base = Path(os.path.realpath(ctx.working_directory))
        rel = resolved.relative_to(base)
    except ValueError:
        return str(resolved)
    text = rel.as_posix()
    return text or "."


def resolve_read(ctx: ToolContext, path: str) -> Path:
    return ctx.capabilities.resolve_read(_check(path), base=ctx.working_directory)


def resolve_write(ctx: ToolContext, path: str) -> Path:
    return ctx.capabilities.resolve_write(_check(path), base=ctx.working_directory)


def read_bytes(ctx: ToolContext, path: str, limit: int) -> tuple[Path, bytes]:
    """Read a whole file under the read grant. Raises for a directory, a missing file or one above `limit` bytes."""
    caps = ctx.capabilities
    resolved = resolve_read(ctx, path)
    if resolved.is_dir():
        raise IsADirectoryError(f"{path} is a directory; use list_files to see what it holds")
    if not resolved.exists():
        raise FileNotFoundError(f"{path} does not exist")
    size = resolved.stat().st_size
    if size > limit:
        raise FileTooLargeError(f"{path} is {size} bytes, above the limit of {limit} bytes")
    data = caps.read_bytes(path, base=ctx.working_directory, max_bytes=limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(f"{path} is above the limit of {limit} bytes")
    return resolved, data


def write_bytes(ctx: ToolContext, path: str, data: bytes) -> tuple[Path, bool]:
    """Create or replace a file under the write grant; missing parent directories are created. Returns (path, created)."""
    resolved = resolve_write(ctx, path)
    if resolved.is_dir():
        raise IsADirectoryError(f"{path} is a directory")
    created = not resolved.exists()
    written = ctx.capabilities.write_bytes(path, data, base=ctx.working_directory, make_parents=True)
    return written, created


def delete_file(ctx: ToolContext, path: str) -> Path:
    """Delete a file under the write grant (never a directory; a link itself, never its target)."""
    resolved = resolve_write(ctx, path)
    if resolved.is_dir():
        raise IsADirectoryError(f"{path} is a directory")
    return ctx.capabilities.remove_file(path, base=ctx.working_directory)
