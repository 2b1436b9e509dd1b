"""Opening files under a file grant, with the double check: resolve, open, resolve again and compare.

A path can change between its check and its use. Every open here resolves and checks the path (`FileGrant`), opens its
directory and (on Linux and macOS) compares the path the system reports for that open directory with the checked one,
opens the last name relative to it without following a link, then resolves and checks the path again and compares it
and the opened file's identity with the first result. A write truncates only after all of that. `DirectoryHandle`
walks a directory the same way, one open directory at a time.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from onellm.capabilities._files import FileGrant
from onellm.capabilities._paths import SymlinkLoopError, UnresolvablePathError, fd_real_path, resolve_real
from onellm.capabilities._refusal import denial
from onellm.errors import CapabilityDeniedError

__all__ = [
    "DirectoryHandle",
    "make_directories",
    "open_directory",
    "open_read",
    "open_write",
    "remove_file",
]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
_O_NOCTTY = getattr(os, "O_NOCTTY", 0)
_DIR_FD = os.open in os.supports_dir_fd and os.name != "nt"
# Walking by directory descriptor: entries listed, opened and stat'ed relative to a verified directory.
_WALK_FD = (
    _DIR_FD
    and bool(_O_NOFOLLOW)
    and bool(_O_DIRECTORY)
    and os.scandir in os.supports_fd
    and os.stat in os.supports_dir_fd
)


def _swapped(text: str) -> CapabilityDeniedError:
    return denial(
        f"Path {text!r} changed between the check and the open (a swapped link); nothing was read or written.",
        target=text,
        rule="swapped",
    )


@contextlib.contextmanager
def _named_as_given(text: str) -> Iterator[None]:
    """Give an `OSError` from the system the path as the caller wrote it, instead of the real path it was opened by
    (which may show where a link leads, or the roots): same errno, same class, same reason."""
    try:
        yield
    except OSError as exc:
        if exc.errno is None or exc.filename == text:
            raise
        raise OSError(exc.errno, exc.strerror, text) from exc


def _not_regular(text: str) -> OSError:
    return OSError(errno.EINVAL, "Not a regular file (a device, a pipe or a socket)", text)


def _clear_nonblock(fd: int) -> None:
    if sys.platform != "win32" and _O_NONBLOCK:
        os.set_blocking(fd, True)


def _open_verified(
    grant: FileGrant, path: str | os.PathLike[str], base: str, *, write: bool, flags: int
) -> tuple[int, str]:
    """Resolve, open, then resolve again and compare: a link swapped in between is refused before any I/O."""
    text = os.fspath(path)
    first = grant.resolve(path, base)
    grant.check(text, first, write=write, base=base)
    parent, name = os.path.split(first)
    flags |= _O_CLOEXEC | _O_BINARY | _O_NOCTTY | _O_NOFOLLOW
    if _DIR_FD and name:
        dfd = _open_parent_verified(text, parent)
        try:
            _refuse_special(_lstat_or_none(name, dfd), text)
            fd = _open_last(text, name, flags, dfd, lambda: os.path.islink(first))
        finally:
            os.close(dfd)
    else:
        _refuse_special(os.lstat(first) if os.path.lexists(first) else None, text)
        fd = _open_last(text, first, flags, None, lambda: os.path.islink(first))
    try:
        _verify_fd(grant, fd, text, first, base, write=write)
    except BaseException:
        os.close(fd)
        raise
    return fd, first


def _lstat_or_none(name: str, dfd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _open_parent_verified(text: str, parent: str) -> int:
    """The verified handle on the directory of a path; a parent that is now a link is a swap, one that is a file is
    `NotADirectoryError`."""
    try:
        return _open_directory_verified(text, parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) or (exc.errno == errno.ENOTDIR and os.path.islink(parent)):
            raise _swapped(text) from None
        raise


def _open_last(text: str, name: str, flags: int, dfd: int | None, is_link: Callable[[], bool]) -> int:
    """Open the last name without following a link: a link there now is a swap (systems say ELOOP, EMLINK, or with
    some flags ENOTDIR)."""
    try:
        if dfd is not None:
            return os.open(name, flags, 0o666, dir_fd=dfd)
        return os.open(name, flags, 0o666)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) or (exc.errno == errno.ENOTDIR and is_link()):
            raise _swapped(text) from None
        raise


def _refuse_special(st: os.stat_result | None, text: str) -> None:
    """Refuse a device, a pipe or a socket before it is opened at all: opening one can block, rewind a tape or make a
    terminal the controlling one. (The opened file is checked again, so one renamed into place after this is refused
    too.)"""
    if st is None or stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode):
        return
    raise _not_regular(text)


def _open_directory_verified(text: str, directory: str) -> int:
    dfd = os.open(directory, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        real = fd_real_path(dfd)
        if real is not None:
            if real != directory:
                raise _swapped(text)
        else:
            st = os.fstat(dfd)
            try:
                again = resolve_real(directory, "/")
            except (SymlinkLoopError, UnresolvablePathError):
                raise _swapped(text) from None  # it resolved a moment ago
            st2 = os.stat(again)
            if again != directory or (st.st_dev, st.st_ino) != (st2.st_dev, st2.st_ino):
                raise _swapped(text)
    except BaseException:
        os.close(dfd)
        raise
    return dfd


def _verify_fd(grant: FileGrant, fd: int, text: str, first: str, base: str, *, write: bool) -> None:
    second = grant.resolve(text, base)
    grant.check(text, second, write=write, base=base)
    if second != first:
        raise _swapped(text)
    real = fd_real_path(fd)
    if real is not None and real != first:
        raise _swapped(text)
    try:
        st_path = os.stat(first, follow_symlinks=False)
    except OSError:
        raise _swapped(text) from None
    st_fd = os.fstat(fd)
    if (st_fd.st_dev, st_fd.st_ino) != (st_path.st_dev, st_path.st_ino):
        raise _swapped(text)


def open_directory(grant: FileGrant, path: str | os.PathLike[str], base: str) -> DirectoryHandle:
    """See `Capabilities.open_directory`."""
    text = os.fspath(path)
    resolved = grant.resolve(path, base)
    grant.check(text, resolved, write=False, base=base)
    if not _WALK_FD:
        if not os.path.isdir(resolved):
            if not os.path.lexists(resolved):
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", text)
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", text)
        return DirectoryHandle(grant, resolved, None)
    with _named_as_given(text):
        dfd = _open_directory_verified(text, resolved)
    return DirectoryHandle(grant, resolved, dfd)


def open_read(grant: FileGrant, path: str | os.PathLike[str], base: str) -> IO[bytes]:
    """See `Capabilities.open_read`."""
    text = os.fspath(path)
    with _named_as_given(text):
        fd, _ = _open_verified(grant, path, base, write=False, flags=os.O_RDONLY | _O_NONBLOCK)
        return _regular_file(fd, text)


def open_write(
    grant: FileGrant,
    path: str | os.PathLike[str],
    base: str,
    *,
    append: bool = False,
    exclusive: bool = False,
    make_parents: bool = False,
) -> IO[bytes]:
    """See `Capabilities.open_write`."""
    text = os.fspath(path)
    with _named_as_given(text):
        if make_parents:
            target = grant.resolve_write(path, base)
            _make_directories(grant, text, target.parent, base)
        flags = os.O_WRONLY | os.O_CREAT | _O_NONBLOCK
        if exclusive:
            flags |= os.O_EXCL
        if append:
            flags |= os.O_APPEND
        fd, _ = _open_verified(grant, path, base, write=True, flags=flags)
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, "Is a directory", text)
            if not stat.S_ISREG(st.st_mode):
                raise _not_regular(text)
            if not append:
                os.ftruncate(fd, 0)
            _clear_nonblock(fd)
            return os.fdopen(fd, "ab" if append else "wb")
        except BaseException:
            os.close(fd)
            raise


def make_directories(grant: FileGrant, path: str | os.PathLike[str], base: str) -> Path:
    """See `Capabilities.make_directories`."""
    text = os.fspath(path)
    with _named_as_given(text):
        return _make_directories(grant, text, path, base)


def _make_directories(grant: FileGrant, text: str, path: str | os.PathLike[str], base: str) -> Path:
    """Create `path` and its missing parents; refusals and errors name `text` (what the caller asked for)."""
    target = grant.resolve_write(path, base)
    missing: list[str] = []
    current = os.fspath(target)
    while not os.path.lexists(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for directory in reversed(missing):
        grant.check(text, directory, write=True, base=base)
        parent, name = os.path.split(directory)
        try:
            if _DIR_FD:
                dfd = _open_directory_verified(text, parent)
                try:
                    os.mkdir(name, 0o777, dir_fd=dfd)
                finally:
                    os.close(dfd)
            else:
                os.mkdir(directory)
        except FileExistsError:
            pass
        st = os.stat(directory, follow_symlinks=False)
        if not stat.S_ISDIR(st.st_mode):
            raise _swapped(text)
    again = grant.resolve_write(path, base)
    if again != target:
        raise _swapped(text)
    return target


def remove_file(grant: FileGrant, path: str | os.PathLike[str], base: str) -> Path:
    """See `Capabilities.remove_file`."""
    text = os.fspath(path)
    parent_text, name = os.path.split(text)
    if name in ("", ".", ".."):
        raise denial(f"Path {text!r} does not name a file.", target=text, rule="bad-path")
    with _named_as_given(text):
        # The directory as given (relative to `base`), so a refusal of it names no host path either.
        parent = grant.resolve(parent_text or os.curdir, base)
        target = os.path.join(parent, name)
        grant.check(text, target, write=True, base=base)
        if _DIR_FD:
            dfd = _open_directory_verified(text, parent)
            try:
                os.unlink(name, dir_fd=dfd)
            finally:
                os.close(dfd)
        else:
            os.unlink(target)
    return Path(target)


class DirectoryHandle:
    """A directory tools may read, held open so that what it holds is listed, checked and opened by name.

    `Capabilities.open_directory` checks the directory once, as `resolve_read` does, and opens it; the entries are then
    listed from the open directory and opened relative to it without following a link in their last component, so an
    entry swapped for a symbolic link after it was listed is refused rather than followed, and nothing below the
    directory needs resolving again. Below a readable directory the only rule that can refuse an entry that is not a
    link is the protected state, which `allows` checks without touching the disk. Symbolic links themselves are not
    opened here: follow them with `Capabilities.open_read`, which resolves and checks the target.

    Where the platform cannot open files relative to a directory, every method falls back to the full checks of the
    grant on the joined path.
    """

    __slots__ = ("_blocked", "_fd", "_grant", "path")

    def __init__(self, grant: FileGrant, path: str, fd: int | None) -> None:
        self._grant = grant
        self._fd = fd
        self.path = path
        """The directory's real path."""
        self._blocked: frozenset[str] | None = None

    def __enter__(self) -> DirectoryHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _child(self, name: str) -> str:
        if not name or name in (".", "..") or "/" in name or (os.altsep and os.altsep in name) or os.sep in name:
            raise ValueError(f"{name!r} is not the name of a directory entry")
        return os.path.join(self.path, name)

    def scan(self) -> list[os.DirEntry[str]]:
        """The directory's entries (unsorted). Their `path` is not to be trusted: join `name` to `path` instead."""
        source: int | str = self._fd if self._fd is not None else self.path
        with os.scandir(source) as it:
            return list(it)

    def allows(self, name: str) -> bool:
        """Whether tools may read the entry `name`, which is not a symbolic link."""
        child = self._child(name)
        if self._fd is None:
            return self._grant.is_readable(child, self.path)
        blocked = self._blocked
        if blocked is None:
            # The directory itself is readable, so no protected path holds it: an entry is refused only when it is a
            # protected path itself. Those directly in this directory are found once, by their last name.
            blocked = self._blocked = self._grant.protected_names_in(self.path)
        return not blocked or FileGrant.entry_key(name) not in blocked

    def lstat(self, name: str) -> os.stat_result:
        """The entry's own status (a link is not followed)."""
        if self._fd is None:
            return os.lstat(self._child(name))
        self._child(name)
        return os.stat(name, dir_fd=self._fd, follow_symlinks=False)

    def open_file(self, name: str) -> IO[bytes]:
        """Open the regular file `name` for reading. The caller closes it.

        Raises:
            CapabilityDeniedError: the entry is protected, or is now a symbolic link.
            OSError: it is not a regular file, or cannot be opened.
        """
        child = self._child(name)
        if self._fd is None:
            return open_read(self._grant, child, self.path)
        return _regular_file(self._open_entry(name, child, _O_NONBLOCK), child)

    def open_directory(self, name: str) -> DirectoryHandle:
        """Open the subdirectory `name` the same way. The caller closes it.

        Raises:
            CapabilityDeniedError: the entry is protected, or is now a symbolic link.
            NotADirectoryError: it is not a directory.
        """
        child = self._child(name)
        if self._fd is None:
            return open_directory(self._grant, child, self.path)
        return DirectoryHandle(self._grant, child, self._open_entry(name, child, _O_DIRECTORY))

    def _open_entry(self, name: str, child: str, flags: int) -> int:
        """Open the entry `name` relative to the open directory, read-only with `flags`, never through a link."""
        assert self._fd is not None
        if not self.allows(name):
            raise denial(
                f"Path {child!r} is inside the runtime's protected state.", target=child, rule="protected-state"
            )
        try:
            return os.open(name, os.O_RDONLY | flags | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=self._fd)
        except OSError as exc:
            # A link fails as "too many levels"; with O_DIRECTORY some systems say "not a directory" instead, so
            # that answer is told apart from a plain file.
            if exc.errno in (errno.ELOOP, errno.EMLINK) or (exc.errno == errno.ENOTDIR and self._is_link(name)):
                raise _swapped(child) from None
            raise

    def _is_link(self, name: str) -> bool:
        try:
            return stat.S_ISLNK(self.lstat(name).st_mode)
        except OSError:
            return False


def _regular_file(fd: int, path: str) -> IO[bytes]:
    """A file object for `fd`, opened non-blocking, when it is a regular file (blocking again); else it is closed and
    `IsADirectoryError` or `OSError` raised."""
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(path)
        _clear_nonblock(fd)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
